"""Pure-Python twin of the compiled ``_capread`` reader.

Same function, same arguments, same results as ``_capread.pyx``; it is used
when the extension is not built or ``TOOLNEXUS_SOUL_NO_EXTENSIONS=1`` is set.
Everything that decides *what* a soul looks like lives in ``_compose``; this
module only answers "what bytes does each bootstrap file hold, capped, and
decoded", following SPEC §3.1-§3.4 and §4.
"""

from __future__ import annotations

import errno
import os
import stat
import sys
import time
from collections.abc import Callable, Sequence

__all__ = [
    "FOLLOW",
    "MISSING",
    "NOT_REGULAR",
    "PRESENT",
    "REFUSE",
    "REFUSED",
    "UNREADABLE",
    "WITHIN",
    "WITHIN_PORTABLE",
    "Entry",
    "read_home",
    "read_homes",
]

# Status codes of an entry (first item of each result tuple).
PRESENT = 0
MISSING = 1
NOT_REGULAR = 2
UNREADABLE = 3
REFUSED = 4

# Symlink policies (the ``symlinks`` argument).
FOLLOW = 0
WITHIN = 1  # openat2(RESOLVE_BENEATH) where the kernel has it, else WITHIN_PORTABLE
REFUSE = 2
WITHIN_PORTABLE = 3  # the fallback of WITHIN, selectable directly so it can be tested

# (status, errno, file type bits, bytes read, truncated, stable, text)
Entry = tuple[int, int, int, int, bool, bool, "str | None"]

_PAGE = 4096
_MAX_TRIES = 3
# A change this recent may share its timestamps with the next one: the kernel
# stamps files from a clock that ticks every 1-10 ms.
_RECENT_NS = 100_000_000
_VERIFY_CHUNK = 16 * 1024
_O_PATH = getattr(os, "O_PATH", 0)
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_FILE_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_NOCTTY", 0)
    | getattr(os, "O_BINARY", 0)
)
_DIR_FLAGS = (_O_PATH or os.O_RDONLY) | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)
_HAVE_DIR_FD = os.open in os.supports_dir_fd
_yield = getattr(os, "sched_yield", lambda: None)
_BOM = b"\xef\xbb\xbf"
# errnos that mean "nothing usable is there": the name or a parent is absent.
_ABSENT = frozenset({errno.ENOENT, errno.ENOTDIR})
# O_NOFOLLOW on a symlink fails with ELOOP on Linux and macOS, EMLINK on FreeBSD.
_SYMLINK_REFUSED = frozenset({errno.ELOOP, errno.EMLINK})


def _openat2_beneath() -> Callable[[int, bytes], int] | None:
    """Return a callable ``(dirfd, name) -> fd`` using openat2, or None."""
    if not sys.platform.startswith("linux") or _O_PATH == 0:
        return None
    import ctypes  # noqa: PLC0415 - only Linux needs it, and only here

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        syscall = libc.syscall
    except (OSError, AttributeError):
        return None
    syscall.restype = ctypes.c_long

    class OpenHow(ctypes.Structure):
        _fields_ = (
            ("flags", ctypes.c_uint64),
            ("mode", ctypes.c_uint64),
            ("resolve", ctypes.c_uint64),
        )

    # RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS, as the compiled reader asks.
    how = OpenHow(_FILE_FLAGS, 0, 0x08 | 0x02)
    nr = ctypes.c_long(437)  # SYS_openat2: one number on every Linux ABI we build for
    size = ctypes.c_size_t(ctypes.sizeof(how))
    ref = ctypes.byref(how)

    def openat2(dirfd: int, name: bytes) -> int:
        while True:
            fd = int(syscall(nr, ctypes.c_long(dirfd), ctypes.c_char_p(name), ref, size))
            if fd >= 0:
                return fd
            err = ctypes.get_errno()
            if err != errno.EINTR:
                raise OSError(err, os.strerror(err))

    return openat2


_openat2 = _openat2_beneath()


def _open(dirfd: int, directory: bytes, name: bytes, flags: int) -> int:
    if dirfd >= 0:
        return os.open(name, flags, dir_fd=dirfd)
    return os.open(os.path.join(directory, name), flags)


