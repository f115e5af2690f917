"""The selector: one reader per process, an honest ACCELERATED flag."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from conftest import load_reader, needs_extension

PROBE = (
    "import toolnexus.agents as a, toolnexus.agents._reader as r;print(a.ACCELERATED, r.read_home.__module__)"
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
def test_both_readers_share_constants_and_doc() -> None:
    compiled, pure = load_reader("compiled"), load_reader("pure")
    for name in ("PRESENT", "MISSING", "NOT_REGULAR", "UNREADABLE", "REFUSED", "FOLLOW", "WITHIN", "REFUSE"):
        assert getattr(compiled, name) == getattr(pure, name), name
    assert compiled.read_home.__doc__ == pure.read_home.__doc__
