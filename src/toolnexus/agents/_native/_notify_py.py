"""Linux inotify for ``SoulCache``, in pure Python: the twin of the compiled ``_notify``.

The system calls go through ``ctypes`` to the C library; reading the queue
is a plain non-blocking ``os.read``. Importing this module raises
ImportError where the C library has no inotify (anything but Linux). Which
paths to watch and what an event means is decided in ``_cache._watch``.
"""

from __future__ import annotations

import ctypes
import errno
import os
import struct
import sys

__all__ = ["add_watch", "drain", "filesystem_type", "open_queue", "remove_watch"]

if not sys.platform.startswith("linux"):
    raise ImportError("inotify is Linux's")

_libc = ctypes.CDLL(None, use_errno=True)
try:
    _inotify_init1 = _libc.inotify_init1
    _inotify_add_watch = _libc.inotify_add_watch
    _inotify_rm_watch = _libc.inotify_rm_watch
    _statfs = _libc.statfs
except AttributeError as exc:  # a C library without them
    raise ImportError(f"no inotify in this C library: {exc}") from None
_inotify_init1.argtypes = [ctypes.c_int]
_inotify_add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
_inotify_rm_watch.argtypes = [ctypes.c_int, ctypes.c_int]
_statfs.argtypes = [ctypes.c_char_p, ctypes.c_void_p]

# inotify's flags are open()'s, by definition, on every architecture.
_FLAGS = os.O_NONBLOCK | os.O_CLOEXEC
_EVENT = struct.Struct("iIII")  # wd, mask, cookie, len; the name follows
# struct statfs is 120 bytes on 64-bit Linux (84 on 32-bit); f_type, a C long, comes first.
_STATFS_SIZE = 256


def _raise(path: bytes | None = None) -> None:
    err = ctypes.get_errno() or errno.EIO
    if path is None:
        raise OSError(err, os.strerror(err))
    raise OSError(err, os.strerror(err), path)


def open_queue() -> int:
    """A new inotify descriptor, non-blocking and close-on-exec; OSError if there is none to be had."""
    fd = int(_inotify_init1(_FLAGS))
    if fd < 0:
        _raise()
    return fd


def add_watch(fd: int, path: bytes, mask: int) -> int:
    """Watch ``path`` (following symlinks unless ``mask`` says not to); returns the watch descriptor.

    The kernel watches an inode once per queue: a second path to the same
    inode returns the same descriptor (``IN_MASK_ADD`` in ``mask`` widens
    its mask instead of replacing it). OSError as ``inotify_add_watch`` says:
    ENOENT, ENOTDIR, EACCES, and ENOSPC when the user's watches run out.
    """
    wd = int(_inotify_add_watch(fd, path, mask))
    if wd < 0:
        _raise(path)
    return wd


def remove_watch(fd: int, wd: int) -> None:
    """Stop watching ``wd``; one the kernel already dropped (EINVAL) is no error."""
    if _inotify_rm_watch(fd, wd) < 0 and ctypes.get_errno() != errno.EINVAL:
        _raise()


def drain(fd: int) -> list[tuple[int, int, bytes]] | None:
    """Every event queued on ``fd``, as ``[(wd, mask, name), ...]``, or None when there is none.

    ``name`` is the entry the event is about, as bytes, or ``b""`` for the
    watched inode itself (and for ``IN_Q_OVERFLOW``, whose ``wd`` is -1).
    Never blocks: ``fd`` is non-blocking.
    """
    events: list[tuple[int, int, bytes]] | None = None
    while True:
        try:
            data = os.read(fd, 8192)
        except BlockingIOError:
            return events
        if not data:
            return events
        if events is None:
            events = []
        at = 0
        while at + _EVENT.size <= len(data):
            wd, mask, _, length = _EVENT.unpack_from(data, at)
            at += _EVENT.size
            # The name is padded with NULs to an aligned length.
            events.append((wd, mask, data[at : at + length].split(b"\0", 1)[0]))
            at += length


def filesystem_type(path: bytes) -> int:
    """The ``f_type`` magic number ``statfs`` gives for the filesystem holding ``path``."""
    info = ctypes.create_string_buffer(_STATFS_SIZE)
    if _statfs(path, info) < 0:
        _raise(path)
    return ctypes.c_long.from_buffer(info).value
