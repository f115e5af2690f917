# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
# cython: freethreading_compatible=True
"""Compiled twin of ``_capread_py``: the bounded reader of bootstrap files.

Same functions, arguments, results and docstrings as ``_capread_py.py`` (the
``Reader`` of ``_twins``); the only difference is speed: each home is opened
once, the files of a batch of homes are read into one arena with the GIL
released, and each soul is allocated once, at its final size and width, and
filled straight from the arena (well-formed, mostly-ASCII text by the
scan-and-fill decoder of ``include/capread_utf8.h``, also without the GIL).
What a soul looks like (order, section heads, notice) is decided in
``_format`` and handed in as a layout. The arguments are checked by
``_twins``' one check, which the fast path below asks only to raise.

State shared between calls (the spare arena, the last layout's heads) is
taken and given back under the lock of ``include/capread_os.h`` (the GIL,
or a mutex where there is none), so the module is safe without the GIL.
"""


from cpython.bytes cimport PyBytes_FromStringAndSize
from cpython.ref cimport Py_INCREF
from cpython.tuple cimport PyTuple_New, PyTuple_SET_ITEM
from cpython.object cimport PyTypeObject
from cpython.unicode cimport PyUnicode_DATA, PyUnicode_DecodeUTF8, PyUnicode_KIND, PyUnicode_New
from libc.errno cimport (
    EINTR, EIO, ELOOP, EMFILE, EMLINK, ENFILE, ENOENT, ENOMEM, ENOSYS, ENOTDIR, ENXIO, EOPNOTSUPP, EPERM,
    EXDEV, errno,
)
from libc.stdint cimport uint32_t
from libc.stdlib cimport free, malloc, realloc
from libc.string cimport memchr, memcmp, memmove
from posix.fcntl cimport S_IFMT, S_IFREG, open, openat
from posix.stat cimport fstat, fstatat, struct_stat
from posix.types cimport off_t
from posix.unistd cimport close, pread

from .._vocabulary import POLICIES, Composed, Excerpt, FileRead, FileStatus
from ._twins import check_arguments, check_layout, check_windows, process_error

cdef extern from "include/capread_os.h" nogil:
    int AT_SYMLINK_NOFOLLOW
    int TNX_DIR_FLAGS
    int TNX_FILE_FLAGS
    int O_NOFOLLOW
    long long RECENT_NS
    int tnx_openat2_beneath(int dirfd, const char *name, int extra)
    ssize_t readlinkat(int dirfd, const char *name, char *buf, size_t size)
    int sched_yield()
    void tnx_set_errno(int err)
    long long tnx_mtime_ns(const struct_stat *st)
    long long tnx_ctime_ns(const struct_stat *st)
    long long tnx_now_ns()
    void tnx_lock_state()
    void tnx_unlock_state()

cdef extern from "include/capread_utf8.h" nogil:
    int TNX_SCAN_OK
    void tnx_trim(const unsigned char *s, size_t *start, size_t *end)
    ctypedef struct tnx_text:
        size_t nchars
        uint32_t maxchar
    void tnx_utf8_init()
    int tnx_utf8_scan(const unsigned char *s, size_t n, tnx_text *text)
    void tnx_utf8_fill(const unsigned char *s, size_t n, const tnx_text *text, void *out, int kind,
                       size_t room)
    void tnx_copy_chars(const void *src, int from_kind, size_t n, void *dst, int to_kind)

cdef extern from "Python.h":
    Py_UCS4 PyUnicode_MAX_CHAR_VALUE(object o)
    object PyType_GenericAlloc(PyTypeObject *type, Py_ssize_t nitems)
    void PyObject_GC_UnTrack(void *op)
    int PyObject_GC_IsTracked(object op)


tnx_utf8_init()

# The places of _vocabulary's FileStatus members, and the codes of its POLICIES, for code without
# the GIL (checked at import, below).
cdef enum:
    PRESENT = 0
    MISSING = 1
    NOT_REGULAR = 2
    UNREADABLE = 3
    REFUSED = 4

cdef enum:
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

cdef struct Buffer:
    char *data
    size_t size

cdef struct Chars:  # a str's characters, readable without the GIL while the str lives
    const void *data
    int kind
    size_t length
    uint32_t maxchar

cdef struct Outcome:
    int status  # a FileStatus code
    int err
    int kind
    long long size_on_disk  # st_size at the open; -1 when it was not opened
    bint home_failed  # the home itself could not be opened: err is the home's
    size_t offset  # where the file's bytes start in the arena
    size_t nread  # bytes read from its start
    size_t tail_len  # bytes read from its end, after the first want in the arena
    size_t length  # the file's length as read
    bint stable
    bint truncated  # more than the first want bytes
    bint symlink  # the name is a symlink (FileRead.symlink)
    bint linked  # reached through a symlink, or with other hard links
    # Set for a present file, by _place_body(), without the GIL:
    size_t body  # where the body starts in the arena (after cut, BOM and trim)
    size_t body_len
    bint well_formed  # if so, utf8 says what it decodes to
    tnx_text utf8
    size_t text_bytes  # the body's UTF-8 bytes once decoded (body_len, when it is well formed)
    # Set with the GIL when the body is not well formed: CPython's decoding of it
    # (a str the batch keeps alive).
    bint decoded
    Chars text

