"""Types of the compiled reader; it mirrors ``_capread_py`` exactly."""

import enum
from collections.abc import Sequence
from typing import NamedTuple

class Status(enum.IntEnum):
    """What the reader found at a name."""

    PRESENT = 0
    MISSING = 1
    NOT_REGULAR = 2
    UNREADABLE = 3
    REFUSED = 4

class Policy(enum.IntEnum):
    """How the reader treats symlinks (the ``symlinks`` argument)."""

    FOLLOW = 0
    WITHIN = 1
    REFUSE = 2
    WITHIN_PORTABLE = 3

class FileRead(NamedTuple):
    """What the reader found at one name."""

    status: Status
    errno: int
    kind: int
    size: int
    truncated: bool
    stable: bool

Layout = tuple[Sequence[str], Sequence[str], Sequence[str], str]

class Excerpt(NamedTuple):
    """What ``read_excerpts`` read of one name."""

    read: FileRead
    length: int
    head: str | None
    tail: str | None
    gap: int

def read_excerpts(
    directory: bytes, names: Sequence[bytes], cap: int, symlinks: int, windows: Sequence[tuple[int, int]]
) -> tuple[Excerpt, ...]:
    """Read at most the first ``head`` and the last ``tail`` bytes of each of ``names``."""

def decode_utf8(data: bytes) -> str:
    """``data`` decoded as UTF-8, with U+FFFD for what is ill-formed, as ``bytes.decode`` does."""

def compose_homes(
    directories: Sequence[bytes], names: Sequence[bytes], cap: int, symlinks: int, layout: Layout
) -> list[tuple[str, tuple[str, ...], tuple[FileRead, ...]]]:
    """Read each of ``names`` inside each directory and compose each directory's soul."""
