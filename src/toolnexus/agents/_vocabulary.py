"""The words the readers and the Python layer share, defined once.

Both reader twins (the compiled ``_capread`` and the pure ``_capread_py``)
import these types and return instances of them; the rest of the package
reads their fields by name. ``Layout`` is what the Python layer hands a
reader to say how a soul looks (``_format.layout`` makes it); ``Composed``
is one home's result.
"""

from __future__ import annotations

import enum
from typing import NamedTuple

__all__ = ["Composed", "Cut", "Excerpt", "FileRead", "Layout", "Policy", "Status"]


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
    WITHIN = 1  # openat2(RESOLVE_BENEATH) where the kernel has it, else WITHIN_PORTABLE
    REFUSE = 2
    WITHIN_PORTABLE = 3  # the fallback of WITHIN, selectable directly so it can be tested


class FileRead(NamedTuple):
    """What the reader found at one name."""

    status: Status
    errno: int  # why it is not present (0 when it is)
    kind: int  # the file type bits of st_mode, 0 when it could not be opened
    size: int  # bytes read: at most cap + 1
    truncated: bool  # more than was read from its start (compose_homes: more than cap bytes)
    stable: bool  # False only when the file kept changing under three reads


class Excerpt(NamedTuple):
    """What ``read_excerpts`` read of one name: bytes, as the file holds them."""

    read: FileRead
    length: int  # the file's length as read (0 unless present)
    head: bytes | None  # the bytes read from its start (all of it when tail is None); None unless present
    tail: bytes | None  # the bytes read at its end, after those of head; None when it was read whole


class Layout(NamedTuple):
    """The text around the bodies of a soul, for given names and cap.

    The readers' ``compose_homes`` takes it as it is: the Python layer
    decides how a soul looks, the reader only fills it in.
    """

    files: tuple[str, ...]  # the names, as the soul's headings and ``found`` spell them
    firsts: tuple[str, ...]  # "## NAME\n\n": the opening of a soul's first section
    nexts: tuple[str, ...]  # "\n\n## NAME\n\n": the opening of any later section
    notice: str  # "\n[truncated: ...]": after a body cut at the byte cap


class Cut(NamedTuple):
    """What a budget did to one present file."""

    cut: bool  # shortened, or left out entirely
    kept: int  # of its body, in the budget's unit (markers excluded)
    left_out: int | None  # of its body, in the budget's unit; None when it was not all read
    kept_bytes: int
    left_out_bytes: int


class Composed(NamedTuple):
    """One home, composed: what a reader's ``compose_homes`` returns, and a budget too."""

    text: str  # the soul
    found: tuple[str, ...]  # the names whose sections it holds, in order
    reads: tuple[FileRead, ...]  # one per name
    cuts: tuple[Cut | None, ...] | None = None  # with a budget: per name, a Cut for each present file
    used: int | None = None  # with a budget: the soul in its unit
