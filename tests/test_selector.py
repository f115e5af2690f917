"""The selector: one reader per process, an honest ACCELERATED flag, twins alike."""

from __future__ import annotations

import os
import subprocess
import sys
from inspect import cleandoc

import pytest

from toolnexus.agents import _reader

pytestmark = pytest.mark.reader_independent

PROBE = (
    "import toolnexus.agents as a, toolnexus.agents._reader as r;"
    "print(a.ACCELERATED, r.compose_homes.__module__, r.notifier and r.notifier.__name__)"
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
    notifier = "toolnexus.agents._notify" if LINUX else "None"
    assert probe(value) == f"True toolnexus.agents._capread {notifier}"


@pytest.mark.parametrize("value", ["1", "yes"])
def test_environment_forces_the_pure_reader(value: str) -> None:
    notifier = "toolnexus.agents._notify_py" if LINUX else "None"
    assert probe(value) == f"False toolnexus.agents._capread_py {notifier}"


@pytest.mark.needs_compiled
def test_twins_share_their_vocabulary_and_docs() -> None:
    compiled, pure = _reader.load("compiled"), _reader.load("pure")
    for enum_name in ("Status", "Policy"):
        assert [(m.name, m.value) for m in getattr(compiled, enum_name)] == [
            (m.name, m.value) for m in getattr(pure, enum_name)
        ], enum_name
    assert compiled.FileRead._fields == pure.FileRead._fields
    # Python 3.13 dedents a module's docstrings as it compiles them; Cython does not.
    assert cleandoc(compiled.compose_homes.__doc__) == cleandoc(pure.compose_homes.__doc__)
    assert cleandoc(compiled.read_excerpts.__doc__) == cleandoc(pure.read_excerpts.__doc__)
    assert compiled.__doc__ != pure.__doc__  # each module says which twin it is


@pytest.mark.needs_compiled
@pytest.mark.skipif(not LINUX, reason="inotify is Linux's")
def test_notifier_twins_share_their_functions_and_docs() -> None:
    import toolnexus.agents._notify as compiled
    import toolnexus.agents._notify_py as pure

    for name in ("open_queue", "add_watch", "remove_watch", "drain", "filesystem_type"):
        assert cleandoc(getattr(compiled, name).__doc__) == cleandoc(getattr(pure, name).__doc__), name
    assert compiled.__doc__ != pure.__doc__


@pytest.mark.needs_compiled
def test_use_switches_and_restores() -> None:
    before, notifier = _reader.compose_homes, _reader.notifier
    with _reader.using("pure") as module:
        assert module.__name__ == "toolnexus.agents._capread_py"
        assert _reader.compose_homes is module.compose_homes
        if LINUX:
            assert _reader.notifier is not None
            assert _reader.notifier.__name__ == "toolnexus.agents._notify_py"
        with _reader.using("compiled") as inner:
            assert _reader.compose_homes is inner.compose_homes
            if LINUX:
                assert _reader.notifier is not None
                assert _reader.notifier.__name__ == "toolnexus.agents._notify"
        assert _reader.compose_homes is module.compose_homes
    assert _reader.compose_homes is before
    assert _reader.notifier is notifier