def _open_nofollow(dirfd: int, directory: bytes, name: bytes) -> int:
    """Open ``name`` unless it is a symlink (ELOOP, as O_NOFOLLOW says)."""
    if _O_NOFOLLOW:
        return _open(dirfd, directory, name, _FILE_FLAGS | _O_NOFOLLOW)
    # No O_NOFOLLOW (Windows): check, then open. A link swapped in between is
    # followed: best effort only, as the documentation says.
    if os.path.islink(os.path.join(directory, name)):
        raise OSError(errno.ELOOP, os.strerror(errno.ELOOP))
    return _open(dirfd, directory, name, _FILE_FLAGS)


def _open_within_portable(dirfd: int, directory: bytes, name: bytes) -> int:
    """Open ``name`` allowing at most one symlink whose target is a plain name.

    The portable stand-in for RESOLVE_BENEATH: a target with a ``/`` (absolute,
    ``..``, or in a subdirectory) is refused, and the target itself is opened
    with O_NOFOLLOW, so a swap between check and open cannot lead outside.
    """
    try:
        return _open_nofollow(dirfd, directory, name)
    except OSError as exc:
        if exc.errno not in _SYMLINK_REFUSED:
            raise
    target = os.readlink(name, dir_fd=dirfd) if dirfd >= 0 else os.readlink(os.path.join(directory, name))
    if b"/" in target or target in (b"", b".", b".."):
        raise OSError(errno.EXDEV, os.strerror(errno.EXDEV))
    return _open_nofollow(dirfd, directory, target)


def _open_entry(dirfd: int, directory: bytes, name: bytes, symlinks: int) -> int:
    if symlinks == FOLLOW:
        return _open(dirfd, directory, name, _FILE_FLAGS)
    if symlinks == REFUSE:
        return _open_nofollow(dirfd, directory, name)
    if symlinks == WITHIN and _openat2 is not None and dirfd >= 0:
        try:
            return _openat2(dirfd, name)
        except OSError as exc:
            # ENOSYS: old kernel; EPERM: a seccomp filter that denies it.
            if exc.errno not in (errno.ENOSYS, errno.EPERM):
                raise
    return _open_within_portable(dirfd, directory, name)


def _classify_open_error(err: int, symlinks: int) -> int:
    if err in _ABSENT:
        return MISSING
    if err == errno.EXDEV and symlinks in (WITHIN, WITHIN_PORTABLE):
        return REFUSED
    if err in _SYMLINK_REFUSED and symlinks in (REFUSE, WITHIN_PORTABLE):
        return REFUSED
    if err in (errno.ENXIO, errno.EOPNOTSUPP):  # a socket (Linux; macOS), or a driverless device
        return NOT_REGULAR
    return UNREADABLE


def _read_capped(fd: int, want: int, size_hint: int) -> tuple[bytes | bytearray, bool]:
    """Read from the file's start until EOF or ``want`` bytes, trusting no size.

    Also says whether a single read() call did it all.
    """
    ask = min(want, max(size_hint + 1, _PAGE))
    data = os.read(fd, ask)
    # A short read that lands on the size fstat gave is end of file; a
    # pseudo-file (procfs reports 0, sysfs 4096) goes on until read says 0.
    if len(data) == want or not data or (len(data) < ask and len(data) == size_hint):
        return data, True
    buf = bytearray(data)
    while len(buf) < want:
        chunk = os.read(fd, want - len(buf))
        if not chunk:
            break
        buf += chunk
    return buf, False


def _trusted(got: int, before: os.stat_result, one_read: bool) -> bool:
    """Can a read be trusted without a second fstat? (SPEC §4)

    Yes for one page, got by one read() call, no longer than fstat said.
    More than a page may span an in-place rewrite; so may a short read
    followed by more; and more bytes than the size means the file changed
    under the read (a read racing a truncate and rewrite can even return a
    stale page's zeros up to the new size).
    """
    return one_read and got <= _PAGE and got <= before.st_size


def _fits(got: int, st: os.stat_result) -> bool:
    """No more bytes than the file holds (pseudo-files, which say 0, excepted)."""
    return got <= st.st_size or st.st_size == 0


def _recent(st: os.stat_result) -> bool:
    """Changed so lately that its timestamps cannot tell two writes apart?"""
    return st.st_ctime_ns >= time.time_ns() - _RECENT_NS


def _verify(fd: int, data: bytes | bytearray) -> bool:
    """Does the file still hold ``data``? Compared a slice at a time."""
    with memoryview(data) as view:
        done = 0
        while done < len(data):
            chunk = os.pread(fd, min(_VERIFY_CHUNK, len(data) - done), done)
            if not chunk or view[done : done + len(chunk)] != chunk:
                return False
            done += len(chunk)
    return True


