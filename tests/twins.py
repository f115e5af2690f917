"""Route the package through one reader twin, in this process: for tests and benchmarks, which compare them.

The package chooses its twins once, at import (``toolnexus.agents._native``),
and calls them through two names there, ``reader`` and ``notifier``.
``using(name)`` replaces both for a ``with`` block, as markupsafe's tests
replace its speedups; ``use(name)`` for the rest of a process (a child
process of a test). ``load("compiled")`` imports the extension itself, so a
missing build is an ImportError, never a second run of the pure twin.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Final, Literal, cast

from toolnexus.agents import _native
from toolnexus.agents._native import _capread_py
from toolnexus.agents._native._twins import Notifier, Reader

__all__ = ["NOTIFIERS", "READERS", "ReaderName", "load", "load_notifier", "use", "using"]

ReaderName = Literal["compiled", "pure"]
READERS: Final[dict[ReaderName, str]] = {
    "compiled": "toolnexus.agents._native._capread",
    "pure": "toolnexus.agents._native._capread_py",
}
NOTIFIERS: Final[dict[ReaderName, str]] = {
    "compiled": "toolnexus.agents._native._notify",
    "pure": "toolnexus.agents._native._notify_py",
}
# The pure twin is a Reader as mypy sees it; the compiled one's .pyi says the same.
PURE: Final[Reader] = _capread_py


def load(name: ReaderName) -> Reader:
    """Import one reader twin by name; a missing compiled build raises ImportError."""
    return cast(Reader, importlib.import_module(READERS[name]))


def load_notifier(name: ReaderName) -> Notifier | None:
    """Import one notifier twin by name; None where there is no inotify (not Linux).

    A missing compiled build raises ImportError; a C library without inotify
    gives the pure twin's None, and the cache validates by stat.
    """
    try:
        return cast(Notifier, importlib.import_module(NOTIFIERS[name]))
    except ImportError:
        if name == "compiled" and _native.notifier is not None:
            raise
        return None


def use(name: ReaderName) -> Reader:
    """Route the package through the twin ``name`` from now on; its reader module."""
    reader = load(name)
    _native.notifier = load_notifier(name)
    _native.reader = reader
    return reader


@contextmanager
def using(name: ReaderName) -> Iterator[Reader]:
    """``use(name)`` for the length of a ``with`` block; yields the twin's reader module."""
    saved = (_native.reader, _native.notifier)
    try:
        yield use(name)
    finally:
        _native.reader, _native.notifier = saved
