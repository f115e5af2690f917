"""Chooses the native seam once, at import: the compiled ``_capread`` and ``_notify``, or their pure twins.

Set ``TOOLNEXUS_SOUL_NO_EXTENSIONS`` to a non-empty value other than ``0``
before import to force the pure-Python twins. ``ACCELERATED`` says which
reader was loaded. The package calls ``compose_homes`` and
``read_excerpts`` through this module (as ``_reader.compose_homes``), and
finds the inotify notifier in ``notifier`` (None where there is none:
anything but Linux). Static tools see the pure twin. The tests route the
package through either twin by replacing these names, never the package.
"""

from __future__ import annotations

import importlib
import os
import sys
from types import ModuleType
from typing import TYPE_CHECKING, Final, Literal

from . import _capread_py

__all__ = [
    "ACCELERATED",
    "NOTIFIERS",
    "NO_EXTENSIONS",
    "READERS",
    "ReaderName",
    "compose_homes",
    "load",
    "load_notifier",
    "notifier",
    "read_excerpts",
]

ReaderName = Literal["compiled", "pure"]
READERS: Final[dict[ReaderName, str]] = {
    "compiled": "toolnexus.agents._capread",
    "pure": "toolnexus.agents._capread_py",
}
NOTIFIERS: Final[dict[ReaderName, str]] = {
    "compiled": "toolnexus.agents._notify",
    "pure": "toolnexus.agents._notify_py",
}
NO_EXTENSIONS: Final = os.environ.get("TOOLNEXUS_SOUL_NO_EXTENSIONS", "") not in ("", "0")
_LINUX: Final = sys.platform.startswith("linux")


def load(name: ReaderName) -> ModuleType:
    """Import one reader twin by name; a missing compiled build raises ImportError."""
    return importlib.import_module(READERS[name])


def load_notifier(name: ReaderName) -> ModuleType | None:
    """Import one notifier twin by name; None where there is no inotify.

    A missing compiled build raises ImportError; a C library without inotify
    gives the pure twin's None, and the cache validates by stat.
    """
    if not _LINUX:
        return None
    try:
        return importlib.import_module(NOTIFIERS[name])
    except ImportError:
        if name == "compiled":
            raise
        return None


def _chosen_reader() -> ModuleType:
    if NO_EXTENSIONS:
        return _capread_py
    try:
        return load("compiled")
    except ImportError:  # not built here: a source install without a compiler
        return _capread_py


def _chosen_notifier() -> ModuleType | None:
    # Each on its own: a build whose notifier failed keeps its fast reader.
    if not NO_EXTENSIONS:
        try:
            return load_notifier("compiled")
        except ImportError:
            pass
    return load_notifier("pure")


if TYPE_CHECKING:
    from ._capread_py import compose_homes, read_excerpts

    ACCELERATED: bool
else:
    _twin = _chosen_reader()
    ACCELERATED: Final = _twin is not _capread_py
    compose_homes = _twin.compose_homes
    read_excerpts = _twin.read_excerpts
# The inotify calls for SoulCache (compiled where built), or None.
notifier: ModuleType | None = _chosen_notifier()
