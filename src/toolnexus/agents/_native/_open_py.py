"""How the pure reader opens a name, as the symlink policy says: the twin of the compiled reader's opening.

``open_entry`` opens a bootstrap file inside an open home (or by path where
there is no ``dir_fd``), as ``_capread.pyx`` and ``include/capread_os.h`` do:
``follow`` opens it as named; ``refuse`` with ``O_NOFOLLOW``; ``within``
with ``openat2(RESOLVE_BENEATH)`` where the kernel has it, else the
portable check. An open that fails at a name that is a symlink raises
``SymlinkError``. ``classify_open_error`` says what a failed open means.
"""

from __future__ import annotations

import errno
import os
import sys
from collections.abc import Callable

from .._vocabulary import REFUSE, WITHIN, WITHIN_PORTABLE, FileStatus, Policy

__all__ = ["ABSENT", "FILE_FLAGS", "SymlinkError", "classify_open_error", "open_entry"]

_O_PATH = getattr(os, "O_PATH", 0)
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
FILE_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_NOCTTY", 0)
    | getattr(os, "O_BINARY", 0)
)
# errnos that mean "nothing usable is there": the name or a parent is absent.
ABSENT = frozenset({errno.ENOENT, errno.ENOTDIR})
# O_NOFOLLOW on a symlink fails with ELOOP on Linux and macOS, EMLINK on FreeBSD.
_SYMLINK_REFUSED = frozenset({errno.ELOOP, errno.EMLINK})


class SymlinkError(OSError):
    """An open that failed at a name that is a symlink (with the errno it failed with)."""

    @classmethod
    def of(cls, exc: OSError) -> SymlinkError:
        return exc if isinstance(exc, SymlinkError) else cls(exc.errno, exc.strerror)


def _openat2_beneath() -> Callable[[int, bytes, int], int] | None:
    """Return a callable ``(dirfd, name, extra_flags) -> fd`` using openat2, or None."""
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
    hows = {extra: OpenHow(FILE_FLAGS | extra, 0, 0x08 | 0x02) for extra in (0, _O_NOFOLLOW)}
    nr = ctypes.c_long(437)  # SYS_openat2: one number on every Linux ABI we build for
    size = ctypes.c_size_t(ctypes.sizeof(OpenHow))
    refs = {extra: ctypes.byref(how) for extra, how in hows.items()}

    def openat2(dirfd: int, name: bytes, extra: int = 0) -> int:
        ref = refs[extra]
        while True:
            fd = int(syscall(nr, ctypes.c_long(dirfd), ctypes.c_char_p(name), ref, size))
            if fd >= 0:
                return fd
            err = ctypes.get_errno()
            if err != errno.EINTR:
                raise OSError(err, os.strerror(err))

    return openat2


_openat2 = _openat2_beneath()


def _open(dirfd: int, home: bytes, name: bytes, flags: int) -> int:
    if dirfd >= 0:
        return os.open(name, flags, dir_fd=dirfd)
    return os.open(os.path.join(home, name), flags)


def _open_nofollow(dirfd: int, home: bytes, name: bytes) -> int:
    """Open ``name`` unless it is a symlink (ELOOP, as O_NOFOLLOW says)."""
    if _O_NOFOLLOW:
        return _open(dirfd, home, name, FILE_FLAGS | _O_NOFOLLOW)
    # No O_NOFOLLOW (Windows): check, then open. A link swapped in between is
    # followed: best effort only, as the documentation says.
    if os.path.islink(os.path.join(home, name)):
        raise OSError(errno.ELOOP, os.strerror(errno.ELOOP))
    return _open(dirfd, home, name, FILE_FLAGS)


def _open_within_portable(dirfd: int, home: bytes, name: bytes) -> tuple[int, bool]:
    """Open ``name`` allowing at most one symlink whose target is a plain name; and whether it was one.

    The portable stand-in for RESOLVE_BENEATH: a target with a ``/`` (absolute,
    ``..``, or in a subdirectory) is refused, and the target itself is opened
    with O_NOFOLLOW, so a swap between check and open cannot lead outside.
    Raises ``SymlinkError`` once the name is known to be a symlink.
    """
    try:
        return _open_nofollow(dirfd, home, name), False
    except OSError as exc:
        if exc.errno not in _SYMLINK_REFUSED:
            raise
    try:
        target = os.readlink(name, dir_fd=dirfd) if dirfd >= 0 else os.readlink(os.path.join(home, name))
        if b"/" in target or target in (b"", b".", b".."):
            raise OSError(errno.EXDEV, os.strerror(errno.EXDEV))
        return _open_nofollow(dirfd, home, target), True
    except OSError as exc:
        raise SymlinkError.of(exc) from None


def open_entry(dirfd: int, home: bytes, name: bytes, policy: Policy) -> tuple[int, bool]:
    """Open ``name`` as ``policy`` says: its descriptor, and whether it was reached through a symlink.

    A name is first opened with O_NOFOLLOW: a file needs no other open, and
    for a symlink ELOOP (EMLINK on FreeBSD) says what it is. Raises the
    open's OSError: a ``SymlinkError`` when the name is a symlink.
    """
    if policy is REFUSE:
        return _open_nofollow(dirfd, home, name), False
    if policy is WITHIN_PORTABLE or (policy is WITHIN and (_openat2 is None or dirfd < 0)):
        return _open_within_portable(dirfd, home, name)
    try:
        return _open_once(dirfd, home, name, policy, _O_NOFOLLOW), False
    except OSError as exc:
        if exc.errno not in _SYMLINK_REFUSED or not _O_NOFOLLOW:
            return _within_fallback(exc, dirfd, home, name, policy)
    try:  # a symlink: followed now, as the policy says
        return _open_once(dirfd, home, name, policy, 0), True
    except OSError as exc:
        return _within_fallback(SymlinkError.of(exc), dirfd, home, name, policy)


def _open_once(dirfd: int, home: bytes, name: bytes, policy: Policy, extra: int) -> int:
    if policy is WITHIN:
        assert _openat2 is not None
        return _openat2(dirfd, name, extra)
    return _open(dirfd, home, name, FILE_FLAGS | extra)


def _within_fallback(exc: OSError, dirfd: int, home: bytes, name: bytes, policy: Policy) -> tuple[int, bool]:
    """Raise ``exc``, unless ``within`` met a kernel without openat2 (ENOSYS) or a seccomp filter (EPERM)."""
    if policy is WITHIN and exc.errno in (errno.ENOSYS, errno.EPERM):
        return _open_within_portable(dirfd, home, name)
    raise exc


def classify_open_error(err: int, policy: Policy) -> FileStatus:
    if err in ABSENT:
        return FileStatus.MISSING
    if err == errno.EXDEV and (policy is WITHIN or policy is WITHIN_PORTABLE):
        return FileStatus.REFUSED
    if err in _SYMLINK_REFUSED and (policy is REFUSE or policy is WITHIN_PORTABLE):
        return FileStatus.REFUSED
    if err in (errno.ENXIO, errno.EOPNOTSUPP):  # a socket (Linux; macOS), or a driverless device
        return FileStatus.NOT_REGULAR
    return FileStatus.UNREADABLE