cdef struct Target:  # a soul being filled
    void *data
    int kind
    size_t length


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


cdef int _open_within_portable(int dirfd, const char *name, bint *linked) noexcept nogil:
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
    linked[0] = True
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


cdef int _open_flags(int dirfd, const char *name, int policy, int extra) noexcept nogil:
    """One open of ``name`` with ``extra`` flags (beneath the home for ``within``), again after EINTR."""
    cdef int fd
    while True:
        if policy == WITHIN:
            fd = tnx_openat2_beneath(dirfd, name, extra)
        else:
            fd = openat(dirfd, name, TNX_FILE_FLAGS | extra)
        if fd >= 0 or errno != EINTR:
            return fd


cdef int _open_entry(int dirfd, const char *name, int policy, bint *linked) noexcept nogil:
    """Open ``name`` as the policy says; ``linked`` is set when it was reached through a symlink.

    A name is first opened with O_NOFOLLOW: a file needs no other open, and
    for a symlink ELOOP (EMLINK on FreeBSD) says what it is.
    """
    cdef int fd
    linked[0] = False
    if policy == WITHIN_PORTABLE:
        return _open_within_portable(dirfd, name, linked)
    fd = _open_flags(dirfd, name, policy, O_NOFOLLOW)
    if fd < 0 and policy != REFUSE and (errno == ELOOP or errno == EMLINK):
        linked[0] = True  # a symlink: followed now, as the policy says
        fd = _open_flags(dirfd, name, policy, 0)
    if fd < 0 and policy == WITHIN and (errno == ENOSYS or errno == EPERM):
        # ENOSYS: old kernel; EPERM: a seccomp filter that denies it.
        return _open_within_portable(dirfd, name, linked)
    return fd


cdef int _classify_open_error(int err, int policy) noexcept nogil:
    if err == ENOENT or err == ENOTDIR:
        return MISSING
    if err == EXDEV and (policy == WITHIN or policy == WITHIN_PORTABLE):
        return REFUSED
    if (err == ELOOP or err == EMLINK) and (policy == REFUSE or policy == WITHIN_PORTABLE):
        return REFUSED
    if err == ENXIO or err == EOPNOTSUPP:  # a socket (Linux; macOS), or a driverless device
        return NOT_REGULAR
    return UNREADABLE


cdef int _kind_at(int dirfd, const char *name, int policy) noexcept nogil:
    """The file type bits of ``name`` (not followed if the policy refuses links), 0 if unknown."""
    cdef struct_stat st
    if fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW if policy == REFUSE else 0) < 0:
        return 0
    return st.st_mode & S_IFMT


cdef ssize_t _pread(int fd, void *buf, size_t count, size_t at) noexcept nogil:
    """pread(), again when a signal interrupts it."""
    cdef ssize_t got
    while True:
        got = pread(fd, buf, count, <off_t>at)
        if got >= 0 or errno != EINTR:
            return got


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
        n = _pread(fd, arena.data + base + total, ask, total)
        if n < 0:
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


cdef bint _trusted(ssize_t got, struct_stat *before, bint one_read) noexcept nogil:
    """Can a read be trusted without a second fstat? (docs/format.md, \"Stable reads\")

    Yes for one page, got by one read() call, no longer than fstat said.
    More than a page may span an in-place rewrite; so may a short read
    followed by more; and more bytes than the size means the file changed
    under the read (a read racing a truncate and rewrite can even return a
    stale page's zeros up to the new size).
    """
    return one_read and got <= PAGE and got <= before.st_size


cdef bint _fits(ssize_t got, struct_stat *st) noexcept nogil:
    """No more bytes than the file holds (pseudo-files, which say 0, excepted)."""
    return got <= st.st_size or st.st_size == 0


cdef bint _recent(struct_stat *st) noexcept nogil:
    """Changed so lately that its timestamps cannot tell two writes apart?"""
    return tnx_ctime_ns(st) >= tnx_now_ns() - RECENT_NS


cdef bint _verify(int fd, const char *data, size_t n, size_t at) noexcept nogil:
    """Does the file still hold data[0:n] at offset ``at``? Compared a slice at a time."""
    cdef char chunk[VERIFY_CHUNK]
    cdef size_t done = 0
    cdef size_t ask
    cdef ssize_t got
    while done < n:
        ask = n - done if n - done < VERIFY_CHUNK else VERIFY_CHUNK
        got = _pread(fd, chunk, ask, at + done)
        if got <= 0 or memcmp(chunk, data + done, <size_t>got) != 0:
            return False
        done += <size_t>got
    return True


cdef bint _same(struct_stat *a, struct_stat *b) noexcept nogil:
    return (
        a.st_size == b.st_size
        and tnx_mtime_ns(a) == tnx_mtime_ns(b)
        and tnx_ctime_ns(a) == tnx_ctime_ns(b)
    )


