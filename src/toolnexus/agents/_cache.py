"""``SoulCache``: compose once, hand back the same ``Soul`` while nothing changed.

Two ways to know that nothing changed, chosen per home:

- **notify** (Linux): the cache keeps one inotify queue (``_watch``) and
  watches what shaped each soul. The kernel queues an event before the
  write, rename or unlink that caused it returns, so one non-blocking drain
  of the queue at the start of a call sees every change that finished
  before the call: a warm call is that drain, a dict lookup and the cached
  object. A soul is cached only if no event for its home arrived while it
  was being read.
- **stat**: each call stats the bootstrap names and compares a signature
  (device, inode, size, mtime_ns, ctime_ns, file type, or the error that
  stood in for them) with the one taken before the cached soul was read.
  The signature is taken *before* reading, so a write that races the read
  shows up as a change on the next call; and an entry whose files were
  modified within ``RACY_WINDOW_NS`` of the read is never trusted, because
  a timestamp that coarse cannot tell two writes apart (git's "racy clean"
  problem).

``validate="auto"`` (the default) notifies where that is reliable and stats
elsewhere; ``"notify"`` raises ``NotificationError`` where it cannot notify;
``"stat"`` always stats.
"""

from __future__ import annotations

import errno
import os
import pathlib
import sys
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Literal, NamedTuple

from . import _reader
from ._args import Budget, Options, PathArg, SymlinkPolicy, check_int, check_options, dir_bytes
from ._compose import compose_homes
from ._format import MAX_BOOTSTRAP_FILE_BYTES
from ._report import Soul, raise_if_unusable
from ._vocabulary import Policy
from ._watch import Registration, Unwatchable, Watcher, plain_path

__all__ = ["RACY_WINDOW_NS", "CacheStats", "NotificationError", "SoulCache", "Validate"]

# Two seconds covers the coarsest common timestamps (FAT keeps 2 s, HFS+ and
# ext3 1 s) and the kernel's coarse clock on the rest.
RACY_WINDOW_NS: Final = 2_000_000_000

# The wall clock that file timestamps are compared with (tests move it).
_clock = time.time_ns

Validate = Literal["auto", "notify", "stat"]
_VALIDATE: Final = ("auto", "notify", "stat")
# Path types whose value cannot change (not subclasses: those might).
_FIXED_PATHS: Final = frozenset(
    {str, bytes, pathlib.PosixPath, pathlib.PurePosixPath, pathlib.WindowsPath, pathlib.PureWindowsPath}
)
# Watches standing for nothing are removed once there are more than this many.
_SWEEP_AFTER: Final = 64

_Stat = tuple[int, int, int, int, int, int] | int  # dev, ino, size, mtime_ns, ctime_ns, mode; or errno
_Key = tuple[bytes, int, Policy, tuple[str, ...], Budget | None]


class NotificationError(OSError):
    """``validate="notify"`` was asked of a home, or a system, where notification is not reliable."""


class CacheStats(NamedTuple):
    """Counters since the cache was made (or last cleared), and what it holds now."""

    hits: int
    misses: int
    stale: int
    size: int
    maxsize: int
    notified: int = 0  # homes held that notification keeps fresh
    stat_checked: int = 0  # homes held that are validated by stat on each call


@dataclass(slots=True)
class _Entry:
    paths: tuple[bytes, ...]
    signature: tuple[_Stat, ...] | None  # None: notified
    soul: Soul
    racy: bool
    # Notified, and no event since it was read: a hit as it stands. An entry
    # an event made stale is kept until recomposed, so that an equal soul
    # comes back as this object.
    fresh: bool


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


def _key(path: bytes, options: Options) -> _Key:
    """What a soul is cached under: its home and every option that shapes it."""
    return (path, options.cap, options.policy, options.files, options.budget)


def _racy(signature: tuple[_Stat, ...], since_ns: int) -> bool:
    """Was anything modified so recently that its timestamps cannot be trusted?"""
    return any(isinstance(st, tuple) and max(st[3], st[4]) >= since_ns for st in signature)


# Every live cache, so that a forked child can make each one its own.
_CACHES: weakref.WeakSet[SoulCache] = weakref.WeakSet()


def _after_fork_in_child() -> None:
    for cache in list(_CACHES):
        cache._after_fork()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


