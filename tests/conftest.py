"""Shared fixtures: every test runs once per reader, without having to ask.

The autouse ``reader`` fixture routes the whole package through one twin
with ``_reader.use()``; its ``compiled`` parameter imports
``toolnexus.agents._capread`` itself, so a missing build is a failure, never
a silent second run of the pure reader. A test that does not depend on the
reader (constants, argument parsing, subprocesses that choose their own)
is marked ``reader_independent`` and runs once.
"""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from toolnexus.agents import _reader
from toolnexus.agents._capread_py import FileRead
from toolnexus.agents._format import layout

# The compiled reader is POSIX-only by design; Windows installs the pure
# wheel. Anywhere else a missing extension is a failure, never a skip.
WITHOUT_EXTENSION = sys.platform == "win32"
needs_extension = pytest.mark.skipif(WITHOUT_EXTENSION, reason="the compiled reader is POSIX-only")
READERS = (pytest.param("compiled", marks=needs_extension), "pure")

# Hypothesis profiles, chosen with TOOLNEXUS_SOUL_FUZZ: "ci" (the default,
# quick) or "long" (many more examples, for a fuzzing session).
settings.register_profile("ci", max_examples=300, deadline=None)
settings.register_profile(
    "long", max_examples=20_000, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(os.environ.get("TOOLNEXUS_SOUL_FUZZ", "ci"))


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if metafunc.definition.get_closest_marker("reader_independent") is None:
        metafunc.parametrize("reader", READERS, indirect=True)


@pytest.fixture(autouse=True)
def reader(request: pytest.FixtureRequest) -> Iterator[_reader.ReaderName | None]:
    """The name of the twin under test, installed behind every public function."""
    name: _reader.ReaderName | None = getattr(request, "param", None)
    if name is None:  # a reader-independent test: whatever the package loaded
        yield None
        return
    with _reader.using(name):
        yield name


def compose_files(
    name: _reader.ReaderName | None, home: Path, names: Sequence[str], cap: int = 2**20, policy: int = 0
) -> tuple[str, tuple[str, ...], tuple[FileRead, ...]]:
    """``(soul, found, reads)`` of ``names`` in ``home``, straight from one twin's compose_homes."""
    assert name is not None, "a reader-independent test has no twin of its own"
    module = _reader.load(name)
    files = tuple(names)
    ((text, found, reads),) = module.compose_homes(
        [os.fsencode(home)], [os.fsencode(n) for n in files], cap, policy, layout(files, cap)
    )
    return text, found, tuple(reads)


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


def make_homes(root: Path, count: int) -> list[Path]:
    """``count`` homes ``root/h0``, ``root/h1``, ...: each a SOUL.md saying ``soul <index>``."""
    homes = []
    for index in range(count):
        home = root / f"h{index}"
        home.mkdir()
        (home / "SOUL.md").write_text(f"soul {index}")
        homes.append(home)
    return homes


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