cdef ssize_t _read_last(int fd, Buffer *arena, size_t base, size_t tail, size_t size, size_t have,
                        size_t limit, size_t *end) noexcept nogil:
    """The last bytes of a file longer than the ``have`` bytes read from its start.

    At most ``tail`` of them, and none of the first ``have``. They go into
    the arena at ``base``; ``end`` gets where they end in the file (its
    length as read). When fstat's size can be believed, the end is read in
    place; when it cannot (a pseudo-file, or a file that grew), the file is
    read on to EOF or ``limit`` bytes in all, keeping only the last ``tail``.
    Returns how many bytes it kept, or -1 with errno.
    """
    cdef size_t got = 0
    cdef size_t total = have
    cdef size_t keep
    cdef ssize_t n
    cdef char *kept
    cdef char *chunk
    if size >= have:
        if size - have < tail:
            tail = size - have
        if _reserve(arena, base + tail) < 0:
            return -1
        while got < tail:
            n = _pread(fd, arena.data + base + got, tail - got, size - tail + got)
            if n < 0:
                return -1
            if n == 0:
                break  # it shrank: the stability check sees it
            got += <size_t>n
        end[0] = size - tail + got
        return <ssize_t>got
    # Read on in chunks after the kept window, keeping the last tail bytes.
    if _reserve(arena, base + tail + VERIFY_CHUNK) < 0:
        return -1
    kept = arena.data + base
    chunk = kept + tail
    while total < limit:
        n = _pread(fd, chunk, VERIFY_CHUNK if limit - total > VERIFY_CHUNK else limit - total, total)
        if n < 0:
            return -1
        if n == 0:
            break
        total += <size_t>n
        if <size_t>n >= tail:
            memmove(kept, chunk + <size_t>n - tail, tail)
            got = tail
        else:
            keep = got if got < tail - <size_t>n else tail - <size_t>n
            memmove(kept, kept + got - keep, keep)
            memmove(kept + keep, chunk, <size_t>n)
            got = keep + <size_t>n
    end[0] = total
    return <ssize_t>got


cdef void _read_entry(int dirfd, const char *name, int policy, size_t want, size_t tail, size_t limit,
                      Buffer *arena, size_t *used, Outcome *out) noexcept nogil:
    """Open, check and read one file into the arena: its first ``want`` bytes at most and,
    when it is longer, its last ``tail`` (``tail`` 0: the plain capped read)."""
    cdef struct_stat before
    cdef struct_stat after
    cdef ssize_t got
    cdef ssize_t last = 0
    cdef size_t end = 0
    cdef bint one_read
    cdef int tries = 1
    cdef bint linked
    cdef int fd = _open_entry(dirfd, name, policy, &linked)
    out.kind = 0
    out.symlink = linked
    out.linked = linked
    out.home_failed = False
    out.size_on_disk = -1
    out.offset = used[0]
    out.nread = 0
    out.tail_len = 0
    out.length = 0
    out.stable = True
    if fd < 0:
        out.err = errno
        out.status = _classify_open_error(out.err, policy)
        if out.status == NOT_REGULAR:  # a socket cannot be opened: say what it is
            out.kind = _kind_at(dirfd, name, policy)
        return
    out.err = 0
    if fstat(fd, &before) < 0:
        out.err = errno
        out.status = UNREADABLE
        close(fd)
        return
    out.kind = before.st_mode & S_IFMT
    out.linked = linked or before.st_nlink > 1
    if out.kind != S_IFREG:
        out.status = NOT_REGULAR
        close(fd)
        return
    out.size_on_disk = before.st_size
    while True:
        got = _read_capped(fd, arena, out.offset, want, <size_t>before.st_size, &one_read)
        end = <size_t>got if got > 0 else 0
        last = 0
        if got >= 0 and <size_t>got == want:  # longer than what is read from its start
            if tail:
                last = _read_last(fd, arena, out.offset + want, tail, <size_t>before.st_size, want, limit,
                                  &end)
                if last < 0:
                    got = -1
            elif <size_t>before.st_size > want:  # its length, as fstat says (at least what was read)
                end = <size_t>before.st_size
        if got < 0:
            break
        out.stable = last == 0 and _trusted(got, &before, one_read)
        if out.stable:
            break
        # A writer rewriting in place could have torn it: look again.
        if fstat(fd, &after) < 0:
            got = -1
            break
        if (_same(&before, &after) and _fits(<ssize_t>(end if end > <size_t>got else <size_t>got), &after)
                and (tries == 1 and not _recent(&after)
                     or _verify(fd, arena.data + out.offset, <size_t>got, 0)
                     and _verify(fd, arena.data + out.offset + want, <size_t>last, end - <size_t>last))):
            out.stable = True
            break
        if tries == MAX_TRIES:
            break
        # Let the writer finish what it is writing before looking again.
        sched_yield()
        before = after
        tries += 1
    if got < 0:
        out.err = errno if errno else EIO
        out.status = UNREADABLE
        out.stable = True
        out.size_on_disk = -1
    else:
        out.status = PRESENT
        out.size_on_disk = before.st_size
        out.nread = <size_t>got
        out.truncated = <size_t>got == want
        out.tail_len = <size_t>last
        out.length = end
        used[0] = out.offset + (want if last else <size_t>got) + <size_t>last
    close(fd)