class SoulCache:
    """A bounded, thread-safe LRU cache of composed souls, never stale.

    ``cache.compose(dir, ...)`` takes the same options as ``compose`` and
    returns the cached ``Soul`` object itself while no bootstrap file that
    shaped it has changed; otherwise it composes again. A recomposed soul
    equal to the cached one is returned as the cached object, so identity
    means "same prompt" and prompt-cache prefixes stay byte-stable.

    ``validate`` chooses how a change is noticed (see the module): ``"auto"``
    uses kernel notification where it is reliable and ``stat`` elsewhere,
    per home; ``"notify"`` raises ``NotificationError`` where it cannot
    notify; ``"stat"`` stats the bootstrap names on every call. A notifying
    cache holds one inotify descriptor, opened at the first miss and
    released by ``clear()``, ``close()`` (or leaving a ``with`` block) and
    garbage collection.
    """

    def __init__(self, maxsize: int = 1024, *, validate: Validate = "auto") -> None:
        self._maxsize = check_int(maxsize, "maxsize", 1)
        if validate not in _VALIDATE:
            raise ValueError(f"validate must be one of 'auto', 'notify', 'stat', not {validate!r}")
        if validate == "notify" and _reader.notifier is None:
            raise NotificationError(f"validate='notify' needs inotify, which {sys.platform} does not have")
        self._validate: Validate = validate
        self._entries: OrderedDict[_Key, _Entry] = OrderedDict()
        self._homes: dict[bytes, set[_Key]] = {}  # home -> its keys in _entries
        self._reading: dict[bytes, int] = {}  # notified home -> composes of it under way
        self._changed: set[bytes] = set()  # homes of _reading that changed since their reads began
        self._watcher: Watcher | None = None
        self._calls: dict[object, tuple[bytes, Options, _Key]] = {}  # see compose()
        self._closed = False
        self._hits = self._misses = self._stale = 0
        self._new_locks()
        _CACHES.add(self)

    def _new_locks(self) -> None:
        # _lock guards every structure; _watch_lock orders the kernel's watch
        # calls, which may block on a slow disk and so run outside _lock
        # (taken first when both are held).
        self._lock = threading.Lock()
        self._watch_lock = threading.Lock()

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
        # A warm call costs about two microseconds, so the arguments of calls
        # seen before are not checked again: they map straight to their key.
        # (True == 1: the types are checked, so that True still fails the check.)
        # A relative path is remembered with the working directory it was
        # made absolute in: a chdir leads it elsewhere.
        call = (dir, max_file_bytes, symlinks, strict, files, budget)
        known = None
        try:
            if type(max_file_bytes) is int and type(strict) is bool:
                known = self._calls.get(call)
                if known is None and type(dir) in _FIXED_PATHS:
                    known = self._calls.get((call, os.getcwdb()))
        except TypeError:  # unhashable (files as a list): checked on every call
            known = None
        if known is None:
            where = os.getcwdb()
            path = self.home(dir_bytes(dir))
            options = check_options(max_file_bytes, symlinks, strict, files, budget)
            known = (path, options, _key(path, options))
            self._remember(call, known, where)
        path, options, key = known
        soul = self._find(key, options, True)
        if soul is None:
            soul = self.compose_missing([path], options)[0]
        if strict:
            raise_if_unusable(path, soul.files)
        return soul

    def _remember(self, call: tuple[object, ...], known: tuple[bytes, Options, _Key], where: bytes) -> None:
        """Map a checked call to its key, if it can be: hashable, its path a fixed value.

        A relative path goes under the call and ``where``, the working
        directory it was made absolute in (if the directory is still that).
        """
        if type(call[0]) not in _FIXED_PATHS:
            return  # another path-like may say something else next time
        memo: object = call
        if known[0] != dir_bytes(call[0]):  # relative: made absolute against ``where``
            if os.getcwdb() != where:
                return  # the directory changed meanwhile
            memo = (call, where)
        try:
            hash(memo)
        except TypeError:
            return
        with self._lock:
            if len(self._calls) >= 2 * self._maxsize:
                self._calls.clear()
            self._calls[memo] = known

    # -- the parts compose, compose_many and acompose share --------------------

    def home(self, path: bytes) -> bytes:
        """The key of the home at ``path``: absolute, if this cache may notify.

        The working directory may change, and the key must not.
        """
        if self._validate != "stat" and path[:1] != b"/":
            return os.path.abspath(path)
        return path

    def lookup(self, path: bytes, options: Options, *, stat: bool = True) -> Soul | None:
        """The cached soul of ``path`` with ``options`` if it is still valid, else None.

        Never blocks on a notified home (one non-blocking read of the queue);
        with ``stat=False``, a home validated by stat is not looked at
        (None), for callers that must not block.
        """
        return self._find(_key(path, options), options, stat)

    def _find(self, key: _Key, options: Options, stat: bool) -> Soul | None:
        """The hit path: drain the queue, then the soul of ``key`` if still valid."""
        with self._lock:
            if self._closed:
                raise ValueError("compose on a closed SoulCache")
            watcher = self._watcher
            if watcher is not None and (events := watcher.drain()) is not None:
                self._apply(watcher, events)
            entry = self._entries.get(key)
            if entry is not None and entry.fresh:  # notified, and no event since
                self._entries.move_to_end(key)
                self._hits += 1
                return entry.soul
        if entry is None or entry.signature is None or not stat:
            return None
        if not entry.racy and entry.signature == _signature(entry.paths, options.policy):
            with self._lock:
                if key in self._entries:
                    self._entries.move_to_end(key)
                self._hits += 1
            return entry.soul
        return None

    def compose_missing(self, paths: list[bytes], options: Options) -> list[Soul]:
        """Compose homes (keys from ``home``) that ``lookup`` did not find, and cache them."""
        # Not strict here: the cached soul serves strict and lenient calls.
        lenient = options._replace(strict=False)
        notified: list[bytes] = []
        try:
            # Per home, the names to stat and what they looked like; None: notified.
            signatures: list[tuple[tuple[bytes, ...], tuple[_Stat, ...]] | None] = []
            started = _clock()
            for path in paths:
                if self._watch(path, options):
                    notified.append(path)
                    signatures.append(None)
                else:
                    names = tuple(os.path.join(path, name) for name in options.names)
                    signatures.append((names, _signature(names, options.policy)))
            # Composed outside the lock: one slow disk must not stall other homes.
            souls = compose_homes(paths, lenient)
        except BaseException:
            with self._lock:
                for path in notified:
                    self._done_reading(path, keep=False)
            raise
        with self._lock:
            self._drain()  # what changed while the homes were read
            for index, (path, soul) in enumerate(zip(paths, souls, strict=True)):
                souls[index] = self._store(path, options, soul, signatures[index], started)
        return souls

    # -- inside -------------------------------------------------------------------

    def _watch(self, path: bytes, options: Options) -> bool:
        """Watch ``path`` and count a read of it under way, if this cache notifies it; else False."""
        if self._validate == "stat":
            return False
        with self._watch_lock:
            try:
                watcher = self._open_watcher()
                if not plain_path(path):
                    raise Unwatchable(f"{os.fsdecode(path)!r} has '.' or '..' in it")
                with self._lock:
                    # In batches: a watch removed may soon be wanted again.
                    unused = watcher.take_unused(more_than=_SWEEP_AFTER)
                watcher.sweep(unused)
                registrations: list[Registration] = watcher.watch(path, options.names)
            except (Unwatchable, OSError) as exc:
                if self._validate == "notify":
                    raise NotificationError(f"cannot notify for {os.fsdecode(path)!r}: {exc}") from exc
                return False  # auto: stat validation for this home
            with self._lock:
                self._drain()  # an inode gone since it was watched says so now
                self._reading[path] = self._reading.get(path, 0) + 1
                if not watcher.record(path, registrations):
                    self._changed.add(path)  # read now, but not cached: watched afresh next time
                return True

    def _done_reading(self, path: bytes, keep: bool) -> bool:
        """A read of notified ``path`` is over: did the home change meanwhile? Under the lock.

        Unless ``keep`` (its soul is about to be cached), a home with nothing
        cached and no read under way stops being watched.
        """
        left = self._reading[path] - 1
        changed = path in self._changed
        if left:
            self._reading[path] = left
        else:
            del self._reading[path]
            self._changed.discard(path)
        if (changed or not keep) and not self._watched(path) and self._watcher is not None:
            self._watcher.forget(path)
        return changed

    def _open_watcher(self) -> Watcher:
        """The queue, opened at the first notified miss (again after a clear or a fork)."""
        if self._watcher is None:
            notifier = _reader.notifier
            if notifier is None:
                raise Unwatchable("no inotify here")
            try:
                self._watcher = Watcher(notifier)
            except OSError as exc:
                if exc.errno in (errno.EMFILE, errno.ENFILE):
                    raise Unwatchable(
                        "no inotify queue to be had: this user's fs.inotify.max_user_instances (128 by"
                        " default; each notifying SoulCache holds one), or the process's open-file limit,"
                        " is reached"
                    ) from None
                raise
        return self._watcher

    def _drain(self) -> None:
        """Apply the queued events. Under the lock."""
        watcher = self._watcher
        if watcher is not None and (events := watcher.drain()) is not None:
            self._apply(watcher, events)

    def _apply(self, watcher: Watcher, events: list[tuple[int, int, bytes]]) -> None:
        """Make every entry of a home that ``events`` changed stale. Under the lock."""
        homes = watcher.changed(events)
        for home in {*self._homes, *self._reading} if homes is None else homes:
            self._went_stale(home)

    def _went_stale(self, home: bytes) -> None:
        """An event for ``home``: none of its entries is fresh now. Under the lock."""
        for key in self._homes.get(home, ()):
            self._entries[key].fresh = False
        if home in self._reading:
            self._changed.add(home)  # its reads under way must not be cached
        # Its watches stay: it is likely to be composed again, and watched the same way.

    def _watched(self, home: bytes) -> bool:
        """Must ``home`` stay watched: a notified entry (fresh or not), or a read under way?"""
        if home in self._reading:
            return True
        return any(self._entries[key].signature is None for key in self._homes.get(home, ()))

    def _store(
        self,
        path: bytes,
        options: Options,
        soul: Soul,
        signature: tuple[tuple[bytes, ...], tuple[_Stat, ...]] | None,
        started: int,
    ) -> Soul:
        """Cache a fresh soul (the cached object if equal); under the lock."""
        key = _key(path, options)
        old = self._entries.get(key)
        if old is None:
            self._misses += 1
        else:
            self._stale += 1
            if old.soul == soul:
                soul = old.soul
        if signature is None:  # notified
            if self._done_reading(path, keep=True):
                return soul  # changed while it was read: not cached, the next call reads again
            entry = _Entry((), None, soul, racy=False, fresh=True)
        else:
            names, stats = signature
            entry = _Entry(names, stats, soul, _racy(stats, started - RACY_WINDOW_NS), fresh=False)
        self._entries[key] = entry
        self._entries.move_to_end(key)
        self._homes.setdefault(path, set()).add(key)
        while len(self._entries) > self._maxsize:
            evicted, _ = self._entries.popitem(last=False)
            keys = self._homes[evicted[0]]
            keys.discard(evicted)
            if not keys:
                del self._homes[evicted[0]]
            if not self._watched(evicted[0]) and self._watcher is not None:
                self._watcher.forget(evicted[0])
        return soul

    def _after_fork(self) -> None:
        # A forked child shares the parent's queue: reading it would take the
        # parent's events. It gets its own at its first miss, and keeps none
        # of the parent's entries (nothing of its own watches them).
        self._new_locks()
        if self._watcher is not None:
            self._watcher.abandon()
            self._watcher = None
        self._forget_all()
        self._reading.clear()  # the threads that were reading are not in this process
        self._changed.clear()

    def _forget_all(self) -> None:
        self._entries.clear()
        self._homes.clear()
        # A read under way finishes uncached: its watches may be gone.
        self._changed.update(self._reading)

    # -- the public rest --------------------------------------------------------

    def invalidate(self, dir: PathArg) -> int:
        """Forget every cached soul of ``dir`` (any options); returns how many."""
        path = self.home(dir_bytes(dir))
        with self._lock:
            keys = self._homes.pop(path, set())
            for key in keys:
                del self._entries[key]
            if not self._watched(path) and self._watcher is not None:
                self._watcher.forget(path)
            if path in self._reading:
                self._changed.add(path)
        return len(keys)

    def clear(self) -> None:
        """Forget everything, reset the counters, and release the inotify descriptor."""
        with self._watch_lock, self._lock:
            self._forget_all()
            self._hits = self._misses = self._stale = 0
            if self._watcher is not None:
                self._watcher.close()
                self._watcher = None

    def close(self) -> None:
        """``clear()``, and refuse to compose from now on. Closing twice is allowed."""
        self.clear()
        with self._lock:
            self._closed = True

    def __enter__(self) -> SoulCache:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @property
    def stats(self) -> CacheStats:
        """Hits, misses (never seen), stale (changed, or racy), size, maxsize, homes by validation."""
        with self._lock:
            notified = len({key[0] for key, entry in self._entries.items() if entry.signature is None})
            counts = (self._hits, self._misses, self._stale, len(self._entries), self._maxsize)
            return CacheStats(*counts, notified, len(self._homes) - notified)

    @property
    def maxsize(self) -> int:
        return self._maxsize

    @property
    def validate(self) -> Validate:
        """How this cache notices changes: ``"auto"``, ``"notify"`` or ``"stat"``."""
        return self._validate

    @property
    def closed(self) -> bool:
        return self._closed

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        hits, misses, stale, size, maxsize, notified, stat_checked = self.stats
        return (
            f"SoulCache(size={size}, maxsize={maxsize}, validate={self._validate!r}, hits={hits}, "
            f"misses={misses}, stale={stale}, notified={notified}, stat_checked={stat_checked})"
        )
