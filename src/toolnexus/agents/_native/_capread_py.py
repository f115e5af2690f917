"""Pure-Python twin of the compiled ``_capread`` reader.

Same functions, arguments, results and docstrings as ``_capread.pyx`` (the
``Reader`` of ``_twins``); it is used when the extension is not built or
``TOOLNEXUS_SOUL_NO_EXTENSIONS=1`` is set. What a soul looks like (order,
section heads, notice) is decided in ``_format`` and handed in as a layout;
this module reads each file as ``docs/format.md`` says, cuts, trims and
decodes its body, and joins the sections as the layout says.
"""

from __future__ import annotations

import errno
import functools
import gc
import os
import stat
import time
from collections.abc import Callable, Sequence

from .._format import body_and_bytes, decode
from .._vocabulary import REFUSE, Composed, Excerpt, FileRead, FileStatus, Layout, Policy
from ._open_py import ABSENT, SymlinkError, classify_open_error, open_entry
from ._twins import PROCESS_ERRORS, check_arguments, check_layout, check_windows, process_error

__all__ = ["compose_homes", "decode_utf8", "read_excerpts", "untrack"]

_PAGE = 4096
_MAX_TRIES = 3
# A change this recent may share its timestamps with the next one: the kernel
# stamps files from a clock that ticks every 1-10 ms.
_RECENT_NS = 100_000_000
_VERIFY_CHUNK = 16 * 1024
_DIR_FLAGS = (
    (getattr(os, "O_PATH", 0) or os.O_RDONLY) | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)
)
_HAVE_DIR_FD = os.open in os.supports_dir_fd
_yield = getattr(os, "sched_yield", lambda: None)


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
    """Can a read be trusted without a second fstat?

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


def _verify(fd: int, data: bytes | bytearray, at: int = 0) -> bool:
    """Does the file still hold ``data`` at offset ``at``? Compared a slice at a time."""
    with memoryview(data) as view:
        done = 0
        while done < len(data):
            chunk = os.pread(fd, min(_VERIFY_CHUNK, len(data) - done), at + done)
            if not chunk or view[done : done + len(chunk)] != chunk:
                return False
            done += len(chunk)
    return True


def _same(a: os.stat_result, b: os.stat_result) -> bool:
    return (a.st_size, a.st_mtime_ns, a.st_ctime_ns) == (b.st_size, b.st_mtime_ns, b.st_ctime_ns)


def _read_last(fd: int, tail: int, size: int, have: int, limit: int) -> tuple[bytes, int]:
    """The last bytes of a file longer than the ``have`` bytes read from its start.

    At most ``tail`` of them, and none of the first ``have``; also where they
    end: the file's length as read. When fstat's size can be believed, the
    end is read in place; when it cannot (a pseudo-file, or a file that
    grew), the file is read on to EOF or ``limit`` bytes in all, keeping only
    the last ``tail``.
    """
    if size >= have:
        want = min(tail, size - have)
        last = b""
        while len(last) < want:
            chunk = os.pread(fd, want - len(last), size - want + len(last))
            if not chunk:
                break  # it shrank: the stability check sees it
            last += chunk
        return last, size - want + len(last)
    keep = b""
    total = have
    while total < limit:
        chunk = os.read(fd, min(_VERIFY_CHUNK * 4, limit - total))
        if not chunk:
            break
        total += len(chunk)
        keep = (keep + chunk)[-tail:] if tail else b""
    return keep, total


def _read_entry(
    fd: int, want: int, tail: int, limit: int, symlink: bool
) -> tuple[FileRead, bytes | bytearray | None, bytes, int]:
    """Read an open name: its first ``want`` bytes at most, and its last ``tail`` when it is longer.

    Returns its ``FileRead``, the bytes from its start (None unless present),
    the bytes at its end (empty unless it is longer than ``want``), and the
    file's length as read. ``tail`` 0 is the plain capped read. ``symlink``:
    the name was a symlink.
    """
    before = os.fstat(fd)
    kind = before.st_mode & _S_IFMT
    linked = symlink or before.st_nlink > 1
    if kind != _S_IFREG:
        read = FileRead(_NOT_REGULAR, 0, kind, 0, False, True, None, linked, 0, 0, symlink)
        return read, None, b"", 0
    first, one_read = _read_capped(fd, want, before.st_size)
    got = len(first)
    if got < want and _trusted(got, before, one_read):  # the usual case: all of it, in one small read
        read = _new(
            FileRead, (_PRESENT, 0, kind, got, False, True, before.st_size, linked, 0, 0, symlink, False)
        )
        return read, first, b"", got
    tries = 1
    while True:
        if tries > 1:
            first, one_read = _read_capped(fd, want, before.st_size)
            got = len(first)
        last, end = b"", got
        if got == want:  # longer than what is read from its start
            if tail:
                last, end = _read_last(fd, tail, before.st_size, want, limit)
            else:  # its length, as fstat says (at least what was read)
                end = max(before.st_size, want)
        stable = not last and _trusted(got, before, one_read)
        if stable:
            break
        # A writer rewriting in place could have torn it: look again.
        after = os.fstat(fd)
        if (
            _same(before, after)
            and _fits(end, after)  # end >= got
            and (
                (tries == 1 and not _recent(after))
                or (_verify(fd, first) and (not last or _verify(fd, last, end - len(last))))
            )
        ):
            stable = True
            break
        if tries == _MAX_TRIES:
            break
        # Let the writer finish what it is writing before looking again.
        _yield()
        before = after
        os.lseek(fd, 0, os.SEEK_SET)
        tries += 1
    read = FileRead(
        _PRESENT, 0, kind, got + len(last), got == want, stable, before.st_size, linked, 0, 0, symlink
    )
    return read, first, last, end


_S_IFMT = 0o170000
_S_IFREG = stat.S_IFREG
# A FileRead holds a status as its text (atomic: the collector need not walk
# it); looked up once, here (an enum member costs some 60 ns, CPython 3.11).
_PRESENT = FileStatus.PRESENT.value
_NOT_REGULAR = FileStatus.NOT_REGULAR.value
_new = tuple.__new__  # a FileRead from its fields, without NamedTuple's own __new__ and _replace
# The most common result of all, shared instead of built per name.
_MISSING_ENOENT = FileRead(FileStatus.MISSING.value, errno.ENOENT, 0, 0, False, True, None, False, 0, 0)


def _open_home(home: bytes) -> int | FileRead:
    """A descriptor for ``home`` (-1 where there is no dir_fd), or what every name reads as."""
    if not _HAVE_DIR_FD:
        return -1
    try:
        return os.open(home, _DIR_FLAGS)
    except OSError as exc:
        err = exc.errno or errno.EIO
        if err in PROCESS_ERRORS:
            raise process_error(err, home) from None
        status = FileStatus.MISSING if err in ABSENT else FileStatus.UNREADABLE
        return FileRead(status.value, err, 0, 0, False, True, None)


def _read_name(  # noqa: PLR0917 - the reading's every parameter, as the compiled twin's is
    dirfd: int, home: bytes, name: bytes, policy: Policy, want: int, tail: int, limit: int
) -> tuple[FileRead, bytes | bytearray | None, bytes, int]:
    """Open ``name`` as the policy says and ``_read_entry`` it; any trouble of the file's is in the FileRead.

    Trouble of the process's (no descriptor or memory left) raises.
    """
    try:
        fd, symlink = open_entry(dirfd, home, name, policy)
    except OSError as exc:
        return _not_opened(exc, dirfd, home, name, policy), None, b"", 0
    try:
        return _read_entry(fd, want, tail, limit, symlink)
    except OSError as exc:
        return _not_read(exc, home, name, symlink), None, b"", 0
    finally:
        os.close(fd)


def _not_opened(exc: OSError, dirfd: int, home: bytes, name: bytes, policy: Policy) -> FileRead:
    err = exc.errno or errno.EIO
    symlink = isinstance(exc, SymlinkError)
    if err == errno.ENOENT and not symlink:
        return _MISSING_ENOENT
    if err in PROCESS_ERRORS:
        raise process_error(err, os.path.join(home, name)) from None
    status = classify_open_error(err, policy)
    # A socket cannot be opened: say what it is.
    kind = _kind_at(dirfd, home, name, policy) if status is FileStatus.NOT_REGULAR else 0
    return FileRead(status.value, err, kind, 0, False, True, None, symlink, 0, 0, symlink)


def _kind_at(dirfd: int, home: bytes, name: bytes, policy: Policy) -> int:
    """The file type bits of ``name`` (not followed if the policy refuses links), 0 if unknown."""
    follow = policy is not REFUSE
    try:
        if dirfd >= 0:
            st = os.stat(name, dir_fd=dirfd, follow_symlinks=follow)
        else:
            st = os.stat(os.path.join(home, name), follow_symlinks=follow)
    except OSError:
        return 0
    return st.st_mode & _S_IFMT


def _not_read(exc: OSError, home: bytes, name: bytes, symlink: bool) -> FileRead:
    err = exc.errno or errno.EIO
    if err in PROCESS_ERRORS:
        raise process_error(err, os.path.join(home, name)) from None
    return FileRead(
        FileStatus.UNREADABLE.value, err, stat.S_IFREG, 0, False, True, None, symlink, 0, 0, symlink
    )


def _compose_home(home: bytes, names: Sequence[bytes], cap: int, policy: Policy, layout: Layout) -> Composed:
    """Read one home's files and compose its soul, as ``compose_homes`` says."""
    dirfd = _open_home(home)
    if not isinstance(dirfd, int):
        return Composed("", (), (dirfd,) * len(names))
    pieces: list[str] = []
    found: list[str] = []
    reads: list[FileRead] = []
    try:
        for index, name in enumerate(names):
            read, data, _, _ = _read_name(dirfd, home, name, policy, cap + 1, 0, cap + 1)
            if data is None:
                reads.append(read)
                continue
            body, nbytes, well_formed = body_and_bytes(data, cap)
            reads.append(_new(FileRead, (*read[:8], len(body), nbytes, read.symlink, not well_formed)))
            found.append(layout.files[index])
            pieces.append(layout.nexts[index] if pieces else layout.firsts[index])
            pieces.append(body)
            if read.truncated:
                pieces.append(layout.notice)
            del data  # now, so that the next file's read can have its memory
    finally:
        if dirfd >= 0:
            os.close(dirfd)
    return Composed("".join(pieces), tuple(found), tuple(reads))