cdef void _place_body(Outcome *out, const char *arena, size_t cap) noexcept nogil:
    """Cut at the cap, back off to a character boundary, drop a BOM, trim, scan."""
    cdef const unsigned char *data = <const unsigned char *>arena + out.offset
    cdef size_t end = out.nread
    cdef size_t floor
    cdef size_t start = 0
    if out.truncated:
        end = cap
        floor = cap - 3 if cap > 3 else 0
        while end > floor and (data[end] & 0xC0) == 0x80:
            end -= 1
    if end >= 3 and data[0] == 0xEF and data[1] == 0xBB and data[2] == 0xBF:
        start = 3
    tnx_trim(data, &start, &end)
    out.body = out.offset + start
    out.body_len = end - start
    out.decoded = False
    # Ill-formed text goes to CPython, whose U+FFFD replacement is the rule.
    out.well_formed = tnx_utf8_scan(data + start, out.body_len, &out.utf8) == TNX_SCAN_OK


cdef void _read_home(const char *home, const char **names, Py_ssize_t nnames, int policy,
                     size_t cap, const size_t *heads, const size_t *tails, Buffer *arena, size_t *used,
                     Outcome *outs) noexcept nogil:
    """Open one home and read each name into the arena: capped (``heads`` NULL: the
    first ``cap + 1`` bytes) or within windows (its head and tail, as read_excerpts says)."""
    cdef Py_ssize_t i
    cdef int dirfd
    cdef int err
    cdef Outcome *out
    while True:
        dirfd = open(home, TNX_DIR_FLAGS)
        if dirfd >= 0 or errno != EINTR:
            break
    err = errno
    for i in range(nnames):
        out = &outs[i]
        if dirfd < 0:
            out.status = MISSING if (err == ENOENT or err == ENOTDIR) else UNREADABLE
            out.err = err
            out.kind = 0
            out.size_on_disk = -1
            out.home_failed = True
            out.symlink = False
            out.linked = False
            out.offset = 0
            out.nread = 0
            out.tail_len = 0
            out.stable = True
        elif heads == NULL:
            _read_entry(dirfd, names[i], policy, cap + 1, 0, cap + 1, arena, used, out)
        else:
            _read_entry(dirfd, names[i], policy, heads[i] + tails[i] + 1, tails[i], cap + 1, arena, used, out)
    if dirfd >= 0:
        close(dirfd)


cdef Py_ssize_t _read_batch(const char **homes, Py_ssize_t first, Py_ssize_t nhomes,
                            const char **names, Py_ssize_t nnames, int policy, size_t cap,
                            Buffer *arena, Outcome *outs) noexcept nogil:
    """Read homes from ``first`` on until all are done or the arena is full enough.

    Returns the index of the first home not read. Every home's outcomes go to
    ``outs[home * nnames + name]``; their bytes stay in the arena until decoded.
    """
    cdef size_t used = 0
    cdef Py_ssize_t home = first
    cdef Py_ssize_t i
    while home < nhomes:
        _read_home(homes[home], names, nnames, policy, cap, NULL, NULL, arena, &used, &outs[home * nnames])
        for i in range(nnames):
            if outs[home * nnames + i].status == PRESENT:
                _place_body(&outs[home * nnames + i], arena.data, cap)
        home += 1
        if used >= BATCH_BYTES:
            break
    return home


# State kept between calls, under the state lock: one arena, so that large
# files do not fault in fresh pages every time, and the heads of the last
# layout. Each call takes the arena for itself and gives it back; the lock is
# held only for that, never for a read.
cdef Buffer _spare
cdef tuple _last_heads = None  # (layout, _Heads): holding it keeps the layout's id from reuse


cdef Buffer _take_arena() noexcept:
    """The arena kept between calls (or an empty one): this call's alone until given back."""
    global _spare
    cdef Buffer arena
    tnx_lock_state()
    arena = _spare
    _spare.data = NULL
    _spare.size = 0
    tnx_unlock_state()
    return arena


cdef void _give_back(Buffer arena) noexcept:
    """Keep ``arena`` for the next call if none is kept and it is not too large; else free it."""
    global _spare
    cdef bint kept = False
    if arena.size <= SPARE_MAX:
        tnx_lock_state()
        if _spare.data == NULL:
            _spare = arena
            kept = True
        tnx_unlock_state()
    if not kept:
        free(arena.data)


cdef Chars _chars(str text):
    cdef Chars chars
    chars.data = PyUnicode_DATA(text)
    chars.kind = PyUnicode_KIND(text)
    chars.length = <size_t>len(text)
    chars.maxchar = PyUnicode_MAX_CHAR_VALUE(text)
    return chars


