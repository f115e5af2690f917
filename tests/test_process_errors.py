"""Never an empty soul because the process ran short: no descriptor or no memory raises, on every entry point.

A file that cannot be opened is left out of the soul (docs/format.md,
section 1); a process that cannot open anything is no file's fault, and a
soul composed so would be empty and say nothing. Each test runs in a forked
child whose descriptors are used up but for ``free`` of them.
"""

from __future__ import annotations

import asyncio
import errno
import gc
import io
import os
import resource
from collections.abc import Callable
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from conftest import in_child
from toolnexus.agents import Budget, SoulCache, acompose, compose, compose_many, compose_soul, memory_tool
from toolnexus.agents._format import layout
from toolnexus.agents._native import _capread_py
from toolnexus.agents.cli import main

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="the tests fork to use up descriptors")


def starved(call: Callable[[], object], free: int = 1) -> tuple[str, object]:
    """``call()`` in a child with ``free`` descriptors left.

    Its outcome: ``("returned", value)``, or ``("raised", (type, errno, filename))`` for an OSError.
    """

    def use_up_descriptors() -> None:
        # No collection in the child: a finalizer closing a descriptor
        # inherited from the parent would hand the call one more. (Nor one
        # before: it costs a walk of the whole heap, and garbage that holds
        # a descriptor only holds one the loop below need not open.)
        gc.disable()
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(256, soft), hard))
        held = []
        while True:
            try:
                held.append(os.open(os.devnull, os.O_RDONLY))
            except OSError:
                break
        for _ in range(free):
            os.close(held.pop())

    try:
        return ("returned", in_child(call, use_up_descriptors))
    except OSError as exc:
        return ("raised", (type(exc).__name__, exc.errno, exc.filename))


@pytest.fixture
def persona(home: Path) -> Path:
    (home / "SOUL.md").write_text("You are Kavi.")
    (home / "MEMORY.md").write_text("- prefers metric units\n")
    return home


def no_descriptor(home: Path, free: int) -> tuple[str, object]:
    # With one descriptor left the home opens and its first file cannot; with none, the home cannot.
    where = str(home / "AGENTS.md") if free else str(home)
    return ("raised", ("OSError", errno.EMFILE, where))


@pytest.mark.parametrize("free", [0, 1])
@pytest.mark.parametrize("strict", [False, True])
def test_compose_raises_whatever_strict_says(persona: Path, free: int, strict: bool) -> None:
    assert starved(lambda: compose(persona, strict=strict).text, free) == no_descriptor(persona, free)
    assert starved(lambda: compose_soul(persona), free) == no_descriptor(persona, free)


@pytest.mark.parametrize("free", [0, 1])
def test_a_budget_raises_too(persona: Path, free: int) -> None:
    assert starved(lambda: compose(persona, budget=Budget(total=100)).text, free) == no_descriptor(
        persona, free
    )


def test_the_other_entry_points_raise(persona: Path) -> None:
    expected = no_descriptor(persona, 1)
    assert starved(lambda: [soul.text for soul in compose_many([persona], workers=1)]) == expected
    # asyncio takes three descriptors of its own (an epoll and a socket pair): four, and one is left.
    assert starved(lambda: asyncio.run(acompose(persona)).text, free=4) == expected


@pytest.mark.parametrize("validate", ["auto", "stat"])
def test_a_cache_raises_and_keeps_nothing(persona: Path, validate: str) -> None:
    def call() -> object:
        cache = SoulCache(validate=validate)  # type: ignore[arg-type]
        try:
            cache.compose(persona)
        except OSError as exc:
            return ("raised", exc.errno, len(cache), cache.stats.misses)
        return ("returned", len(cache))

    assert starved(call) == ("returned", ("raised", errno.EMFILE, 0, 0))


@pytest.mark.parametrize("command", [["compose"], ["check"], ["batch", "--no-text"]])
def test_the_command_line_says_so_in_one_line(persona: Path, command: list[str]) -> None:
    def call() -> object:
        out, err = io.StringIO(), io.StringIO()
        with redirect_stdout(out), redirect_stderr(err):
            code = main([*command, str(persona)])
        return code, out.getvalue(), err.getvalue()

    outcome = starved(call)
    assert outcome == (
        "returned",
        (1, "", f"toolnexus-soul: {persona / 'AGENTS.md'}: {os.strerror(errno.EMFILE)}\n"),
    )


@pytest.mark.reader_independent
def test_no_memory_raises_on_the_pure_reader(persona: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The compiled reader's ENOMEM is a failed malloc, which no test can make; the pure one's, an open's.
    def no_memory(*args: object) -> int:
        raise OSError(errno.ENOMEM, os.strerror(errno.ENOMEM))

    monkeypatch.setattr(_capread_py, "open_entry", no_memory)
    with pytest.raises(OSError, match="Cannot allocate memory") as raised:
        _capread_py.compose_homes([bytes(persona)], [b"SOUL.md"], 100, "follow", layout(("SOUL.md",), 100))
    assert (raised.value.errno, raised.value.filename) == (errno.ENOMEM, str(persona / "SOUL.md"))


@pytest.mark.reader_independent
def test_memory_tools_closed_leave_no_descriptor_behind(persona: Path) -> None:
    # Each tool holds its home open until closed: 300 of them, one after another, under 256.
    def many() -> object:
        resource.setrlimit(resource.RLIMIT_NOFILE, (256, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
        for number in range(300):
            with memory_tool(persona, limit=10**9) as tool:
                tool.add(f"note {number}")
        return len(memory_tool(persona, limit=10**9).entries())

    assert in_child(many) == 301

    def kept_open() -> object:  # closed by nobody: the 253rd cannot open its home
        resource.setrlimit(resource.RLIMIT_NOFILE, (256, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
        tools = []
        try:
            while True:
                tools.append(memory_tool(persona))
        except OSError as exc:
            return exc.errno, len(tools) > 200

    assert in_child(kept_open) == (errno.EMFILE, True)
