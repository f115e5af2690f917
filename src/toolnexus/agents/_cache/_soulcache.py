"""``SoulCache``: compose once, hand back the same ``Soul`` while nothing changed.

The cache is an LRU of souls, by home and options, with its locking, its
statistics and what a fork needs. Each soul it holds is kept fresh one of
two ways, chosen per home:

- **notify** (Linux; ``_notified``): the kernel says when a file that
  shaped the soul changed; a warm call is one non-blocking read of the
  queue, a dict lookup and the cached object.
- **stat** (``_stat``): each call stats the names and compares them with
  what they were before the soul was read.

``validate="auto"`` (the default) notifies where that is reliable and stats
elsewhere; ``"notify"`` raises ``NotificationError`` where it cannot notify;
``"stat"`` always stats. ``compose_many`` and ``acompose`` reach the cache
through the functions of this package's ``__init__`` (``compose_through``,
``lookup_in_loop``), which alone call its ``_home``, ``_lookup`` and
``_compose_missing``.
"""

from __future__ import annotations

import os
import sys
import threading
import weakref
from collections import OrderedDict
from collections.abc import Iterable
from typing import TYPE_CHECKING, Final, Literal

from .. import _native
from .._compose import compose_parts, delivered, soul_of
from .._options import (
    Budget,
    ComposeOptions,
    Options,
    PathArg,
    check_int,
    check_options,
    home_path,
    takes_options,
)
from .._report import Soul
from .._vocabulary import POLICIES, Composed, FileStatus
from ._calls import Calls, absolute
from ._entries import CacheStats, Key, home_of, key_of
from ._notified import Notifications, Unwatchable
from ._stat import Signed, before_read, still_valid

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["CacheStats", "NotificationError", "SoulCache", "Validate"]

Validate = Literal["auto", "notify", "stat"]
"""How a ``SoulCache`` notices a change: "auto", "notify" or "stat" (see ``SoulCache``)."""
_VALIDATE: Final = ("auto", "notify", "stat")


