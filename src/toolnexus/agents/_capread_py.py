"""Pure-Python twin of the compiled ``_capread`` reader.

Same functions, arguments, results and docstrings as ``_capread.pyx``; it is
used when the extension is not built or ``TOOLNEXUS_SOUL_NO_EXTENSIONS=1`` is
set. Everything that decides *what* a soul looks like (order, section heads,
notice) is decided in ``_format`` and handed in as a layout; this module
reads each file as ``docs/format.md`` says, cuts, trims and decodes its body,
and joins the sections as the layout says.
"""

from __future__ import annotations

import errno
import os
import stat
import sys
import time
from collections.abc import Callable, Sequence

from ._bodies import back_off
from ._format import WHITESPACE
from ._vocabulary import Composed, Excerpt, FileRead, Layout, Policy, Status

__all__ = ["compose_homes", "decode_utf8", "read_excerpts"]

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


# An enum member costs a lookup of some 60 ns (CPython 3.11): those used
# for every file are looked up once, here.
_FOLLOW = Policy.FOLLOW
_PRESENT = Status.PRESENT


def _open_entry(dirfd: int, directory: bytes, name: bytes, symlinks: int) -> int:
    if symlinks == _FOLLOW:
        return _open(dirfd, directory, name, _FILE_FLAGS)
    if symlinks == Policy.REFUSE:
        return _open_nofollow(dirfd, directory, name)
    if symlinks == Policy.WITHIN and _openat2 is not None and dirfd >= 0:
        try:
            return _openat2(dirfd, name)
        except OSError as exc:
            # ENOSYS: old kernel; EPERM: a seccomp filter that denies it.
            if exc.errno not in (errno.ENOSYS, errno.EPERM):
                raise
    return _open_within_portable(dirfd, directory, name)


def _classify_open_error(err: int, symlinks: int) -> Status:
    if err in _ABSENT:
        return Status.MISSING
    if err == errno.EXDEV and symlinks in (Policy.WITHIN, Policy.WITHIN_PORTABLE):
        return Status.REFUSED
    if err in _SYMLINK_REFUSED and symlinks in (Policy.REFUSE, Policy.WITHIN_PORTABLE):
        return Status.REFUSED
    if err in (errno.ENXIO, errno.EOPNOTSUPP):  # a socket (Linux; macOS), or a driverless device
        return Status.NOT_REGULAR
    return Status.UNREADABLE


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
    fd: int, want: int, tail: int, limit: int
) -> tuple[FileRead, bytes | bytearray | None, bytes, int]:
    """Read an open name: its first ``want`` bytes at most, and its last ``tail`` when it is longer.

    Returns its ``FileRead``, the bytes from its start (None unless present),
    the bytes at its end (empty unless it is longer than ``want``), and the
    file's length as read. ``tail`` 0 is the plain capped read.
    """
    before = os.fstat(fd)
    kind = before.st_mode & _S_IFMT
    if kind != _S_IFREG:
        return FileRead(Status.NOT_REGULAR, 0, kind, 0, False, True), None, b"", 0
    first, one_read = _read_capped(fd, want, before.st_size)
    got = len(first)
    if got < want and _trusted(got, before, one_read):  # the usual case: all of it, in one small read
        return FileRead(_PRESENT, 0, kind, got, False, True), first, b"", got
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
    return FileRead(_PRESENT, 0, kind, got + len(last), got == want, stable), first, last, end


_S_IFMT = 0o170000
_S_IFREG = stat.S_IFREG
# The most common result of all, shared instead of built per name.
_MISSING_ENOENT = FileRead(Status.MISSING, errno.ENOENT, 0, 0, False, True)


def _body(data: bytes | bytearray, cap: int) -> str:
    """The body of a file's bytes: cut at ``cap`` and backed off, decoded, without its BOM, trimmed.

    Decoded, then trimmed as text: the same as trimming the bytes first
    (see ``_bodies``), and both run in C. A leading U+FEFF can only be the
    BOM's bytes.
    """
    body = data if len(data) <= cap else memoryview(data)[: back_off(data, cap)]  # cut, not copied
    return str(body, "utf-8", "replace").removeprefix("\ufeff").strip(WHITESPACE)


