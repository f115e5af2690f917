"""Route the package through one reader twin, in this process: for tests and benchmarks, which compare them.

The package chooses its twins once, at import (``_reader``), and calls them
through ``_reader.compose_homes``, ``_reader.read_excerpts`` and
``_reader.notifier``. ``using(name)`` replaces those three names for a
``with`` block, as markupsafe's tests replace its speedups; ``use(name)``
for the rest of a process (a child process of a test). ``"compiled"``
imports the extension itself, so a missing build is an ImportError, never a
second run of the pure twin.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType

from toolnexus.agents import _reader
from toolnexus.agents._reader import ReaderName

__all__ = ["use", "using"]


def use(name: ReaderName) -> ModuleType:
    """Route the package through the twin ``name`` from now on; its reader module."""
    module = _reader.load(name)
    notifier = _reader.load_notifier(name)
    _reader.compose_homes = module.compose_homes
    _reader.read_excerpts = module.read_excerpts
    _reader.notifier = notifier
    return module


@contextmanager
def using(name: ReaderName) -> Iterator[ModuleType]:
    """``use(name)`` for the length of a ``with`` block; yields the twin's reader module."""
    saved = (_reader.compose_homes, _reader.read_excerpts, _reader.notifier)
    try:
        yield use(name)
    finally:
        _reader.compose_homes, _reader.read_excerpts, _reader.notifier = saved
