"""Every example of the README and of the site runs as written, and prints what the page says it prints.

Each page's ``python`` blocks run in order, in one namespace per page (a
page reads as one session), with the working directory a temporary
directory that holds a copy of ``examples/aster``: a page's paths are a
checkout's, and what an example writes touches no checkout. A ``text``
block titled ``Output`` right after a python block is what it prints,
exactly; a python block that prints must be followed by one. In a
``console`` block, each ``$`` line is a command and the lines under it are
its output (standard output and standard error), exactly; a block is run
unless its commands install, build, test or benchmark (``NOT_RUN``), which
a person runs and this suite cannot. ``json`` blocks must parse.

tiktoken's named encodings download, so ``tiktoken.get_encoding`` is
stubbed with a real BPE built here (``counts.tiktoken_encoding``). The dask
guide starts a ``LocalCluster``, and the MCP guide a server and the SDK's
client: they are ``slow``.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import pytest

from counts import tiktoken_encoding
from twins import ReaderName

ROOT: Final = Path(__file__).resolve().parents[1]
PAGES: Final = sorted(
    [ROOT / "README.md", *(ROOT / "docs").rglob("*.md")], key=lambda page: page.relative_to(ROOT)
)
# A LocalCluster of worker processes; an MCP server and the SDK's client (test_mcp.py drives the
# same server in the quick run).
SLOW_PAGES: Final = {"docs/how-to/cluster.md", "docs/how-to/mcp.md"}
# Their examples are a server in a subprocess that chooses its own reader: run once, not once per twin.
READER_FREE_PAGES: Final = {"docs/how-to/mcp.md"}
# Commands a person runs and this suite cannot: they install, build, test or benchmark.
NOT_RUN: Final = re.compile(
    r"^(cd benchmarks && )?(python -m venv |(python -m )?pip install |python -m pytest|"
    r"python (benchmarks/)?\w+\.py|bash \.ci/|mkdocs |ruff |mypy)"
)
_FENCE: Final = re.compile(r"^(?P<indent> *)(?P<fence>```+)(?P<info>.*)$")


@dataclass(frozen=True)
class Block:
    """One fenced block of a page: its language, its title (``title="..."``), its text, its line."""

    language: str
    title: str
    text: str
    line: int


def blocks(page: Path) -> list[Block]:
    """The fenced blocks of a page, indented ones (in a list item) included, their indent taken away."""
    found: list[Block] = []
    lines = page.read_text(encoding="utf-8").splitlines()
    index = 0
    while index < len(lines):
        opening = _FENCE.match(lines[index])
        index += 1
        if opening is None:
            continue
        indent, fence, info = opening["indent"], opening["fence"], opening["info"].strip()
        start, body = index, []
        while not lines[index].startswith(indent + fence) or lines[index].strip() != fence:
            body.append(lines[index].removeprefix(indent))
            index += 1
        index += 1
        language, _, rest = info.partition(" ")
        title = re.search(r'title="([^"]*)"', rest)
        found.append(Block(language, title[1] if title else "", "\n".join(body) + "\n", start))
    return found


def page_id(page: Path) -> str:
    return str(page.relative_to(ROOT))


@pytest.mark.reader_independent
def test_every_page_is_found() -> None:
    names = {page_id(page) for page in PAGES}
    assert {"README.md", "docs/index.md", "docs/tutorial.md", "docs/format.md"} <= names
    assert names >= SLOW_PAGES | READER_FREE_PAGES


@pytest.fixture
def checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working directory with a copy of ``examples/aster``; temporary files under it; tiktoken offline.

    The command is on ``PATH`` (the MCP guide's client starts it by name) whether or not the
    virtualenv is active.
    """
    shutil.copytree(ROOT / "examples" / "aster", tmp_path / "examples" / "aster")
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    encoding = tiktoken_encoding()
    if encoding is not None:
        import tiktoken

        monkeypatch.setattr(tiktoken, "get_encoding", lambda name: encoding)
    return tmp_path


