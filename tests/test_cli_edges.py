"""The command line at its edges: closed pipes, odd names, typos, bad files, strict batches."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from toolnexus.agents import compose
from toolnexus.agents._reader import ReaderName
from toolnexus.agents.cli import main

Capture = pytest.CaptureFixture[str]
ODD = b"caf\xe9"  # Latin-1 bytes: not a UTF-8 name


def run(argv: list[str], capsys: Capture) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def cli(reader: ReaderName | None, *args: str) -> subprocess.Popen[bytes]:
    """The command in a child process on the reader under test, output through pipes."""
    env = {k: v for k, v in os.environ.items() if k != "TOOLNEXUS_SOUL_NO_EXTENSIONS"}
    if reader == "pure":
        env["TOOLNEXUS_SOUL_NO_EXTENSIONS"] = "1"
    return subprocess.Popen(
        [sys.executable, "-m", "toolnexus.agents", *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )


def homes(root: Path, count: int) -> list[str]:
    made = []
    for index in range(count):
        home = root / f"h{index:04d}"
        home.mkdir()
        (home / "SOUL.md").write_text(f"soul {index} " * 20)
        made.append(str(home))
    return made


# ---- 1. a reader that goes away ------------------------------------------------


def closed_early(process: subprocess.Popen[bytes], lines: int) -> tuple[list[bytes], int, bytes]:
    """Read ``lines`` lines of the child's output, close the pipe, wait: as ``| head`` does."""
    with process:
        assert process.stdout is not None
        assert process.stderr is not None
        got = [process.stdout.readline() for _ in range(lines)]
        process.stdout.close()
        code = process.wait(timeout=60)
        return got, code, process.stderr.read()


def test_check_into_a_closed_pipe_stops_quietly(reader: ReaderName, tmp_path: Path) -> None:
    got, code, err = closed_early(cli(reader, "check", *homes(tmp_path, 400)), 1)
    assert (got, code, err) == ([f"{tmp_path / 'h0000'}\n".encode()], 141, b"")


def test_batch_into_a_closed_pipe_stops_quietly(reader: ReaderName, tmp_path: Path) -> None:
    listing = tmp_path / "list.txt"
    listing.write_text("\n".join(homes(tmp_path, 1200)) + "\n")
    (line,), code, err = closed_early(cli(reader, "batch", "--from-file", str(listing)), 1)
    assert json.loads(line)["dir"] == str(tmp_path / "h0000")
    assert (code, err) == (141, b"")


def test_compose_into_a_reader_that_never_reads(reader: ReaderName, home: Path) -> None:
    (home / "MEMORY.md").write_bytes(b"m" * (3 * 1024 * 1024))  # more than a pipe holds
    assert closed_early(cli(reader, "compose", str(home)), 0) == ([], 141, b"")


# ---- 2. names that are not UTF-8 ---------------------------------------------


@pytest.fixture
def odd_home(tmp_path: Path) -> str:
    path = os.path.join(os.fsencode(tmp_path), ODD)
    os.mkdir(path)
    with open(os.path.join(path, b"SOUL.md"), "wb") as handle:
        handle.write(b"odd soul")
    return os.fsdecode(path)  # as argv holds it: undecodable bytes as surrogates


def shown(path: str) -> str:
    return os.fsencode(path).decode("utf-8", "backslashreplace")


def test_check_shows_an_odd_name_escaped(odd_home: str, capsys: Capture) -> None:
    code, out, err = run(["check", odd_home], capsys)
    assert (code, err) == (0, "")
    assert out.splitlines()[0] == os.fsdecode(os.path.dirname(os.fsencode(odd_home))) + "/caf\\xe9"
    assert out.splitlines()[3] == "  SOUL.md      present                      8 B         8 B"


def test_compose_json_keeps_every_byte_of_an_odd_name(odd_home: str, capsys: Capture) -> None:
    code, out, err = run(["compose", odd_home, "--json"], capsys)
    assert (code, err) == (0, "")
    record = json.loads(out)
    assert record["dir"] == shown(odd_home)
    assert base64.b64decode(record["dir_b64"]) == os.fsencode(odd_home)
    assert record["text"] == "## SOUL.md\n\nodd soul"


def test_batch_gives_every_name_its_line(tmp_path: Path, odd_home: str, capsys: Capture) -> None:
    plain = homes(tmp_path, 5000)
    names = [*plain[:2500], odd_home, *plain[2500:]]
    listing = tmp_path / "list.txt"
    listing.write_bytes(b"\n".join(os.fsencode(name) for name in names) + b"\n")
    code, out, err = run(["batch", "--from-file", str(listing), "--no-text"], capsys)
    assert code == 0
    records = [json.loads(line) for line in out.splitlines()]
    assert len(records) == 5001
    assert [r["dir"] for r in records] == [shown(name) for name in names]
    assert records[2500]["found"] == ["SOUL.md"]
    assert base64.b64decode(records[2500]["dir_b64"]) == os.fsencode(odd_home)
    assert ["dir_b64" in r for r in records].count(True) == 1
    assert err.startswith("5,001 homes, 5,001 files, ")


# ---- 3. a mistyped directory -------------------------------------------------


