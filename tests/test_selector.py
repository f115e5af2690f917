"""The selector: one reader per process, an honest ACCELERATED flag, twins alike."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from conftest import needs_extension
from toolnexus.agents import _reader

pytestmark = pytest.mark.reader_independent

PROBE = (
    "import toolnexus.agents as a, toolnexus.agents._reader as r;"
    "print(a.ACCELERATED, r.compose_homes.__module__)"
)


def probe(value: str | None) -> str:
    env = {k: v for k, v in os.environ.items() if k != "TOOLNEXUS_SOUL_NO_EXTENSIONS"}
    if value is not None:
        env["TOOLNEXUS_SOUL_NO_EXTENSIONS"] = value
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, env=env, check=True)
    return done.stdout.strip()


@needs_extension
@pytest.mark.parametrize("value", [None, "", "0"])
def test_compiled_reader_is_the_default(value: str | None) -> None:
    assert probe(value) == "True toolnexus.agents._capread"


@pytest.mark.parametrize("value", ["1", "yes"])
def test_environment_forces_the_pure_reader(value: str) -> None:
    assert probe(value) == "False toolnexus.agents._capread_py"


@needs_extension
def test_twins_share_their_vocabulary_and_docs() -> None:
    compiled, pure = _reader.load("compiled"), _reader.load("pure")
    for enum_name in ("Status", "Policy"):
        assert [(m.name, m.value) for m in getattr(compiled, enum_name)] == [
            (m.name, m.value) for m in getattr(pure, enum_name)
        ], enum_name
    assert compiled.FileRead._fields == pure.FileRead._fields
    assert compiled.compose_homes.__doc__ == pure.compose_homes.__doc__
    assert compiled.__doc__ != pure.__doc__  # each module says which twin it is


@needs_extension
def test_use_switches_and_restores() -> None:
    before = _reader.compose_homes
    with _reader.using("pure") as module:
        assert module.__name__ == "toolnexus.agents._capread_py"
        assert _reader.compose_homes is module.compose_homes
        with _reader.using("compiled") as inner:
            assert _reader.compose_homes is inner.compose_homes
        assert _reader.compose_homes is module.compose_homes
    assert _reader.compose_homes is before
