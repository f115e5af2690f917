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
from typing import Final, TypeAlias

from .._vocabulary import Policy

__all__ = ["RACY_WINDOW_NS", "Signed", "before_read", "signature", "still_valid"]

# Two seconds covers the coarsest common timestamps (FAT keeps 2 s, HFS+ and
# ext3 1 s) and the kernel's coarse clock on the rest.
RACY_WINDOW_NS: Final = 2_000_000_000
"""A soul whose files changed this close to its read (2 s, in ns) is read again by a ``stat`` cache."""

# The wall clock that file timestamps are compared with (tests move it).
_clock = time.time_ns
_NEVER: Final = 2**63  # a time no file was modified at


# What stat said of one name: (st_dev, st_ino, st_size, st_mtime_ns, st_ctime_ns,
# st_mode), or the errno that stood in for it. A plain tuple of ints: kept for
# every name of every home a cache validates by stat, it is nothing the cyclic
# collector walks.
Stat: TypeAlias = tuple[int, int, int, int, int, int] | int
# A home's names as they were before its soul was read: their paths, what
# stat said of each, and whether that can be trusted (racy: something was
# modified so recently that its timestamps cannot tell).
Signed: TypeAlias = tuple[tuple[bytes, ...], tuple[Stat, ...], bool]


def _stat(path: bytes, follow: bool, since: int) -> tuple[Stat, bool]:
    """What stat says of ``path``, and whether it was modified at ``since`` or later."""
    try:
        st = os.stat(path, follow_symlinks=follow)
    except OSError as exc:
        return exc.errno or -1, False
    changed = max(st.st_mtime_ns, st.st_ctime_ns)
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_mode), changed >= since


def signature(paths: Sequence[bytes], policy: Policy, since: int = _NEVER) -> tuple[tuple[Stat, ...], bool]:
    """What the names look like now, stat'ed by the policy's recipe as ``compose`` would see them; and if
    any changed at ``since``.
    """
    seen = [_stat(path, follow, since) for path in paths for follow in policy.stats]
    return tuple([stat for stat, _ in seen]), any(recent for _, recent in seen)


def before_read(home: bytes, names: Sequence[bytes], policy: Policy) -> Signed:
    """Stat ``names`` in ``home`` now, before the soul is read."""
    paths = tuple(os.path.join(home, name) for name in names)
    stats, racy = signature(paths, policy, _clock() - RACY_WINDOW_NS)
    return paths, stats, racy


def still_valid(signed: Signed, policy: Policy) -> bool:
    """Do the names look as they did before the soul was read (and could that be told)?"""
    paths, stats, racy = signed
    return not racy and signature(paths, policy)[0] == stats
