"""What a memory operation raises when it cannot be done: ``MemoryToolError`` and its kinds.

Each has a ``code`` (what ``call`` reports to a model as ``error``) and a
``message`` that says why and what to do instead.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import ClassVar

__all__ = [
    "AmbiguousMatch",
    "InvalidEntry",
    "MemoryFull",
    "MemoryRefused",
    "MemoryToolError",
    "MemoryUnsynced",
    "NoMatch",
]


class MemoryToolError(Exception):
    """A memory operation that cannot be done; ``code`` says which kind, the message why and what to do."""

    code: ClassVar[str] = "error"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class InvalidEntry(MemoryToolError, ValueError):
    """The text cannot be an entry: empty, a blank line in it, a control character."""

    code = "invalid"


class NoMatch(MemoryToolError, LookupError):
    """No entry holds the text given; ``candidates`` are the starts of the entries there are."""

    code = "no_match"

    def __init__(self, message: str, candidates: Sequence[str]) -> None:
        super().__init__(message)
        self.candidates = tuple(candidates)


class AmbiguousMatch(MemoryToolError, LookupError):
    """More than one entry holds the text given; ``candidates`` are their starts."""

    code = "ambiguous"

    def __init__(self, message: str, candidates: Sequence[str]) -> None:
        super().__init__(message)
        self.candidates = tuple(candidates)


class MemoryFull(MemoryToolError):
    """A write would take the file past its limit (or the byte cap); ``longest``: its longest entries."""

    code = "full"

    def __init__(self, message: str, longest: Sequence[str]) -> None:
        super().__init__(message)
        self.longest = tuple(longest)


class MemoryRefused(MemoryToolError):
    """The file cannot be written safely: a symlink, not a regular file, the home replaced, too large."""

    code = "refused"


class MemoryUnsynced(MemoryToolError, OSError):
    """The change is in place, but the disk did not confirm it is saved (the directory's sync failed): it
    stands unless the machine stops first, so it is not to be made again. An ``OSError`` too (its errno)."""

    code = "unsynced"

    def __init__(self, errno: int, label: str) -> None:
        super().__init__(
            f"The change to {label} was made, but the disk did not confirm that it is saved"
            f" ({os.strerror(errno)}): it stands, unless the machine stops before the disk saves it."
            " Do not make it again"
        )
        self.errno = errno
