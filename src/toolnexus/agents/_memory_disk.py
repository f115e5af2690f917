"""The memory file on disk: read fresh under a lock, written whole, never over another writer's text.

One ``Disk`` per memory file. ``Disk.session()`` opens the home (checking
that it is still the directory the tool was made for), takes an exclusive
``flock`` on ``.NAME.lock`` beside the file (released by the kernel if the
process dies, so it is never stale), and removes what a killed writer may
have left (``.NAME.tmp-*``). Within a session:

- ``read`` gives the file as it is now (a ``Version``: bytes and identity).
- ``publish`` writes a whole new text: a synced temporary file, a compare
  and swap (the name must still be the version read: same inode, size and
  timestamps, else ``Changed``), then ``renameat2(RENAME_EXCHANGE)``, so
  the version that stood at the name at that instant is in hand. Bytes
  appended to it after it was read are carried over to the new file. Any
  other change to it (an editor's save, by rename or in place) means the
  check was beaten: that file is swapped straight back, with any lines
  written over ours in the microseconds between, and ``Raced`` tells the
  caller to read again and redo. A new file is created with
  ``RENAME_NOREPLACE`` (or a hard link), so it never replaces one that
  has just appeared. Where the file system cannot exchange, a plain
  rename does, and the window between the check and the rename is open.
- The directory is synced after a rename, so a returned write survives a
  crash.
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import re
import secrets
import stat
import sys
import time
import weakref
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from typing import Final, NamedTuple, cast

if sys.platform == "win32":  # pragma: no cover - no flock: a byte-range lock on the lock file
    import msvcrt

    def _lock_exclusive(fd: int) -> None:
        while True:
            try:
                msvcrt.locking(fd, msvcrt.LK_LOCK, 1)
                return
            except OSError:  # LK_LOCK gives up after ten seconds: wait on
                continue

else:
    import fcntl

    def _lock_exclusive(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_EX)


__all__ = ["MAX_NAME_BYTES", "Changed", "Disk", "Raced", "Refused", "Session", "Version"]

# How long the file a swap replaced is watched for a writer that opened it
# just before (2 ms: a shell's or an editor's open-write-close takes tens of us).
WATCH: Final = 0.002
MAX_READ: Final = 64 * 1024 * 1024  # a memory file is small; one larger than this is refused, not read
# Temporary files are ".NAME.tmp-" and 16 hex digits; a file system's names
# hold 255 bytes at most, so NAME may hold 233.
TEMP_TOKEN_BYTES: Final = 8
MAX_NAME_BYTES: Final = 255 - len(".") - len(".tmp-") - 2 * TEMP_TOKEN_BYTES
_TEMP_TOKEN: Final = re.compile(rb"[0-9a-f]{%d}" % (2 * TEMP_TOKEN_BYTES))
_FLAGS: Final = getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)
_HAVE_DIR_FD: Final = os.open in os.supports_dir_fd


class Refused(OSError):
    """The tool will not touch this file: a symlink, not a regular file, a home replaced..."""


class Changed(Exception):
    """The file changed between read and write: read it again and redo."""


class Raced(Exception):
    """A publish found, in the swap, that another writer had saved the file: it put that file back.

    Nothing of the new text is in place: read the file again and redo.
    """


class Version(NamedTuple):
    """The file as a read found it."""

    data: bytes
    ident: tuple[int, int, int, int, int] | None  # dev, ino, size, mtime_ns, ctime_ns; None: no file
    mode: int  # the permission bits a rewrite keeps


def _ident(st: os.stat_result) -> tuple[int, int, int, int, int]:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


# ---- renameat2, for RENAME_EXCHANGE (Linux 3.15 and later) -------------------

_RENAME_NOREPLACE: Final = 1
_RENAME_EXCHANGE: Final = 2
# renameat2's system call number where libc has no wrapper (musl, old glibc).
_SYSCALLS: Final = {"x86_64": 316, "aarch64": 276, "riscv64": 276, "i686": 353, "i386": 353, "armv7l": 382}


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


def _exchange(dirfd: int, first: bytes, second: bytes, flags: int = _RENAME_EXCHANGE) -> bool:
    """Swap the two names in ``dirfd`` atomically; False if the system or file system cannot.

    With ``_RENAME_NOREPLACE``: rename ``first`` to ``second`` unless
    ``second`` exists (``FileExistsError``).
    """
    if _RENAMEAT2 is None or dirfd < 0:
        return False
    while _RENAMEAT2(dirfd, first, dirfd, second, flags) != 0:
        err = ctypes.get_errno()
        if err == errno.EINTR:
            continue
        if err in (errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP, errno.EPERM):
            return False  # no renameat2, or a file system without this flag
        raise OSError(err, os.strerror(err))
    return True


# ---- the session ----------------------------------------------------------------


class Session:
    """One locked operation on the memory file ``name`` in the directory ``dirfd``."""

    def __init__(self, dirfd: int, home: bytes, name: str) -> None:
        self._dirfd = dirfd
        self._home = home
        self.name = name
        self._name = os.fsencode(name)
        self._temp_prefix = os.fsencode(f".{name}.tmp-")

    # -- paths relative to the home ------------------------------------------------

    def _open(self, name: bytes, flags: int, mode: int = 0o644) -> int:
        if self._dirfd >= 0:
            return os.open(name, flags | _FLAGS, mode, dir_fd=self._dirfd)
        return os.open(os.path.join(self._home, name), flags | _FLAGS, mode)

    def _stat(self, name: bytes) -> os.stat_result:
        if self._dirfd >= 0:
            return os.stat(name, dir_fd=self._dirfd, follow_symlinks=False)
        return os.stat(os.path.join(self._home, name), follow_symlinks=False)

    def _unlink(self, name: bytes) -> None:
        if self._dirfd >= 0:
            os.unlink(name, dir_fd=self._dirfd)
        else:
            os.unlink(os.path.join(self._home, name))

    def _rename(self, old: bytes, new: bytes) -> None:
        if self._dirfd >= 0:
            os.replace(old, new, src_dir_fd=self._dirfd, dst_dir_fd=self._dirfd)
        else:
            os.replace(os.path.join(self._home, old), os.path.join(self._home, new))

    def _sync_directory(self) -> None:
        if self._dirfd >= 0:
            os.fsync(self._dirfd)

    # -- what a killed writer left ---------------------------------------------------

    def clean(self) -> None:
        """Remove temporary files of this memory file that a killed writer left behind (under the lock)."""
        try:
            names = os.listdir(self._dirfd if self._dirfd >= 0 else self._home)
        except OSError:
            return
        for entry in names:
            raw = os.fsencode(entry)
            # Exactly the names publish() makes: another memory file's own
            # files (those of "MEMORY.md.tmp-notes") share the prefix.
            if raw.startswith(self._temp_prefix) and _TEMP_TOKEN.fullmatch(raw[len(self._temp_prefix) :]):
                with suppress(FileNotFoundError, IsADirectoryError, PermissionError):  # a directory: not ours
                    self._unlink(raw)

    # -- reading ---------------------------------------------------------------------

    def read(self) -> Version:
        """The file as it is now; an empty Version when there is none."""
        try:
            fd = self._open(self._name, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        except FileNotFoundError:
            return Version(b"", None, 0o644)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.EMLINK):
                raise Refused(
                    errno.ELOOP, f"{self.name} is a symlink: the memory tool writes only a file of its own"
                ) from None
            if exc.errno in (errno.ENXIO, errno.EOPNOTSUPP):  # a socket, or a device without a driver
                raise Refused(exc.errno, f"{self.name} is not a regular file") from None
            raise
        try:
            return _read_fd(fd, self.name)
        finally:
            os.close(fd)

    # -- writing ---------------------------------------------------------------------

    def publish(self, version: Version, data: bytes) -> None:
        """Put ``data`` in the place of the file read as ``version``; ``Changed`` or ``Raced``: not done."""
        temp = self._temp_prefix + secrets.token_hex(TEMP_TOKEN_BYTES).encode()
        fd = self._open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, version.mode)
        try:
            _write_all(fd, data)
            os.fsync(fd)
        except BaseException:
            os.close(fd)
            self._unlink(temp)
            raise
        os.close(fd)
        try:
            self._check_unchanged(version)
            if version.ident is None:
                self._create(temp)  # no file to keep: the name must still be free
                return
            if not _exchange(self._dirfd, temp, self._name):
                self._rename(temp, self._name)  # no exchange on this file system: the window is open
                self._sync_directory()
                return
            # The name now holds ``data``; ``temp`` holds what stood there at the swap.
            if not self._carry_over(version, temp):
                self._swap_back(temp, version, data)
                raise Raced
        finally:
            with suppress(FileNotFoundError):
                self._unlink(temp)

    def _check_unchanged(self, version: Version) -> None:
        try:
            now: tuple[int, int, int, int, int] | None = _ident(self._stat(self._name))
        except FileNotFoundError:
            now = None
        if now != version.ident:
            raise Changed

    def _create(self, temp: bytes) -> None:
        """Give ``temp`` the file's name if no file has it (``Changed`` if one has appeared)."""
        try:
            if not _exchange(self._dirfd, temp, self._name, _RENAME_NOREPLACE):
                # A hard link never replaces either, where renameat2 is missing.
                if self._dirfd >= 0:
                    os.link(temp, self._name, src_dir_fd=self._dirfd, dst_dir_fd=self._dirfd)
                else:  # pragma: no cover - Windows, whose rename never replaces
                    os.rename(os.path.join(self._home, temp), os.path.join(self._home, self._name))
        except FileExistsError:
            raise Changed from None
        self._sync_directory()

    def _carry_over(self, version: Version, swapped: bytes) -> bool:
        """Whether the file swapped out is still the one read; bytes appended to it go to the new file.

        It is looked at at once (False, when it is not, for the caller to
        swap it back before anyone reads the text that lacks its writer's),
        and again ``WATCH`` seconds after the swap (the directory is synced
        meanwhile), because a writer that opened it by name just before the
        swap writes to it just after.
        """
        assert version.ident is not None
        deadline = time.monotonic() + WATCH
        fd = self._open(swapped, os.O_RDONLY)
        try:
            carried = self._appended_to(fd, version, len(version.data))
            if carried < 0:
                return False
            self._sync_directory()
            time.sleep(max(0.0, deadline - time.monotonic()))
            return self._appended_to(fd, version, carried) >= 0
        finally:
            os.close(fd)

    def _appended_to(self, fd: int, version: Version, carried: int) -> int:
        """Carry what was appended to ``fd`` past ``carried`` over to the file; -1 if it changed otherwise.

        Its timestamps cannot tell (the swap itself changes its ctime): it is
        the file read if it is the same inode and begins with the bytes read.
        Anything else is another writer's save, by rename or in place.
        """
        assert version.ident is not None
        while True:
            st = os.fstat(fd)
            same = (st.st_dev, st.st_ino) == version.ident[:2] and st.st_size >= carried
            if not same or os.pread(fd, len(version.data), 0) != version.data:
                return -1
            if st.st_size == carried:
                return carried
            extra = os.pread(fd, st.st_size - carried, carried)
            self._append_raw(extra)
            carried += len(extra)

    def _swap_back(self, temp: bytes, version: Version, data: bytes) -> None:
        """Put the other writer's file back at the name, and keep what was written over ours meanwhile.

        In the microseconds between the two swaps a shell may have appended
        to the new file, or an editor saved over it (an edit of it, or of
        the file it had read before the first swap): their lines that the
        file put back lacks (but for those of this change, which is redone)
        are added to it at once, and again after ``WATCH`` for late writes.
        """
        if not _exchange(self._dirfd, temp, self._name):  # pragma: no cover - it just worked
            raise OSError(errno.EIO, f"{self.name}: could not swap the other writer's file back")
        deadline = time.monotonic() + WATCH
        this_change = _line_counts(data) - _line_counts(version.data)
        self._keep_lines(temp, this_change)
        self._sync_directory()
        time.sleep(max(0.0, deadline - time.monotonic()))
        self._keep_lines(temp, this_change)

    def _keep_lines(self, temp: bytes, this_change: Counter[bytes]) -> None:
        """Add to the file at the name the lines of ``temp`` it lacks, but for ``this_change``'s."""
        fd = self._open(temp, os.O_RDONLY)
        try:
            theirs = _read_fd(fd, self.name).data
        finally:
            os.close(fd)
        lacking = _line_counts(theirs) - _line_counts(self.read().data) - this_change
        newline = b"\r\n" if theirs.split(b"\n", 1)[0].endswith(b"\r") else b"\n"
        added = []
        for line in theirs.splitlines():
            key = line.rstrip(b"\r")
            if lacking[key] > 0:
                lacking[key] -= 1
                added.append(key + newline)
        if added:
            self._append_raw(b"".join(added), after_line_end=True)

    def _append_raw(self, data: bytes, *, after_line_end: bool = False) -> None:
        fd = self._open(self._name, os.O_RDWR | os.O_APPEND)
        try:
            if after_line_end:
                size = os.fstat(fd).st_size
                if size and os.pread(fd, 1, size - 1) != b"\n":
                    data = b"\n" + data
            _write_all(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)