cdef class _Heads:
    """A layout's strings, held as ``Chars`` for filling without the GIL; the layout checked once."""

    cdef tuple files
    cdef tuple strings  # keeps the strings below alive
    cdef Py_ssize_t count
    cdef Chars *firsts
    cdef Chars *nexts
    cdef Chars notice

    def __cinit__(self, layout, Py_ssize_t nnames):
        check_layout(layout, nnames)
        files, firsts, nexts, notice = layout
        self.files = tuple(files)
        self.strings = (tuple(firsts), tuple(nexts), notice)
        self.count = nnames
        self.firsts = <Chars *>malloc((nnames + 1) * sizeof(Chars))
        self.nexts = <Chars *>malloc((nnames + 1) * sizeof(Chars))
        if self.firsts == NULL or self.nexts == NULL:
            raise MemoryError()
        for i in range(nnames):
            self.firsts[i] = _chars(self.strings[0][i])
            self.nexts[i] = _chars(self.strings[1][i])
        self.notice = _chars(notice)

    def __dealloc__(self):
        free(self.firsts)
        free(self.nexts)


cdef _Heads _heads_for(object layout, Py_ssize_t nnames):
    """The heads of ``layout``: the last ones made, when it is the same layout again."""
    global _last_heads
    cdef tuple last
    tnx_lock_state()
    last = _last_heads
    tnx_unlock_state()
    if last is not None and last[0] is layout and (<_Heads>last[1]).count == nnames:
        return <_Heads>last[1]
    heads = _Heads(layout, nnames)
    entry = (layout, heads)
    tnx_lock_state()
    _last_heads = entry
    tnx_unlock_state()
    return heads


cdef size_t _size_soul(Outcome *outs, Py_ssize_t nnames, _Heads heads, const char *arena,
                       list keep, uint32_t *maxchar) except? 0:
    """Characters in one home's soul, and the widest; CPython decodes what is ill-formed."""
    cdef size_t length = 0
    cdef bint first = True
    cdef Outcome *out
    cdef Chars head
    cdef Py_ssize_t i
    maxchar[0] = 0
    for i in range(nnames):
        out = &outs[i]
        if out.status != PRESENT:
            continue
        head = heads.firsts[i] if first else heads.nexts[i]
        first = False
        length += head.length
        maxchar[0] = max(maxchar[0], head.maxchar)
        if out.well_formed:
            length += out.utf8.nchars
            maxchar[0] = max(maxchar[0], out.utf8.maxchar)
            out.text_bytes = out.body_len
        else:
            decoded = PyUnicode_DecodeUTF8(arena + out.body, <Py_ssize_t>out.body_len, "replace")
            keep.append(decoded)
            out.decoded = True
            out.text = _chars(decoded)
            out.text_bytes = len((<str>decoded).encode("utf-8"))  # U+FFFD takes three
            length += out.text.length
            maxchar[0] = max(maxchar[0], out.text.maxchar)
        if out.truncated:
            length += heads.notice.length
            maxchar[0] = max(maxchar[0], heads.notice.maxchar)
    return length


cdef size_t _put_chars(Target *target, size_t at, Chars chars) noexcept nogil:
    tnx_copy_chars(chars.data, chars.kind, chars.length,
                   <char *>target.data + at * <size_t>target.kind, target.kind)
    return at + chars.length


cdef void _fill_soul(Target *target, Outcome *outs, Py_ssize_t nnames, _Heads heads,
                     const char *arena) noexcept nogil:
    """Write one home's sections into its soul, in order: head, body, notice."""
    cdef size_t at = 0
    cdef bint first = True
    cdef Outcome *out
    cdef Py_ssize_t i
    for i in range(nnames):
        out = &outs[i]
        if out.status != PRESENT:
            continue
        at = _put_chars(target, at, heads.firsts[i] if first else heads.nexts[i])
        first = False
        if out.decoded:
            at = _put_chars(target, at, out.text)
        else:
            tnx_utf8_fill(<const unsigned char *>arena + out.body, out.body_len, &out.utf8,
                          <char *>target.data + at * <size_t>target.kind, target.kind, target.length - at)
            at += out.utf8.nchars
        if out.truncated:
            at = _put_chars(target, at, heads.notice)


cdef inline void _put(object read, Py_ssize_t index, object value):
    Py_INCREF(value)  # PyTuple_SET_ITEM steals a reference
    PyTuple_SET_ITEM(read, index, value)


cdef object _file_read(int status, int err, int kind, size_t nread, bint truncated, bint stable,
                       long long size_on_disk, bint linked, bint symlink, size_t body_chars=0,
                       size_t body_bytes=0, bint invalid_utf8=False):
    """A ``FileRead``, built in place: one allocation, no temporary tuple.

    Off the cyclic collector's lists once filled: it holds atomic values only
    (ints, bools, None, a status's text), as CPython finds of a plain tuple of
    them and untracks it itself, but never of a tuple's subclass. A soul kept
    in a cache then costs a full collection nothing.
    """
    cdef object read = PyType_GenericAlloc(_FILE_READ, FILE_READ_FIELDS)
    cdef object count = nread
    _put(read, 0, _STATUSES[status])
    _put(read, 1, err)
    _put(read, 2, kind)
    _put(read, 3, count)
    _put(read, 4, truncated)
    _put(read, 5, stable)
    # A file read whole read its size: one int for both (an allocation saved per file).
    _put(read, 6, None if size_on_disk < 0 else count if <long long>nread == size_on_disk else size_on_disk)
    _put(read, 7, linked)
    # A body of ASCII has as many bytes as characters: one int for both.
    cdef object chars = body_chars
    _put(read, 8, chars)
    _put(read, 9, chars if body_bytes == body_chars else body_bytes)
    _put(read, 10, symlink)
    _put(read, 11, invalid_utf8)
    PyObject_GC_UnTrack(<void *>read)
    return read


