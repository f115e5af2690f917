"""Composition: argument checks, bootstrap order, trim, notice, sections.

Every rule of SPEC §3.5-3.7 lives here, once, for both readers; the reader
(``_reader.read_home``) only delivers each file's capped, decoded text.
"""

from __future__ import annotations

import errno as errnos
import os
import stat
import sys
from functools import lru_cache
from typing import Final, Literal

from . import _reader
from ._capread_py import Entry
from ._report import STATUS_BY_CODE, UNUSABLE, BootstrapFileError, FileReport, FileStatus, Soul

__all__ = [
    "BOOTSTRAP_ORDER",
    "MAX_BOOTSTRAP_FILE_BYTES",
    "WHITESPACE",
    "SymlinkPolicy",
    "compose",
    "compose_soul",
    "truncation_notice",
]

BOOTSTRAP_ORDER: Final = (
    "AGENTS.md",
    "SOUL.md",
    "IDENTITY.md",
    "USER.md",
    "TOOLS.md",
    "HEARTBEAT.md",
    "MEMORY.md",
)
MAX_BOOTSTRAP_FILE_BYTES: Final = 2 * 1024 * 1024

# Unicode White_Space: what Rust's str::trim and .NET's string.Trim remove.
# Python's bare str.strip() would also take U+001C..U+001F, which must stay.
WHITESPACE: Final = (
    "\t\n\x0b\x0c\r \x85\xa0\u1680"
    + "".join(map(chr, range(0x2000, 0x200B)))
    + "\u2028\u2029\u202f\u205f\u3000"
)

SymlinkPolicy = Literal["follow", "within", "refuse"]
_POLICY_CODES: Final = {"follow": 0, "within": 1, "refuse": 2}

_NAMES: Final = tuple(os.fsencode(name) for name in BOOTSTRAP_ORDER)
# Section openers: the first section starts the soul, later ones follow "\n\n".
_FIRST_HEADS: Final = tuple(f"## {name}\n\n" for name in BOOTSTRAP_ORDER)
_NEXT_HEADS: Final = tuple(f"\n\n## {name}\n\n" for name in BOOTSTRAP_ORDER)
_PRESENT: Final = 0
_MISSING: Final = 1
_MIB: Final = 1024 * 1024
# The C reader holds the cap in a Py_ssize_t and asks for cap + 1 bytes.
_MAX_CAP: Final = 2**63 - 2


@lru_cache(maxsize=16)
def truncation_notice(cap: int) -> str:
    """The line appended to a truncated body: ``[truncated: exceeds 2 MB bootstrap cap]``."""
    if cap % _MIB == 0:
        size = f"{cap // _MIB} MB"
    elif cap % 1024 == 0:
        size = f"{cap // 1024} KB"
    else:
        size = f"{cap} bytes"
    return f"[truncated: exceeds {size} bootstrap cap]"


_FS_ENCODING: Final = sys.getfilesystemencoding()
_FS_ERRORS: Final = sys.getfilesystemencodeerrors()


def _dir_bytes(dir: object) -> bytes:
    """``dir`` as a filesystem path in bytes, or TypeError/ValueError naming it."""
    if type(dir) is str:  # the common case first: this runs once per soul
        path = _encode_path(dir)
    elif isinstance(dir, bytes):
        path = bytes(dir)
    elif isinstance(dir, (str, os.PathLike)):
        try:
            fspath = os.fspath(dir)
        except TypeError as exc:  # __fspath__ returned something else
            raise TypeError(f"dir is not a usable path: {exc}") from None
        path = _encode_path(fspath) if isinstance(fspath, str) else fspath
    else:
        raise TypeError(f"dir must be str, bytes or os.PathLike, not {type(dir).__name__}")
    if b"\0" in path:
        raise ValueError("dir must not contain a NUL byte")
    return path


def _encode_path(path: str) -> bytes:
    try:
        return path.encode(_FS_ENCODING, _FS_ERRORS)
    except UnicodeError as exc:
        raise ValueError(f"dir cannot be encoded as a filesystem path: {exc}") from None


def _check_cap(max_file_bytes: object) -> int:
    if type(max_file_bytes) is not int:  # bool is an int subclass, and not allowed
        if isinstance(max_file_bytes, bool) or not isinstance(max_file_bytes, int):
            raise TypeError(f"max_file_bytes must be an int, not {type(max_file_bytes).__name__}")
        max_file_bytes = int(max_file_bytes)
    if not 1 <= max_file_bytes <= _MAX_CAP:
        raise ValueError(f"max_file_bytes must be between 1 and {_MAX_CAP}, got {max_file_bytes}")
    return max_file_bytes


def _check_policy(symlinks: object) -> int:
    if not isinstance(symlinks, str):
        raise TypeError(f"symlinks must be a str, not {type(symlinks).__name__}")
    try:
        return _POLICY_CODES[symlinks]
    except KeyError:
        raise ValueError(f"symlinks must be 'follow', 'within' or 'refuse', got {symlinks!r}") from None