def _read_fd(fd: int, name: str) -> Version:
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        raise Refused(errno.EINVAL, f"{name} is not a regular file")
    if st.st_size > MAX_READ:
        raise Refused(errno.EFBIG, f"{name} is {st.st_size:,} bytes: too large for the memory tool")
    chunks = []
    at = 0
    while True:
        chunk = os.pread(fd, 1 << 20, at)
        if not chunk:
            break
        chunks.append(chunk)
        at += len(chunk)
        if at > MAX_READ:
            raise Refused(errno.EFBIG, f"{name} is too large for the memory tool")
    return Version(b"".join(chunks), _ident(st), stat.S_IMODE(st.st_mode))


def _line_counts(data: bytes) -> Counter[bytes]:
    """How often each line that is not blank is in ``data`` (line ends left out)."""
    return Counter(line.rstrip(b"\r") for line in data.splitlines() if line.strip())


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


class Disk:
    """One memory file of one home, as the tool found the home when it was made.

    The home's directory stays open while the ``Disk`` lives (one
    descriptor, closed when it is collected): every operation works in
    that directory, and refuses if the home's path has come to lead
    elsewhere. Held open, the directory's inode cannot be reused by a
    directory made again at the same path.
    """

    def __init__(self, home: bytes, name: str) -> None:
        self.home = home
        self.name = name
        if _HAVE_DIR_FD:
            fd = os.open(home, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0))
            self._dirfd = fd
            weakref.finalize(self, os.close, fd)
            st = os.fstat(fd)
        else:  # pragma: no cover - Windows: paths, and a check by stat
            self._dirfd = -1
            st = os.stat(home)
            if not stat.S_ISDIR(st.st_mode):
                raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), os.fsdecode(home))
        self._pinned = (st.st_dev, st.st_ino)

    @contextmanager
    def session(self) -> Iterator[Session]:
        """The memory file, locked for this operation alone."""
        self._check_home()
        lock = self._lock()
        try:
            session = Session(self._dirfd, self.home, self.name)
            session.clean()
            yield session
        finally:
            os.close(lock)  # releases the lock

    def read(self) -> Version:
        """The file as it is now, without the lock (every write replaces it whole)."""
        self._check_home()
        return Session(self._dirfd, self.home, self.name).read()

    def _check_home(self) -> None:
        """Refuse if the home's path no longer leads to the directory the tool was made for."""
        try:
            st = os.stat(self.home)
        except FileNotFoundError:
            st = None
        if st is None or (st.st_dev, st.st_ino) != self._pinned:
            raise Refused(
                errno.EXDEV,
                f"{os.fsdecode(self.home)} is no longer the directory this memory tool was made for",
            )

    def _lock(self) -> int:
        name = os.fsencode(f".{self.name}.lock")
        flags = os.O_RDWR | os.O_CREAT | _FLAGS
        try:
            if self._dirfd >= 0:
                fd = os.open(name, flags, 0o644, dir_fd=self._dirfd)
            else:  # pragma: no cover - Windows
                fd = os.open(os.path.join(self.home, name), flags, 0o644)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.EMLINK):
                raise Refused(exc.errno, f".{self.name}.lock is a symlink") from None
            if exc.errno == errno.EISDIR:
                raise Refused(
                    exc.errno, f".{self.name}.lock is a directory: it must be the tool's lock file"
                ) from None
            raise
        try:
            _lock_exclusive(fd)
        except BaseException:
            os.close(fd)
            raise
        return fd