def _open_dir(directory: bytes) -> int | FileRead:
    """A descriptor for ``directory`` (-1 where there is no dir_fd), or what every name reads as."""
    if not _HAVE_DIR_FD:
        return -1
    try:
        return os.open(directory, _DIR_FLAGS)
    except OSError as exc:
        err = exc.errno or errno.EIO
        return FileRead(Status.MISSING if err in _ABSENT else Status.UNREADABLE, err, 0, 0, False, True)


def _read_name(  # noqa: PLR0917 - the reading's every parameter, as the compiled twin's is
    dirfd: int, directory: bytes, name: bytes, symlinks: int, want: int, tail: int, limit: int
) -> tuple[FileRead, bytes | bytearray | None, bytes, int]:
    """Open ``name`` as the policy says and ``_read_entry`` it; any trouble is in the FileRead."""
    try:
        fd = _open_entry(dirfd, directory, name, symlinks)
    except OSError as exc:
        return _not_opened(exc, dirfd, directory, name, symlinks), None, b"", 0
    try:
        return _read_entry(fd, want, tail, limit)
    except OSError as exc:
        return _not_read(exc), None, b"", 0
    finally:
        os.close(fd)


def _not_opened(exc: OSError, dirfd: int, directory: bytes, name: bytes, symlinks: int) -> FileRead:
    err = exc.errno or errno.EIO
    if err == errno.ENOENT:
        return _MISSING_ENOENT
    status = _classify_open_error(err, symlinks)
    # A socket cannot be opened: say what it is.
    kind = _kind_at(dirfd, directory, name, symlinks) if status == Status.NOT_REGULAR else 0
    return FileRead(status, err, kind, 0, False, True)


def _kind_at(dirfd: int, directory: bytes, name: bytes, symlinks: int) -> int:
    """The file type bits of ``name`` (not followed if the policy refuses links), 0 if unknown."""
    follow = symlinks != Policy.REFUSE
    try:
        if dirfd >= 0:
            st = os.stat(name, dir_fd=dirfd, follow_symlinks=follow)
        else:
            st = os.stat(os.path.join(directory, name), follow_symlinks=follow)
    except OSError:
        return 0
    return st.st_mode & _S_IFMT


def _not_read(exc: OSError) -> FileRead:
    return FileRead(Status.UNREADABLE, exc.errno or errno.EIO, stat.S_IFREG, 0, False, True)


def _compose_home(
    directory: bytes, names: Sequence[bytes], cap: int, symlinks: int, layout: Layout
) -> Composed:
    """Read one home's files and compose its soul, as ``compose_homes`` says."""
    dirfd = _open_dir(directory)
    if not isinstance(dirfd, int):
        return Composed("", (), (dirfd,) * len(names))
    pieces: list[str] = []
    found: list[str] = []
    reads: list[FileRead] = []
    try:
        for index, name in enumerate(names):
            read, data, _, _ = _read_name(dirfd, directory, name, symlinks, cap + 1, 0, cap + 1)
            reads.append(read)
            if data is None:
                continue
            found.append(layout.files[index])
            pieces.append(layout.nexts[index] if pieces else layout.firsts[index])
            pieces.append(_body(data, cap))
            if read.truncated:
                pieces.append(layout.notice)
            del data  # now, so that the next file's read can have its memory
    finally:
        if dirfd >= 0:
            os.close(dirfd)
    return Composed("".join(pieces), tuple(found), tuple(reads))


def _check_arguments(directories: Sequence[bytes], names: Sequence[bytes], cap: int) -> None:
    if cap < 1:
        raise ValueError("cap must be >= 1")
    for name in names:
        if not isinstance(name, bytes):
            raise TypeError(f"names must be bytes, not {type(name).__name__}")
    for directory in directories:
        if not isinstance(directory, bytes):
            raise TypeError(f"directories must be bytes, not {type(directory).__name__}")
        if b"\0" in directory:
            raise ValueError("embedded null byte")


