"""The ways to homes, as the kernel resolves them: the inotify watches of a notified ``SoulCache``.

A directory's watch reports what is done to its entries (created, deleted,
moved in or out, written, closed after writing, attributes), so for each
home ``Ways.watch`` watches:

- the home's directory, for itself and for its bootstrap names: a plain
  file of the home needs no watch of its own;
- the way to the home, as the kernel resolves it: each directory on it, for
  the entry it takes next (so the home, or any directory above it, moved,
  deleted, replaced, or appearing where there was none, is seen), and, for a
  symlink on the way, the way to its target. Homes in one directory share
  the way to it, which is resolved once and kept;
- a bootstrap file that is a symlink, or has other hard links, on its own
  (written through another name, it shows nowhere else), with the way to
  each link's target.

It returns a ``Watched``: what ``_watch.Watcher`` files. A home that cannot
be watched reliably (a network or user-space filesystem, no permission to
watch, no watch left) raises ``Unwatchable``, and the cache validates it by
``stat``.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterable, Sequence
from typing import Final, NamedTuple

from .._native._twins import Notifier

__all__ = [
    "IN_DELETE_SELF",
    "IN_IGNORED",
    "IN_MOVE_SELF",
    "IN_Q_OVERFLOW",
    "UNRELIABLE_FILESYSTEMS",
    "Registration",
    "Unwatchable",
    "Watched",
    "Ways",
    "plain_path",
]

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
IN_DONT_FOLLOW: Final = 0x2000000
IN_MASK_ADD: Final = 0x20000000

_ENTRIES = IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_ATTRIB
_CONTENT = IN_MODIFY | IN_CLOSE_WRITE | IN_ATTRIB
_ITSELF = IN_DELETE_SELF | IN_MOVE_SELF | IN_ATTRIB
# Every path watched has been resolved, link by link: IN_DONT_FOLLOW makes a
# symlink that appeared meanwhile fail instead of being followed unseen.
# IN_MASK_ADD: one directory can be a home and on another home's way; the
# kernel keeps one watch per inode, and its mask must serve both.
# A directory on a way also reports its own move or deletion: what the
# watcher keeps of the ways may be wrong from then on.
PATH_MASK: Final = _ENTRIES | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR | IN_DONT_FOLLOW | IN_MASK_ADD
HOME_MASK: Final = _ENTRIES | _CONTENT | _ITSELF | IN_ONLYDIR | IN_DONT_FOLLOW | IN_MASK_ADD
FILE_MASK: Final = _CONTENT | _ITSELF | IN_DONT_FOLLOW | IN_MASK_ADD

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
# Directories that lead to homes no longer cached are kept watched (a home
# there is likely to come back) until there are this many.

# What a name does not exist as, or cannot be one of (inside a file, a loop).
_NOT_THERE = frozenset({errno.ENOENT, errno.ENOTDIR, errno.ELOOP})

Registration = tuple[int, bytes]  # (watch descriptor, entry name; b"" for the watched inode itself)


class Unwatchable(Exception):
    """A home that notification cannot keep fresh; the message says why."""


class _Raced(Exception):
    """A path changed while it was being watched: the read is not cached, and the home is watched again."""


class Watched(NamedTuple):
    """What ``watch`` made for one home, for ``record`` to file."""

    home: bytes
    parent: bytes  # the directory the home's path names it in
    way: tuple[Registration, ...]  # the entries leading to ``parent``: shared by the homes in it
    entries: tuple[Registration, ...]  # the home's own: its name in its parent, its links' ways, files
    folder: tuple[int, tuple[bytes, ...]] | None  # the home's directory watch, for itself and these names
    raced: bool  # a path changed while it was being watched
    real: bytes | None  # where the home really is (no symlink on the way); None if it is not there


_new = tuple.__new__  # skips a NamedTuple's own __new__: a third of the cost


def _parts(path: bytes) -> list[bytes]:
    return [part for part in path.split(b"/") if part]


def _lstat(path: bytes) -> os.stat_result | None:
    """``path``'s own status (not followed), or None if nothing is there."""
    try:
        return os.lstat(path)
    except OSError as exc:
        if exc.errno in _NOT_THERE:
            return None
        raise


