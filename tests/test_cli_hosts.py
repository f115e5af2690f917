"""The command line at the edges a newcomer met: a NUL in a list, an empty list, Ctrl-C, help that agrees.

Each was a defect; each is now a test. The help texts are held to the exit
statuses of the command line's page (docs/reference/command-line.md).
"""

from __future__ import annotations

import io
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import make_homes
from toolnexus.agents import compose
from toolnexus.agents.cli import main
from twins import ReaderName

PAGE = (Path(__file__).resolve().parents[1] / "docs/reference/command-line.md").read_text(encoding="utf-8")
Capture = pytest.CaptureFixture[str]


def run(argv: list[str], capsys: Capture) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_a_nul_in_a_list_is_an_error_line_and_the_rest_is_composed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Capture
) -> None:
    first, second = make_homes(tmp_path, 2)
    listing = f"{first}\n{tmp_path}/bad\0name\n{second}\n".encode()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(listing)))
    code, out, err = run(["batch", "--from-file", "-", "--no-text"], capsys)
    lines = [json.loads(line) for line in out.splitlines()]
    assert code == 1
    assert [line["dir"] for line in lines] == [str(first), f"{tmp_path}/bad\0name", str(second)]
    assert lines[1] == {"dir": f"{tmp_path}/bad\0name", "error": "not a path: it holds a NUL byte"}
    assert lines[2]["found"] == ["SOUL.md"]
    assert err.startswith("3 homes, 2 files")


def test_an_empty_list_is_nothing_to_do(tmp_path: Path, capsys: Capture) -> None:
    listing = tmp_path / "homes.txt"
    listing.write_text("\n  \n")
    assert run(["batch", "--from-file", str(listing)], capsys) == (0, "", "")
    out = tmp_path / "souls.jsonl"
    out.write_text("kept\n")
    assert run(["batch", "--from-file", str(listing), "--jsonl", str(out)], capsys) == (0, "", "")
    assert out.read_text() == "kept\n"  # nothing written: the file is left as it was


def test_no_dir_and_no_list_is_still_a_usage_error(capsys: Capture) -> None:
    code, out, err = run(["batch"], capsys)
    assert (code, out, err.splitlines()[-1]) == (
        2,
        "",
        "toolnexus-soul batch: error: batch needs at least one DIR or --from-file",
    )


@pytest.mark.skipif(not hasattr(signal, "SIGINT"), reason="needs SIGINT")
def test_ctrl_c_exits_130_without_a_traceback(tmp_path: Path, reader: ReaderName) -> None:
    # A list on a pipe that never ends: the command waits on it, then is interrupted.
    env = {**os.environ, "TOOLNEXUS_SOUL_NO_EXTENSIONS": "1" if reader == "pure" else ""}
    # Ctrl-C as a terminal delivers it: a suite run in the background (a
    # shell's `&`) hands its children SIGINT ignored, and exec keeps that.
    command = [sys.executable, "-m", "toolnexus.agents", "batch", "--from-file", "-"]
    undo_ignore = (
        "import os, signal; signal.signal(signal.SIGINT, signal.SIG_DFL);"
        f" os.execv({command[0]!r}, {command!r})"
    )
    with subprocess.Popen(
        [sys.executable, "-c", undo_ignore],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    ) as child:
        waiting_for_the_list(child.pid)
        child.send_signal(signal.SIGINT)
        assert child.wait(timeout=60) == 130  # stdin still open: no end of the list
        assert child.stdout is not None
        assert child.stderr is not None
        assert (child.stdout.read(), child.stderr.read()) == (b"", b"")


def waiting_for_the_list(pid: int) -> None:
    """Return once ``pid`` is past start-up, blocked reading its standard input (Linux), or after a second."""
    syscall = Path(f"/proc/{pid}/syscall")
    if not syscall.exists():
        time.sleep(1.0)
        return
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            number, fd = syscall.read_text().split()[:2]
        except (OSError, ValueError):
            number, fd = "", ""
        if number in {"0", "63"} and fd == "0x0":  # read(0, ...): x86_64, aarch64
            return
        time.sleep(0.05)
    raise AssertionError("the command never came to read its list")


def test_ctrl_c_in_a_command_exits_130(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Capture
) -> None:
    (home,) = make_homes(tmp_path, 1)

    def interrupted(*args: object, **kwargs: object) -> object:
        raise KeyboardInterrupt

    monkeypatch.setattr("toolnexus.agents.cli._commands.compose", interrupted)
    assert run(["compose", str(home)], capsys) == (130, "", "")


def test_memory_help_is_memorys_own(capsys: Capture) -> None:
    code, out, _ = run(["memory", "--help"], capsys)
    assert code == 0
    for other in ("--symlinks", "--budget", "symlink policies"):
        assert other not in out
    for own in ("--file NAME", "--limit N"):
        assert own in out
    statuses = _statuses(out)
    assert list(statuses) == ["0", "1", "2", "130", "141"]
    assert statuses["1"].startswith(
        "DIR does not exist or is not a directory; memory could not make its change"
    )


def _statuses(help_text: str) -> dict[str, str]:
    """The help's exit statuses: code -> its words, on one line."""
    block = help_text[help_text.index("exit status:") :].split("\n\n", maxsplit=1)[0]
    statuses: dict[str, str] = {}
    code = ""
    for line in block.splitlines()[1:]:
        match = re.match(r"  (\d+)\s+(.*)", line)
        if match:
            code = match[1]
            statuses[code] = match[2]
        else:
            statuses[code] += " " + line.strip()
    return statuses


def _documented_statuses() -> dict[str, str]:
    table = PAGE[PAGE.index("| code | meaning |") :].split("\n\n")[0]
    rows = [row.split(" | ") for row in table.splitlines()[2:]]
    return {row[0].strip("| "): row[1].strip("| ") for row in rows}


@pytest.mark.parametrize("command", [[], ["compose"], ["check"], ["batch"]])
def test_every_help_says_what_the_page_says(command: list[str], capsys: Capture) -> None:
    code, out, _ = run([*command, "--help"], capsys)
    assert code == 0
    documented = {code: _plain(words) for code, words in _documented_statuses().items()}
    assert {code: _plain(words) for code, words in _statuses(out).items()} == documented


def test_memorys_help_says_what_the_page_says_of_141_and_130(capsys: Capture) -> None:
    _, out, _ = run(["memory", "--help"], capsys)
    documented, statuses = _documented_statuses(), _statuses(out)
    assert [_plain(statuses[code]) for code in ("130", "141")] == [
        _plain(documented[code]) for code in ("130", "141")
    ]


def _plain(words: str) -> str:
    """Words without the markdown's marks, one space apart."""
    return " ".join(words.replace("`", "").replace("\\|", "|").split())


def test_a_composed_soul_is_what_the_library_composes(tmp_path: Path, capsys: Capture) -> None:
    (home,) = make_homes(tmp_path, 1)
    assert run(["compose", str(home)], capsys) == (0, compose(home).text, "")