class NotificationError(OSError):
    """``validate="notify"`` was asked of a home, or a system, where notification is not reliable."""


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
        if validate == "notify" and _native.notifier is None:
            raise NotificationError(f"validate='notify' needs inotify, which {sys.platform} does not have")
        self._validate: Validate = validate
        # _lock guards every structure; the kernel's watch calls run under
        # _notifications.watch_lock (taken first when both are held).
        self._lock = threading.Lock()
        # The souls, least recently used first. Each is kept fresh by
        # notification unless it is signed (validated by stat); one that an
        # event touched is stale until recomposed, so that an equal soul
        # comes back as this object.
        self._entries: OrderedDict[Key, Soul] = OrderedDict()
        self._signed: dict[Key, Signed] = {}
        self._stale: set[Key] = set()
        self._homes: dict[bytes, Key | set[Key]] = {}  # home -> its key in _entries (a set if several)
        self._notifications = Notifications()
        self._calls = Calls()
        self._closed = False
        self._hits = self._misses = self._stale_count = 0
        _CACHES.add(self)

    @takes_options
    def compose(self, dir: PathArg, **options: Unpack[ComposeOptions]) -> Soul:
        """The soul of ``dir``: the cached object if still valid, else a fresh one.

        Takes ``compose``'s options, and caches by them (``strict`` aside: one
        soul serves strict and lenient calls, and strict mode raises for it
        as ``compose`` would).
        """
        call, key = self._calls.recall(dir, options)  # a call seen before was checked then
        checked = None
        if key is None:
            where = b"" if absolute(dir) else os.getcwdb()
            path = home_path(dir)
            home = self._home(path)
            checked = check_options(options, "SoulCache.compose")
            key = key_of(home, checked)
            self._calls.remember(call, key, where, home != path, self._lock, self._maxsize)
        soul = self._find(key, options.get("budget"), True)
        if soul is not None and not options.get("strict"):
            return soul
        # A call seen before had its options checked: the check remembers them.
        checked = checked or check_options(options, "SoulCache.compose")
        if soul is None:
            (soul,) = self._compose_missing([home_of(key)], checked)
        return delivered(home_path(dir), soul, checked)  # strict mode names the path as given

    # -- the private interface of compose_many and acompose ----------------------

    def _home(self, home: bytes) -> bytes:
        """The key of ``home``: made absolute, if this cache may notify.

        The working directory may change, and the key must not.
        """
        if self._validate != "stat" and home[:1] != b"/":
            return os.path.abspath(home)
        return home

    def _lookup(self, home: bytes, options: Options, *, stat: bool = True) -> Soul | None:
        """The cached soul of ``home`` (from ``_home``) with ``options`` if it is still valid, else None.

        Never blocks on a notified home (one non-blocking read of the queue);
        with ``stat=False``, a home validated by stat is not looked at
        (None), for callers that must not block.
        """
        return self._find(key_of(home, options), options.budget, stat)

    def _compose_missing(self, homes: list[bytes], options: Options) -> list[Soul]:
        """Compose homes (from ``_home``) that ``_lookup`` did not find, and cache them (never strict)."""
        notified: list[bytes] = []
        try:
            signed: list[Signed | None] = []  # per home, before its read; None: notified
            for home in homes:
                if self._notify(home, options):
                    notified.append(home)
                    signed.append(None)
                else:
                    signed.append(before_read(home, options.names, options.policy))
            # Composed outside the lock: one slow disk must not stall other homes.
            composed = compose_parts(homes, options)
            self._watch_linked(homes, options, composed, signed, notified)
        except BaseException:
            with self._lock:
                for home in notified:
                    self._notifications.done_reading(home, keep=False, notified=self._notified)
            raise
        souls = [soul_of(each, options) for each in composed]
        with self._lock:
            self._drain()  # what changed while the homes were read
            for index, (home, soul) in enumerate(zip(homes, souls, strict=True)):
                souls[index] = self._store(home, options, soul, signed[index])
        return souls

    def _watch_linked(
        self,
        homes: list[bytes],
        options: Options,
        composed: list[Composed],
        signed: list[Signed | None],
        notified: list[bytes],
    ) -> None:
        """Watch on their own the files that notified reads found linked, and read those homes again.

        A home's watch sees what is done through its own names; a symlink's
        target, or a file with other hard links, can change by another name.
        Such files are watched once a read has found them, and the home read
        again, so that a change made before those watches is in the soul.
        """
        again: list[int] = []
        watching: dict[int, set[bytes]] = {}
        for index, home in enumerate(homes):
            names = _linked(composed[index], options) if signed[index] is None else []
            if not names:
                continue
            again.append(index)
            try:
                self._notifications.watch_files(home, names, self._lock)
                watching[index] = set(names)
            except (Unwatchable, OSError) as exc:
                if self._validate == "notify":
                    raise NotificationError(f"cannot notify for {os.fsdecode(home)!r}: {exc}") from exc
                with self._lock:  # auto: stat validation for this home
                    self._notifications.done_reading(home, keep=False, notified=self._notified)
                notified.remove(home)
                signed[index] = before_read(home, options.names, options.policy)
        if not again:
            return
        for index, fresh in zip(again, compose_parts([homes[i] for i in again], options), strict=True):
            composed[index] = fresh
            if index in watching and not watching[index].issuperset(_linked(fresh, options)):
                with self._lock:  # a file became a link between the reads: read again next time
                    self._notifications.dropped(homes[index])

    # -- inside -------------------------------------------------------------------

    def _find(self, key: Key, budget: Budget | None, stat: bool) -> Soul | None:
        """The hit path: drain the queue, then the soul of ``key`` if still valid (and of ``budget``)."""
        with self._lock:
            if self._closed:
                raise ValueError("compose on a closed SoulCache")
            notifications = self._notifications
            if notifications.watcher is not None and (homes := notifications.drain(self._homes)):
                self._went_stale(homes)
            soul = self._entries.get(key)
            if soul is None or soul.budget != budget:
                return None  # composed with another count: this call's budget recomposes, in its place
            # A tuple's hash is not kept: each look-up of the key hashes it again,
            # so the tables of a notified cache, empty, are not asked.
            signed = self._signed.get(key) if self._signed else None
            if signed is None:  # notified
                if self._stale and key in self._stale:
                    return None
                self._entries.move_to_end(key)  # no event since it was read
                self._hits += 1
                return soul
        _, _, word, _, _ = key
        if not stat or not still_valid(signed, POLICIES[word]):
            return None
        with self._lock:
            if key in self._entries:
                self._entries.move_to_end(key)
            self._hits += 1
        return soul

    def _notify(self, home: bytes, options: Options) -> bool:
        """Watch ``home`` and count a read of it under way, if this cache notifies it; else False."""
        if self._validate == "stat":
            return False
        try:
            self._notifications.start_read(_native.notifier, home, options.names, self._lock)
        except (Unwatchable, OSError) as exc:
            if self._validate == "notify":
                raise NotificationError(f"cannot notify for {os.fsdecode(home)!r}: {exc}") from exc
            return False  # auto: stat validation for this home
        return True

    def _drain(self) -> None:
        """Apply the queued events. Under the lock."""
        self._went_stale(self._notifications.drain(self._homes))

    def _keys(self, home: bytes) -> tuple[Key, ...] | set[Key]:
        """The keys of ``home``'s souls. Under the lock."""
        keys = self._homes.get(home)
        if keys is None:
            return ()
        return keys if isinstance(keys, set) else (keys,)

    def _went_stale(self, homes: Iterable[bytes]) -> None:
        """Events for ``homes``: none of their notified souls is fresh now. Under the lock."""
        for home in homes:
            for key in self._keys(home):
                if key not in self._signed:
                    self._stale.add(key)
            # Its watches stay: it is likely to be composed again, and watched the same way.

    def _notified(self, home: bytes) -> bool:
        """Does the cache hold a soul of ``home`` kept fresh by notification? Under the lock."""
        return any(key not in self._signed for key in self._keys(home))

    def _store(self, home: bytes, options: Options, soul: Soul, signed: Signed | None) -> Soul:
        """Cache a fresh soul (the cached object if equal); under the lock."""
        key = key_of(home, options)
        old = self._entries.get(key)
        if old is not None and old.budget == soul.budget:
            self._stale_count += 1  # composed again: a file changed, or could not be trusted
            if old == soul:
                soul = old
        else:
            self._misses += (
                1  # never seen, evicted, or composed with another count (another key, in all but name)
            )
        if signed is None:
            if self._notifications.done_reading(home, keep=True, notified=self._notified):
                return soul  # changed while it was read: not cached, the next call reads again
            self._signed.pop(key, None)
        else:
            self._signed[key] = signed
        self._stale.discard(key)
        self._entries[key] = soul
        if old is not None:
            self._entries.move_to_end(key)
        keys = self._homes.get(home)
        if keys is None:
            self._homes[home] = key
        elif isinstance(keys, set):
            keys.add(key)
        elif keys != key:
            self._homes[home] = {keys, key}
        while len(self._entries) > self._maxsize:
            self._evict()
        return soul

    def _evict(self) -> None:
        """Forget the least recently used soul. Under the lock."""
        key, _ = self._entries.popitem(last=False)
        self._signed.pop(key, None)
        self._stale.discard(key)
        home = home_of(key)
        keys = self._homes[home]
        if isinstance(keys, set):
            keys.discard(key)
            if len(keys) == 1:
                (self._homes[home],) = keys
        else:
            del self._homes[home]
        self._notifications.release(home, self._notified(home))

    def _after_fork(self) -> None:
        # A forked child shares the parent's queue: reading it would take the
        # parent's events. It gets its own at its first miss, and keeps none
        # of the parent's entries (nothing of its own watches them).
        self._lock = threading.Lock()
        self._forget_entries()
        self._notifications.after_fork()

    def _forget_entries(self) -> None:
        for table in (self._entries, self._signed, self._stale, self._homes):
            table.clear()

    def _forget_all(self) -> None:
        self._forget_entries()
        self._notifications.dropped_all()

    # -- the public rest --------------------------------------------------------

    def invalidate(self, dir: PathArg) -> int:
        """Forget every cached soul of ``dir`` (any options); returns how many."""
        home = self._home(home_path(dir))
        with self._lock:
            keys = self._keys(home)
            self._homes.pop(home, None)
            for key in keys:
                del self._entries[key]
                self._signed.pop(key, None)
                self._stale.discard(key)
            self._notifications.release(home, notified=False)
            self._notifications.dropped(home)
        return len(keys)

    def clear(self) -> None:
        """Forget everything, reset the counters, and release the inotify descriptor."""
        with self._notifications.watch_lock, self._lock:
            self._forget_all()
            self._hits = self._misses = self._stale_count = 0
            self._notifications.close()

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
        """The counters (``CacheStats`` says what each counts), what is held, and how it is kept fresh."""
        with self._lock:
            notified = len({home_of(key) for key in self._entries if key not in self._signed})
            counts = (self._hits, self._misses, self._stale_count, len(self._entries), self._maxsize)
            return CacheStats(*counts, notified, len(self._homes) - notified)

    def fileno(self) -> int:
        """The inotify queue's descriptor, -1 while there is none (``"stat"``, no inotify, before a miss).

        Readable once the kernel queued an event the cache watches for, until a ``compose`` takes it in:
        wait on it (``select``, an event loop's ``add_reader``), never read it."""
        with self._lock:
            return -1 if self._notifications.watcher is None else self._notifications.watcher.fd

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
        stats = self.stats
        return (
            f"SoulCache(size={stats.size}, maxsize={stats.maxsize}, validate={self._validate!r}, "
            f"hits={stats.hits}, misses={stats.misses}, stale={stats.stale}, notified={stats.notified}, "
            f"stat_checked={stats.stat_checked})"
        )


def _linked(composed: Composed, options: Options) -> list[bytes]:
    """The names whose reads say they are linked (and not refused: then their target does not matter)."""
    for read in composed.reads:
        if read.linked:
            break
    else:
        return []  # the usual case
    return [
        name
        for name, read in zip(options.names, composed.reads, strict=True)
        if read.linked and read.status != FileStatus.REFUSED
    ]
