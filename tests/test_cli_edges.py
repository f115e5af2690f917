"""The command line at its edges: closed pipes, odd names, typos, bad files, strict batches."""

from __future__ import annotations

import base64
import errno
import io
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from conftest import check_note, is_root, unprivileged
from toolnexus.agents import __version__, compose
from toolnexus.agents.cli import EPILOG, _commands, main
from toolnexus.agents.cli._records import table
from twins import ReaderName

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
    assert (code, err) == (0, check_note())
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
    plain = homes(tmp_path, 1000)  # chunks of 64 on either side of the odd one
    names = [*plain[:500], odd_home, *plain[500:]]
    listing = tmp_path / "list.txt"
    listing.write_bytes(b"\n".join(os.fsencode(name) for name in names) + b"\n")
    code, out, err = run(["batch", "--from-file", str(listing), "--no-text"], capsys)
    assert code == 0
    records = [json.loads(line) for line in out.splitlines()]
    assert len(records) == 1001
    assert [r["dir"] for r in records] == [shown(name) for name in names]
    assert records[500]["found"] == ["SOUL.md"]
    assert base64.b64decode(records[500]["dir_b64"]) == os.fsencode(odd_home)
    assert ["dir_b64" in r for r in records].count(True) == 1
    assert err.startswith("1,001 homes, 1,001 files, ")


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


def test_batch_gives_the_systems_words_for_other_homes(tmp_path: Path, capsys: Capture) -> None:
    loop, long = tmp_path / "loop", tmp_path / ("a" * 300)
    loop.symlink_to(loop)
    code, out, _ = run(["batch", str(loop), str(long), "--no-text"], capsys)
    assert code == 1
    assert [json.loads(line) for line in out.splitlines()] == [
        {"dir": str(loop), "error": os.strerror(errno.ELOOP).lower()},
        {"dir": str(long), "error": os.strerror(errno.ENAMETOOLONG).lower()},
    ]
    assert run(["compose", str(loop)], capsys) == (
        1,
        "",
        f"toolnexus-soul: {loop}: {os.strerror(errno.ELOOP).lower()}\n",
    )


def test_an_empty_directory_is_no_error(home: Path, capsys: Capture) -> None:
    assert run(["compose", str(home)], capsys) == (0, "", "")
    code, out, _ = run(["batch", str(home), "--no-text"], capsys)
    assert code == 0
    assert json.loads(out)["found"] == []


# ---- 4. file arguments -------------------------------------------------------


def last_line(argv: list[str], capsys: Capture) -> tuple[int, str, str]:
    """The exit status, standard output, and the last line of standard error (a usage error's own)."""
    code, out, err = run(argv, capsys)
    return code, out, err.splitlines()[-1]


def test_unusable_list_files_are_usage_errors(tmp_path: Path, capsys: Capture) -> None:
    missing = tmp_path / "nonexistent.txt"
    assert last_line(["batch", "--from-file", str(missing)], capsys) == (
        2,
        "",
        f"toolnexus-soul batch: error: argument --from-file: cannot read {missing}:"
        " No such file or directory",
    )
    assert last_line(["batch", "--from-file", str(tmp_path)], capsys) == (
        2,
        "",
        f"toolnexus-soul batch: error: argument --from-file: cannot read {tmp_path}: Is a directory",
    )


