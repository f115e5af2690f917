# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
# cython: freethreading_compatible=True
"""Compiled twin of ``_notify_py``: Linux inotify for ``SoulCache``.

Same functions, arguments, results and docstrings as ``_notify_py.py``; the
difference is the cost of ``drain`` on an empty queue, which ``SoulCache``
pays on every warm call: one ``read`` and no exception (the pure twin's
``os.read`` raises ``BlockingIOError``). The GIL is kept: releasing and
taking it back would cost as much as the read itself. Which paths to watch
and what an event means is decided in ``_cache._watch``.
"""

import os

from cpython.bytes cimport PyBytes_FromStringAndSize
from libc.errno cimport EAGAIN, EINTR, EINVAL, errno
from libc.stdint cimport uint32_t
from posix.unistd cimport read

cdef extern from "<sys/inotify.h>" nogil:
    struct inotify_event:
        int wd
        uint32_t mask
        uint32_t cookie
        uint32_t len
        char name[1]
    int IN_NONBLOCK
    int IN_CLOEXEC
    int inotify_init1(int flags)
    int inotify_add_watch(int fd, const char *pathname, uint32_t mask)
    int inotify_rm_watch(int fd, int wd)

cdef extern from "<string.h>" nogil:
    size_t strnlen(const char *s, size_t maxlen)

cdef extern from "<sys/vfs.h>" nogil:
    struct statfs:
        long f_type
    int c_statfs "statfs" (const char *path, statfs *buf)

cdef enum:
    EVENT_HEAD = 16  # sizeof(struct inotify_event): the name follows
    # Per read(): room for at least 30 events (16 bytes and a name of at most
    # 256 each). On the stack, so that threads never share it.
    BUFFER_SIZE = 8192


cdef _raise(bytes path=None):
    err = errno
    if path is None:
        raise OSError(err, os.strerror(err))
    raise OSError(err, os.strerror(err), path)


def open_queue():
    """A new inotify descriptor, non-blocking and close-on-exec; OSError if there is none to be had."""
    cdef int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC)
    if fd < 0:
        _raise()
    return fd


def add_watch(int fd, bytes path, uint32_t mask):
    """Watch ``path`` (following symlinks unless ``mask`` says not to); returns the watch descriptor.

    The kernel watches an inode once per queue: a second path to the same
    inode returns the same descriptor (``IN_MASK_ADD`` in ``mask`` widens
    its mask instead of replacing it). OSError as ``inotify_add_watch`` says:
    ENOENT, ENOTDIR, EACCES, and ENOSPC when the user's watches run out.
    """
    cdef int wd = inotify_add_watch(fd, path, mask)
    if wd < 0:
        _raise(path)
    return wd


def remove_watch(int fd, int wd):
    """Stop watching ``wd``; one the kernel already dropped (EINVAL) is no error."""
    if inotify_rm_watch(fd, wd) < 0 and errno != EINVAL:
        _raise()


def drain(int fd):
    """Every event queued on ``fd``, as ``[(wd, mask, name), ...]``, or None when there is none.

    ``name`` is the entry the event is about, as bytes, or ``b""`` for the
    watched inode itself (and for ``IN_Q_OVERFLOW``, whose ``wd`` is -1).
    Never blocks: ``fd`` is non-blocking.
    """
    cdef char buffer[BUFFER_SIZE]
    cdef ssize_t got
    cdef size_t at
    cdef inotify_event *event
    events = None
    while True:
        got = read(fd, buffer, BUFFER_SIZE)
        if got < 0:
            if errno == EINTR:
                continue
            if errno == EAGAIN:
                return events
            _raise()
        if got == 0:
            return events
        if events is None:
            events = []
        at = 0
        while at + EVENT_HEAD <= <size_t>got:
            event = <inotify_event *>(buffer + at)
            # The name is padded with NULs to an aligned length.
            name = PyBytes_FromStringAndSize(event.name, strnlen(event.name, event.len)) if event.len else b""
            events.append((event.wd, event.mask, name))
            at += EVENT_HEAD + event.len


def filesystem_type(bytes path):
    """The ``f_type`` magic number ``statfs`` gives for the filesystem holding ``path``."""
    cdef statfs info
    if c_statfs(path, &info) < 0:
        _raise(path)
    return info.f_type
