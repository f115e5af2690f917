"""The words the readers and the Python layer share, defined once.

Both reader twins (the compiled ``_native._capread`` and the pure
``_native._capread_py``) take and return these types; the rest of the
package reads their fields by name. ``FileStatus`` is the one status of a
name, from the reader's result (as its value) to the public report;
``SymlinkPolicy`` the public spelling of the symlink policy, and ``Policy``
(one per word, in ``POLICIES``) all that the package does by it: the
readers' code, the cache's stat recipe, a report's words. ``Layout`` is
what the Python layer hands a reader to say how a soul looks
(``_format.layout`` makes it); ``Composed`` is one home's result.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import Final, Literal, NamedTuple, TypeAlias

__all__ = [
    "FOLLOW",
    "POLICIES",
    "REFUSE",
    "WITHIN",
    "WITHIN_PORTABLE",
    "Composed",
    "Cut",
    "CutRow",
    "Excerpt",
    "FileRead",
    "FileStatus",
    "Layout",
    "Policy",
    "ReadRow",
    "SymlinkPolicy",
    "whole_rows",
]


class FileStatus(str, enum.Enum):
    """Why a bootstrap file did or did not make it into the soul.

    The compiled reader knows the members by their place in this class
    (0 for ``PRESENT``...): it checks at import that they are in this order.
    """

    PRESENT = "present"
    MISSING = "missing"
    NOT_REGULAR = "not a regular file"
    UNREADABLE = "unreadable"
    REFUSED = "refused symlink"

    def __str__(self) -> str:
        return self.value

    @property
    def unusable(self) -> bool:
        """The file exists but cannot be used: what ``strict=True`` raises for."""
        return self not in (FileStatus.PRESENT, FileStatus.MISSING)


SymlinkPolicy: TypeAlias = Literal["follow", "within", "refuse"]
"""Which symlinks a bootstrap file may be reached through (``symlinks=``; the format, section 8)."""


class Policy(NamedTuple):
    """A symlink policy (docs/format.md, section 8), and what each part of the package does by it."""

    word: str  # as the ``symlinks`` argument, a ``Soul`` and the readers spell it
    code: int  # the readers' number for it: its place in ``POLICIES``
    # The cache's stat recipe: how each name is stat'ed to see a change, in
    # this order, following symlinks (True) or not (the link itself).
    stats: tuple[bool, ...]
    refusal: str  # why a report says a file was refused (status ``refused symlink``)
    public: bool  # a value of the public ``symlinks`` argument


_WITHIN_REFUSES: Final = (
    "is a symlink that symlinks='within' refuses: an absolute one, or one that leads out of the directory"
)
# The file at the end of any links: a change to the link or its target shows.
FOLLOW: Final = Policy("follow", 0, (True,), "is a symlink", True)
# The link and its target, so that swapping either is a change.
WITHIN: Final = Policy("within", 1, (False, True), _WITHIN_REFUSES, True)
# The name itself: a link is refused whatever it points to.
REFUSE: Final = Policy("refuse", 2, (False,), "is a symlink (symlinks='refuse')", True)
# "within" by its portable check alone (the fallback where openat2 is
# missing), so that the tests can run that check where openat2 exists.
WITHIN_PORTABLE: Final = Policy("within-portable", 3, WITHIN.stats, _WITHIN_REFUSES, False)
# Every policy by its word, in the order of their codes: what the readers take.
POLICIES: Final = {policy.word: policy for policy in (FOLLOW, WITHIN, REFUSE, WITHIN_PORTABLE)}


class FileRead(NamedTuple):
    """What the reader found at one name.

    Its values are atomic (ints, bools, None, and the status as its text, a
    ``FileStatus``'s value), so that a soul that keeps its reads (a host's,
    or a cache's 100,000) gives the cyclic garbage collector nothing to
    walk: the compiled reader takes its results off the collector's lists,
    as CPython does for a plain tuple of such values.
    """

    status: str  # the FileStatus's value: "present", "missing", ... (FileStatus(status) is the member)
    errno: int  # why it is not present (0 when it is)
    kind: int  # the file type bits of st_mode, 0 when it could not be opened
    bytes_read: int  # at most cap + 1
    truncated: bool  # more than was read from its start (compose_homes: more than cap bytes)
    stable: bool  # False only when the file kept changing under three reads
    size_on_disk: int | None  # st_size when it was opened (None when it was not)
    # Reached through a symlink, or with other hard links: a change to it may
    # be made through another name than this one (what a notified cache
    # must watch on its own).
    linked: bool = False
    # compose_homes: the body's characters and UTF-8 bytes, as the soul holds
    # it (cut, trimmed, decoded; no notice). 0 when absent, and in read_excerpts.
    body_chars: int = 0
    body_bytes: int = 0
    # The name is a symbolic link: the open found it one, and followed it or
    # (within) refused it. Never under refuse, whose open does not look.
    symlink: bool = False
    # compose_homes: the body held bytes that are not well-formed UTF-8, each
    # ill-formed sequence decoded as U+FFFD. False when absent, and in read_excerpts.
    invalid_utf8: bool = False


# A FileRead's fields as a plain tuple: what a soul keeps of one (a FileRead is one too).
ReadRow: TypeAlias = tuple[str, int, int, int, bool, bool, int | None, bool, int, int, bool, bool]


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
    """What a budget did to one present file.

    What it kept, in the budget's unit, is measured only when a report asks
    (``FileReport.kept``): where a budget did not measure it, ``kept`` is -1
    and ``spans`` says where it stands in the soul.
    """

    cut: bool  # shortened, or left out entirely
    kept: int  # of its body, in the budget's unit (markers excluded); -1: the measure of ``spans``
    body: int  # the body's measure; -1 when it was not all read (or, for a file kept whole, not measured)
    kept_bytes: int
    left_out_bytes: int
    spans: tuple[int, ...] = ()  # (start, stop) pairs of offsets into the soul: what ``kept`` measures


# A Cut's fields as a plain tuple: what a soul keeps of one (a Cut is one too).
CutRow: TypeAlias = tuple[bool, int, int, int, int, tuple[int, ...]]


def whole_rows(reads: Sequence[ReadRow]) -> tuple[CutRow | None, ...]:
    """The cuts of a soul a budget in characters holds whole: each present file keeps its body_chars."""
    return tuple(
        [
            (False, chars, chars, nbytes, 0, ()) if status == "present" else None
            for status, _, _, _, _, _, _, _, chars, nbytes, _, _ in reads
        ]
    )


class Composed(NamedTuple):
    """One home, composed: what a reader's ``compose_homes`` returns, and a budget too."""

    text: str  # the soul
    found: tuple[str, ...]  # the names whose sections it holds, in order
    reads: tuple[FileRead, ...]  # one per name
    # With a budget: per name, for each present file, a Cut's fields as a plain tuple (a CutRow);
    # () when a budget in characters holds every file whole (each keeps its body_chars: nothing cut).
    cuts: tuple[CutRow | None, ...] | None = None
    used: int | None = None  # with a budget: the soul in its unit
