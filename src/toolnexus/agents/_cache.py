"""``SoulCache``: compose once, hand back the same ``Soul`` while nothing changed.

Each call stats the seven bootstrap names and compares a signature (device,
inode, size, mtime_ns, ctime_ns, file type, or the error that stood in for
them) with the one taken before the cached soul was read. The signature is
taken *before* reading, so a write that races the read shows up as a change
on the next call; and an entry whose files were modified within
``RACY_WINDOW_NS`` of the read is never trusted, because a timestamp that
coarse cannot tell two writes apart (git's "racy clean" problem).
"""

from __future__ import annotations

import os
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, NamedTuple

from ._args import Budget, PathArg, SymlinkPolicy, check_int, check_options, dir_bytes
from ._compose import compose_parts, soul_of
from ._format import MAX_BOOTSTRAP_FILE_BYTES
from ._reader import Policy
from ._report import Soul, raise_if_unusable

__all__ = ["RACY_WINDOW_NS", "CacheStats", "SoulCache"]

# Two seconds covers the coarsest common timestamps (FAT keeps 2 s, HFS+ and
# ext3 1 s) and the kernel's coarse clock on the rest.
RACY_WINDOW_NS: Final = 2_000_000_000

# The wall clock that file timestamps are compared with (tests move it).
_clock = time.time_ns

_Stat = tuple[int, int, int, int, int, int] | int  # dev, ino, size, mtime_ns, ctime_ns, mode; or errno


class CacheStats(NamedTuple):
    """Counters since the cache was made (or last cleared)."""

    hits: int
    misses: int
    stale: int
    size: int
    maxsize: int


@dataclass(slots=True)
class _Entry:
    paths: tuple[bytes, ...]
    signature: tuple[_Stat, ...]
    soul: Soul
    racy: bool


def _stat(path: bytes, follow: bool) -> _Stat:
    try:
        st = os.stat(path, follow_symlinks=follow)
    except OSError as exc:
        return exc.errno or -1
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_mode)


def _signature(paths: tuple[bytes, ...], policy: Policy) -> tuple[_Stat, ...]:
    """What the seven names look like now, seen as ``compose`` would see them."""
    if policy == Policy.FOLLOW:  # the file at the end of any links
        return tuple([_stat(path, True) for path in paths])
    if policy == Policy.REFUSE:  # the name itself; a link is refused whatever it points to
        return tuple([_stat(path, False) for path in paths])
    # within: the link and its target, so swapping either is a change
    return tuple([st for path in paths for st in (_stat(path, False), _stat(path, True))])


def _racy(signature: tuple[_Stat, ...], since_ns: int) -> bool:
    """Was anything modified so recently that its timestamps cannot be trusted?"""
    return any(isinstance(st, tuple) and max(st[3], st[4]) >= since_ns for st in signature)


class SoulCache:
    """A bounded, thread-safe LRU cache of composed souls, validated on every call.

    ``cache.compose(dir, ...)`` takes the same options as ``compose`` and
    returns the cached ``Soul`` object itself while no bootstrap file that
    shaped it has changed; otherwise it composes again. A recomposed soul
    equal to the cached one is returned as the cached object, so identity
    means "same prompt" and prompt-cache prefixes stay byte-stable.
    """

    def __init__(self, maxsize: int = 1024) -> None:
        self._maxsize = check_int(maxsize, "maxsize", 1)
        self._entries: OrderedDict[tuple[bytes, int, Policy, tuple[str, ...], Budget | None], _Entry]
        self._entries = OrderedDict()
        self._lock = threading.Lock()
        self._hits = self._misses = self._stale = 0

    def compose(
        self,
        dir: PathArg,
        *,
        max_file_bytes: int = MAX_BOOTSTRAP_FILE_BYTES,
        symlinks: SymlinkPolicy = "follow",
        strict: bool = False,
        files: Sequence[str] | None = None,
        budget: Budget | None = None,
    ) -> Soul:
        """The soul of ``dir``: the cached object if still valid, else a fresh one.

        Takes ``compose``'s options, and caches by them.
        """
        path = dir_bytes(dir)
        options = check_options(max_file_bytes, symlinks, strict, files, budget)
        key = (path, options.cap, options.policy, options.files, options.budget)
        with self._lock:
            entry = self._entries.get(key)
        paths = entry.paths if entry is not None else tuple(os.path.join(path, n) for n in options.names)
        started = _clock()
        signature = _signature(paths, options.policy)
        if entry is not None and not entry.racy and entry.signature == signature:
            with self._lock:
                if key in self._entries:
                    self._entries.move_to_end(key)
                self._hits += 1
            soul = entry.soul
        else:
            with self._lock:
                if entry is None:
                    self._misses += 1
                else:
                    self._stale += 1
            # Composed outside the lock: one slow disk must not stall other homes.
            # Not strict here: the cached soul serves strict and lenient calls.
            lenient = options._replace(strict=False)
            soul = soul_of(path, compose_parts([path], lenient)[0], lenient)
            if entry is not None and entry.soul == soul:
                soul = entry.soul
            fresh = _Entry(paths, signature, soul, _racy(signature, started - RACY_WINDOW_NS))
            with self._lock:
                self._entries[key] = fresh
                self._entries.move_to_end(key)
                while len(self._entries) > self._maxsize:
                    self._entries.popitem(last=False)
        if strict:
            raise_if_unusable(path, soul.files)
        return soul

    def invalidate(self, dir: PathArg) -> int:
        """Forget every cached soul of ``dir`` (any options); returns how many."""
        path = dir_bytes(dir)
        with self._lock:
            keys = [key for key in self._entries if key[0] == path]
            for key in keys:
                del self._entries[key]
        return len(keys)

    def clear(self) -> None:
        """Forget everything and reset the counters."""
        with self._lock:
            self._entries.clear()
            self._hits = self._misses = self._stale = 0

    @property
    def stats(self) -> CacheStats:
        """Hits, misses (never seen), stale (seen, but changed or racy), size, maxsize."""
        with self._lock:
            return CacheStats(self._hits, self._misses, self._stale, len(self._entries), self._maxsize)

    @property
    def maxsize(self) -> int:
        return self._maxsize

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        hits, misses, stale, size, maxsize = self.stats
        return f"SoulCache(size={size}, maxsize={maxsize}, hits={hits}, misses={misses}, stale={stale})"
