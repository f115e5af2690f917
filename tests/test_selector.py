"""The selector: one reader per process, an honest ACCELERATED flag, twins alike."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
from inspect import cleandoc
from pathlib import Path

import pytest

from toolnexus.agents import _native
from toolnexus.agents._format import layout
from toolnexus.agents._vocabulary import Composed, Excerpt, FileRead, FileStatus
from twins import load, load_notifier, using

pytestmark = pytest.mark.reader_independent

PROBE = (
    "import toolnexus.agents as a, toolnexus.agents._native as r;"
    "print(a.ACCELERATED, a.NO_EXTENSIONS, r.reader.__name__, r.notifier and r.notifier.__name__)"
)
LINUX = sys.platform.startswith("linux")


def probe(value: str | None) -> str:
    env = {k: v for k, v in os.environ.items() if k != "TOOLNEXUS_SOUL_NO_EXTENSIONS"}
    if value is not None:
        env["TOOLNEXUS_SOUL_NO_EXTENSIONS"] = value
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, env=env, check=True)
    return done.stdout.strip()


@pytest.mark.needs_compiled
@pytest.mark.parametrize("value", [None, "", "0"])
def test_compiled_reader_is_the_default(value: str | None) -> None:
    notifier = "toolnexus.agents._native._notify" if LINUX else "None"
    assert probe(value) == f"True False toolnexus.agents._native._capread {notifier}"


@pytest.mark.parametrize("value", ["1", "yes"])
def test_environment_forces_the_pure_reader(value: str) -> None:
    notifier = "toolnexus.agents._native._notify_py" if LINUX else "None"
    assert probe(value) == f"False True toolnexus.agents._native._capread_py {notifier}"


@pytest.mark.needs_compiled
def test_twins_share_their_docs() -> None:
    compiled, pure = load("compiled"), load("pure")
    # Python 3.13 dedents a module's docstrings as it compiles them; Cython does not.
    for name in ("compose_homes", "read_excerpts", "decode_utf8", "untrack"):
        assert cleandoc(getattr(compiled, name).__doc__) == cleandoc(getattr(pure, name).__doc__), name
    assert compiled.__doc__ != pure.__doc__  # each module says which twin it is


@pytest.mark.needs_compiled
def test_compiled_results_are_the_vocabularys_types(tmp_path: Path) -> None:
    compiled = load("compiled")
    (tmp_path / "SOUL.md").write_text("soul")
    (tmp_path / "TOOLS.md").mkdir()
    names = [b"SOUL.md", b"TOOLS.md", b"USER.md"]
    files = ("SOUL.md", "TOOLS.md", "USER.md")
    (composed,) = compiled.compose_homes([bytes(tmp_path)], names, 64, "follow", layout(files, 64))
    assert type(composed) is Composed
    assert composed == Composed("## SOUL.md\n\nsoul", ("SOUL.md",), composed.reads, None, None)
    assert [type(read) for read in composed.reads] == [FileRead] * 3
    # The status as its text: a result holds atomic values, off the collector's lists.
    assert [type(read.status) for read in composed.reads] == [str] * 3
    assert [read.status for read in composed.reads] == ["present", "not a regular file", "missing"]
    assert [gc.is_tracked(each) for each in (composed.reads, *composed.reads)] == [False] * 4
    excerpts = compiled.read_excerpts(bytes(tmp_path), names, 64, "follow", [(8, 4)] * 3)
    assert [type(excerpt) for excerpt in excerpts] == [Excerpt] * 3
    assert [type(excerpt.read) for excerpt in excerpts] == [FileRead] * 3
    assert excerpts[0] == Excerpt(
        FileRead(FileStatus.PRESENT, 0, 0o100000, 4, False, True, 4), 4, b"soul", None
    )


def test_the_reader_is_chosen_once() -> None:
    # No switch in the library: the tests swap the twins from outside (tests/twins.py).
    assert not hasattr(_native, "use")
    assert not hasattr(_native, "using")
    assert _native.reader is load("compiled" if _native.ACCELERATED else "pure")


@pytest.mark.needs_compiled
@pytest.mark.skipif(not LINUX, reason="inotify is Linux's")
def test_notifier_twins_share_their_functions_and_docs() -> None:
    import toolnexus.agents._native._notify as compiled
    import toolnexus.agents._native._notify_py as pure

    for name in ("open_queue", "add_watch", "remove_watch", "drain", "filesystem_type"):
        assert cleandoc(getattr(compiled, name).__doc__) == cleandoc(getattr(pure, name).__doc__), name
    assert compiled.__doc__ != pure.__doc__


@pytest.mark.needs_compiled
def test_the_tests_swap_switches_and_restores() -> None:
    before, notifier = _native.reader.compose_homes, _native.notifier
    with using("pure") as module:
        assert module is load("pure")
        assert _native.reader.compose_homes is module.compose_homes
        if LINUX:
            assert _native.notifier is not None
            assert _native.notifier is load_notifier("pure")
        with using("compiled") as inner:
            assert _native.reader.compose_homes is inner.compose_homes
            if LINUX:
                assert _native.notifier is not None
                assert _native.notifier is load_notifier("compiled")
        assert _native.reader.compose_homes is module.compose_homes
    assert _native.reader.compose_homes is before
    assert _native.notifier is notifier
