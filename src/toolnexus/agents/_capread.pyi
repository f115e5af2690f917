"""The compiled reader's functions; its types are those of ``_vocabulary``, as ``_capread_py``'s are."""

from collections.abc import Sequence

from ._vocabulary import Composed, Excerpt, Layout

def compose_homes(
    directories: Sequence[bytes], names: Sequence[bytes], cap: int, symlinks: int, layout: Layout
) -> list[Composed]:
    """Read each of ``names`` inside each directory and compose each directory's soul."""

def read_excerpts(
    directory: bytes, names: Sequence[bytes], cap: int, symlinks: int, windows: Sequence[tuple[int, int]]
) -> tuple[Excerpt, ...]:
    """Read at most the first ``head + tail + 1`` and the last ``tail`` bytes of each of ``names``."""

def decode_utf8(data: bytes) -> str:
    """``data`` decoded as UTF-8, with U+FFFD for what is ill-formed, as ``bytes.decode`` does."""
