"""What a notified ``SoulCache`` watches, and what each inotify event means.

A ``Watcher`` owns one inotify queue. For each home it watches:

- every directory on the home's path, for the entry that leads to the home
  (so the home, or any directory above it, moved, deleted, replaced, or
  appearing where there was none, is seen);
- the home directory, for the bootstrap names (created, deleted, moved in
  or out, written, closed after writing, attributes) and for itself;
- each bootstrap file that is there, following symlinks: its content and
  attributes wherever it lives (a hard link edited elsewhere included);
- for a bootstrap name that is a symlink, every directory on the path to
  each link of the chain and to the final target, for the entry on that
  path (so a target replaced by rename, or a link retargeted, is seen).

``watch`` makes the kernel watches and returns what they stand for;
``record`` files that under the cache's lock; ``changed`` turns drained
events into the homes they invalidate. A home that cannot be watched
reliably (a network or user-space filesystem, a path the kernel resolves
differently from its text, no permission to watch) raises ``Unwatchable``,
and the cache validates it by ``stat`` instead.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import os
import weakref
from collections.abc import Callable, Iterable, Sequence
from typing import Final, NamedTuple

from .._native._twins import Notifier

__all__ = ["UNRELIABLE_FILESYSTEMS", "Unwatchable", "Watcher"]

# inotify(7)
IN_MODIFY: Final = 0x2
IN_ATTRIB: Final = 0x4
IN_CLOSE_WRITE: Final = 0x8
IN_MOVED_FROM: Final = 0x40
IN_MOVED_TO: Final = 0x80
IN_CREATE: Final = 0x100
IN_DELETE: Final = 0x200
IN_DELETE_SELF: Final = 0x400
IN_MOVE_SELF: Final = 0x800
IN_Q_OVERFLOW: Final = 0x4000
IN_IGNORED: Final = 0x8000
IN_ONLYDIR: Final = 0x1000000
IN_MASK_ADD: Final = 0x20000000

_ENTRIES = IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_ATTRIB
_CONTENT = IN_MODIFY | IN_CLOSE_WRITE | IN_ATTRIB
_ITSELF = IN_DELETE_SELF | IN_MOVE_SELF | IN_ATTRIB
# IN_MASK_ADD: one directory can be a home and on another home's path; the
# kernel keeps one watch per inode, and its mask must serve both.
PATH_MASK: Final = _ENTRIES | IN_ONLYDIR | IN_MASK_ADD
HOME_MASK: Final = _ENTRIES | _CONTENT | _ITSELF | IN_ONLYDIR | IN_MASK_ADD
FILE_MASK: Final = _CONTENT | _ITSELF | IN_MASK_ADD

# statfs f_type of filesystems whose changes inotify does not see (made on
# another machine, by a user-space server, or not made by writes at all).
UNRELIABLE_FILESYSTEMS: Final = {
    0x6969: "NFS",
    0x517B: "SMB",
    0xFF534D42: "CIFS",
    0xFE534D42: "SMB2",
    0x65735546: "FUSE",
    0x01021997: "9p",
    0x00C36400: "Ceph",
    0x5346414F: "AFS",
    0x6B414653: "AFS",
    0x73757245: "Coda",
    0x564C: "NCP",
    0x01161970: "GFS2",
    0x7461636F: "OCFS2",
    0x0BD00BD0: "Lustre",
    0x47504653: "GPFS",
    0x13661366: "OrangeFS",
    0x786F4256: "vboxsf",
    0x9FA0: "procfs",
    0x62656572: "sysfs",
    0x64626720: "debugfs",
    0x74726163: "tracefs",
    0x0027E0EB: "cgroup",
    0x63677270: "cgroup2",
}
_MAX_LINKS = 40  # as the kernel's own limit on a path's symlinks

# What a name does not exist as, or cannot be one of (inside a file, a loop).
_NOT_THERE = frozenset({errno.ENOENT, errno.ENOTDIR, errno.ELOOP})

Registration = tuple[int, bytes]  # (watch descriptor, entry name; b"" for the watched inode itself)


class _Known(NamedTuple):
    """A watch made through a path, and the inode the path led to then."""

    dev: int
    ino: int
    wd: int
    mask: int


class Unwatchable(Exception):
    """A home that notification cannot keep fresh; the message says why."""


def _parts(path: bytes) -> list[bytes]:
    return [part for part in path.split(b"/") if part]


def plain_path(path: bytes) -> bool:
    """Is ``path`` absolute, with no ``.`` or ``..``: a text the kernel resolves step by step as read?"""
    return path[:1] == b"/" and not {b".", b".."}.intersection(_parts(path))


class Watcher:
    """One inotify queue, and which homes each of its watches stands for.

    Not locked itself: ``SoulCache`` calls ``watch`` and ``sweep`` (the
    kernel calls) under its watch lock, and the rest under its cache lock.
    """

    def __init__(self, notifier: Notifier) -> None:
        self._notifier = notifier
        self.fd: int = notifier.open_queue()
        self._close = weakref.finalize(self, os.close, self.fd)
        # The queued events, or None: one non-blocking read when there are none.
        self.drain: Callable[[], list[tuple[int, int, bytes]] | None] = functools.partial(
            notifier.drain, self.fd
        )
        # wd -> entry name (b"": the inode itself) -> homes it stands for
        self._keys: dict[int, dict[bytes, set[bytes]]] = {}
        self._homes: dict[bytes, set[Registration]] = {}
        self._unused: set[int] = set()  # wds that stand for nothing now: removed at a sweep
        self._dead: set[int] = set()  # wds the kernel dropped (IN_IGNORED)
        # path -> (st_dev, st_ino, wd, mask) of a watch made through it. Adding a
        # watch again costs little for a file, but for a directory the kernel
        # walks every entry in it (milliseconds for a parent of many homes), so
        # a path still leading to the same inode is not watched again.
        self._known: dict[bytes, _Known] = {}
        self._known_by_wd: dict[int, set[bytes]] = {}  # the paths of _known, per wd

    # -- kernel calls: under the cache's watch lock --------------------------

    def watch(self, home: bytes, names: Sequence[bytes]) -> list[Registration]:
        """Make every watch ``home`` needs; raise ``Unwatchable`` or OSError (ENOSPC) if it cannot be.

        ``home`` is a ``plain_path``. Watches made before a failure are left
        to the next ``sweep``.
        """
        added: list[Registration] = []
        try:
            self._check_filesystem(home)
            self._watch_path(home, added)
            try:
                wd = self._add(home, HOME_MASK)
            except OSError as exc:
                if exc.errno not in _NOT_THERE:
                    raise
                return added  # no home (yet): the directory above watches for it
            added.append((wd, b""))
            added.extend((wd, name) for name in names)
            for name in names:
                self._watch_file(home + b"/" + name, added)
        except BaseException:
            self._unused.update(wd for wd, _ in added)
            raise
        return added

    def sweep(self, unused: Iterable[int]) -> None:
        """Remove the kernel watches of ``unused`` (wds that the cache found standing for nothing)."""
        gone = set(unused)
        for wd in gone:
            self._notifier.remove_watch(self.fd, wd)
        dead = set(self._dead)  # a copy: the cache's lock, not this one, guards additions
        self._dead -= dead
        gone |= dead
        for wd in gone:
            for path in self._known_by_wd.pop(wd, ()):
                known = self._known.get(path)
                if known is None or known.wd == wd:
                    self._known.pop(path, None)

    def _add(self, path: bytes, mask: int) -> int:
        """Watch ``path`` (a directory: ``mask`` has IN_ONLYDIR), unless it still leads where it did."""
        before = self._inode(path)
        known = self._known.get(path)
        same = known if known is not None and (known.dev, known.ino) == before else None
        if same is not None and same.mask & mask == mask and same.wd not in self._dead:
            return same.wd
        wd = self._add_watch(path, mask)
        # Remembered only if the path led to one inode throughout.
        if self._inode(path) == before:
            self._known[path] = _Known(*before, wd, mask | (same.mask if same is not None else 0))
            self._known_by_wd.setdefault(wd, set()).add(path)
        else:
            self._known.pop(path, None)
        return wd

    @staticmethod
    def _inode(path: bytes) -> tuple[int, int]:
        try:
            st = os.stat(path)
        except OSError as exc:
            if exc.errno == errno.EACCES:
                raise Unwatchable(f"no permission to watch {os.fsdecode(path)!r}") from None
            raise
        return st.st_dev, st.st_ino

    def _add_watch(self, path: bytes, mask: int) -> int:
        try:
            return int(self._notifier.add_watch(self.fd, path, mask))
        except OSError as exc:
            if exc.errno == errno.ENOSPC:
                raise Unwatchable("no inotify watch left (see fs.inotify.max_user_watches)") from None
            if exc.errno == errno.EACCES:
                raise Unwatchable(f"no permission to watch {os.fsdecode(path)!r}") from None
            raise

    def _check_filesystem(self, path: bytes) -> None:
        """Unwatchable if the filesystem holding ``path`` (or its nearest existing parent) is unreliable."""
        while True:
            try:
                kind = int(self._notifier.filesystem_type(path)) & 0xFFFFFFFF
                break
            except OSError as exc:
                if exc.errno not in _NOT_THERE or path == b"/":
                    raise Unwatchable(f"cannot tell the filesystem of {os.fsdecode(path)!r}: {exc}") from None
                path = os.path.dirname(path)
        if kind in UNRELIABLE_FILESYSTEMS:
            name = UNRELIABLE_FILESYSTEMS[kind]
            raise Unwatchable(f"{os.fsdecode(path)!r} is on {name}, whose changes inotify does not see")

    def _watch_path(self, path: bytes, added: list[Registration]) -> None:
        """Watch each directory above ``path`` for the entry leading to it, as far as they exist."""
        above = b"/"
        for part in _parts(path):
            try:
                wd = self._add(above, PATH_MASK)
            except OSError as exc:
                if exc.errno in _NOT_THERE:
                    return  # the directory above watches for this one to appear
                raise
            added.append((wd, part))
            above = above + part if above == b"/" else above + b"/" + part

    def _watch_file(self, path: bytes, added: list[Registration]) -> None:
        """Watch the file at ``path`` (the end of any links) and, for links, the way to each target."""
        try:
            # A file: watching it again costs the kernel little, so always asked.
            added.append((self._add_watch(path, FILE_MASK), b""))
        except OSError as exc:
            if exc.errno not in _NOT_THERE:
                raise
        for _ in range(_MAX_LINKS):
            try:
                target = os.readlink(path)
            except OSError:
                return  # not a link (EINVAL), or gone: what the home's watches see
            # From the link's real directory, a target's leading ".." are exact;
            # a ".." after a name could undo a symlink the text cannot see.
            parts = _parts(target)
            while parts[:1] == [b".."]:
                parts.pop(0)
            if b".." in parts:
                raise Unwatchable(f"symlink target {os.fsdecode(target)!r} is not a plain path")
            path = os.path.normpath(os.path.join(os.path.realpath(os.path.dirname(path)), target))
            self._check_filesystem(path)
            self._watch_path(path, added)
        raise Unwatchable(f"more than {_MAX_LINKS} symlinks from {os.fsdecode(path)!r}")

    # -- bookkeeping: under the cache's lock ------------------------------------

    def record(self, home: bytes, registrations: Iterable[Registration]) -> bool:
        """File what ``watch`` made for ``home``; False if a watch it counted on is gone."""
        mine = self._homes.setdefault(home, set())
        alive = True
        for wd, name in registrations:
            if wd in self._dead:  # its inode went away while it was being watched
                alive = False
                continue
            self._keys.setdefault(wd, {}).setdefault(name, set()).add(home)
            mine.add((wd, name))
            self._unused.discard(wd)
        return alive

    def forget(self, home: bytes) -> None:
        """Stop standing for ``home``; watches left standing for nothing go at the next sweep."""
        for wd, name in self._homes.pop(home, ()):
            names = self._keys.get(wd)
            if names is None:
                continue
            homes = names.get(name)
            if homes is not None:
                homes.discard(home)
                if not homes:
                    del names[name]
            if not names:
                del self._keys[wd]
                self._unused.add(wd)

    def take_unused(self, more_than: int = 0) -> list[int]:
        """The wds to sweep, if more than ``more_than``: standing for nothing since ``forget``."""
        unused = [wd for wd in self._unused if wd not in self._keys]
        if len(unused) <= more_than:
            return []
        self._unused.clear()
        return unused

    def changed(self, events: list[tuple[int, int, bytes]]) -> set[bytes] | None:
        """The homes ``events`` invalidate; None for all of them (the queue overflowed)."""
        homes: set[bytes] = set()
        for wd, mask, name in events:
            if mask & IN_Q_OVERFLOW:
                return None
            if mask & IN_IGNORED:  # the kernel dropped the watch: its inode is gone
                self._dead.add(wd)  # perhaps one that watch() made and record() is still to file
            names = self._keys.get(wd)
            if names is None:
                continue
            if mask & IN_IGNORED:
                del self._keys[wd]
                for each in names.values():
                    homes |= each
                continue
            standing = names.get(name)
            if standing:
                homes |= standing
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
        self._keys.clear()
        self._homes.clear()
        self._unused.clear()
        self._dead.clear()
        self._known.clear()
        self._known_by_wd.clear()

    def abandon(self) -> None:
        """In a forked child: close this process's copy of the descriptor, and never close it again."""
        self._close.detach()
        with contextlib.suppress(OSError):
            os.close(self.fd)
        self._forget_everything()