def plain_path(path: bytes) -> bool:
    """Is ``path`` absolute, with no ``.`` or ``..``: a text whose every step names what it leads to?"""
    steps = path + b"/"
    return path[:1] == b"/" and b"/./" not in steps and b"/../" not in steps


class Ways:
    """The kernel side of one inotify queue: the watches it asks for, and the ways it keeps.

    Adding a watch to a directory makes the kernel walk its entries
    (milliseconds for a directory of many homes), so the watch of each
    directory, and the way to each directory of homes, is kept until
    ``clear``: the watcher clears them when an event says a way changed.
    """

    def __init__(self, notifier: Notifier, fd: int) -> None:
        self._notifier = notifier
        self._fd = fd
        self._known: dict[bytes, int] = {}  # real directory path -> its wd
        self._known_wds: set[int] = set()  # the values of _known: a sweep asks of a few, not of all
        self._ways: dict[bytes, tuple[tuple[Registration, ...], bytes | None]] = {}  # parent -> way, real
        self.made: set[int] = set()  # every watch the last call asked the kernel for

    def watch(self, home: bytes, names: Sequence[bytes]) -> Watched:
        """Watch the home (its directory, the way to it); raise ``Unwatchable`` or OSError if it cannot be.

        ``home`` is a ``plain_path``; ``names`` its bootstrap names. Its
        files are watched on their own only when a read says they are linked
        (``watch_files``).
        """
        self.made = set()
        parent, base = home.rsplit(b"/", 1)
        parent = parent or b"/"
        entries: list[Registration] = []
        folder: tuple[int, tuple[bytes, ...]] | None = None
        way: tuple[Registration, ...] = ()
        real_home = None
        try:
            way, real = self._way(parent)
            if real is not None:
                entries.append((self._known[real], base))
                found = self._home_dir(real + b"/" + base if real != b"/" else b"/" + base, entries)
                if found is not None:
                    real_home, wd = found
                    # A tuple, not a set: a plain tuple of bytes is nothing the collector walks.
                    folder = (wd, tuple(names))
                self._check_filesystem(real_home or real)
            else:
                self._check_filesystem(parent)
        except _Raced:
            return _new(Watched, (home, parent, way, tuple(entries), folder, True, real_home))
        return _new(Watched, (home, parent, way, tuple(entries), folder, False, real_home))

    def watch_files(self, watched: Watched, names: Sequence[bytes]) -> Watched:
        """Watch the files ``names`` of the home ``watched`` stands for on their own, with the ways of links.

        For the files a read said are linked: a symlink, or a file with
        other hard links, can be changed where the home's watch sees nothing.
        """
        self.made = set()
        entries: list[Registration] = []
        raced = watched.raced or watched.real is None
        if watched.real is not None and not raced:
            try:
                for name in names:
                    self._watch_file(watched.real, name, entries)
            except _Raced:
                raced = True
        return _new(
            Watched, (watched.home, watched.parent, watched.way, tuple(entries), None, raced, watched.real)
        )

    def clear(self) -> None:
        """Forget the watches and ways kept: resolve everything afresh."""
        self._known.clear()
        self._known_wds.clear()
        self._ways.clear()

    def remove(self, wds: Iterable[int]) -> bool:
        """Remove the kernel watches ``wds``; True if a kept way passed through one of them."""
        gone = set(wds)
        for wd in gone:
            self._notifier.remove_watch(self._fd, wd)
        return not gone.isdisjoint(self._known_wds)

    def _way(self, parent: bytes) -> tuple[tuple[Registration, ...], bytes | None]:
        """The way to the directory ``parent``, and where it really is (None: not there); kept."""
        kept = self._ways.get(parent)
        if kept is None:
            way: list[Registration] = []
            real = self._walk(parent, b"/", way)
            if real is not None and real not in self._known:
                real = None  # a file, not a directory: no home can be in it
            kept = self._ways[parent] = (tuple(way), real)
        return kept

    def _walk(self, path: bytes, start: bytes, way: list[Registration]) -> bytes | None:
        """Where ``path`` (from the real directory ``start``) leads, as the kernel resolves it.

        Each directory on the way is watched for the entry it takes next, and
        a symlink's target is followed (at most 40), its way watched too.
        Returns the real path (no symlink in it) of the end, a directory or
        not; None if something on the way is not there (the last directory
        watched sees it appear), or the links loop.
        """
        current = b"/" if path[:1] == b"/" else start
        parts = _parts(path)
        links = 0
        while parts:
            part = parts.pop(0)
            if part == b".":
                continue
            if part == b"..":  # current is real: its parent is what the kernel takes
                current = os.path.dirname(current)
                continue
            way.append((self._dir_watch(current), part))
            step = current + b"/" + part if current != b"/" else b"/" + part
            st = _lstat(step)
            if st is None:
                return None
            if stat.S_ISLNK(st.st_mode):
                links += 1
                if links > _MAX_LINKS:  # a loop, as the kernel sees it: opened, it is ELOOP
                    return None  # every link of it is on the way, watched: undoing one is seen
                target = os.readlink(step)
                parts = _parts(target) + parts
                if target[:1] == b"/":
                    current = b"/"
                continue
            if stat.S_ISDIR(st.st_mode):
                self._dir_watch(step)
            elif parts:
                return None  # a file where a directory would be
            current = step
        return current

    def _dir_watch(self, path: bytes) -> int:
        """The watch of the real directory ``path`` for its entries; kept."""
        wd = self._known.get(path)
        if wd is None:
            wd = self._known[path] = self._add_watch(path, PATH_MASK)
            self._known_wds.add(wd)
        return wd

    def _home_dir(self, path: bytes, entries: list[Registration]) -> tuple[bytes, int] | None:
        """Watch the home directory at the real path ``path``, following a symlink: where it is, and its wd.

        None if no directory is there. The watch is asked for first: a
        directory, the usual case, needs no other call.
        """
        try:
            return path, self._add_watch(path, HOME_MASK)
        except _Raced:
            pass  # not a directory (IN_DONT_FOLLOW: a symlink is none), or not there
        st = _lstat(path)
        if st is None:
            return None
        if not stat.S_ISLNK(st.st_mode):
            if stat.S_ISDIR(st.st_mode):
                raise _Raced  # made a directory meanwhile
            return None
        real = self._walk(os.readlink(path), os.path.dirname(path), entries)
        if real is None or real not in self._known:
            return None
        return real, self._add_watch(real, HOME_MASK)

    def _watch_file(self, home: bytes, name: bytes, entries: list[Registration]) -> None:
        """Watch bootstrap file ``name`` of the real ``home`` on its own, if it is a link or has others."""
        path = home + b"/" + name
        st = _lstat(path)
        if st is None:
            return  # none there: the home's watch sees one arrive
        if stat.S_ISLNK(st.st_mode):
            end = self._walk(os.readlink(path), home, entries)
            if end is None or end in self._known:
                return  # not there, or a directory: the ways watched see it change
            self._check_filesystem(end)
            path = end
        elif stat.S_ISDIR(st.st_mode) or st.st_nlink == 1:
            return  # the home's watch sees all that is done to it
        try:
            entries.append((self._add_watch(path, FILE_MASK), b""))
        except OSError as exc:
            if exc.errno not in _NOT_THERE:
                raise
            raise _Raced from None  # gone, or made a symlink, since it was looked at

    def _add_watch(self, path: bytes, mask: int) -> int:
        try:
            wd = int(self._notifier.add_watch(self._fd, path, mask))
        except OSError as exc:
            if exc.errno == errno.ENOSPC:
                raise Unwatchable("no inotify watch left (see fs.inotify.max_user_watches)") from None
            if exc.errno == errno.EACCES:
                raise Unwatchable(f"no permission to watch {os.fsdecode(path)!r}") from None
            if exc.errno in _NOT_THERE and mask & IN_ONLYDIR:
                raise _Raced from None  # not the directory it was a moment ago
            raise
        self.made.add(wd)
        return wd

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
