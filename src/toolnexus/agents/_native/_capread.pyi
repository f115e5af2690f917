"""The compiled reader's functions (the ``Reader`` of ``_twins``); its types are those of ``_vocabulary``."""

from collections.abc import Sequence

from .._vocabulary import Composed, Excerpt, Layout

def compose_homes(
    homes: Sequence[bytes], names: Sequence[bytes], cap: int, symlinks: str, layout: Layout
) -> list[Composed]:
    """Read each of ``names`` inside each home and compose each home's soul."""

def read_excerpts(
    home: bytes, names: Sequence[bytes], cap: int, symlinks: str, windows: Sequence[tuple[int, int]]
) -> tuple[Excerpt, ...]:
    """Read at most the first ``head + tail + 1`` and the last ``tail`` bytes of each of ``names``."""

def decode_utf8(data: bytes | memoryview) -> str:
    """``data`` decoded as UTF-8, with U+FFFD for what is ill-formed, as ``bytes.decode`` does."""

def untrack(value: object) -> None:
    """Take ``value`` off the cyclic garbage collector's lists, if it is on them."""
