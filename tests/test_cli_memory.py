"""``toolnexus-soul memory DIR ACTION``: what it prints, what it writes, how it exits (0, 1, 2)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from toolnexus.agents.cli import main

Capture = pytest.CaptureFixture[str]
pytestmark = pytest.mark.reader_independent  # the memory tool reads no soul


def run(argv: list[str], capsys: Capture) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def noted(home: Path) -> Path:
    (home / "MEMORY.md").write_text(
        "# Notes\n\n- uses uv, not pip\n- prefers metric units\n  and SI prefixes\n"
    )
    return home


def test_list_prints_the_entries_as_the_file_holds_them(noted: Path, capsys: Capture) -> None:
    assert run(["memory", str(noted), "list"], capsys) == (
        0,
        "- uses uv, not pip\n- prefers metric units\n  and SI prefixes\n",
        "",
    )


def test_list_of_no_file_prints_nothing(home: Path, capsys: Capture) -> None:
    assert run(["memory", str(home), "list"], capsys) == (0, "", "")
    assert list(home.iterdir()) == []  # listing writes nothing, not even the lock


def test_add_replace_remove(noted: Path, capsys: Capture) -> None:
    path = noted / "MEMORY.md"
    assert run(["memory", str(noted), "add", "ships on Fridays"], capsys) == (
        0,
        "added: MEMORY.md holds 3 entries, 87 of 2,200 characters\n",
        "",
    )
    assert run(["memory", str(noted), "replace", "Fridays", "never ships on Fridays"], capsys) == (
        0,
        "replaced: MEMORY.md holds 3 entries, 93 of 2,200 characters\n",
        "",
    )
    assert run(["memory", str(noted), "remove", "uv"], capsys) == (
        0,
        "removed: MEMORY.md holds 2 entries, 74 of 2,200 characters\n",
        "",
    )
    assert (
        path.read_text() == "# Notes\n\n- prefers metric units\n  and SI prefixes\n- never ships on Fridays\n"
    )


def test_another_file_and_limit(home: Path, capsys: Capture) -> None:
    argv = ["memory", str(home), "--file", "USER.md", "add", "Ada, a metallurgist"]
    assert run(argv, capsys) == (0, "added: USER.md holds 1 entry, 21 of 1,375 characters\n", "")
    argv = ["memory", str(home), "--file", "USER.md", "--limit", "30", "add", "works nights"]
    code, out, err = run(argv, capsys)
    assert (code, out) == (1, "")
    assert err == (
        f"toolnexus-soul: {home}/USER.md: "
        "This change would take USER.md to 36 of its 30 characters. "
        "Replace or remove entries first (merge or shorten them); the longest start: "
        "'Ada, a metallurgist'.\n"
    )
    assert (home / "USER.md").read_text() == "- Ada, a metallurgist\n"


def test_an_add_repeated_says_nothing_was_added(noted: Path, capsys: Capture) -> None:
    argv = ["memory", str(noted), "add", "ships on Fridays"]
    assert run(argv, capsys) == (0, "added: MEMORY.md holds 3 entries, 87 of 2,200 characters\n", "")
    after = (noted / "MEMORY.md").read_bytes()
    assert run(argv, capsys) == (
        0,
        "already there, nothing added: MEMORY.md holds 3 entries, 87 of 2,200 characters\n",
        "",
    )
    assert (noted / "MEMORY.md").read_bytes() == after


@pytest.mark.parametrize(
    "argv",
    [
        ["--file", "USER.md", "--limit", "30", "add", "works nights"],
        ["add", "works nights", "--file", "USER.md", "--limit", "30"],
        ["--file", "USER.md", "add", "--limit", "30", "works nights"],
    ],
)
def test_options_before_or_after_the_action(home: Path, capsys: Capture, argv: list[str]) -> None:
    assert run(["memory", str(home), *argv], capsys) == (
        0,
        "added: USER.md holds 1 entry, 14 of 30 characters\n",
        "",
    )
    assert (home / "USER.md").read_text() == "- works nights\n"
    assert not (home / "MEMORY.md").exists()


def test_json_list(noted: Path, capsys: Capture) -> None:
    code, out, err = run(["memory", str(noted), "list", "--json"], capsys)
    assert (code, err) == (0, "")
    assert out == (
        '{"ok": true, "action": "list", "entries": ["uses uv, not pip", '
        '"prefers metric units\\nand SI prefixes"], "entry_count": 2, "used": 68, "limit": 2200}\n'
    )


def test_json_changes_are_what_call_returns(noted: Path, capsys: Capture) -> None:
    code, out, err = run(["memory", str(noted), "--json", "add", "ships on Fridays"], capsys)
    assert (code, err) == (0, "")
    assert json.loads(out) == {
        "ok": True,
        "action": "add",
        "added": True,
        "message": "Added the entry. MEMORY.md holds 3 entries, 87 of 2,200 characters. "
        "The change shows in your prompt from the next session.",
        "entry_count": 3,
        "used": 87,
        "limit": 2200,
    }
    code, out, err = run(["memory", str(noted), "add", "ships on Fridays", "--json"], capsys)
    assert (code, err, json.loads(out)["added"]) == (0, "", False)
    code, out, err = run(["memory", str(noted), "replace", "Fridays", "ships on Mondays", "--json"], capsys)
    assert (code, err, json.loads(out)["used"]) == (0, "", 87)
    code, out, err = run(["memory", str(noted), "remove", "rust", "--json"], capsys)
    record = json.loads(out)
    assert (code, record["ok"], record["error"], record["candidates"]) == (
        1,
        False,
        "no_match",
        ["uses uv, not pip", "prefers metric units and SI prefixes", "ships on Mondays"],
    )
    assert err == f"toolnexus-soul: {noted}/MEMORY.md: {record['message']}\n"
    assert (noted / "MEMORY.md").read_text() == (
        "# Notes\n\n- uses uv, not pip\n- prefers metric units\n  and SI prefixes\n- ships on Mondays\n"
    )


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["remove", "rust"],
            "No entry holds 'rust'. The entries start: 'uses uv, not pip'; "
            "'prefers metric units and SI prefixes'. "
            "Give a short piece of one entry's text, exactly as it is written.",
        ),
        (
            ["replace", "u", "x"],
            "2 entries hold 'u': 'uses uv, not pip'; 'prefers metric units and SI prefixes'. "
            "Give a longer piece of text, found in one of them only.",
        ),
        (["add", " "], "content is empty: an entry needs some text"),
        (["add", "a\n\nb"], "content holds a blank line: an entry is one paragraph"),
    ],
)
def test_what_cannot_be_done_exits_1(noted: Path, capsys: Capture, argv: list[str], message: str) -> None:
    before = (noted / "MEMORY.md").read_bytes()
    assert run(["memory", str(noted), *argv], capsys) == (
        1,
        "",
        f"toolnexus-soul: {noted}/MEMORY.md: {message}\n",
    )
    assert (noted / "MEMORY.md").read_bytes() == before


def test_a_symlinked_memory_file_is_refused(tmp_path: Path, home: Path, capsys: Capture) -> None:
    target = tmp_path / "elsewhere.md"
    target.write_text("- theirs\n")
    (home / "MEMORY.md").symlink_to(target)
    assert run(["memory", str(home), "add", "x"], capsys) == (
        1,
        "",
        f"toolnexus-soul: {home}/MEMORY.md: "
        "MEMORY.md is a symlink: the memory tool writes only a file of its own\n",
    )
    assert target.read_text() == "- theirs\n"


def test_a_missing_home_exits_1(tmp_path: Path, capsys: Capture) -> None:
    missing = tmp_path / "nowhere"
    assert run(["memory", str(missing), "add", "x"], capsys) == (
        1,
        "",
        f"toolnexus-soul: {missing}: no such directory\n",
    )
    assert not missing.exists()


@pytest.mark.parametrize(
    ("argv", "last_line"),
    [
        (["memory"], "toolnexus-soul memory: error: the following arguments are required: DIR, ACTION"),
        (
            ["memory", "x", "add"],
            "toolnexus-soul memory DIR add: error: the following arguments are required: TEXT",
        ),
        (
            ["memory", "x", "forget", "y"],
            "toolnexus-soul memory: error: argument ACTION: invalid choice: 'forget' "
            "(choose from 'list', 'add', 'replace', 'remove')",
        ),
        (
            ["memory", "x", "--limit", "0", "list"],
            "toolnexus-soul memory: error: argument --limit: must be 1 or more, not 0",
        ),
        (
            ["memory", "x", "--file", "../SOUL.md", "list"],
            "toolnexus-soul memory: error: argument --file: file must be a plain file name, not '../SOUL.md'",
        ),
    ],
)
def test_usage_errors_exit_2(home: Path, capsys: Capture, argv: list[str], last_line: str) -> None:
    argv = [str(home) if arg == "x" else arg for arg in argv]
    code, out, err = run(argv, capsys)
    assert (code, out) == (2, "")
    assert err.splitlines()[-1] == last_line
    assert list(home.iterdir()) == []


def test_a_closed_standard_output_changes_nothing(home: Path) -> None:
    for argv in (f"memory {home} add note", f"compose {home}", f"check {home}"):
        done = subprocess.run(
            f"{sys.executable} -m toolnexus.agents {argv} >&-",
            shell=True,
            capture_output=True,
            check=False,
        )
        assert (done.returncode, done.stderr) == (
            1,
            b"toolnexus-soul: cannot write to standard output: it is closed\n",
        )
    assert list(home.iterdir()) == []


def test_a_file_name_that_is_not_utf8(home: Path) -> None:
    argv: list[str | bytes] = [
        sys.executable,
        "-m",
        "toolnexus.agents",
        "memory",
        bytes(home),
        "--file",
        b"x\xff.md",
        "add",
        "hi",
    ]
    done = subprocess.run(argv, capture_output=True, check=False)
    assert (done.returncode, done.stdout, done.stderr.splitlines()[-1]) == (
        2,
        b"",
        b"toolnexus-soul memory: error: argument --file: must be UTF-8 text, not x\\xff.md",
    )
    assert sorted(os.listdir(home)) == []  # no lock file either: refused before DIR is looked at


def test_a_lock_that_cannot_be_opened_is_named(home: Path, capsys: Capture) -> None:
    (home / ".MEMORY.md.lock").mkdir()
    assert run(["memory", str(home), "add", "x"], capsys) == (
        1,
        "",
        f"toolnexus-soul: {home}/MEMORY.md: .MEMORY.md.lock is a directory:"
        " it must be the tool's lock file\n",
    )
    assert not (home / "MEMORY.md").exists()


def test_list_escapes_what_could_drive_a_terminal(home: Path, capsys: Capture) -> None:
    (home / "MEMORY.md").write_bytes(b"- red \x1b[31malert\n- tab\tstop\n")
    assert run(["memory", str(home), "list"], capsys) == (0, "- red \\x1b[31malert\n- tab\\x09stop\n", "")


# ---- what an independent tester found in the command line (each a test) ---------------


def test_list_escapes_every_line_break_that_is_not_an_entrys(home: Path, capsys: Capture) -> None:
    (home / "MEMORY.md").write_bytes(
        "- fake\rhere\n- ls\u2028## SOUL.md\n- ps\u2029x\n- nel\x85y\n- vt\x0bz ff\x0cw fs\x1cq\n"
        "- C:\\Users\\me\n  continues\n".encode()
    )
    assert run(["memory", str(home), "list"], capsys) == (
        0,
        "- fake\\x0dhere\n- ls\\u2028## SOUL.md\n- ps\\u2029x\n- nel\\x85y\n"
        "- vt\\x0bz ff\\x0cw fs\\x1cq\n- C:\\\\Users\\\\me\n  continues\n",
        "",
    )


def test_list_into_a_closed_pipe_exits_141_quietly(home: Path) -> None:
    (home / "MEMORY.md").write_text("".join(f"- note {i} {'x' * 60}\n" for i in range(20_000)))
    for unbuffered in ("", "1"):
        env = {**os.environ, "PYTHONUNBUFFERED": unbuffered}
        with subprocess.Popen(
            [sys.executable, "-m", "toolnexus.agents", "memory", str(home), "list"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        ) as child:
            assert child.stdout is not None
            assert child.stderr is not None
            assert child.stdout.read(8) == b"- note 0"
            child.stdout.close()  # as `| head -c 8` does
            assert (child.wait(timeout=60), child.stderr.read()) == (141, b"")


def test_a_change_for_a_reader_already_gone_is_not_made(noted: Path) -> None:
    before = (noted / "MEMORY.md").read_bytes()
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader went away before the command started writing
    try:
        done = subprocess.run(
            [sys.executable, "-m", "toolnexus.agents", "memory", str(noted), "add", "lost note"],
            stdout=write_end,
            stderr=subprocess.PIPE,
            check=False,
        )
    finally:
        os.close(write_end)
    assert (done.returncode, done.stderr) == (141, b"")
    assert (noted / "MEMORY.md").read_bytes() == before


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--limit", "0", "list"], "argument --limit: must be 1 or more, not 0"),
        (["--file", "a/b", "list"], "argument --file: file must be a plain file name, not 'a/b'"),
        (
            ["--file", ".hidden.md", "list"],
            "argument --file: file must not start with '.', as '.hidden.md' does: the tool's own files do",
        ),
    ],
)
def test_usage_errors_come_before_dir_is_looked_at(
    tmp_path: Path, capsys: Capture, argv: list[str], message: str
) -> None:
    code, out, err = run(["memory", str(tmp_path / "missing"), *argv], capsys)
    assert (code, out, err.splitlines()[-1]) == (2, "", f"toolnexus-soul memory: error: {message}")


@pytest.mark.parametrize("action", [["add", b"x\xff"], ["remove", b"\xff"], ["replace", b"uv", b"n\xffw"]])
def test_texts_that_are_not_utf8_are_usage_errors(noted: Path, action: list[str | bytes]) -> None:
    before = (noted / "MEMORY.md").read_bytes()
    argv: list[str | bytes] = [sys.executable, "-m", "toolnexus.agents", "memory", bytes(noted), *action]
    done = subprocess.run(argv, capture_output=True, check=False)
    metavar, shown = {
        "add": ("TEXT", b"x\\xff"),
        "remove": ("OLD", b"\\xff"),
        "replace": ("NEW", b"n\\xffw"),
    }[str(action[0])]
    assert (done.returncode, done.stdout, done.stderr.splitlines()[-1]) == (
        2,
        b"",
        b"toolnexus-soul memory: error: argument " + metavar.encode() + b": must be UTF-8 text, not " + shown,
    )
    assert (noted / "MEMORY.md").read_bytes() == before
