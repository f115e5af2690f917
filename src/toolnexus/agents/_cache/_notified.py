"""``SoulCache`` entries kept fresh by the kernel: the inotify queue, and the reads under way.

The cache keeps one inotify queue (``_watch``) and watches what shaped each
soul. The kernel queues an event before the write, rename or unlink that
caused it returns, so one non-blocking drain of the queue at the start of
a call sees every change that finished before the call: a warm call is
that drain, a dict lookup and the cached object. A soul is cached only if
no event for its home arrived while it was being read: ``Notifications``
counts the reads under way per home and remembers which of those homes
changed meanwhile.

Locking is the cache's. ``start_read`` takes ``watch_lock`` (the kernel's
watch calls, which may block on a slow disk, run under it and not under
the cache's lock) and then the cache's lock; ``close`` runs under both;
every other method runs under the cache's lock alone.
"""

from __future__ import annotations

import errno
import os
import threading
from collections.abc import Callable, Collection, Sequence
from typing import Final

from .._native._twins import Notifier
from ._watch import Unwatchable, Watched, Watcher, plain_path

__all__ = ["Notifications", "Unwatchable"]

# Watches standing for nothing are removed once there are more than this many.
_SWEEP_AFTER: Final = 64


class Notifications:
    """One cache's queue (opened at its first notified read, again after a clear or a fork) and its reads."""

    def __init__(self) -> None:
        self.watcher: Watcher | None = None
        self.watch_lock = threading.Lock()
        self._reading: dict[bytes, int] = {}  # home -> its reads under way
        self._watched: dict[bytes, Watched] = {}  # home -> what its read under way watched
        self._changed: set[bytes] = set()  # homes of _reading that changed since their reads began

    def start_read(
        self,
        notifier: Notifier | None,
        home: bytes,
        names: Sequence[bytes],
        lock: threading.Lock,
    ) -> None:
        """Watch ``home`` and count a read of it as under way; ``Unwatchable`` or OSError if it cannot be.

        Events queued meanwhile are drained after the read, and find the
        watches filed (or ``record`` saw them, drained by another call): a
        read during which the home changed is not cached.
        """
        with self.watch_lock:
            watcher = self._open(notifier)
            if not plain_path(home):
                raise Unwatchable(f"{os.fsdecode(home)!r} has '.' or '..' in it")
            with lock:
                unused = watcher.take_unused(
                    more_than=_SWEEP_AFTER
                )  # in batches: a watch may be wanted again
            if unused:
                watcher.sweep(unused)
            watched = watcher.watch(home, names)
            with lock:
                self._reading[home] = self._reading.get(home, 0) + 1
                self._watched[home] = watched
                if not watcher.record(watched):
                    self._changed.add(home)  # read now, but not cached: watched afresh next time

    def watch_files(self, home: bytes, names: Sequence[bytes], lock: threading.Lock) -> None:
        """Watch files of ``home`` on their own (its read found them linked); ``Unwatchable`` if not.

        The home is read again after this: a change made through another name
        before these watches were made is in that read.
        """
        with self.watch_lock:
            watcher = self.watcher
            watched = self._watched.get(home)
            if watcher is None or watched is None:  # cleared meanwhile: nothing of it may be cached
                with lock:
                    self._changed.add(home)
                return
            more = watcher.watch_files(watched, names)
            with lock:
                if not watcher.record(more):
                    self._changed.add(home)

    def _open(self, notifier: Notifier | None) -> Watcher:
        if self.watcher is None:
            if notifier is None:
                raise Unwatchable("no inotify here")
            try:
                self.watcher = Watcher(notifier)
            except OSError as exc:
                if exc.errno in (errno.EMFILE, errno.ENFILE):
                    raise Unwatchable(
                        "no inotify queue to be had: this user's fs.inotify.max_user_instances (128 by"
                        " default; each notifying SoulCache holds one), or the process's open-file limit,"
                        " is reached"
                    ) from None
                raise
        return self.watcher

    def drain(self, cached: Collection[bytes]) -> Collection[bytes]:
        """The homes the queued events changed (``cached`` and those being read, if it overflowed).

        Those being read are remembered as changed: their reads must not be cached.
        """
        watcher = self.watcher
        events = None if watcher is None else watcher.drain()
        if events is None:
            return ()
        assert watcher is not None
        homes = watcher.changed(events)
        if homes is None:
            homes = {*cached, *self._reading}
        for home in homes:
            if home in self._reading:
                self._changed.add(home)
        return homes

    def done_reading(self, home: bytes, keep: bool, notified: Callable[[bytes], bool]) -> bool:
        """A read of ``home`` is over: did the home change meanwhile?

        Unless ``keep`` (its soul is about to be cached) or ``notified(home)``
        (the cache holds another soul of it, kept fresh here), a home with no
        read under way stops being watched.
        """
        left = self._reading[home] - 1
        changed = home in self._changed
        if left:
            self._reading[home] = left
        else:
            del self._reading[home]
            self._watched.pop(home, None)
            if changed:
                self._changed.discard(home)
        if changed or not keep:
            self.release(home, notified(home))
        return changed

    def release(self, home: bytes, notified: bool) -> None:
        """Stop watching ``home``, unless ``notified`` (the cache holds a soul of it) or being read."""
        if not notified and home not in self._reading and self.watcher is not None:
            self.watcher.forget(home)

    def dropped(self, home: bytes) -> None:
        """The cache forgot ``home``'s souls: a read of it under way must not be cached."""
        if home in self._reading:
            self._changed.add(home)

    def dropped_all(self) -> None:
        """The cache forgot every soul: no read under way may be cached (its watches may be gone)."""
        self._changed.update(self._reading)

    def close(self) -> None:
        """Close the queue: the kernel drops every watch on it."""
        if self.watcher is not None:
            self.watcher.close()
            self.watcher = None

    def after_fork(self) -> None:
        """In a forked child: the parent's queue and reads are not this process's."""
        self.watch_lock = threading.Lock()
        if self.watcher is not None:
            self.watcher.abandon()
            self.watcher = None
        self._reading.clear()  # the threads that were reading are not in this process
        self._watched.clear()
        self._changed.clear()
