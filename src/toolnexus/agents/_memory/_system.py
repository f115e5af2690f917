"""The system calls the memory file needs, chosen once for this platform: the lock, the swap, the lease.

- ``Folder``: the home's directory, held open, and every file operation
  inside it by name (relative to its descriptor; by path where the system
  has no ``dir_fd``, Windows);
- ``lock_exclusive``: an exclusive lock, released by the kernel when the
  process dies (``flock``; on Windows a byte-range lock);
- ``exchange``: swap two names atomically (Linux's ``renameat2`` with
  ``RENAME_EXCHANGE``), ``rename_noreplace``: rename unless the new name
  exists; each returns False where the system or the file system cannot;
- ``read_lease``: Linux's read lease (``F_SETLEASE``): granted only while no
  process holds the file open for writing, and broken (``lease_broken``) when
  one starts to open it for writing, which then waits until the lease is let
  go. A break is signalled with SIGURG, which a process ignores unless it
  asks for it, so that no host is stopped by the default SIGIO. Where leases
  are not to be had (another system, a file of another owner without
  CAP_LEASE, a file system without them), ``read_lease`` says so.

Everything here is one call to the system; what to make of it is ``_disk``'s.
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
from typing import Final, cast

__all__ = [
    "Folder",
    "Lease",
    "exchange",
    "lease_broken",
    "lock_exclusive",
    "read_lease",
    "release_lease",
    "rename_noreplace",
]

_RENAME_NOREPLACE: Final = 1
_RENAME_EXCHANGE: Final = 2
# renameat2's system call number where libc has no wrapper (musl, old glibc).
_SYSCALLS: Final = {"x86_64": 316, "aarch64": 276, "riscv64": 276, "i686": 353, "i386": 353, "armv7l": 382}
# fcntl's lease commands (Linux): fcntl.F_SETLEASE is not in every Python.
_F_SETSIG: Final = 10
_F_SETLEASE: Final = 1024
_F_GETLEASE: Final = 1025
_F_RDLCK: Final = 0
_F_UNLCK: Final = 2
# Never a symlink, never a controlling terminal, never inherited.
_FLAGS: Final = (
    getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_NOCTTY", 0)
    | getattr(os, "O_BINARY", 0)
)
_HAVE_DIR_FD: Final = os.open in os.supports_dir_fd


class Lease(enum.Enum):
    """What asking for a read lease gave."""

    HELD = "held"  # no process has the file open for writing; one that starts to is told by lease_broken
    WRITERS = "writers"  # some process has it open for writing
    UNAVAILABLE = "unavailable"  # no lease to be had here: nothing can be told


if sys.platform == "win32":  # pragma: no cover - no flock, no renameat2, no leases
    import msvcrt

    def lock_exclusive(fd: int) -> None:
        while True:
            try:
                msvcrt.locking(fd, msvcrt.LK_LOCK, 1)
                return
            except OSError:  # LK_LOCK gives up after ten seconds: wait on
                continue

else:
    import fcntl

    def lock_exclusive(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_EX)


class Folder:
    """The home's directory, held open while the tool lives, and the operations on names inside it.

    Held open, the directory's inode cannot be reused by a directory made
    again at the same path: ``moved`` tells that its path leads elsewhere.
    Where the system has no ``dir_fd`` (Windows), names are joined to the
    path instead, and ``moved`` compares what ``stat`` says.
    """

    def __init__(self, home: bytes) -> None:
        self.home = home
        self.fd = -1
        self._close: Callable[[], object] = lambda: None
        if _HAVE_DIR_FD:
            self.fd = os.open(home, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0))
            self._close = weakref.finalize(self, os.close, self.fd)
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
            st = os.stat(self.home)
        except FileNotFoundError:
            return True
        return (st.st_dev, st.st_ino) != self._pinned

    def _at(self, name: bytes) -> bytes:
        return name if self.fd >= 0 else os.path.join(self.home, name)

    def _dir_fd(self) -> int | None:
        return self.fd if self.fd >= 0 else None

    def open(self, name: bytes, flags: int, mode: int = 0o644) -> int:
        return os.open(self._at(name), flags | _FLAGS, mode, dir_fd=self._dir_fd())

    def stat(self, name: bytes) -> os.stat_result:
        return os.stat(self._at(name), dir_fd=self._dir_fd(), follow_symlinks=False)

    def unlink(self, name: bytes) -> None:
        os.unlink(self._at(name), dir_fd=self._dir_fd())

    def rename(self, old: bytes, new: bytes) -> None:
        os.replace(self._at(old), self._at(new), src_dir_fd=self._dir_fd(), dst_dir_fd=self._dir_fd())

    def link(self, old: bytes, new: bytes) -> None:
        os.link(self._at(old), self._at(new), src_dir_fd=self._dir_fd(), dst_dir_fd=self._dir_fd())

    def names(self) -> list[bytes]:
        return [os.fsencode(name) for name in os.listdir(self.fd if self.fd >= 0 else self.home)]

    def sync(self) -> None:
        """Make the directory's entries durable (nothing to do where it is not held open)."""
        if self.fd >= 0:
            os.fsync(self.fd)

    def exchange(self, first: bytes, second: bytes) -> bool:
        """``exchange`` in this directory."""
        return exchange(self.fd, first, second)

    def rename_noreplace(self, first: bytes, second: bytes) -> bool:
        """``rename_noreplace`` in this directory."""
        return rename_noreplace(self.fd, first, second)