class _LayoutCheck:
    """``check_layout``, once per layout: it remembers the last one it passed.

    The Python layer hands in the same few layouts again and again; holding
    the last keeps its id from reuse. One tuple, stored at once, so that no
    thread sees a layout with another's count.
    """

    def __init__(self) -> None:
        self._passed: tuple[Layout, int] | None = None

    def __call__(self, layout: Layout, count: int) -> None:
        passed = self._passed
        if passed is not None and passed[0] is layout and passed[1] == count:
            return
        check_layout(layout, count)
        self._passed = (layout, count)


_check_layout = _LayoutCheck()


def compose_homes(
    homes: Sequence[bytes], names: Sequence[bytes], cap: int, symlinks: str, layout: Layout
) -> list[Composed]:
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
    policy = check_arguments(homes, names, cap, symlinks)
    _check_layout(layout, len(names))
    return [_compose_home(home, names, cap, policy, layout) for home in homes]


def read_excerpts(
    home: bytes, names: Sequence[bytes], cap: int, symlinks: str, windows: Sequence[tuple[int, int]]
) -> tuple[Excerpt, ...]:
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
    policy = check_arguments([home], names, cap, symlinks)
    check_windows(windows, len(names), cap)
    dirfd = _open_home(home)
    if not isinstance(dirfd, int):
        return tuple(Excerpt(dirfd, 0, None, None) for _ in names)
    excerpts = []
    try:
        for name, (head, tail) in zip(names, windows, strict=True):
            want = head + tail + 1
            read, first, last, end = _read_name(dirfd, home, name, policy, want, tail, cap + 1)
            if first is None:
                excerpts.append(Excerpt(read, 0, None, None))
            else:
                excerpts.append(Excerpt(read, end, bytes(first), last if read.truncated else None))
    finally:
        if dirfd >= 0:
            os.close(dirfd)
    return tuple(excerpts)


def decode_utf8(data: bytes | memoryview) -> str:
    """``data`` decoded as UTF-8, with U+FFFD for what is ill-formed, as ``bytes.decode`` does.

    The decoder the readers use, on its own: the budget decodes with it what it
    reads of a file in part.
    """
    return decode(data)[0]


def untrack(value: object) -> None:
    """Take ``value`` off the cyclic garbage collector's lists, if it is on them.

    Only for a value that no reference cycle can pass through (a ``Soul``
    without a ``count`` function): a full collection then no longer walks
    it, which for a host keeping 100,000 souls is most of the collection.
    """
    if gc.is_tracked(value) and (untracker := _untracker()) is not None:
        untracker(value)


@functools.cache  # looked up at the first soul, not at every import
def _untracker() -> Callable[[object], object] | None:
    """CPython's ``PyObject_GC_UnTrack``, through ctypes; None where there is none (values stay tracked)."""
    try:
        import ctypes  # noqa: PLC0415 - see above

        function = ctypes.pythonapi.PyObject_GC_UnTrack
    except (ImportError, AttributeError):  # no ctypes, or not CPython
        return None
    function.argtypes, function.restype = [ctypes.py_object], None
    return function
