"""Every system call the memory file's protocol makes, chosen once for this platform, through one seam.

``Folder`` is the home's directory, held open, and the operations on names in it; the functions act on
a descriptor. ``read_lease`` is Linux's read lease: granted only while no process holds the file open
for writing; one that then starts to open it waits until it is let go, and ``lease_broken`` tells so
(signalled with SIGURG, which a process ignores unless it asks; SIGIO would stop a host). The seam: each
call goes through ``_call``, which names it (``open``, ``renameat2``...) to ``hook`` when one is set, so
that a test fails any one call, or kills the process there; ``step`` is the machine's move under way.
EINTR is retried, as Python retries it; a close is never an error.
"""

from __future__ import annotations

import ctypes
import enum
import errno
import os
import platform
import signal
import stat
import sys
import weakref
from collections.abc import Callable
from contextlib import suppress
from typing import Final, TypeVar, cast

__all__ = [
    "Folder",
    "Lease",
    "adopt",
    "close",
    "fstat",
    "fsync",
    "lease_broken",
    "lock_exclusive",
    "read_all",
    "read_lease",
    "release_lease",
    "write_all",
]

_RENAME_NOREPLACE, _RENAME_EXCHANGE = 1, 2
# renameat2's system call number where libc has no wrapper (musl, old glibc).
_SYSCALLS: Final = {"x86_64": 316, "aarch64": 276, "riscv64": 276, "i686": 353, "i386": 353, "armv7l": 382}
# fcntl's lease commands (Linux): fcntl.F_SETLEASE is not in every Python.
_F_SETSIG, _F_SETLEASE, _F_GETLEASE, _F_RDLCK, _F_UNLCK = 10, 1024, 1025, 0, 2
# Never a symlink, never a controlling terminal, never inherited (distinct bits: their sum is their union).
_FLAGS: Final = sum(getattr(os, flag, 0) for flag in ("O_CLOEXEC", "O_NOFOLLOW", "O_NOCTTY", "O_BINARY"))
_HAVE_DIR_FD: Final = os.open in os.supports_dir_fd
_T = TypeVar("_T")
_CHUNK: Final = 1 << 20

# The seam: called with each call's name before it is made (tests fail or kill it there).
hook: Callable[[str], None] | None = None
step: object = None  # the state the machine's change is entering (set by _disk), for a hook to read


def _call(name: str, call: Callable[[], _T]) -> _T:
    while True:
        try:
            if hook is not None:
                hook(name)
            return call()
        except InterruptedError:
            continue


class Lease(enum.Enum):
    """What asking for a read lease gave."""

    HELD = "held"  # no process has the file open for writing; one that starts to is told by lease_broken
    WRITERS = "writers"  # some process has it open for writing
    UNAVAILABLE = "unavailable"  # no lease to be had here: nothing can be told


if sys.platform == "win32":  # pragma: no cover - no flock, no renameat2, no leases
    import msvcrt

    def _lock(fd: int) -> None:
        while True:  # LK_LOCK gives up after ten seconds: wait on
            with suppress(OSError):
                return msvcrt.locking(fd, msvcrt.LK_LOCK, 1)

else:
    import fcntl

    def _lock(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_EX)


def lock_exclusive(fd: int) -> None:
    _call("flock", lambda: _lock(fd))


def fstat(fd: int) -> os.stat_result:
    return _call("fstat", lambda: os.fstat(fd))


def read_all(fd: int, most: int, size: int) -> bytes:
    """What ``fd`` holds, from its start, up to ``most`` bytes and one more; ``size`` is what it held."""
    chunks = []
    at, want = 0, min(size, most) + 1  # one more: a read short of what was asked is the end
    while at <= most:
        chunk = _call("pread", lambda: os.pread(fd, want, at))  # noqa: B023 - called at once
        chunks.append(chunk)
        at += len(chunk)
        if len(chunk) < want:  # a regular file's read is short only at its end
            break
        want = _CHUNK
    return b"".join(chunks)


def write_all(fd: int, data: bytes) -> None:
    at = 0
    while at < len(data):
        at += _call("write", lambda: os.write(fd, memoryview(data)[at:]))  # noqa: B023 - called at once


def fsync(fd: int) -> None:
    _call("fsync", lambda: os.fsync(fd))


def close(fd: int) -> None:
    """Close ``fd``, never an error: Linux lets it go whatever close says, and what mattered was synced."""
    with suppress(OSError):  # a failure the hook gives: the descriptor goes all the same
        _call("close", lambda: None)
    with suppress(OSError):
        os.close(fd)


def adopt(fd: int, st: os.stat_result, owner: tuple[int, int], mode: int) -> None:
    """Give the new file ``fd`` (``st``) ``owner`` (uid, gid), or its group alone, where the process may
    (a process not root may give only a group it is in), then ``mode``."""
    chowned = False
    if (st.st_uid, st.st_gid) != owner and hasattr(os, "fchown"):
        uid, gid = owner
        chowned = _fchown(fd, uid, gid) or _fchown(fd, -1, gid)  # the group alone, which a member may give
    if (chowned or stat.S_IMODE(st.st_mode) != mode) and hasattr(os, "fchmod"):
        _call("fchmod", lambda: os.fchmod(fd, mode))  # after a chown, which may take bits away


def _fchown(fd: int, uid: int, gid: int) -> bool:
    try:
        _call("fchown", lambda: os.fchown(fd, uid, gid))
    except OSError as exc:
        if exc.errno not in (errno.EPERM, errno.EINVAL):
            raise
        return False
    return True