cdef object _composed(object soul, Outcome *outs, Py_ssize_t nnames, _Heads heads):
    """One home's ``Composed``: the soul, the names present, a ``FileRead`` per name."""
    cdef object reads = PyTuple_New(nnames)
    cdef object found
    cdef Py_ssize_t present = 0
    cdef Outcome *out
    cdef Py_ssize_t i
    for i in range(nnames):
        out = &outs[i]
        if out.status == PRESENT:
            _put(reads, i, _file_read(PRESENT, 0, out.kind, out.nread, out.truncated, out.stable,
                                      out.size_on_disk, out.linked, out.symlink,
                                      out.utf8.nchars if out.well_formed else out.text.length,
                                      out.text_bytes, not out.well_formed))
            present += 1
        elif out.status == MISSING and out.err == ENOENT and not out.linked:
            _put(reads, i, _MISSING_ENOENT)
        else:
            _put(reads, i, _file_read(out.status, out.err, out.kind, 0, False, out.stable, out.size_on_disk,
                                      out.linked, out.symlink))
    if present == 0:
        found = ()
    else:
        found = PyTuple_New(present)
        present = 0
        for i in range(nnames):
            if outs[i].status == PRESENT:
                _put(found, present, heads.files[i])
                present += 1
    cdef object composed = PyType_GenericAlloc(_COMPOSED, COMPOSED_FIELDS)
    _put(composed, 0, soul)
    _put(composed, 1, found)
    PyObject_GC_UnTrack(<void *>reads)  # FileReads only, themselves untracked: nothing to walk
    _put(composed, 2, reads)
    _put(composed, 3, None)
    _put(composed, 4, None)
    return composed


# The result types, built in place at these arities (the module keeps the types alive),
# and FileStatus by code: checked here, at import, against _vocabulary.
cdef enum:
    FILE_READ_FIELDS = 12
    COMPOSED_FIELDS = 5
cdef PyTypeObject *_FILE_READ = <PyTypeObject *>FileRead
cdef PyTypeObject *_COMPOSED = <PyTypeObject *>Composed
cdef tuple _STATUSES = tuple(member.value for member in FileStatus)  # a FileRead holds the text
if (len(FileRead._fields) != FILE_READ_FIELDS or len(Composed._fields) != COMPOSED_FIELDS
        or [FileStatus(_STATUSES[code]).name for code in (PRESENT, MISSING, NOT_REGULAR, UNREADABLE, REFUSED)]
        != ["PRESENT", "MISSING", "NOT_REGULAR", "UNREADABLE", "REFUSED"]
        or [(policy.word, policy.code) for policy in POLICIES.values()]
        != [("follow", FOLLOW), ("within", WITHIN), ("refuse", REFUSE),
            ("within-portable", WITHIN_PORTABLE)]):
    raise ImportError("_capread's result arities, status or policy codes differ from _vocabulary's")
# The most common result of all, shared instead of built per call.
_MISSING_ENOENT = FileRead(FileStatus.MISSING.value, ENOENT, 0, 0, False, True, None, False, 0, 0)
PyObject_GC_UnTrack(<void *>_MISSING_ENOENT)


# Each policy's code by its word, looked up without a field's attribute access.
cdef dict _CODES = {policy.word: policy.code for policy in POLICIES.values()}


cdef int _policy(object symlinks) except -1:
    """The code of the policy ``symlinks`` names (``_vocabulary.POLICIES``), or the check's error."""
    if symlinks == "follow":  # the default, on every compose: no lookup at all
        return FOLLOW
    code = _CODES.get(symlinks) if isinstance(symlinks, str) else None
    if code is None:
        check_arguments((), (), 1, symlinks)  # raises, in the shared words
    return code


cdef bint _process_error(int err) noexcept nogil:
    """The process's trouble, not the file's: no descriptor, or no memory (``_twins.PROCESS_ERRORS``)."""
    return err == EMFILE or err == ENFILE or err == ENOMEM


cdef int _raise_for_process(Outcome *outs, Py_ssize_t nnames, bytes home, tuple names) except -1:
    """Raise ``_twins.process_error`` for the first of one home's names the process could not read."""
    cdef Py_ssize_t i
    for i in range(nnames):
        if outs[i].status != PRESENT and _process_error(outs[i].err):
            raise process_error(outs[i].err, home if outs[i].home_failed else home + b"/" + names[i])
    return 0


