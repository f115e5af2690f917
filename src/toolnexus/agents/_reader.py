"""Chooses the native seam: the compiled ``_capread`` and ``_notify``, or their pure twins.

Set ``TOOLNEXUS_SOUL_NO_EXTENSIONS`` to a non-empty value other than ``0``
before import to force the pure-Python twins. ``ACCELERATED`` says which
reader was loaded. The rest of the package calls ``compose_homes`` and
``read_excerpts`` through this module, and finds the inotify notifier in
``notifier`` (None where there is no inotify: anything but Linux), so
``use()`` can route it through either side (the tests and benchmarks do,
to compare them in one process). The twins speak the same
vocabulary (``Status``, ``Policy``, ``FileRead``: a test checks it); the
package imports it from here and never spells a code itself.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from types import ModuleType
from typing import Final, Literal

from . import _capread_py
from ._capread_py import Excerpt, FileRead, Layout, Policy, Status

__all__ = [
    "ACCELERATED",
    "NO_EXTENSIONS",
    "READERS",
    "Composed",
    "Excerpt",
    "FileRead",
    "Layout",
    "Policy",
    "ReaderName",
    "Status",
    "compose_homes",
    "load",
    "notifier",
    "read_excerpts",
    "use",
    "using",
]

ReaderName = Literal["compiled", "pure"]
READERS: Final[dict[ReaderName, str]] = {
    "compiled": "toolnexus.agents._capread",
    "pure": "toolnexus.agents._capread_py",
}

NO_EXTENSIONS: Final = os.environ.get("TOOLNEXUS_SOUL_NO_EXTENSIONS", "") not in ("", "0")


NOTIFIERS: Final[dict[ReaderName, str]] = {
    "compiled": "toolnexus.agents._notify",
    "pure": "toolnexus.agents._notify_py",
}
_LINUX: Final = sys.platform.startswith("linux")


def load(name: ReaderName) -> ModuleType:
    """Import one reader twin by name; a missing compiled build raises ImportError.

    On Linux the compiled side includes the notifier: a build without it
    raises ImportError too.
    """
    module = importlib.import_module(READERS[name])
    _load_notifier(name)
    return module


def _load_notifier(name: ReaderName) -> ModuleType | None:
    if not _LINUX:
        return None
    try:
        return importlib.import_module(NOTIFIERS[name])
    except ImportError:
        if name == "compiled":
            raise
        return None  # a C library without inotify: the cache validates by stat


def _default() -> ModuleType:
    if NO_EXTENSIONS:
        return _capread_py
    try:
        return importlib.import_module(READERS["compiled"])
    except ImportError:  # not built here: a source install without a compiler
        return _capread_py


def _default_notifier() -> ModuleType | None:
    # Each side on its own: a build whose notifier failed keeps its fast reader.
    if not NO_EXTENSIONS:
        try:
            return _load_notifier("compiled")
        except ImportError:
            pass
    return _load_notifier("pure")


_module = _default()
ACCELERATED: Final = _module is not _capread_py
# The inotify calls for SoulCache (compiled where built), or None.
notifier: ModuleType | None = _default_notifier()
# (soul, found, reads) of one home, as the twins' compose_homes returns them.
Composed = tuple[str, tuple[str, ...], tuple[FileRead, ...]]
compose_homes: Callable[[Sequence[bytes], Sequence[bytes], int, int, Layout], list[Composed]]
compose_homes = _module.compose_homes
read_excerpts: Callable[[bytes, Sequence[bytes], int, int, Sequence[tuple[int, int]]], tuple[Excerpt, ...]]
read_excerpts = _module.read_excerpts


def use(name: ReaderName) -> ReaderName:
    """Route the package through one twin from now on; returns the one it replaced.

    For tests and benchmarks that compare the twins in one process: hosts
    choose with ``TOOLNEXUS_SOUL_NO_EXTENSIONS`` instead. ``ACCELERATED``
    keeps saying what was loaded at import.
    """
    global _module, compose_homes, read_excerpts, notifier  # noqa: PLW0603 - switching is its whole job
    module = load(name)
    previous: ReaderName = "pure" if _module is _capread_py else "compiled"
    _module, compose_homes, read_excerpts = module, module.compose_homes, module.read_excerpts
    notifier = _load_notifier(name)
    return previous


@contextmanager
def using(name: ReaderName) -> Iterator[ModuleType]:
    """``use(name)`` for the length of a ``with`` block; yields the twin's module."""
    previous = use(name)
    try:
        yield _module
    finally:
        use(previous)
