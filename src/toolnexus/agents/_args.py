"""Argument checks shared by every entry point: paths, integers, options.

Each check raises ``TypeError`` or ``ValueError`` whose message starts with
the argument's name, before any I/O. ``Options`` is what the checks hand on:
the validated options of one composition, in the reader's terms.
"""

from __future__ import annotations

import os
import sys
from functools import lru_cache
from typing import Final, Literal, NamedTuple, TypeAlias, cast

from ._format import BOOTSTRAP_ORDER, Layout, layout
from ._reader import Policy

__all__ = [
    "MAX_CAP",
    "Options",
    "PathArg",
    "SymlinkPolicy",
    "check_bool",
    "check_int",
    "check_options",
    "dir_bytes",
]

PathArg: TypeAlias = str | bytes | os.PathLike[str] | os.PathLike[bytes]
SymlinkPolicy = Literal["follow", "within", "refuse"]

# The compiled reader holds the cap in a Py_ssize_t and asks for cap + 1 bytes.
MAX_CAP: Final = 2**63 - 2

_POLICIES: Final = {"follow": Policy.FOLLOW, "within": Policy.WITHIN, "refuse": Policy.REFUSE}
_BOOTSTRAP_NAMES: Final = tuple(name.encode() for name in BOOTSTRAP_ORDER)
_FS_ENCODING: Final = sys.getfilesystemencoding()
_FS_ERRORS: Final = sys.getfilesystemencodeerrors()


class Options(NamedTuple):
    """Checked options of one composition."""

    cap: int  # max_file_bytes
    policy: Policy  # what the reader is told
    symlinks: SymlinkPolicy  # what the caller said, for reports
    strict: bool
    files: tuple[str, ...]  # the names to compose, in order
    names: tuple[bytes, ...]  # the same, as the reader takes them
    layout: Layout  # the names, section heads and notice for these names and cap


def dir_bytes(dir: object, name: str = "dir") -> bytes:
    """``dir`` as a filesystem path in bytes, or TypeError/ValueError naming it."""
    if type(dir) is str:  # the common case first: this runs once per soul
        path = _encode(dir, name)
    elif isinstance(dir, bytes):
        path = bytes(dir)
    elif isinstance(dir, (str, os.PathLike)):
        try:
            fspath = os.fspath(dir)
        except TypeError as exc:  # __fspath__ returned something else
            raise TypeError(f"{name} is not a usable path: {exc}") from None
        path = _encode(fspath, name) if isinstance(fspath, str) else fspath
    else:
        raise TypeError(f"{name} must be str, bytes or os.PathLike, not {type(dir).__name__}")
    if b"\0" in path:
        raise ValueError(f"{name} must not contain a NUL byte")
    return path


def _encode(path: str, name: str) -> bytes:
    try:
        return path.encode(_FS_ENCODING, _FS_ERRORS)
    except UnicodeError as exc:
        raise ValueError(f"{name} cannot be encoded as a filesystem path: {exc}") from None


def check_int(value: object, name: str, low: int, high: int | None = None) -> int:
    """An ``int`` (a subclass is fine, ``bool`` is not) with ``low <= value <= high``."""
    if type(value) is not int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"{name} must be an int, not {type(value).__name__}")
        value = int(value)
    if high is None:
        if value < low:
            raise ValueError(f"{name} must be >= {low}, got {value}")
    elif not low <= value <= high:
        raise ValueError(f"{name} must be between {low} and {high}, got {value}")
    return value


def check_bool(value: object, name: str) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be a bool, not {type(value).__name__}")
    return value


def _check_policy(symlinks: object) -> Policy:
    if not isinstance(symlinks, str):
        raise TypeError(f"symlinks must be a str, not {type(symlinks).__name__}")
    try:
        return _POLICIES[symlinks]
    except KeyError:
        raise ValueError(f"symlinks must be 'follow', 'within' or 'refuse', got {symlinks!r}") from None


def check_options(max_file_bytes: object, symlinks: object = "follow", strict: object = False) -> Options:
    """Check ``compose``'s options, in the order of its signature."""
    try:
        return _checked(max_file_bytes, symlinks, strict)
    except TypeError:  # unhashable, or wrong: checked again uncached, to raise the right error
        return _check_options(max_file_bytes, symlinks, strict)


def _check_options(max_file_bytes: object, symlinks: object, strict: object) -> Options:
    cap = check_int(max_file_bytes, "max_file_bytes", 1, MAX_CAP)
    policy = _check_policy(symlinks)
    strict = check_bool(strict, "strict")
    files, names = BOOTSTRAP_ORDER, _BOOTSTRAP_NAMES
    return Options(cap, policy, cast(SymlinkPolicy, symlinks), strict, files, names, layout(files, cap))


# A host passes the same few options again and again. typed=True keeps True
# from passing for 1 (equal and with equal hashes, but not an int option).
_checked = lru_cache(maxsize=256, typed=True)(_check_options)