def imported(found: list[Block]) -> set[str]:
    """The top-level modules a page's python blocks import."""
    names = re.findall(
        r"^(?:from|import) (\w+)", "".join(b.text for b in found if b.language == "python"), re.M
    )
    return set(names)


def run_python(page: Path, found: list[Block]) -> None:
    namespace: dict[str, object] = {"__name__": "__main__"}  # as a script runs
    for position, block in enumerate(found):
        if block.language != "python":
            continue
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            exec(compile(block.text, f"{page_id(page)}:{block.line}", "exec"), namespace)
        following = found[position + 1] if position + 1 < len(found) else None
        expected = following.text if following and following.title == "Output" else ""
        assert printed.getvalue() == expected, f"{page_id(page)}, the block at line {block.line}"


def commands(block: Block) -> list[tuple[str, str]]:
    """A console block's commands, each with the output written under it."""
    pairs: list[tuple[str, str]] = []
    for line in block.text.splitlines(keepends=True):
        if line.startswith("$ "):
            pairs.append((line[2:].rstrip("\n"), ""))
        else:
            assert pairs, f"line {block.line}: output before any command"
            pairs[-1] = (pairs[-1][0], pairs[-1][1] + line)
    return pairs


def run_console(page: Path, found: list[Block], where: Path, reader: ReaderName | None) -> None:
    """Each console block as one bash script (so a variable set on one line serves the next)."""
    env = {
        **os.environ,
        "TOOLNEXUS_SOUL_NO_EXTENSIONS": "1" if reader == "pure" else "",
        "TMPDIR": str(where / "tmp"),
    }
    for block in found:
        if block.language != "console":
            continue
        pairs = commands(block)
        if any(NOT_RUN.match(command) for command, _ in pairs):
            continue
        script = "exec 2>&1\n" + "".join(f"{command}\n" for command, _ in pairs)
        done = subprocess.run(
            ["bash", "-c", script],
            cwd=where,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=60,
            check=False,
        )
        expected = "".join(output for _, output in pairs)
        assert done.stdout.decode() == expected, f"{page_id(page)}, the block at line {block.line}"


def run_page(page: Path, where: Path, reader: ReaderName | None) -> None:
    found = blocks(page)
    missing = sorted(name for name in imported(found) if importlib.util.find_spec(name) is None)
    if missing:  # an optional extra (dask) that this install lacks
        pytest.skip(f"{page_id(page)} needs {', '.join(missing)}, not installed")
    for block in found:
        if block.language == "json":
            json.loads(block.text)
    run_python(page, found)
    run_console(page, found, where, reader)


def pages(*, reader_free: bool) -> list[object]:
    return [
        pytest.param(page, id=page_id(page), marks=[pytest.mark.slow] if page_id(page) in SLOW_PAGES else [])
        for page in PAGES
        if (page_id(page) in READER_FREE_PAGES) == reader_free
    ]


@pytest.mark.parametrize("page", pages(reader_free=False))
def test_every_example_runs_as_written(page: Path, checkout: Path, reader: ReaderName | None) -> None:
    run_page(page, checkout, reader)


@pytest.mark.reader_independent
@pytest.mark.parametrize("page", pages(reader_free=True))
def test_every_example_of_a_server_runs_as_written(page: Path, checkout: Path) -> None:
    run_page(page, checkout, None)


@pytest.mark.reader_independent
def test_a_block_not_run_holds_no_command_that_could_be() -> None:
    """A console block is run whole or not at all: one that installs holds nothing else to check."""
    mixed = {
        f"{page_id(page)}:{block.line}": [
            command for command, _ in commands(block) if not NOT_RUN.match(command)
        ]
        for page in PAGES
        for block in blocks(page)
        if block.language == "console" and any(NOT_RUN.match(command) for command, _ in commands(block))
    }
    assert mixed
    assert {where: found for where, found in mixed.items() if found} == {}
