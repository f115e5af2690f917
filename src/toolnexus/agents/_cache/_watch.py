"""What a notified ``SoulCache``'s watches stand for, and which homes each inotify event invalidates.

A ``Watcher`` owns one inotify queue. ``_ways.Ways`` makes the kernel
watches a home needs (under the cache's watch lock) and returns them as a
``Watched``; ``record`` files it under the cache's lock, unless an event
since the watching began touched it (the read is then not cached);
``changed`` turns drained events into the homes they invalidate. The ways
shared by the homes of one directory are filed once, as a ``_Dir``: an
event on one invalidates every home filed under it.
"""

from __future__ import annotations

import contextlib
import functools
import os
import weakref
from collections.abc import Callable, Iterable, Sequence
from typing import Final

from .._native._twins import Notifier
from ._ways import (
    IN_DELETE_SELF,
    IN_IGNORED,
    IN_MOVE_SELF,
    IN_Q_OVERFLOW,
    Registration,
    Unwatchable,
    Watched,
    Ways,
    plain_path,
)

__all__ = ["Unwatchable", "Watched", "Watcher", "plain_path"]

# Directories that lead to homes no longer cached are kept watched (a home
# there is likely to come back) until there are this many.
_EMPTY_DIRS: Final = 64


class _Dir:
    """A directory that holds homes: the way to it, and the homes filed under it."""

    __slots__ = ("homes", "path", "way")

    def __init__(self, path: bytes, way: tuple[Registration, ...]) -> None:
        self.path = path
        self.way = way
        self.homes: set[bytes] = set()


Way = tuple[Registration, ...]
Filed = tuple[bytes, bytes, Way, Way, tuple[int, tuple[bytes, ...]] | None, bool, bytes | None]  # a Watched
# What a watched entry stands for: a home, or a directory's homes; a set when several.
Standing = bytes | _Dir | set[bytes | _Dir]


def _stand(names: dict[bytes, Standing], name: bytes, key: bytes | _Dir) -> None:
    """File ``key`` under ``name``: itself while it is the only one (no set to keep for one home)."""
    had = names.get(name)
    if had is None:
        names[name] = key
    elif isinstance(had, set):
        had.add(key)
    elif had is not key and had != key:
        names[name] = {had, key}


def _unstand(names: dict[bytes, Standing], name: bytes, key: bytes | _Dir) -> None:
    had = names.get(name)
    if isinstance(had, set):
        had.discard(key)
        if len(had) == 1:
            (names[name],) = had
        elif not had:
            del names[name]
    elif had is not None and (had is key or had == key):
        del names[name]


def _each(standing: Standing) -> Iterable[bytes | _Dir]:
    return standing if isinstance(standing, set) else (standing,)