class Folder:
    """The home's directory, held open (so that its inode is not reused: ``moved`` tells when its path
    leads elsewhere), and the operations on names in it (joined to its path where there is no ``dir_fd``)."""

    def __init__(self, home: bytes) -> None:
        self.home = home
        self.fd: int | None = None  # None: names are joined to the home's path
        self._close: Callable[[], object] = lambda: None
        if _HAVE_DIR_FD:
            self.fd = os.open(home, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0))
            self._close = weakref.finalize(self, close, self.fd)  # never an error: the change stands
            st = os.fstat(self.fd)
        else:  # pragma: no cover - Windows: paths, and a check by stat
            st = os.stat(home)
            if not stat.S_ISDIR(st.st_mode):
                raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), os.fsdecode(home))
        self._pinned = (st.st_dev, st.st_ino)

    def close(self) -> None:
        self._close()

    def moved(self) -> bool:
        """Does the home's path no longer lead to this directory (renamed, replaced, removed)?"""
        try:
            st = _call("stat", lambda: os.stat(self.home))
        except FileNotFoundError:
            return True
        return (st.st_dev, st.st_ino) != self._pinned

    def _at(self, name: bytes) -> bytes:
        return name if self.fd is not None else os.path.join(self.home, name)

    def open(self, name: bytes, flags: int, mode: int = 0o666) -> int:
        return _call("open", lambda: os.open(self._at(name), flags | _FLAGS, mode, dir_fd=self.fd))

    def stat(self, name: bytes) -> os.stat_result:
        return _call("stat", lambda: os.stat(self._at(name), dir_fd=self.fd, follow_symlinks=False))

    def unlink(self, name: bytes) -> None:
        _call("unlink", lambda: os.unlink(self._at(name), dir_fd=self.fd))

    def rename(self, old: bytes, new: bytes) -> None:
        _call(
            "rename", lambda: os.replace(self._at(old), self._at(new), src_dir_fd=self.fd, dst_dir_fd=self.fd)
        )

    def link(self, old: bytes, new: bytes) -> None:
        _call("link", lambda: os.link(self._at(old), self._at(new), src_dir_fd=self.fd, dst_dir_fd=self.fd))

    def names(self) -> list[bytes]:
        listed = _call("listdir", lambda: os.listdir(self.home if self.fd is None else self.fd))
        return [os.fsencode(name) for name in listed]

    def sync(self) -> None:
        """Make the directory's entries durable (nothing to do where it is not held open)."""
        if self.fd is not None:
            fsync(self.fd)

    def exchange(self, first: bytes, second: bytes) -> bool:
        """Swap the two names at once; False where it cannot be done; ENOENT when either is gone."""
        return _renameat2(self.fd, first, second, _RENAME_EXCHANGE)

    def rename_noreplace(self, first: bytes, second: bytes) -> bool:
        """Rename ``first`` to ``second`` unless it exists (FileExistsError); False where it cannot."""
        return _renameat2(self.fd, first, second, _RENAME_NOREPLACE)


def _load_renameat2() -> Callable[[int, bytes, int, bytes, int], int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError:  # pragma: no cover - a C library that cannot be loaded
        return None
    call = getattr(libc, "renameat2", None)
    if call is not None:
        call.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
        call.restype = ctypes.c_int
        return cast("Callable[[int, bytes, int, bytes, int], int]", call)
    number = _SYSCALLS.get(platform.machine())
    if number is None:  # pragma: no cover - an architecture without a known number
        return None
    syscall = libc.syscall
    syscall.restype = ctypes.c_long

    def via_syscall(olddir: int, old: bytes, newdir: int, new: bytes, flags: int) -> int:
        return int(syscall(ctypes.c_long(number), olddir, old, newdir, new, ctypes.c_uint(flags)))

    return via_syscall


_RENAMEAT2: Final = _load_renameat2()


def _renameat2(dirfd: int | None, first: bytes, second: bytes, flags: int) -> bool:
    if _RENAMEAT2 is None or dirfd is None:
        return False

    def call() -> bool:
        if _RENAMEAT2(dirfd, first, dirfd, second, flags) == 0:
            return True
        err = ctypes.get_errno()
        if err in (errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP, errno.EPERM):
            return False  # no renameat2, or a file system without this flag
        raise OSError(err, os.strerror(err), os.fsdecode(second))

    return _call("renameat2", call)


def read_lease(fd: int) -> Lease:
    """Take a read lease on ``fd`` (opened read-only), if no process has the file open for writing."""
    if not sys.platform.startswith("linux"):
        return Lease.UNAVAILABLE
    try:
        _call("fcntl", lambda: fcntl.fcntl(fd, _F_SETSIG, signal.SIGURG))  # before: a break never sends SIGIO
        _call("fcntl", lambda: fcntl.fcntl(fd, _F_SETLEASE, _F_RDLCK))
    except OSError as exc:
        if exc.errno == errno.EAGAIN:
            return Lease.WRITERS
        return Lease.UNAVAILABLE  # EACCES: not the owner; EINVAL: a file system without leases
    return Lease.HELD


def lease_broken(fd: int) -> bool:
    """Has a process begun to open the file for writing since ``fd``'s lease? No where it cannot be told."""
    try:
        return int(_call("fcntl", lambda: fcntl.fcntl(fd, _F_GETLEASE))) != _F_RDLCK
    except OSError:
        return False


def release_lease(fd: int) -> None:
    """Let the lease go: a writer waiting for it opens the file now (closing the descriptor does too)."""
    with suppress(OSError):  # the close that follows lets it go
        _call("fcntl", lambda: fcntl.fcntl(fd, _F_SETLEASE, _F_UNLCK))
