"""What each pair of twins promises, and the one check of what they are handed.

``Reader`` is the shape of ``_capread`` and ``_capread_py``, ``Notifier``
that of ``_notify`` and ``_notify_py``: the selector types its choice with
them, so that every call through the seam is checked by mypy. The checks
below are the twins' one argument check: the pure twin runs them on every
call; the compiled twin tests the same conditions in C and calls them only
to raise, so that both raise the same errors with the same words.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Sequence
from typing import Final, Protocol

from .._vocabulary import POLICIES, Composed, Excerpt, Layout, Policy

__all__ = [
    "PROCESS_ERRORS",
    "Notifier",
    "Reader",
    "check_arguments",
    "check_layout",
    "check_windows",
    "process_error",
]

# What a read can fail with that is the process's trouble, not the file's: no
# descriptor left to open it with (the process's, the system's), no memory.
# A file left out for these would be an empty soul that says nothing.
PROCESS_ERRORS: Final = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOMEM})


class Reader(Protocol):
    """A reader twin: reads bootstrap files as docs/format.md says, and fills in souls."""

    def compose_homes(
        self, homes: Sequence[bytes], names: Sequence[bytes], cap: int, symlinks: str, layout: Layout
    ) -> list[Composed]: ...

    def read_excerpts(
        self, home: bytes, names: Sequence[bytes], cap: int, symlinks: str, windows: Sequence[tuple[int, int]]
    ) -> tuple[Excerpt, ...]: ...

    def decode_utf8(self, data: bytes | memoryview) -> str: ...

    def untrack(self, value: object) -> None: ...


class Notifier(Protocol):
    """A notifier twin: Linux inotify, as ``SoulCache`` uses it."""

    def open_queue(self) -> int: ...

    def add_watch(self, fd: int, path: bytes, mask: int) -> int: ...

    def remove_watch(self, fd: int, wd: int) -> None: ...

    def drain(self, fd: int) -> list[tuple[int, int, bytes]] | None: ...

    def filesystem_type(self, path: bytes) -> int: ...


def check_arguments(homes: Sequence[object], names: Sequence[object], cap: int, symlinks: object) -> Policy:
    """The policy ``symlinks`` names; TypeError or ValueError for what a reader cannot take (both twins')."""
    if cap < 1:
        raise ValueError("cap must be >= 1")
    policy = POLICIES.get(symlinks) if isinstance(symlinks, str) else None
    if policy is None:
        raise ValueError(f"symlinks must be one of {', '.join(POLICIES)}, not {symlinks!r}")
    for name in names:
        if not isinstance(name, bytes):
            raise TypeError(f"names must be bytes, not {type(name).__name__}")
    for home in homes:
        if not isinstance(home, bytes):
            raise TypeError(f"homes must be bytes, not {type(home).__name__}")
        if b"\0" in home:
            raise ValueError("embedded null byte")
    return policy


def check_layout(layout: Layout, count: int) -> None:
    """Raise for a layout that is not one file name and two heads per name, all ``str``."""
    files, firsts, nexts, notice = layout
    if not len(files) == len(firsts) == len(nexts) == count:
        raise ValueError("layout must have one file name and two heads per name")
    for texts in (files, firsts, nexts, (notice,)):
        for text in texts:
            if type(text) is not str:
                raise TypeError("layout must hold str only")


def check_windows(windows: Sequence[tuple[int, int]], count: int, cap: int) -> None:
    """Raise for windows that are not one ``(head, tail)`` per name that ``read_excerpts`` may read."""
    if len(windows) != count:
        raise ValueError("windows must have one (head, tail) per name")
    for head, tail in windows:
        if head < 0 or tail < 0 or head + 2 * tail > cap:
            raise ValueError(
                "each window must be (head, tail) with 0 <= head, tail and head + 2 * tail <= cap"
            )


def process_error(err: int, path: bytes) -> OSError:
    """The OSError a reader raises for one of ``PROCESS_ERRORS``, naming the path it was opening."""
    return OSError(err, os.strerror(err), os.fsdecode(path))