def _assemble(entries: list[Entry], cap: int) -> tuple[str, list[str]]:
    """Trim each present body, add the notice, join the sections (SPEC §3.5-3.7)."""
    pieces: list[str] = []
    found: list[str] = []
    for index, entry in enumerate(entries):
        if entry[0] != _PRESENT:
            continue
        found.append(BOOTSTRAP_ORDER[index])
        pieces.append(_NEXT_HEADS[index] if pieces else _FIRST_HEADS[index])
        pieces.append(entry[6].strip(WHITESPACE))  # type: ignore[union-attr]
        if entry[4]:
            pieces.append("\n" + truncation_notice(cap))
    return "".join(pieces), found


def compose_soul(
    dir: str | bytes | os.PathLike[str] | os.PathLike[bytes],
    *,
    max_file_bytes: int = MAX_BOOTSTRAP_FILE_BYTES,
) -> tuple[str, list[str]]:
    """Compose the persona in ``dir`` into ``(soul, found)`` (SPEC §3).

    Each name of ``BOOTSTRAP_ORDER`` that is a readable regular file becomes a
    ``## <name>`` section, its body capped at ``max_file_bytes`` bytes; absent
    or unusable files are skipped silently. Nothing on disk is modified.
    """
    cap = _check_cap(max_file_bytes)
    return _assemble(_reader.read_home(_dir_bytes(dir), _NAMES, cap, 0), cap)


def _describe(status: FileStatus, err: int, kind: int, symlinks: str) -> str | None:
    if status is FileStatus.PRESENT:
        return None
    if status is FileStatus.REFUSED:
        if symlinks == "refuse":
            return "is a symlink (symlinks='refuse')"
        return "resolves outside the directory (symlinks='within')"
    if status is FileStatus.NOT_REGULAR and kind:
        return _KIND_NAMES.get(kind, f"is not a regular file (mode {kind:#o})")
    return os.strerror(err) if err else status.value


_KIND_NAMES: Final = {
    stat.S_IFDIR: "is a directory",
    stat.S_IFIFO: "is a FIFO",
    stat.S_IFCHR: "is a character device",
    stat.S_IFBLK: "is a block device",
    stat.S_IFSOCK: "is a socket",
    stat.S_IFLNK: "is a symlink",
}


# A missing file's report is the same every time: share one per name.
_ABSENT_REPORTS: Final = tuple(
    FileReport(name, FileStatus.MISSING, errno=errnos.ENOENT, error=os.strerror(errnos.ENOENT))
    for name in BOOTSTRAP_ORDER
)


def _reports(entries: list[Entry], symlinks: str) -> tuple[FileReport, ...]:
    reports = []
    for index, entry in enumerate(entries):
        code = entry[0]
        if code == _PRESENT:
            report = FileReport(BOOTSTRAP_ORDER[index], FileStatus.PRESENT, entry[3], entry[4], entry[5])
        elif code == _MISSING and entry[1] == errnos.ENOENT:
            report = _ABSENT_REPORTS[index]
        else:
            status = STATUS_BY_CODE[code]
            error = _describe(status, entry[1], entry[2], symlinks)
            report = FileReport(BOOTSTRAP_ORDER[index], status, 0, False, entry[5], entry[1] or None, error)
        reports.append(report)
    return tuple(reports)


def raise_if_unusable(path: bytes, files: tuple[FileReport, ...]) -> None:
    """Strict mode: raise BootstrapFileError for the first file that exists but cannot be used."""
    for report in files:
        if report.status in UNUSABLE:
            raise BootstrapFileError(os.path.join(os.fsdecode(path), report.name), report)


def check_options(max_file_bytes: object, symlinks: object, strict: object) -> tuple[int, int]:
    """Validate ``compose``'s options; returns the cap and the reader's policy code."""
    cap = _check_cap(max_file_bytes)
    policy = _check_policy(symlinks)
    if not isinstance(strict, bool):
        raise TypeError(f"strict must be a bool, not {type(strict).__name__}")
    return cap, policy


def soul_from_entries(
    path: bytes, entries: list[Entry], cap: int, symlinks: SymlinkPolicy, strict: bool
) -> Soul:
    """The ``Soul`` for one home, from the reader's results (checked options)."""
    files = _reports(entries, symlinks)
    if strict:
        raise_if_unusable(path, files)
    text, found = _assemble(entries, cap)
    return Soul(text=text, found=tuple(found), files=files, max_file_bytes=cap, symlinks=symlinks)


def compose(
    dir: str | bytes | os.PathLike[str] | os.PathLike[bytes],
    *,
    max_file_bytes: int = MAX_BOOTSTRAP_FILE_BYTES,
    symlinks: SymlinkPolicy = "follow",
    strict: bool = False,
) -> Soul:
    """Compose like ``compose_soul`` and report on every bootstrap file (SPEC §5).

    ``symlinks``: ``"follow"`` follows them anywhere; ``"within"`` admits a
    file only if it resolves inside ``dir``; ``"refuse"`` skips a file whose
    own name is a symlink. With ``strict=True`` a file that exists but cannot
    be used raises ``BootstrapFileError`` (an ``OSError``); missing files are
    still skipped.
    """
    path = _dir_bytes(dir)
    cap, policy = check_options(max_file_bytes, symlinks, strict)
    entries = _reader.read_home(path, _NAMES, cap, policy)
    return soul_from_entries(path, entries, cap, symlinks, strict)
