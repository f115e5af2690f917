"""Shared fixtures: every behaviour test runs once per reader.

The ``reader`` fixture is the one switch: its ``compiled`` parameter imports
``toolnexus.agents._capread`` directly, so a missing build is a failure,
never a silent second run of the pure reader.
"""

from __future__ import annotations

import importlib
import os
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

from toolnexus.agents import _reader

# The compiled reader is POSIX-only by design; Windows installs the pure
# wheel. Anywhere else a missing extension is a failure, never a skip.
WITHOUT_EXTENSION = sys.platform == "win32"
needs_extension = pytest.mark.skipif(WITHOUT_EXTENSION, reason="the compiled reader is POSIX-only")
READERS = (pytest.param("compiled", marks=needs_extension), "pure")
MODULES = {"compiled": "toolnexus.agents._capread", "pure": "toolnexus.agents._capread_py"}


def load_reader(kind: str) -> ModuleType:
    """Import one reader module by its fixture name."""
    return importlib.import_module(MODULES[kind])


@pytest.fixture(params=READERS)
def reader(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """The reader under test, installed behind every public function."""
    module = load_reader(request.param)
    monkeypatch.setattr(_reader, "read_home", module.read_home)
    monkeypatch.setattr(_reader, "read_homes", module.read_homes)
    return module


Writer = Callable[..., Path]


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """An empty persona directory."""
    path = tmp_path / "home"
    path.mkdir()
    return path


@pytest.fixture
def write(home: Path) -> Writer:
    """``write(name, content)`` puts bytes or UTF-8 text into the home."""

    def _write(name: str, content: bytes | str, directory: Path | None = None) -> Path:
        target = (directory or home) / name
        data = content.encode("utf-8") if isinstance(content, str) else content
        target.write_bytes(data)
        return target

    return _write


def is_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


def fork() -> int:
    """os.fork(), without 3.12's warning about forking a process with threads.

    The tests fork on purpose (to drop privileges, to check fork safety) and
    only call async-signal-safe work or exec-free Python in the child.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return os.fork()
