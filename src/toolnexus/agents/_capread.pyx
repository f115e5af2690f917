# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Compiled bounded reader for bootstrap files.

Same function, same arguments, same results as ``_capread_py.py``; the only
difference is speed: the directory is opened once, each file is read with the
GIL released into one C buffer, and the text is decoded straight from that
buffer. What a soul looks like is decided in ``_compose``, not here.
"""

from cpython.unicode cimport PyUnicode_DecodeUTF8
from libc.errno cimport EINTR, EIO, ENOMEM, errno
from libc.stdlib cimport free, malloc, realloc

cdef extern from *:
    """
    #include <errno.h>
    #include <fcntl.h>
    #include <sys/stat.h>
    #include <sys/types.h>
    #include <unistd.h>
    #if defined(__linux__)
    #include <sys/syscall.h>
    #endif

    #ifndef O_CLOEXEC
    #define O_CLOEXEC 0
    #endif
    #ifndef O_NOCTTY
    #define O_NOCTTY 0
    #endif
    #ifndef O_DIRECTORY
    #define O_DIRECTORY 0
    #endif
    /* O_PATH needs only search permission on the directory, as a path does. */
    #ifdef O_PATH
    #define TNX_DIR_FLAGS (O_PATH | O_DIRECTORY | O_CLOEXEC)
    #else
    #define TNX_DIR_FLAGS (O_RDONLY | O_DIRECTORY | O_CLOEXEC)
    #endif
    #define TNX_FILE_FLAGS (O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY)

    /* openat2 has one number on the Linux ABIs that lack the constant in
       older headers; the odd ones out keep the portable fallback. */
    #if defined(__linux__) && !defined(SYS_openat2) && !defined(__alpha__) \
        && !defined(__mips__) && !defined(__ia64__)
    #define SYS_openat2 437
    #endif

    static int tnx_openat2_beneath(int dirfd, const char *name) {
    #if defined(__linux__) && defined(SYS_openat2)
        /* struct open_how; RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS */
        struct { unsigned long long flags, mode, resolve; } how;
        how.flags = TNX_FILE_FLAGS;
        how.mode = 0;
        how.resolve = 0x08 | 0x02;
        return (int)syscall(SYS_openat2, dirfd, name, &how, sizeof how);
    #else
        (void)dirfd; (void)name;
        errno = ENOSYS;
        return -1;
    #endif
    }

    static void tnx_set_errno(int err) { errno = err; }

    static long long tnx_mtime_ns(const struct stat *st) {
    #if defined(__APPLE__)
        return (long long)st->st_mtimespec.tv_sec * 1000000000LL + st->st_mtimespec.tv_nsec;
    #else
        return (long long)st->st_mtim.tv_sec * 1000000000LL + st->st_mtim.tv_nsec;
    #endif
    }

    static long long tnx_ctime_ns(const struct stat *st) {
    #if defined(__APPLE__)
        return (long long)st->st_ctimespec.tv_sec * 1000000000LL + st->st_ctimespec.tv_nsec;
    #else
        return (long long)st->st_ctim.tv_sec * 1000000000LL + st->st_ctim.tv_nsec;
    #endif
    }
    """
    int TNX_DIR_FLAGS
    int TNX_FILE_FLAGS
    int O_NOFOLLOW
    int S_IFMT
    int S_IFREG
    int ENOENT
    int ENOTDIR
    int EXDEV
    int ELOOP
    int EMLINK
    int ENXIO
    int ENOSYS
    int EPERM

    ctypedef long off_t
    ctypedef long ssize_t
    struct stat:
        unsigned int st_mode
        off_t st_size

    int open(const char *path, int flags) nogil
    int openat(int dirfd, const char *name, int flags) nogil
    int tnx_openat2_beneath(int dirfd, const char *name) nogil
    int close(int fd) nogil
    int fstat(int fd, stat *st) nogil
    ssize_t pread(int fd, void *buf, size_t count, off_t offset) nogil
    ssize_t readlinkat(int dirfd, const char *name, char *buf, size_t size) nogil
    void tnx_set_errno(int err) nogil
    long long tnx_mtime_ns(const stat *st) nogil
    long long tnx_ctime_ns(const stat *st) nogil

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

cdef enum:
    PAGE = 4096
    MAX_TRIES = 3
    LINK_MAX = 4096
    SPARE_MAX = 4 * 1024 * 1024  # the largest read buffer kept between calls
    C_PRESENT = 0
    C_MISSING = 1
    C_NOT_REGULAR = 2
    C_UNREADABLE = 3
    C_REFUSED = 4
    C_FOLLOW = 0
    C_WITHIN = 1
    C_REFUSE = 2
    C_WITHIN_PORTABLE = 3

cdef struct Buffer:
    char *data
    size_t size

cdef struct Outcome:
    int status
    int err
    int kind
    size_t nread
    bint stable


cdef int _reserve(Buffer *buf, size_t need) noexcept nogil:
    """Make ``buf`` hold at least ``need`` bytes; -1 with errno on failure."""
    cdef char *grown
    if need <= buf.size:
        return 0
    grown = <char *>realloc(buf.data, need)
    if grown == NULL:
        tnx_set_errno(ENOMEM)
        return -1
    buf.data = grown
    buf.size = need
    return 0


cdef int _open_within_portable(int dirfd, const char *name) noexcept nogil:
    """At most one symlink, whose target is a plain name in the same directory."""
    cdef char target[LINK_MAX]
    cdef ssize_t n
    cdef ssize_t i
    cdef int fd
    while True:
        fd = openat(dirfd, name, TNX_FILE_FLAGS | O_NOFOLLOW)
        if fd >= 0 or errno != EINTR:
            break
    if fd >= 0 or (errno != ELOOP and errno != EMLINK):
        return fd
    n = readlinkat(dirfd, name, target, LINK_MAX - 1)
    if n < 0:
        return -1
    target[n] = 0
    for i in range(n):
        if target[i] == b'/':
            tnx_set_errno(EXDEV)
            return -1
    if n == 0 or (n == 1 and target[0] == b'.') or (
        n == 2 and target[0] == b'.' and target[1] == b'.'
    ):
        tnx_set_errno(EXDEV)
        return -1
    while True:
        fd = openat(dirfd, target, TNX_FILE_FLAGS | O_NOFOLLOW)
        if fd >= 0 or errno != EINTR:
            return fd


cdef int _open_entry(int dirfd, const char *name, int policy) noexcept nogil:
    cdef int fd
    if policy == C_WITHIN:
        while True:
            fd = tnx_openat2_beneath(dirfd, name)
            if fd >= 0 or errno != EINTR:
                break
        # ENOSYS: old kernel; EPERM: a seccomp filter that denies it.
        if fd >= 0 or (errno != ENOSYS and errno != EPERM):
            return fd
        return _open_within_portable(dirfd, name)
    if policy == C_WITHIN_PORTABLE:
        return _open_within_portable(dirfd, name)
    while True:
        if policy == C_REFUSE:
            fd = openat(dirfd, name, TNX_FILE_FLAGS | O_NOFOLLOW)
        else:
            fd = openat(dirfd, name, TNX_FILE_FLAGS)
        if fd >= 0 or errno != EINTR:
            return fd


cdef int _classify_open_error(int err, int policy) noexcept nogil:
    if err == ENOENT or err == ENOTDIR:
        return C_MISSING
    if err == EXDEV and (policy == C_WITHIN or policy == C_WITHIN_PORTABLE):
        return C_REFUSED
    if (err == ELOOP or err == EMLINK) and (policy == C_REFUSE or policy == C_WITHIN_PORTABLE):
        return C_REFUSED
    if err == ENXIO:  # a socket, or a device with no driver behind it
        return C_NOT_REGULAR
    return C_UNREADABLE


cdef ssize_t _read_capped(int fd, Buffer *buf, size_t want, size_t hint) noexcept nogil:
    """Read from the file's start until EOF or ``want`` bytes, trusting no size."""
    cdef size_t total = 0
    cdef size_t ask
    cdef size_t room = hint + 1 if hint + 1 > PAGE else PAGE
    cdef ssize_t n
    if room > want:
        room = want
    if _reserve(buf, room) < 0:
        return -1
    while total < want:
        if total == buf.size:
            room = buf.size * 2
            if room > want:
                room = want
            if _reserve(buf, room) < 0:
                return -1
        ask = buf.size - total
        if ask > want - total:
            ask = want - total
        n = pread(fd, buf.data + total, ask, <off_t>total)
        if n < 0:
            if errno == EINTR:
                continue
            return -1
        if n == 0:
            break
        total += <size_t>n
        # A short read that lands on the size fstat gave is end of file; a
        # pseudo-file (procfs reports 0, sysfs 4096) goes on until read says 0.
        if <size_t>n < ask and total == hint:
            break
    return <ssize_t>total


