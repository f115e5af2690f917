# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Compiled bounded reader for bootstrap files.

Same functions, same arguments, same results as ``_capread_py.py``; the only
difference is speed: each directory is opened once, the files of a batch of
homes are read into one arena with the GIL released, and the text is decoded
straight from that arena (well-formed, mostly-ASCII text by the scan-and-fill
decoder of ``_capread_c.h``, also without the GIL). What a soul looks like is
decided in ``_compose``, not here.
"""

from cpython.ref cimport PyObject
from cpython.unicode cimport PyUnicode_DATA, PyUnicode_DecodeUTF8, PyUnicode_KIND, PyUnicode_New
from libc.stdint cimport uint32_t
from libc.errno cimport EINTR, EIO, ENOMEM, errno
from libc.stdlib cimport free, malloc, realloc
from libc.string cimport memcmp

cdef extern from "_capread_c.h":
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
    int EOPNOTSUPP
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
    int sched_yield() nogil
    int fstat(int fd, stat *st) nogil
    ssize_t pread(int fd, void *buf, size_t count, off_t offset) nogil
    ssize_t readlinkat(int dirfd, const char *name, char *buf, size_t size) nogil
    void tnx_set_errno(int err) nogil
    long long tnx_mtime_ns(const stat *st) nogil
    long long tnx_ctime_ns(const stat *st) nogil
    long long tnx_now_ns() nogil
    long long RECENT_NS
    int TNX_SCAN_OK
    int tnx_utf8_scan(const unsigned char *s, size_t n, size_t *nchars, uint32_t *maxchar) nogil
    void tnx_utf8_fill(const unsigned char *s, size_t n, void *out, int kind, uint32_t maxchar) nogil

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
    SPARE_MAX = 8 * 1024 * 1024  # the largest arena kept between calls
    VERIFY_CHUNK = 16 * 1024  # stack buffer of the content check
    BATCH_BYTES = 4 * 1024 * 1024  # arena fill after which a batch returns to decode
    NOGIL_FILL_BYTES = 64 * 1024  # decode work below which the GIL is kept
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
    size_t offset  # where the file's bytes start in the arena
    size_t nread
    bint stable
    # Set for a present file, by _plan(), without the GIL:
    size_t body  # where the body starts in the arena (after the cut and the BOM)
    size_t body_len
    bint truncated
    bint well_formed  # if so, nchars and maxchar size the str to allocate
    size_t nchars
    uint32_t maxchar
    # Set with the GIL: the str (kept alive by the batch's list) and its buffer.
    PyObject *text
    void *dest
    int dest_kind


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
    if err == ENXIO or err == EOPNOTSUPP:  # a socket (Linux; macOS), or a driverless device
        return C_NOT_REGULAR
    return C_UNREADABLE


cdef ssize_t _read_capped(int fd, Buffer *arena, size_t base, size_t want,
                          size_t hint, bint *one_read) noexcept nogil:
    """Read the file's start into ``arena`` at ``base``, until EOF or ``want`` bytes.

    Trusts no size: ``hint`` (st_size) only sizes the first read.
    ``one_read`` says whether a single read() call did it all.
    """
    cdef size_t total = 0
    cdef size_t ask
    cdef size_t room = hint + 1 if hint + 1 > PAGE else PAGE
    cdef ssize_t n
    if room > want:
        room = want
    one_read[0] = True
    if _reserve(arena, base + room) < 0:
        return -1
    while total < want:
        if base + total == arena.size:
            room = total * 2 if total * 2 < want else want
            if _reserve(arena, base + room) < 0:
                return -1
        ask = arena.size - base - total
        if ask > want - total:
            ask = want - total
        n = pread(fd, arena.data + base + total, ask, <off_t>total)
        if n < 0:
            if errno == EINTR:
                continue
            return -1
        if n == 0:
            break
        one_read[0] = total == 0
        total += <size_t>n
        # A short read that lands on the size fstat gave is end of file; a
        # pseudo-file (procfs reports 0, sysfs 4096) goes on until read says 0.
        if <size_t>n < ask and total == hint:
            break
    return <ssize_t>total


cdef bint _trusted(ssize_t got, stat *before, bint one_read) noexcept nogil:
    """Can a read be trusted without a second fstat? (SPEC §4)

    Yes for one page, got by one read() call, no longer than fstat said.
    More than a page may span an in-place rewrite; so may a short read
    followed by more; and more bytes than the size means the file changed
    under the read (a read racing a truncate and rewrite can even return a
    stale page's zeros up to the new size).
    """
    return one_read and got <= PAGE and got <= before.st_size


cdef bint _fits(ssize_t got, stat *st) noexcept nogil:
    """No more bytes than the file holds (pseudo-files, which say 0, excepted)."""
    return got <= st.st_size or st.st_size == 0


cdef bint _recent(stat *st) noexcept nogil:
    """Changed so lately that its timestamps cannot tell two writes apart?"""
    return tnx_ctime_ns(st) >= tnx_now_ns() - RECENT_NS


cdef bint _verify(int fd, const char *data, size_t n) noexcept nogil:
    """Does the file still hold data[0:n]? Compared a slice at a time."""
    cdef char chunk[VERIFY_CHUNK]
    cdef size_t done = 0
    cdef size_t ask
    cdef ssize_t got
    while done < n:
        ask = n - done if n - done < VERIFY_CHUNK else VERIFY_CHUNK
        got = pread(fd, chunk, ask, <off_t>done)
        if got < 0 and errno == EINTR:
            continue
        if got <= 0 or memcmp(chunk, data + done, <size_t>got) != 0:
            return False
        done += <size_t>got
    return True


cdef bint _same(stat *a, stat *b) noexcept nogil:
    return (
        a.st_size == b.st_size
        and tnx_mtime_ns(a) == tnx_mtime_ns(b)
        and tnx_ctime_ns(a) == tnx_ctime_ns(b)
    )


cdef void _read_entry(int dirfd, const char *name, int policy, size_t cap,
                      Buffer *arena, size_t *used, Outcome *out) noexcept nogil:
    """Open, check and read one bootstrap file into the arena (SPEC §3.1-3.2, §4)."""
    cdef stat before
    cdef stat after
    cdef ssize_t got
    cdef bint one_read
    cdef int tries = 1
    cdef int fd = _open_entry(dirfd, name, policy)
    out.kind = 0
    out.offset = used[0]
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
    got = _read_capped(fd, arena, out.offset, cap + 1, <size_t>before.st_size, &one_read)
    out.stable = _trusted(got, &before, one_read)
    while got >= 0 and not out.stable:
        # A writer rewriting in place could have torn it: look again.
        if fstat(fd, &after) < 0:
            got = -1
        elif (_same(&before, &after) and _fits(got, &after)
              and (tries == 1 and not _recent(&after)
                   or _verify(fd, arena.data + out.offset, <size_t>got))):
            out.stable = True
        elif tries == MAX_TRIES:
            break
        else:
            # Let the writer finish what it is writing before looking again.
            sched_yield()
            before = after
            got = _read_capped(fd, arena, out.offset, cap + 1, <size_t>before.st_size, &one_read)
            out.stable = _trusted(got, &before, one_read)
            tries += 1
    if got < 0:
        out.err = errno if errno else EIO
        out.status = C_UNREADABLE
        out.stable = True
    else:
        out.status = C_PRESENT
        out.nread = <size_t>got
        used[0] = out.offset + out.nread
        _plan(out, arena.data, cap)
    close(fd)


cdef void _plan(Outcome *out, const char *arena, size_t cap) noexcept nogil:
    """Cap, back off to a character boundary, drop a BOM, scan (SPEC §3.3-3.4)."""
    cdef const unsigned char *data = <const unsigned char *>arena + out.offset
    cdef size_t end = out.nread
    cdef size_t floor
    cdef size_t start = 0
    out.truncated = out.nread > cap
    if out.truncated:
        end = cap
        floor = cap - 3 if cap > 3 else 0
        while end > floor and (data[end] & 0xC0) == 0x80:
            end -= 1
    if end >= 3 and data[0] == 0xEF and data[1] == 0xBB and data[2] == 0xBF:
        start = 3
    out.body = out.offset + start
    out.body_len = end - start
    # Ill-formed text, and dense multi-byte text (Tamil, emoji, CJK) where
    # CPython's decoder is faster even holding the GIL, go to CPython.
    out.well_formed = tnx_utf8_scan(data + start, out.body_len, &out.nchars,
                                    &out.maxchar) == TNX_SCAN_OK


cdef Py_ssize_t _read_batch(const char **dirs, Py_ssize_t first, Py_ssize_t ndirs,
                            const char **names, Py_ssize_t nnames, int policy, size_t cap,
                            Buffer *arena, Outcome *outs) noexcept nogil:
    """Read homes from ``first`` on until all are done or the arena is full enough.

    Returns the index of the first home not read. Every home's outcomes go to
    ``outs[home * nnames + name]``; their bytes stay in the arena until decoded.
    """
    cdef size_t used = 0
    cdef Py_ssize_t home = first
    cdef Py_ssize_t i
    cdef int dirfd
    cdef int err
    cdef Outcome *out
    while home < ndirs:
        while True:
            dirfd = open(dirs[home], TNX_DIR_FLAGS)
            if dirfd >= 0 or errno != EINTR:
                break
        err = errno
        for i in range(nnames):
            out = &outs[home * nnames + i]
            if dirfd >= 0:
                _read_entry(dirfd, names[i], policy, cap, arena, &used, out)
            else:
                out.status = C_MISSING if (err == ENOENT or err == ENOTDIR) else C_UNREADABLE
                out.err = err
                out.kind = 0
                out.offset = 0
                out.nread = 0
                out.stable = True
        if dirfd >= 0:
            close(dirfd)
        home += 1
        if used >= BATCH_BYTES:
            break
    return home


cdef Py_ssize_t _make_texts(Outcome *outs, Py_ssize_t count, const char *arena,
                            list keep) except -1:
    """Allocate each present file's str (with the GIL); returns bytes left to fill.

    Well-formed bodies get an empty str of the right size and width, filled
    later without the GIL; ill-formed ones are decoded here by CPython, whose
    U+FFFD replacement is the one the spec names.
    """
    cdef Py_ssize_t i
    cdef Py_ssize_t pending = 0
    cdef Outcome *out
    for i in range(count):
        out = &outs[i]
        if out.status != C_PRESENT:
            continue
        if out.well_formed:
            text = PyUnicode_New(<Py_ssize_t>out.nchars, out.maxchar)
            out.dest = PyUnicode_DATA(text) if out.nchars else NULL
            out.dest_kind = PyUnicode_KIND(text)
            pending += <Py_ssize_t>out.body_len
        else:
            text = PyUnicode_DecodeUTF8(arena + out.body, <Py_ssize_t>out.body_len, "replace")
            out.dest = NULL
        keep.append(text)
        out.text = <PyObject *>text
    return pending


cdef void _fill_texts(Outcome *outs, Py_ssize_t count, const char *arena) noexcept nogil:
    cdef Py_ssize_t i
    for i in range(count):
        if outs[i].status == C_PRESENT and outs[i].dest != NULL:
            tnx_utf8_fill(<const unsigned char *>arena + outs[i].body, outs[i].body_len,
                          outs[i].dest, outs[i].dest_kind, outs[i].maxchar)


cdef list _entries(Outcome *outs, Py_ssize_t nnames):
    """One home's result tuples, once its texts are filled."""
    cdef list results = []
    cdef Outcome *out
    cdef Py_ssize_t i
    for i in range(nnames):
        out = &outs[i]
        if out.status == C_PRESENT:
            results.append(
                (PRESENT, 0, out.kind, out.nread, out.truncated, out.stable, <object>out.text)
            )
        elif out.status == C_MISSING and out.err == ENOENT:
            results.append(_MISSING_ENOENT)
        else:
            results.append((out.status, out.err, out.kind, 0, False, out.stable, None))
    return results


# The most common result of all, shared instead of built per call.
_MISSING_ENOENT = (MISSING, ENOENT, 0, 0, False, True, None)

# One arena kept between calls so that large files do not fault in fresh
# pages every time; taken and given back with the GIL held, so two threads
# never share it.
cdef Buffer _spare


cdef list _read(list dirs, names, Py_ssize_t cap, int symlinks):
    """Shared body of read_home and read_homes: a list of result lists."""
    global _spare
    cdef tuple tnames = tuple(names)
    cdef Py_ssize_t nnames = len(tnames)
    cdef Py_ssize_t ndirs = len(dirs)
    cdef Py_ssize_t first = 0
    cdef Py_ssize_t done
    cdef Py_ssize_t home
    cdef const char **cdirs = NULL
    cdef const char **cnames = NULL
    cdef Outcome *outs = NULL
    cdef Buffer arena
    cdef list homes = []
    cdef list keep
    cdef Py_ssize_t pending
    if cap < 1:
        raise ValueError("cap must be >= 1")
    for name in tnames:
        if not isinstance(name, bytes):
            raise TypeError(f"names must be bytes, not {type(name).__name__}")
    for directory in dirs:
        if not isinstance(directory, bytes):
            raise TypeError(f"directories must be bytes, not {type(directory).__name__}")
        if b"\0" in <bytes>directory:
            raise ValueError("embedded null byte")
    arena = _spare
    _spare.data = NULL
    _spare.size = 0
    try:
        cdirs = <const char **>malloc((ndirs + 1) * sizeof(char *))
        cnames = <const char **>malloc((nnames + 1) * sizeof(char *))
        outs = <Outcome *>malloc((ndirs * nnames + 1) * sizeof(Outcome))
        if cdirs == NULL or cnames == NULL or outs == NULL:
            raise MemoryError()
        for home in range(ndirs):
            cdirs[home] = <bytes>dirs[home]
        for home in range(nnames):
            cnames[home] = <bytes>tnames[home]
        while first < ndirs:
            # All the I/O of a batch of homes runs without the GIL; it comes
            # back only to decode, so threads overlap instead of taking turns.
            with nogil:
                done = _read_batch(cdirs, first, ndirs, cnames, nnames, symlinks,
                                   <size_t>cap, &arena, outs)
            keep = []
            pending = _make_texts(&outs[first * nnames], (done - first) * nnames, arena.data, keep)
            if pending > NOGIL_FILL_BYTES:
                with nogil:
                    _fill_texts(&outs[first * nnames], (done - first) * nnames, arena.data)
            else:  # too little to be worth handing the GIL over
                _fill_texts(&outs[first * nnames], (done - first) * nnames, arena.data)
            for home in range(first, done):
                homes.append(_entries(&outs[home * nnames], nnames))
            first = done
    finally:
        free(cdirs)
        free(cnames)
        free(outs)
        if _spare.data == NULL and arena.size <= SPARE_MAX:
            _spare = arena
        else:
            free(arena.data)
    return homes


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
    return _read([directory], names, cap, symlinks)[0]


def read_homes(directories, names, Py_ssize_t cap, int symlinks):
    """``[read_home(d, names, cap, symlinks) for d in directories]``, in one call.

    The compiled reader does the I/O of many homes without taking the GIL
    back in between, which is what lets threads composing many homes overlap.
    """
    return _read(list(directories), names, cap, symlinks)