def compose_homes(
    directories: Sequence[bytes], names: Sequence[bytes], cap: int, symlinks: int, layout: Layout
) -> list[Composed]:
    """Read each of ``names`` inside each directory and compose each directory's soul.

    ``directories`` are filesystem paths as bytes; ``names`` plain file names
    (no ``/``) as bytes; ``cap`` >= 1 the byte cap of each file; ``symlinks``
    a ``Policy``. ``layout`` is a ``Layout``, ``(files, firsts, nexts, notice)``: per name
    its text, the opening of its section as the first one and after another,
    and the line that ends a body cut at the cap. Each file read is cut at
    ``cap`` bytes (backed off to a character boundary), loses a leading BOM
    and its White_Space at both ends, and is decoded as UTF-8 with U+FFFD
    replacement. Returns, per directory, a ``Composed``: the soul (``text``),
    the names (from ``files``) of the files present (``found``), and one
    ``FileRead`` per name (``reads``). Never raises for a file's trouble:
    that is what the reads report.
    """
    _check_arguments(directories, names, cap)
    _check_layout(layout, len(names))
    return [_compose_home(directory, names, cap, symlinks, layout) for directory in directories]


def read_excerpts(
    directory: bytes, names: Sequence[bytes], cap: int, symlinks: int, windows: Sequence[tuple[int, int]]
) -> tuple[Excerpt, ...]:
    """Read at most the first ``head + tail + 1`` and the last ``tail`` bytes of each of ``names``.

    ``directory``, ``names``, ``cap`` and ``symlinks`` are as for
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
    ``Excerpt.read`` reports.
    """
    _check_arguments([directory], names, cap)
    if len(windows) != len(names):
        raise ValueError("windows must have one (head, tail) per name")
    for head, tail in windows:
        if head < 0 or tail < 0 or head + 2 * tail > cap:
            raise ValueError(
                "each window must be (head, tail) with 0 <= head, tail and head + 2 * tail <= cap"
            )
    dirfd = _open_dir(directory)
    if not isinstance(dirfd, int):
        return tuple(Excerpt(dirfd, 0, None, None) for _ in names)
    excerpts = []
    try:
        for name, (head, tail) in zip(names, windows, strict=True):
            want = head + tail + 1
            read, first, last, end = _read_name(dirfd, directory, name, symlinks, want, tail, cap + 1)
            if first is None:
                excerpts.append(Excerpt(read, 0, None, None))
            else:
                excerpts.append(Excerpt(read, end, bytes(first), last if read.truncated else None))
    finally:
        if dirfd >= 0:
            os.close(dirfd)
    return tuple(excerpts)


class _LayoutCheck:
    """Checks a layout for ``count`` names; remembers the last one it passed.

    The Python layer hands in the same few layouts again and again; holding
    the last keeps its id from reuse.
    """

    def __init__(self) -> None:
        self._layout: Layout | None = None
        self._count = -1

    def __call__(self, layout: Layout, count: int) -> None:
        if layout is self._layout and count == self._count:
            return
        files, firsts, nexts, notice = layout
        if not len(files) == len(firsts) == len(nexts) == count:
            raise ValueError("layout must have one file name and two heads per name")
        for texts in (files, firsts, nexts, (notice,)):
            for text in texts:
                if type(text) is not str:
                    raise TypeError("layout must hold str only")
        self._layout, self._count = layout, count


_check_layout = _LayoutCheck()


def decode_utf8(data: bytes) -> str:
    """``data`` decoded as UTF-8, with U+FFFD for what is ill-formed, as ``bytes.decode`` does.

    The decoder the readers use, on its own: for tests and benchmarks.
    """
    return str(data, "utf-8", "replace")