class Watcher:
    """One inotify queue, and which homes each of its watches stands for.

    Not locked itself: ``SoulCache`` calls ``watch`` and ``sweep`` (the
    kernel calls) under its watch lock, and the rest under its cache lock;
    ``record`` under both. What ``changed`` learns that the watch side must
    act on, it leaves in ``_stale`` for the next ``watch``.
    """

    def __init__(self, notifier: Notifier) -> None:
        self._notifier = notifier
        self.fd: int = notifier.open_queue()
        self._close = weakref.finalize(self, os.close, self.fd)
        # The queued events, or None: one non-blocking read when there are none.
        self.drain: Callable[[], list[tuple[int, int, bytes]] | None] = functools.partial(
            notifier.drain, self.fd
        )
        self._ways = Ways(notifier, self.fd)
        self._stale = False  # set by changed(): clear what _ways keeps, at the next watch
        self._watching_now = False
        self._seen: set[Registration] = set()  # events while a watch is under way
        self._overflowed = False
        # Cache side: what each watch stands for. What is kept for each home is
        # plain tuples and bytes, which the cyclic collector does not walk: a
        # home filed is nothing a full collection visits.
        self._keys: dict[int, dict[bytes, Standing]] = {}  # wd -> entry -> homes, directories
        self._folders: dict[int, dict[bytes, tuple[bytes, ...]]] = {}  # wd -> home -> names it watches for
        self._dirs: dict[bytes, _Dir] = {}  # directory path -> the current way to it, and its homes
        self._held: dict[tuple[bytes, Way], _Dir] = {}  # every directory filed, by path and way
        self._empty: set[_Dir] = set()  # directories whose homes have all left
        # home -> the Watched filed for it, as a plain tuple; and any filed besides
        # (a linked file's watches, a way that changed): one tuple a home.
        self._homes: dict[bytes, Filed] = {}
        self._more: dict[bytes, tuple[Filed, ...]] = {}
        self._unused: set[int] = set()  # wds that may stand for nothing now: removed at a sweep
        self._dead: set[int] = set()  # wds the kernel dropped (IN_IGNORED)

    # -- kernel calls: under the cache's watch lock --------------------------

    def watch(self, home: bytes, names: Sequence[bytes]) -> Watched:
        """Watch ``home`` (``Ways.watch``); raise ``Unwatchable`` or OSError if it cannot be.

        ``home`` is a ``plain_path``. Watches made before a failure are left
        to the next ``sweep``.
        """
        return self._watching(lambda: self._ways.watch(home, names))

    def watch_files(self, watched: Watched, names: Sequence[bytes]) -> Watched:
        """Watch files ``names`` on their own (``Ways.watch_files``), as a read said they are linked."""
        return self._watching(lambda: self._ways.watch_files(watched, names))

    def _watching(self, make: Callable[[], Watched]) -> Watched:
        # Watching first: an event drained from now on is seen by record();
        # one drained before has set _stale by now.
        self._watching_now, self._overflowed = True, False
        self._seen.clear()
        if self._stale:
            self._stale = False
            self._ways.clear()
        try:
            return make()
        except BaseException:
            self._watching_now = False
            self._unused |= self._ways.made  # swept unless something stands on them
            raise

    def sweep(self, unused: Iterable[int]) -> None:
        """Remove the kernel watches of ``unused`` (wds that the cache found standing for nothing)."""
        if self._ways.remove(unused):  # a kept way passed through one of them
            self._stale = True

    # -- bookkeeping: under the cache's lock ------------------------------------

    def record(self, watched: Watched) -> bool:
        """File what ``watch`` made; False if an event since it began touched it (do not cache the read)."""
        self._watching_now = False
        alive = not (
            watched.raced
            or self._overflowed
            or (self._dead and not self._wds(watched).isdisjoint(self._dead))
        )
        if alive and self._seen:
            alive = not self._touched(watched, self._seen)
        self._seen.clear()
        if alive:
            self._file(watched)
        # Watches asked for that nothing stands on (a failed read's, a way's end) go at a sweep.
        made = self._ways.made
        if made:
            self._unused.update(wd for wd in made if wd not in self._keys and wd not in self._folders)
        return alive

    @staticmethod
    def _wds(watched: Watched) -> set[int]:
        wds = {wd for wd, _ in (*watched.way, *watched.entries)}
        if watched.folder is not None:
            wds.add(watched.folder[0])
        return wds

    @staticmethod
    def _touched(watched: Watched, seen: set[Registration]) -> bool:
        """Did one of the events ``seen`` while ``watched`` was made concern it?"""
        if not seen.isdisjoint(watched.way) or not seen.isdisjoint(watched.entries):
            return True
        if watched.folder is None:
            return False
        wd, names = watched.folder
        return any(each == wd and (not name or name in names) for each, name in seen)

    def _file(self, watched: Watched) -> None:
        home = watched.home
        directory = self._dirs.get(watched.parent)
        if directory is None or (directory.way is not watched.way and directory.way != watched.way):
            if directory is not None and not directory.homes:
                self._drop_dir(directory)
            directory = self._dirs[watched.parent] = _Dir(watched.parent, watched.way)
            self._held[(watched.parent, watched.way)] = directory
            for wd, name in watched.way:
                _stand(self._keys.setdefault(wd, {}), name, directory)
        if not directory.homes:
            self._empty.discard(directory)
        directory.homes.add(home)
        filed: Filed = (*watched,)
        first = self._homes.get(home)
        if first is None:
            self._homes[home] = filed
        else:
            more = self._more.get(home, ())
            if filed == first or filed in more:  # watched as before: filed already
                return
            self._more[home] = (*more, filed)
        for wd, name in watched.entries:
            _stand(self._keys.setdefault(wd, {}), name, home)
        if watched.folder is not None:
            wd, names = watched.folder
            folders = self._folders.get(wd)
            if folders is None:
                self._folders[wd] = {home: names}
            else:
                had = folders.get(home)
                folders[home] = names if had is None or had == names else (*had, *set(names) - set(had))

    def forget(self, home: bytes) -> None:
        """Stop standing for ``home``; watches left standing for nothing go at the next sweep."""
        first = self._homes.pop(home, None)
        for filed in () if first is None else (first, *self._more.pop(home, ())):
            _, parent, way, entries, folder, _, _ = filed
            for wd, name in entries:
                self._unfile(wd, name, home)
            if folder is not None:
                wd = folder[0]
                folders = self._folders.get(wd)
                if folders is not None:
                    folders.pop(home, None)
                    if not folders:
                        del self._folders[wd]
                        self._unused.add(wd)
            directory = self._held.get((parent, way))
            if directory is None:
                continue
            directory.homes.discard(home)
            if not directory.homes:
                if self._dirs.get(directory.path) is directory:
                    self._empty.add(directory)  # kept a while: a home there is likely to come back
                else:
                    self._drop_dir(directory)  # a way no longer current
        if len(self._empty) > _EMPTY_DIRS:
            for directory in list(self._empty):
                self._drop_dir(directory)
            self._stale = True  # their ways are no longer filed: resolve afresh

    def _unfile(self, wd: int, name: bytes, key: bytes | _Dir) -> None:
        names = self._keys.get(wd)
        if names is None:
            return
        _unstand(names, name, key)
        if not names:
            del self._keys[wd]
            self._unused.add(wd)

    def _drop_dir(self, directory: _Dir) -> None:
        """Stop standing for the way to ``directory``; it is still found by its homes until they leave."""
        if self._dirs.get(directory.path) is directory:
            del self._dirs[directory.path]
        self._empty.discard(directory)
        if not directory.homes:
            key = (directory.path, directory.way)
            if self._held.get(key) is directory:
                del self._held[key]
        for wd, name in directory.way:
            self._unfile(wd, name, directory)

    def take_unused(self, more_than: int = 0) -> list[int]:
        """The wds to sweep, if more than ``more_than``: standing for nothing since ``forget``."""
        if len(self._unused) <= more_than:
            return []
        unused = [wd for wd in self._unused if wd not in self._keys and wd not in self._folders]
        if len(unused) <= more_than:
            self._unused = set(unused)  # those filed again since are not looked at again
            return []
        self._unused.clear()
        return unused

    def changed(self, events: list[tuple[int, int, bytes]]) -> set[bytes] | None:
        """The homes ``events`` invalidate; None for all of them (the queue overflowed)."""
        homes: set[bytes] = set()
        for wd, mask, name in events:
            if self._watching_now:
                self._seen.add((wd, name))
            if mask & IN_Q_OVERFLOW:
                self._overflowed = self._stale = True
                for directory in list(self._dirs.values()):
                    self._drop_dir(directory)
                return None
            if mask & (IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF):  # a kept way may lead elsewhere now
                self._stale = True
            if mask & IN_IGNORED:  # the kernel dropped the watch: its inode is gone
                self._dead.add(wd)
                for keys in self._keys.pop(wd, {}).values():
                    homes |= self._homes_of(_each(keys))
                homes |= self._folders.pop(wd, {}).keys()
                continue
            standing = self._keys.get(wd, {}).get(name)
            if standing is not None:
                homes |= self._homes_of(_each(standing))
            folders = self._folders.get(wd)
            if folders:
                homes.update(home for home, names in folders.items() if not name or name in names)
        return homes

    def _homes_of(self, keys: Iterable[bytes | _Dir]) -> set[bytes]:
        homes: set[bytes] = set()
        for key in list(keys):
            if isinstance(key, _Dir):  # a way changed: it may lead elsewhere now
                homes |= key.homes
                self._drop_dir(key)
                self._stale = True  # resolved afresh at the next watch
            else:
                homes.add(key)
        return homes

    @property
    def homes(self) -> int:
        """How many homes are watched."""
        return len(self._homes)

    def close(self) -> None:
        """Close the queue: the kernel drops every watch on it."""
        self._close()
        self._forget_everything()

    def _forget_everything(self) -> None:
        for table in (self._keys, self._folders, self._dirs, self._held, self._homes, self._more):
            table.clear()
        self._ways.clear()
        for each in (self._unused, self._dead, self._seen, self._empty):
            each.clear()

    def abandon(self) -> None:
        """In a forked child: close this process's copy of the descriptor, and never close it again."""
        self._close.detach()
        with contextlib.suppress(OSError):
            os.close(self.fd)
        self._forget_everything()