def _renameat2() -> Callable[[int, bytes, int, bytes, int], int] | None:
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


_RENAMEAT2: Final = _renameat2()


def _renameat2_in(dirfd: int, first: bytes, second: bytes, flags: int) -> bool:
    if _RENAMEAT2 is None or dirfd < 0:
        return False
    while _RENAMEAT2(dirfd, first, dirfd, second, flags) != 0:
        err = ctypes.get_errno()
        if err == errno.EINTR:
            continue
        if err in (errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP, errno.EPERM):
            return False  # no renameat2, or a file system without this flag
        raise OSError(err, os.strerror(err), os.fsdecode(second))
    return True


def exchange(dirfd: int, first: bytes, second: bytes) -> bool:
    """Swap the names ``first`` and ``second`` in ``dirfd`` at once; False where that cannot be done.

    OSError (ENOENT) when either name is gone.
    """
    return _renameat2_in(dirfd, first, second, _RENAME_EXCHANGE)


def rename_noreplace(dirfd: int, first: bytes, second: bytes) -> bool:
    """Rename ``first`` to ``second`` unless ``second`` exists (FileExistsError); False where it cannot."""
    return _renameat2_in(dirfd, first, second, _RENAME_NOREPLACE)


def read_lease(fd: int) -> Lease:
    """Take a read lease on ``fd`` (opened read-only), if no process has the file open for writing."""
    if not sys.platform.startswith("linux"):
        return Lease.UNAVAILABLE
    try:
        fcntl.fcntl(fd, _F_SETSIG, signal.SIGURG)  # before the lease: a break never sends SIGIO
        fcntl.fcntl(fd, _F_SETLEASE, _F_RDLCK)
    except OSError as exc:
        if exc.errno == errno.EAGAIN:
            return Lease.WRITERS
        return Lease.UNAVAILABLE  # EACCES: not the owner; EINVAL: a file system without leases
    return Lease.HELD


def lease_broken(fd: int) -> bool:
    """Has a process started to open the file for writing since ``fd``'s lease was taken?"""
    return int(fcntl.fcntl(fd, _F_GETLEASE)) != _F_RDLCK


def release_lease(fd: int) -> None:
    """Let the lease go: a writer waiting for it opens the file now."""
    fcntl.fcntl(fd, _F_SETLEASE, _F_UNLCK)