cdef bint _same(stat *a, stat *b) noexcept nogil:
    return (
        a.st_size == b.st_size
        and tnx_mtime_ns(a) == tnx_mtime_ns(b)
        and tnx_ctime_ns(a) == tnx_ctime_ns(b)
    )


cdef void _read_entry(int dirfd, const char *name, int policy, size_t cap,
                      Buffer *buf, Outcome *out) noexcept nogil:
    cdef stat before
    cdef stat after
    cdef ssize_t got
    cdef int tries = 1
    cdef int fd = _open_entry(dirfd, name, policy)
    out.kind = 0
    out.nread = 0
    out.stable = True
    if fd < 0:
        out.err = errno
        out.status = _classify_open_error(out.err, policy)
        return
    out.err = 0
    if fstat(fd, &before) < 0:
        out.err = errno
        out.status = C_UNREADABLE
        close(fd)
        return
    out.kind = before.st_mode & S_IFMT
    if out.kind != S_IFREG:
        out.status = C_NOT_REGULAR
        close(fd)
        return
    got = _read_capped(fd, buf, cap + 1, <size_t>before.st_size)
    out.stable = got <= PAGE
    while got >= 0 and not out.stable:
        # More than one page: a writer rewriting in place could have torn it.
        if fstat(fd, &after) < 0:
            got = -1
        elif _same(&before, &after):
            out.stable = True
        elif tries == MAX_TRIES:
            break
        else:
            before = after
            got = _read_capped(fd, buf, cap + 1, <size_t>before.st_size)
            out.stable = got <= PAGE
            tries += 1
    if got < 0:
        out.err = errno if errno else EIO
        out.status = C_UNREADABLE
        out.stable = True
    else:
        out.status = C_PRESENT
        out.nread = <size_t>got
    close(fd)


