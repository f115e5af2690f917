"""The calls a ``SoulCache`` has seen, each mapped to the key its checked arguments made.

A warm call costs about two microseconds, so the arguments of a call seen
before are not checked again: the call maps straight to its key. A call is
its path alone when it has no options, else the path, the options' names
and their values. (True == 1 == 1.0: the types of the options that could
pass so are checked, so that True still fails the check.) A relative path
is remembered with the working directory it was made absolute in: a chdir
leads it elsewhere. What is remembered is plain: a path object as its text,
the key a tuple of atomic values, nothing the cyclic collector walks for
each of 100,000 homes.
"""

from __future__ import annotations

import os
import pathlib
import threading
from collections.abc import Mapping
from typing import Final

from .._options import PathArg
from ._entries import Key

__all__ = ["Calls", "absolute"]

# Path types whose value cannot change (not subclasses: those might).
_FIXED_PATHS: Final = frozenset(
    {str, bytes, pathlib.PosixPath, pathlib.PurePosixPath, pathlib.WindowsPath, pathlib.PureWindowsPath}
)


class Calls:
    """Each call seen before, mapped to its key; at most ``2 * maxsize`` of them, then none."""

    __slots__ = ("table",)

    def __init__(self) -> None:
        # A dict itself, not a subclass: CPython takes a dict of plain values
        # off the collector's lists (never a subclass), so 100,000 calls cost
        # a full collection nothing.
        self.table: dict[object, Key] = {}

    def recall(self, dir: PathArg, options: Mapping[str, object]) -> tuple[object, Key | None]:
        """The call, and its key if it was seen before (None: check its arguments).

        The call is None when it cannot be remembered: its path is not a
        fixed value, an option is of a type that may compare equal to another
        value, or it cannot be hashed.
        """
        kind = type(dir)
        if kind is str:
            named: object = dir
        elif kind in _FIXED_PATHS:
            named = os.fspath(dir)
        else:
            return None, None
        call: object = named
        if options:
            get = options.get
            # True == 1 and 1.0 == 1: a call remembered with one must not answer for the other.
            if type(get("max_file_bytes", 0)) is not int or type(get("strict", False)) is not bool:
                return None, None
            call = (named, *options, *options.values())
        try:
            key = self.table.get(call)
            if key is None and not absolute(named):
                key = self.table.get((call, os.getcwdb()))
        except TypeError:  # unhashable (files as a list): checked on every call
            return None, None
        return call, key

    def remember(  # noqa: PLR0917 - a call, what it made, and what guards the table
        self, call: object, key: Key, where: bytes, relative: bool, lock: threading.Lock, maxsize: int
    ) -> None:
        """Map a checked call (as ``recall`` gave it; None: it cannot be remembered) to its key.

        A relative path (made absolute against ``where``, the working
        directory) goes under the call and ``where`` (if the directory is
        still that).
        """
        if call is None:
            return
        memo: object = call
        if relative:
            if os.getcwdb() != where:
                return  # the directory changed meanwhile
            memo = (call, where)
        with lock:
            if len(self.table) >= 2 * maxsize:
                self.table.clear()
            self.table[memo] = key


def absolute(dir: object) -> bool:
    """Is ``dir`` an absolute ``str`` or ``bytes`` path (a key the working directory cannot change)?"""
    return (type(dir) is str and dir[:1] == "/") or (type(dir) is bytes and dir[:1] == b"/")