def test_an_unwritable_output_is_a_usage_error(home: Path, capsys: Capture) -> None:
    assert last_line(["batch", str(home), "--jsonl", "/nonexistent/dir/out.jsonl"], capsys) == (
        2,
        "",
        "toolnexus-soul batch: error: argument --jsonl: cannot write /nonexistent/dir/out.jsonl:"
        " No such file or directory",
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
    without_text = compose(made[301]).as_dict()
    del without_text["text"]
    assert records[301] == {"dir": made[301], **without_text}
    assert records[300]["files"][4]["status"] == "not a regular file"
    assert err.splitlines()[0] == f"toolnexus-soul: {bad}/TOOLS.md: not a regular file: is a directory"
    assert err.splitlines()[1].startswith("600 homes, 600 files, ")


# ---- 8. help -----------------------------------------------------------------


@pytest.mark.reader_independent
@pytest.mark.parametrize("command", [[], ["compose"], ["check"], ["batch"]])
def test_help_lists_policies_and_exit_codes(
    command: list[str], capsys: Capture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "100")  # argparse wraps help at the terminal's width
    code, out, err = run([*command, "--help"], capsys)
    assert (code, err) == (0, "")
    assert out.endswith("\n\n" + EPILOG)  # the policies and exit codes, as written
    lines = [line.rstrip() for line in out.splitlines()]
    if command:
        assert (
            "  DIR                   a persona's directory: its bootstrap files are read, never written"
            in lines
        )


# ---- 9. a home the user cannot search ------------------------------------------


def run_captured(argv: list[str]) -> tuple[int, str, str]:
    """``main(argv)`` with standard output and error caught in memory (for a forked child)."""
    out, err = io.BytesIO(), io.BytesIO()
    sys.stdout, sys.stderr = io.TextIOWrapper(out), io.TextIOWrapper(err)
    code = main(argv)
    sys.stdout.flush()
    sys.stderr.flush()
    return code, out.getvalue().decode(), err.getvalue().decode()


@pytest.mark.skipif(not hasattr(os, "fork") or not is_root(), reason="needs root, to close a home to others")
def test_a_home_that_cannot_be_searched_is_an_error() -> None:
    home = Path(tempfile.mkdtemp(prefix="tns-closed-"))
    (home / "SOUL.md").write_text("soul")
    home.chmod(0o700)  # root's own: closed to nobody (uid 65534)
    try:
        why = "permission denied: it cannot be searched"
        assert unprivileged(lambda: run_captured(["compose", str(home)])) == (
            1,
            "",
            f"toolnexus-soul: {home}: {why}\n",
        )
        assert unprivileged(lambda: run_captured(["check", str(home)])) == (
            1,
            f"{home}  ({why})\n",
            check_note(),
        )
        batch = unprivileged(lambda: run_captured(["batch", str(home)]))
        assert isinstance(batch, tuple)
        assert (batch[0], json.loads(batch[1])) == (1, {"dir": str(home), "error": why})
    finally:
        (home / "SOUL.md").unlink()
        home.rmdir()


# ---- 10. names that could forge a line or drive a terminal ---------------------


def test_control_characters_in_names_are_escaped(tmp_path: Path, capsys: Capture) -> None:
    home = tmp_path / "evil\n  SOUL.md      present\x1b[2J\u202e"
    home.mkdir()
    (home / "NOTES.md").write_text("notes")
    code, out, err = run(["check", str(home), "--files", "NOTES.md"], capsys)
    assert (code, err) == (0, check_note())
    shown = f"{tmp_path}/evil\\x0a  SOUL.md      present\\x1b[2J\\u202e"
    assert out.splitlines()[:3] == [
        shown,
        "  file         status                   on disk        read",
        "  NOTES.md     present                      5 B         5 B",
    ]
    assert run(["compose", str(home / "missing\r")], capsys) == (
        1,
        "",
        f"toolnexus-soul: {shown}/missing\\x0d: no such directory\n",
    )
    (home / "TOOLS.md").mkdir()
    code, _, err = run(["compose", str(home), "--strict"], capsys)
    assert (code, err) == (1, f"toolnexus-soul: {shown}/TOOLS.md: not a regular file: is a directory\n")


def test_a_backslash_in_a_name_is_escaped_so_no_two_names_show_alike(tmp_path: Path, capsys: Capture) -> None:
    literal = tmp_path / "bad\\xff"  # the four characters backslash, x, f, f
    byte = Path(os.fsdecode(bytes(tmp_path) + b"/bad\xff"))
    for home in (literal, byte):
        home.mkdir()
        (home / "SOUL.md").write_text("hi")
    code, out, err = run(["check", str(literal), str(byte)], capsys)
    assert (code, err) == (0, check_note())
    shown_tmp = str(tmp_path).replace("\\", "\\\\")
    assert [line for line in out.splitlines() if line.startswith(shown_tmp)] == [
        f"{shown_tmp}/bad\\\\xff",
        f"{shown_tmp}/bad\\xff",
    ]


def test_a_control_character_in_files_is_a_usage_error(home: Path, capsys: Capture) -> None:
    (home / "NOTES\x07.md").write_text("notes")
    code, out, err = run(["check", str(home), "--files", "NOTES\x07.md"], capsys)
    assert (code, out) == (2, "")
    assert err.splitlines()[-1] == (
        "toolnexus-soul check: error: argument --files: files must hold names that can head a section,"
        " not 'NOTES\\x07.md': it holds a control character"
    )


# ---- 11. --files ---------------------------------------------------------------


def test_files_choose_the_names_in_every_command(home: Path, capsys: Capture) -> None:
    (home / "NOTES.md").write_text("notes")
    (home / "TOOLS.md").write_text("tools")
    (home / "SOUL.md").write_text("soul")
    soul = compose(home, files=["NOTES.md", "TOOLS.md"])
    assert soul.text == "## NOTES.md\n\nnotes\n\n## TOOLS.md\n\ntools"
    assert run(["compose", str(home), "--files", "NOTES.md,TOOLS.md"], capsys) == (0, soul.text, "")
    assert run(["compose", str(home), "--files", "NOTES.md", "--files", "TOOLS.md"], capsys) == (
        0,
        soul.text,
        "",
    )
    code, out, _ = run(["check", str(home), "--files", "NOTES.md,TOOLS.md"], capsys)
    assert (code, out) == (0, table(str(home), soul))
    code, out, _ = run(["batch", str(home), "--files", "NOTES.md,TOOLS.md"], capsys)
    assert (code, json.loads(out)) == (0, {"dir": str(home), **soul.as_dict()})


# ---- 12. which reader is in use ----------------------------------------------------


@pytest.mark.reader_independent
@pytest.mark.parametrize(
    ("accelerated", "forced", "version", "note"),
    [
        (True, False, "compiled reader", ""),
        (False, True, "pure-Python reader, as TOOLNEXUS_SOUL_NO_EXTENSIONS asks", ""),
        (
            False,
            False,
            "pure-Python reader: the compiled one is not built here",
            "toolnexus-soul: note: pure-Python reader: the compiled one is not built here;"
            " composing is several times slower\n",
        ),
    ],
)
def test_the_reader_in_use_is_said(
    home: Path,
    capsys: Capture,
    monkeypatch: pytest.MonkeyPatch,
    accelerated: bool,
    forced: bool,
    version: str,
    note: str,
) -> None:
    monkeypatch.setattr(_commands, "ACCELERATED", accelerated)
    monkeypatch.setattr(_commands, "NO_EXTENSIONS", forced)  # what the package read at import
    assert run(["--version"], capsys) == (0, f"toolnexus-soul {__version__} ({version})\n", "")
    code, _, err = run(["check", str(home)], capsys)
    assert (code, err) == (0, note)