cdef list _compose_batch(Outcome *outs, Py_ssize_t count, Py_ssize_t nnames, _Heads heads,
                         const char *arena):
    """The souls of ``count`` homes read into the arena: sized and allocated with the GIL,
    filled without it when there is enough to fill."""
    cdef list keep = []  # CPython's decodings of ill-formed bodies, until copied
    cdef list homes = []
    cdef Target *targets = <Target *>malloc((count + 1) * sizeof(Target))
    cdef size_t length
    cdef size_t pending = 0
    cdef uint32_t maxchar
    cdef Py_ssize_t home
    if targets == NULL:
        raise MemoryError()
    try:
        for home in range(count):
            length = _size_soul(&outs[home * nnames], nnames, heads, arena, keep, &maxchar)
            # Nobody sees a soul before this call returns: it is filled below.
            soul = PyUnicode_New(<Py_ssize_t>length, maxchar)
            homes.append(_composed(soul, &outs[home * nnames], nnames, heads))
            targets[home].data = PyUnicode_DATA(soul)
            targets[home].kind = PyUnicode_KIND(soul)
            targets[home].length = length
            pending += length
        if pending > NOGIL_FILL_BYTES:
            with nogil:
                for home in range(count):
                    _fill_soul(&targets[home], &outs[home * nnames], nnames, heads, arena)
        else:  # too little to be worth handing the GIL over
            for home in range(count):
                _fill_soul(&targets[home], &outs[home * nnames], nnames, heads, arena)
    finally:
        free(targets)
    return homes


cdef bint _all_bytes(tuple items, bint paths) noexcept:
    """Are all ``items`` bytes (and, for ``paths``, free of NUL)? The fast form of ``check_arguments``."""
    cdef object item
    for item in items:
        if not isinstance(item, bytes):
            return False
        if paths and memchr(<const char *><bytes>item, 0, len(<bytes>item)) != NULL:
            return False
    return True


def compose_homes(homes, names, Py_ssize_t cap, symlinks, layout):
    """Read each of ``names`` inside each home and compose each home's soul.

    ``homes`` are directories' paths as bytes; ``names`` plain file names
    (no ``/``) as bytes; ``cap`` >= 1 the byte cap of each file; ``symlinks``
    one of ``_vocabulary.POLICIES``. ``layout`` is a ``Layout``, ``(files,
    firsts, nexts, notice)``: per name its text, the opening of its section
    as the first one and after another, and the line that ends a body cut at
    the cap. Each file read is cut at ``cap`` bytes (backed off to a
    character boundary), loses a leading BOM and its White_Space at both
    ends, and is decoded as UTF-8 with U+FFFD replacement. Returns, per
    home, a ``Composed``: the soul (``text``), the names (from ``files``) of
    the files present (``found``), and one ``FileRead`` per name
    (``reads``). Never raises for a file's trouble: that is what the reads
    report. Raises OSError for the process's: no descriptor (EMFILE, ENFILE)
    or no memory (ENOMEM) to be had.
    """
    cdef tuple paths = tuple(homes)
    cdef tuple tnames = tuple(names)
    cdef Py_ssize_t nnames = len(tnames)
    cdef Py_ssize_t nhomes = len(paths)
    cdef Py_ssize_t first = 0
    cdef Py_ssize_t done
    cdef Py_ssize_t home
    cdef const char **chomes = NULL
    cdef const char **cnames = NULL
    cdef Outcome *outs = NULL
    cdef Buffer arena
    cdef list souls = []
    cdef int policy = _policy(symlinks)
    if cap < 1 or not _all_bytes(tnames, False) or not _all_bytes(paths, True):
        check_arguments(paths, tnames, cap, symlinks)  # raises, in the shared words
    cdef _Heads heads = _heads_for(layout, nnames)
    arena = _take_arena()
    try:
        chomes = <const char **>malloc((nhomes + 1) * sizeof(char *))
        cnames = <const char **>malloc((nnames + 1) * sizeof(char *))
        outs = <Outcome *>malloc((nhomes * nnames + 1) * sizeof(Outcome))
        if chomes == NULL or cnames == NULL or outs == NULL:
            raise MemoryError()
        for home in range(nhomes):
            chomes[home] = <bytes>paths[home]
        for home in range(nnames):
            cnames[home] = <bytes>tnames[home]
        while first < nhomes:
            # All the I/O of a batch of homes runs without the GIL; it comes
            # back only to size the souls, so threads overlap instead of taking turns.
            with nogil:
                done = _read_batch(chomes, first, nhomes, cnames, nnames, policy,
                                   <size_t>cap, &arena, outs)
            for home in range(first, done):
                _raise_for_process(&outs[home * nnames], nnames, paths[home], tnames)
            souls.extend(_compose_batch(&outs[first * nnames], done - first, nnames, heads, arena.data))
            first = done
    finally:
        free(chomes)
        free(cnames)
        free(outs)
        _give_back(arena)
    return souls


cdef object _excerpt(Outcome *out, const char *arena, object read):
    """The bytes of a file read within its windows (see ``read_excerpts``)."""
    cdef const char *data = arena + out.offset
    head = PyBytes_FromStringAndSize(data, <Py_ssize_t>out.nread)
    if not out.truncated:  # read whole
        return Excerpt(read, out.length, head, None)
    return Excerpt(read, out.length, head,
                   PyBytes_FromStringAndSize(data + out.nread, <Py_ssize_t>out.tail_len))