cdef str _decode(const char *data, size_t nread, size_t cap, bint *truncated):
    """Cap, back off to a character boundary, drop a BOM, decode (SPEC §3.3-3.4)."""
    cdef size_t end = nread
    cdef size_t floor
    cdef size_t start = 0
    truncated[0] = nread > cap
    if truncated[0]:
        end = cap
        floor = cap - 3 if cap > 3 else 0
        while end > floor and (<unsigned char>data[end] & 0xC0) == 0x80:
            end -= 1
    if (end >= 3 and <unsigned char>data[0] == 0xEF and <unsigned char>data[1] == 0xBB
            and <unsigned char>data[2] == 0xBF):
        start = 3
    return PyUnicode_DecodeUTF8(data + start, <Py_ssize_t>(end - start), "replace")


# The most common result of all, shared instead of built per call.
_MISSING_ENOENT = (MISSING, ENOENT, 0, 0, False, True, None)

# One read buffer kept between calls so large files do not fault in fresh
# pages every time; taken and given back with the GIL held, so two threads
# never share it.
cdef Buffer _spare


def read_home(bytes directory, names, Py_ssize_t cap, int symlinks):
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
    global _spare
    cdef tuple tnames = tuple(names)
    cdef Py_ssize_t count = len(tnames)
    cdef Py_ssize_t i
    cdef Py_ssize_t first
    cdef const char *cdir = directory
    cdef const char **cnames
    cdef Outcome *outs
    cdef Outcome *out
    cdef int dirfd
    cdef int err = 0
    cdef Buffer buf
    cdef bint truncated
    cdef list results = []
    if cap < 1:
        raise ValueError("cap must be >= 1")
    if b"\0" in directory:
        raise ValueError("embedded null byte")
    for name in tnames:
        if not isinstance(name, bytes):
            raise TypeError(f"names must be bytes, not {type(name).__name__}")
    with nogil:
        while True:
            dirfd = open(cdir, TNX_DIR_FLAGS)
            if dirfd >= 0 or errno != EINTR:
                break
        if dirfd < 0:
            err = errno
    if dirfd < 0:
        status = MISSING if (err == ENOENT or err == ENOTDIR) else UNREADABLE
        return [(status, err, 0, 0, False, True, None) for _ in tnames]
    cnames = <const char **>malloc((count + 1) * sizeof(char *))
    outs = <Outcome *>malloc((count + 1) * sizeof(Outcome))
    buf = _spare
    _spare.data = NULL
    _spare.size = 0
    try:
        if cnames == NULL or outs == NULL:
            raise MemoryError()
        for i in range(count):
            cnames[i] = <bytes>tnames[i]
        i = 0
        while i < count:
            # Stay without the GIL across misses; come back for each file to decode.
            first = i
            with nogil:
                while i < count:
                    _read_entry(dirfd, cnames[i], symlinks, <size_t>cap, &buf, &outs[i])
                    i += 1
                    if outs[i - 1].status == C_PRESENT:
                        break
            for j in range(first, i):
                out = &outs[j]
                if out.status == C_PRESENT:
                    text = _decode(buf.data, out.nread, <size_t>cap, &truncated)
                    results.append((PRESENT, 0, out.kind, out.nread, truncated, out.stable, text))
                elif out.status == C_MISSING and out.err == ENOENT:
                    results.append(_MISSING_ENOENT)
                else:
                    results.append((out.status, out.err, out.kind, 0, False, out.stable, None))
    finally:
        close(dirfd)
        free(cnames)
        free(outs)
        if _spare.data == NULL and buf.size <= SPARE_MAX:
            _spare = buf
        else:
            free(buf.data)
    return results