@pytest.mark.parametrize("strict", [[], ["--strict"]])
def test_compose_of_a_missing_directory_fails(tmp_path: Path, capsys: Capture, strict: list[str]) -> None:
    missing = tmp_path / "missing"
    assert run(["compose", str(missing), *strict], capsys) == (
        1,
        "",
        f"toolnexus-soul: {missing}: no such directory\n",
    )


def test_compose_of_a_file_fails(tmp_path: Path, capsys: Capture) -> None:
    (tmp_path / "plain").write_text("not a persona")
    assert run(["compose", str(tmp_path / "plain"), "--json"], capsys) == (
        1,
        "",
        f"toolnexus-soul: {tmp_path / 'plain'}: not a directory\n",
    )


def test_batch_reports_a_missing_directory(tmp_path: Path, capsys: Capture) -> None:
    (present,) = homes(tmp_path, 1)
    code, out, _ = run(
        ["batch", present, str(tmp_path / "missing"), str(tmp_path / "h0000" / "SOUL.md")], capsys
    )
    assert code == 1
    records = [json.loads(line) for line in out.splitlines()]
    assert records[0]["found"] == ["SOUL.md"]
    assert records[1:] == [
        {"dir": str(tmp_path / "missing"), "error": "no such directory"},
        {"dir": str(tmp_path / "h0000" / "SOUL.md"), "error": "not a directory"},
    ]


def test_an_empty_directory_is_no_error(home: Path, capsys: Capture) -> None:
    assert run(["compose", str(home)], capsys) == (0, "", "")
    code, out, _ = run(["batch", str(home), "--no-text"], capsys)
    assert code == 0
    assert json.loads(out)["found"] == []


# ---- 4. file arguments -------------------------------------------------------


def test_unusable_list_files_are_usage_errors(tmp_path: Path, capsys: Capture) -> None:
    assert run(["batch", "--from-file", str(tmp_path / "nonexistent.txt")], capsys) == (
        2,
        "",
        f"toolnexus-soul: error: --from-file {tmp_path / 'nonexistent.txt'}: No such file or directory\n",
    )
    assert run(["batch", "--from-file", str(tmp_path)], capsys) == (
        2,
        "",
        f"toolnexus-soul: error: --from-file {tmp_path}: Is a directory\n",
    )


def test_an_unwritable_output_is_a_usage_error(home: Path, capsys: Capture) -> None:
    assert run(["batch", str(home), "--jsonl", "/nonexistent/dir/out.jsonl"], capsys) == (
        2,
        "",
        "toolnexus-soul: error: --jsonl /nonexistent/dir/out.jsonl: No such file or directory\n",
    )


def test_dash_means_standard_output(home: Path, capsys: Capture, monkeypatch: pytest.MonkeyPatch) -> None:
    (home / "SOUL.md").write_text("soul")
    monkeypatch.chdir(home)
    code, out, _ = run(["batch", str(home), "--jsonl", "-"], capsys)
    assert code == 0
    assert json.loads(out)["text"] == "## SOUL.md\n\nsoul"
    assert not (home / "-").exists()


# ---- 5. strict batches lose no line ------------------------------------------


def test_strict_batch_writes_every_line(tmp_path: Path, capsys: Capture) -> None:
    made = homes(tmp_path, 600)
    bad = Path(made[300])
    (bad / "TOOLS.md").mkdir()
    code, out, err = run(["batch", *made, "--strict", "--no-text"], capsys)
    assert code == 1
    records = [json.loads(line) for line in out.splitlines()]
    assert [r["dir"] for r in records] == made
    assert records[300]["problems"] == [
        {"name": "TOOLS.md", "status": "not a regular file", "error": "is a directory"}
    ]
    assert records[301] == {
        "dir": made[301],
        "digest": compose(made[301]).digest,
        "found": ["SOUL.md"],
        "sizes": {"SOUL.md": 180},
        "truncated": [],
    }
    assert err.splitlines()[0] == f"toolnexus-soul: {bad}/TOOLS.md: not a regular file: is a directory"
    assert err.splitlines()[1].startswith("600 homes, 600 files, ")


# ---- 8. help -----------------------------------------------------------------


@pytest.mark.reader_independent
@pytest.mark.parametrize("command", [[], ["compose"], ["check"], ["batch"]])
def test_help_lists_policies_and_exit_codes(
    command: list[str], capsys: Capture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "100")  # argparse wraps help at the terminal's width
    with pytest.raises(SystemExit) as caught:
        main([*command, "--help"])
    assert caught.value.code == 0
    out = capsys.readouterr().out
    lines = [line.rstrip() for line in out.splitlines()]
    for expected in (
        "  within   admit a bootstrap file only if it resolves inside DIR; what a",
        "           host that serves persona files written by its users should use",
        "  0    done",
        "  1    a DIR does not exist or is not a directory, or a bootstrap file",
        "  2    usage: bad options or arguments, or a list or output file that",
        "  141  standard output was closed before all was written (as after | head)",
    ):
        assert expected in lines, expected
    if command:
        assert (
            "  DIR                   a persona's directory: its bootstrap files are read, never written"
            in lines
        )