def _same(a: os.stat_result, b: os.stat_result) -> bool:
    return (a.st_size, a.st_mtime_ns, a.st_ctime_ns) == (b.st_size, b.st_mtime_ns, b.st_ctime_ns)


def _read_entry(fd: int, cap: int) -> Entry:
    before = os.fstat(fd)
    kind = stat.S_IFMT(before.st_mode)
    if kind != stat.S_IFREG:
        return (NOT_REGULAR, 0, kind, 0, False, True, None)
    data, one_read = _read_capped(fd, cap + 1, before.st_size)
    stable = _trusted(len(data), before, one_read)
    tries = 1
    while not stable:
        # A writer rewriting in place could have torn it: look again.
        after = os.fstat(fd)
        if (
            _same(before, after)
            and _fits(len(data), after)
            and ((tries == 1 and not _recent(after)) or _verify(fd, data))
        ):
            stable = True
        elif tries == _MAX_TRIES:
            break
        else:
            # Let the writer finish what it is writing before looking again.
            _yield()
            before = after
            os.lseek(fd, 0, os.SEEK_SET)
            data, one_read = _read_capped(fd, cap + 1, before.st_size)
            stable = _trusted(len(data), before, one_read)
            tries += 1
    size = len(data)
    truncated = size > cap
    end = size
    if truncated:
        end = cap
        floor = max(cap - 3, 0)
        while end > floor and data[end] & 0xC0 == 0x80:
            end -= 1
    start = 3 if end >= 3 and data.startswith(_BOM) else 0
    text = str(memoryview(data)[start:end], "utf-8", "replace")
    return (PRESENT, 0, kind, size, truncated, stable, text)


def read_home(directory: bytes, names: Sequence[bytes], cap: int, symlinks: int) -> list[Entry]:
    """Read each of ``names`` inside ``directory``, at most ``cap + 1`` bytes each.

    ``directory`` is a filesystem path as bytes; ``names`` are plain file
    names (no ``/``); ``cap`` >= 1 is the byte cap; ``symlinks`` is one of
    FOLLOW, WITHIN, REFUSE, WITHIN_PORTABLE. Returns one tuple per name, in
    order: ``(status, errno, file type bits, bytes read, truncated, stable,
    text)``. ``text`` is the capped body, backed off to a character boundary,
    without a leading BOM, decoded as UTF-8 with U+FFFD replacement; it is
    None unless status is PRESENT. Never raises for a file's trouble: that is
    what status and errno report.
    """
    if cap < 1:
        raise ValueError("cap must be >= 1")
    if b"\0" in directory:
        raise ValueError("embedded null byte")
    for name in names:
        if not isinstance(name, bytes):
            raise TypeError(f"names must be bytes, not {type(name).__name__}")
    dirfd = -1
    if _HAVE_DIR_FD:
        try:
            dirfd = os.open(directory, _DIR_FLAGS)
        except OSError as exc:
            err = exc.errno or errno.EIO
            status = MISSING if err in _ABSENT else UNREADABLE
            return [(status, err, 0, 0, False, True, None) for _ in names]
    try:
        results: list[Entry] = []
        for name in names:
            try:
                fd = _open_entry(dirfd, directory, name, symlinks)
            except OSError as exc:
                err = exc.errno or errno.EIO
                results.append((_classify_open_error(err, symlinks), err, 0, 0, False, True, None))
                continue
            try:
                results.append(_read_entry(fd, cap))
            except OSError as exc:
                err = exc.errno or errno.EIO
                results.append((UNREADABLE, err, stat.S_IFREG, 0, False, True, None))
            finally:
                os.close(fd)
        return results
    finally:
        if dirfd >= 0:
            os.close(dirfd)


def read_homes(
    directories: Sequence[bytes], names: Sequence[bytes], cap: int, symlinks: int
) -> list[list[Entry]]:
    """``[read_home(d, names, cap, symlinks) for d in directories]``, in one call.

    The compiled reader does the I/O of many homes without taking the GIL
    back in between, which is what lets threads composing many homes overlap.
    """
    for directory in directories:
        if not isinstance(directory, bytes):
            raise TypeError(f"directories must be bytes, not {type(directory).__name__}")
    return [read_home(directory, names, cap, symlinks) for directory in directories]