def read_excerpts(bytes home, names, Py_ssize_t cap, symlinks, windows):
    """Read at most the first ``head + tail + 1`` and the last ``tail`` bytes of each of ``names``.

    ``home``, ``names``, ``cap`` and ``symlinks`` are as for
    ``compose_homes``; ``windows`` gives ``(head, tail)`` per name, with
    ``head + 2 * tail <= cap``, so that no more than ``cap + 1`` bytes of a
    file are read. A file no longer than ``head + tail`` bytes is read whole:
    ``Excerpt.head`` holds its bytes and ``tail`` is None. A longer one gives
    the ``head + tail + 1`` bytes of its start in ``head`` and its last
    bytes in ``tail``: at most ``tail`` of them, and none that ``head``
    holds. ``length`` is the file's length as read; a file whose size fstat
    does not tell is read on to its end, or to ``cap + 1`` bytes, keeping the
    last ``tail``. The bytes are as the file holds them: nothing is cut,
    trimmed or decoded. Never raises for a file's trouble: that is what each
    ``Excerpt.read`` reports; the process's trouble raises, as for
    ``compose_homes``.
    """
    cdef tuple tnames = tuple(names)
    cdef tuple twindows = tuple(windows)
    cdef Py_ssize_t nnames = len(tnames)
    cdef Py_ssize_t i
    cdef const char **cnames = NULL
    cdef size_t *heads = NULL
    cdef size_t *tails = NULL
    cdef Outcome *outs = NULL
    cdef Outcome *out
    cdef Buffer arena
    cdef size_t used = 0
    cdef const char *chome = home
    cdef int policy = _policy(symlinks)
    check_arguments([home], tnames, cap, symlinks)
    check_windows(twindows, nnames, cap)
    arena = _take_arena()
    try:
        cnames = <const char **>malloc((nnames + 1) * sizeof(char *))
        heads = <size_t *>malloc((nnames + 1) * sizeof(size_t))
        tails = <size_t *>malloc((nnames + 1) * sizeof(size_t))
        outs = <Outcome *>malloc((nnames + 1) * sizeof(Outcome))
        if cnames == NULL or heads == NULL or tails == NULL or outs == NULL:
            raise MemoryError()
        for i in range(nnames):
            cnames[i] = <bytes>tnames[i]
            heads[i] = twindows[i][0]
            tails[i] = twindows[i][1]
        with nogil:
            _read_home(chome, cnames, nnames, policy, <size_t>cap, heads, tails, &arena, &used, outs)
        _raise_for_process(outs, nnames, home, tnames)
        excerpts = []
        for i in range(nnames):
            out = &outs[i]
            if out.status == PRESENT:
                read = _file_read(PRESENT, 0, out.kind, out.nread + out.tail_len, out.truncated, out.stable,
                                  out.size_on_disk, out.linked, out.symlink)
                excerpts.append(_excerpt(out, arena.data, read))
            elif out.status == MISSING and out.err == ENOENT and not out.linked:
                excerpts.append(_MISSING_EXCERPT)
            else:
                read = _file_read(out.status, out.err, out.kind, 0, False, out.stable, out.size_on_disk,
                                  out.linked, out.symlink)
                excerpts.append(Excerpt(read, 0, None, None))
        return tuple(excerpts)
    finally:
        free(cnames)
        free(heads)
        free(tails)
        free(outs)
        _give_back(arena)


_MISSING_EXCERPT = Excerpt(_MISSING_ENOENT, 0, None, None)


def decode_utf8(const unsigned char[::1] data):
    """``data`` decoded as UTF-8, with U+FFFD for what is ill-formed, as ``bytes.decode`` does.

    The decoder the readers use, on its own: the budget decodes with it what it
    reads of a file in part.
    """
    cdef size_t n = data.shape[0]
    cdef tnx_text utf8
    cdef const unsigned char *s = &data[0] if n else NULL
    if n == 0:
        return ""
    if tnx_utf8_scan(s, n, &utf8) != TNX_SCAN_OK:
        return PyUnicode_DecodeUTF8(<const char *>s, <Py_ssize_t>n, "replace")
    text = PyUnicode_New(<Py_ssize_t>utf8.nchars, utf8.maxchar)
    cdef void *out = PyUnicode_DATA(text)
    cdef int kind = PyUnicode_KIND(text)
    if n > NOGIL_FILL_BYTES:
        with nogil:
            tnx_utf8_fill(s, n, &utf8, out, kind, utf8.nchars)
    else:
        tnx_utf8_fill(s, n, &utf8, out, kind, utf8.nchars)
    return text


def untrack(value):
    """Take ``value`` off the cyclic garbage collector's lists, if it is on them.

    Only for a value that no reference cycle can pass through (a ``Soul``
    without a ``count`` function): a full collection then no longer walks
    it, which for a host keeping 100,000 souls is most of the collection.
    """
    if PyObject_GC_IsTracked(value):
        PyObject_GC_UnTrack(<void *>value)
