"""A ``SoulCache`` entry kept fresh by ``stat``: what its files looked like before the read.

Each call stats the names composed and compares a signature (device,
inode, size, mtime_ns, ctime_ns, file type, or the error that stood in for
them) with the one taken before the cached soul was read. The signature is
taken *before* reading, so a write that races the read shows up as a
change on the next call; and an entry whose files were modified within
``RACY_WINDOW_NS`` of the read is never trusted, because a timestamp that
coarse cannot tell two writes apart (git's "racy clean" problem).
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from typing import Final, NamedTuple

from .._vocabulary import Policy

__all__ = ["RACY_WINDOW_NS", "Signed", "signature"]

# Two seconds covers the coarsest common timestamps (FAT keeps 2 s, HFS+ and
# ext3 1 s) and the kernel's coarse clock on the rest.
RACY_WINDOW_NS: Final = 2_000_000_000
"""A soul whose files changed this close to its read (2 s, in ns) is read again by a ``stat`` cache."""

# The wall clock that file timestamps are compared with (tests move it).
_clock = time.time_ns


class FileStat(NamedTuple):
    """What ``stat`` said of one name."""

    dev: int
    ino: int
    size: int
    mtime_ns: int
    ctime_ns: int
    mode: int


Stat = FileStat | int  # or the errno that stood in for it


def _stat(path: bytes, follow: bool) -> Stat:
    try:
        st = os.stat(path, follow_symlinks=follow)
    except OSError as exc:
        return exc.errno or -1
    return FileStat(st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_mode)


def signature(paths: Sequence[bytes], policy: Policy) -> tuple[Stat, ...]:
    """What the names look like now, seen as ``compose`` would see them: stat'ed by the policy's recipe."""
    return tuple([_stat(path, follow) for path in paths for follow in policy.stats])


class Signed(NamedTuple):
    """A home's names as they were before its soul was read, and whether that can be trusted."""

    paths: tuple[bytes, ...]
    stats: tuple[Stat, ...]
    racy: bool  # something was modified so recently that its timestamps cannot tell

    @classmethod
    def before_read(cls, home: bytes, names: Sequence[bytes], policy: Policy) -> Signed:
        """Stat ``names`` in ``home`` now, before the soul is read."""
        since = _clock() - RACY_WINDOW_NS
        paths = tuple(os.path.join(home, name) for name in names)
        stats = signature(paths, policy)
        racy = any(isinstance(st, FileStat) and max(st.mtime_ns, st.ctime_ns) >= since for st in stats)
        return cls(paths, stats, racy)

    def still_valid(self, policy: Policy) -> bool:
        """Do the names look as they did (and could that be told)?"""
        return not self.racy and signature(self.paths, policy) == self.stats
