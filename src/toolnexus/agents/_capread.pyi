"""Types of the compiled reader; it mirrors ``_capread_py`` exactly."""

from collections.abc import Sequence

PRESENT: int
MISSING: int
NOT_REGULAR: int
UNREADABLE: int
REFUSED: int
FOLLOW: int
WITHIN: int
REFUSE: int
WITHIN_PORTABLE: int

def read_home(
    directory: bytes, names: Sequence[bytes], cap: int, symlinks: int
) -> list[tuple[int, int, int, int, bool, bool, str | None]]:
    """Read each of ``names`` inside ``directory``, at most ``cap + 1`` bytes each."""

def read_homes(
    directories: Sequence[bytes], names: Sequence[bytes], cap: int, symlinks: int
) -> list[list[tuple[int, int, int, int, bool, bool, str | None]]]:
    """``[read_home(d, names, cap, symlinks) for d in directories]``, in one call."""
