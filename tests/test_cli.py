"""The ``toolnexus-soul`` command line, in process on both readers."""

from __future__ import annotations

import errno
import hashlib
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import TWINS, Writer, check_note
from toolnexus.agents import __version__, compose
from toolnexus.agents.cli import main

Capture = pytest.CaptureFixture[str]
EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "aster"


def run(argv: list[str], capsys: Capture) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_compose_prints_the_soul_byte_exact(home: Path, write: Writer, capsys: Capture) -> None:
    write("SOUL.md", "  Ünïcode soul  ")
    write("AGENTS.md", "agents")
    assert run(["compose", str(home)], capsys) == (
        0,
        "## AGENTS.md\n\nagents\n\n## SOUL.md\n\nÜnïcode soul",
        "",
    )


def file_record(
    name: str, status: str = "missing", read: int = 0, on_disk: int | None = None, **fields: object
) -> dict[str, object]:
    """One file's JSON report, as every JSON output has it: all sixteen keys."""
    record: dict[str, object] = {
        "name": name,
        "status": status,
        "bytes_read": read,
        "size": read,
        "size_on_disk": on_disk,
        "truncated": False,
        "stable": True,
        "errno": errno.ENOENT if status == "missing" else None,
        "error": os.strerror(errno.ENOENT) if status == "missing" else None,
        "cut": False,
        "kept": None,
        "left_out": None,
        "kept_bytes": None,
        "left_out_bytes": None,
        "symlink": False,
        "invalid_utf8": False,
    }
    return {**record, **fields}


def test_compose_json(home: Path, write: Writer, capsys: Capture) -> None:
    write("SOUL.md", "abcdef")
    (home / "USER.md").mkdir()
    code, out, err = run(["compose", str(home), "--json", "--max-file-bytes", "4"], capsys)
    assert (code, err) == (0, "")
    text = "## SOUL.md\n\nabcd\n[truncated: exceeds 4 bytes bootstrap cap]"
    assert json.loads(out) == {
        "dir": str(home),
        "text": text,
        "found": ["SOUL.md"],
        "truncated_files": ["SOUL.md"],
        "cut_files": [],
        "used": None,
        "near_limit": False,
        "budget": None,
        "digest": hashlib.sha256(text.encode()).hexdigest(),
        "max_file_bytes": 4,
        "symlinks": "follow",
        "files": [
            file_record("AGENTS.md"),
            file_record("SOUL.md", "present", read=5, on_disk=6, truncated=True),
            file_record("IDENTITY.md"),
            file_record("USER.md", "not a regular file", error="is a directory"),
            file_record("TOOLS.md"),
            file_record("HEARTBEAT.md"),
            file_record("MEMORY.md"),
        ],
    }
    assert out.endswith("\n}\n")


def test_compose_symlink_policy(tmp_path: Path, home: Path, capsys: Capture) -> None:
    (tmp_path / "secret").write_text("secret")
    (home / "SOUL.md").symlink_to(tmp_path / "secret")
    assert run(["compose", str(home)], capsys) == (0, "## SOUL.md\n\nsecret", "")
    assert run(["compose", str(home), "--symlinks", "within"], capsys) == (0, "", "")


def test_compose_strict_failure(home: Path, capsys: Capture) -> None:
    (home / "TOOLS.md").mkdir()
    assert run(["compose", str(home), "--strict"], capsys) == (
        1,
        "",
        f"toolnexus-soul: {home}/TOOLS.md: not a regular file: is a directory\n",
    )


def test_compose_bad_cap(home: Path, capsys: Capture, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "400")  # argparse wraps its usage at the terminal's width
    code, out, err = run(["compose", str(home), "--max-file-bytes", "0"], capsys)
    assert (code, out) == (2, "")
    assert err.splitlines() == [
        "usage: toolnexus-soul compose [-h] [--json] [--strict] [--max-file-bytes N]"
        " [--symlinks {follow,within,refuse}] [--files NAME,...] [--budget N] [--per-file N]"
        " [--keep {head+tail,head}] [--count {chars,bytes}] DIR",
        "toolnexus-soul compose: error: argument --max-file-bytes:"
        " must be between 1 and 9223372036854775806, got 0",
    ]


def test_check_table(home: Path, write: Writer, capsys: Capture) -> None:
    write("AGENTS.md", "a" * 1500)
    write("SOUL.md", "s" * 10)
    code, out, err = run(["check", str(home), "--max-file-bytes", "1024"], capsys)
    text = (
        "## AGENTS.md\n\n" + "a" * 1024 + "\n[truncated: exceeds 1 KB bootstrap cap]"
        "\n\n## SOUL.md\n\n" + "s" * 10
    )
    digest = hashlib.sha256(text.encode()).hexdigest()
    assert len(text) == 1102
    assert (code, err) == (0, check_note())
    assert out == (
        f"{home}\n"
        "  file         status                   on disk        read\n"
        "  AGENTS.md    truncated                1,500 B     1,025 B\n"
        "  SOUL.md      present                     10 B        10 B\n"
        "  IDENTITY.md  missing                        -           -\n"
        "  USER.md      missing                        -           -\n"
        "  TOOLS.md     missing                        -           -\n"
        "  HEARTBEAT.md missing                        -           -\n"
        "  MEMORY.md    missing                        -           -\n"
        f"  2 of 7 present, 1,102 characters, sha256 {digest[:16]}\n"
    )


def test_check_budget_says_what_it_kept(home: Path, write: Writer, capsys: Capture) -> None:
    write("SOUL.md", "You are Kavi.")
    write("MEMORY.md", "".join(f"- note {i}: the user prefers metric units\n" for i in range(100)))
    rows = {
        "1024": "  MEMORY.md    cut                      4,090 B     1,025 B  212 (3,877 B left out)\n",
        "2097152": "  MEMORY.md    cut                      4,090 B     4,090 B  212 of 4,089\n",
    }
    for cap, row in rows.items():
        code, out, err = run(["check", str(home), "--budget", "300", "--max-file-bytes", cap], capsys)
        assert (code, err) == (1, check_note())
        assert out == (
            f"{home}\n"
            "  file         status                   on disk        read  kept (characters)\n"
            "  AGENTS.md    missing                        -           -\n"
            "  SOUL.md      present                     13 B        13 B  all 13\n"
            "  IDENTITY.md  missing                        -           -\n"
            "  USER.md      missing                        -           -\n"
            "  TOOLS.md     missing                        -           -\n"
            "  HEARTBEAT.md missing                        -           -\n"
            f"{row}"
            "  2 of 7 present, 298 characters, sha256 ec312d34cc3cdcd0\n"
            "  budget: 298 characters (99% of 300, near its limit); 1 cut: MEMORY.md\n"
        )


def test_check_fails_for_unusable_files(home: Path, capsys: Capture) -> None:
    (home / "USER.md").mkdir()
    (home / "SOUL.md").symlink_to("SOUL.md")
    code, out, _ = run(["check", str(home)], capsys)
    assert code == 1
    lines = out.splitlines()
    assert lines[3] == f"  SOUL.md      unreadable                     -           -  {os.strerror(40)}"
    assert lines[5] == "  USER.md      not a regular file             -           -  is a directory"


def test_check_fails_for_a_missing_directory(tmp_path: Path, capsys: Capture) -> None:
    (tmp_path / "plain").write_text("a file")
    (tmp_path / "home").mkdir()
    argv = ["check", str(tmp_path / "absent"), str(tmp_path / "plain"), str(tmp_path / "home")]
    code, out, err = run(argv, capsys)
    assert (code, err) == (1, check_note())
    assert out.splitlines()[:3] == [
        f"{tmp_path / 'absent'}  (no such directory)",
        f"{tmp_path / 'plain'}  (not a directory)",
        f"{tmp_path / 'home'}",
    ]


def test_check_several_directories(tmp_path: Path, capsys: Capture) -> None:
    for name in ("one", "two"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "SOUL.md").write_text(name)
    code, out, _ = run(["check", str(tmp_path / "one"), str(tmp_path / "two")], capsys)
    assert code == 0
    assert [line for line in out.splitlines() if not line.startswith(" ")] == [
        str(tmp_path / "one"),
        str(tmp_path / "two"),
    ]


@pytest.mark.reader_independent
@pytest.mark.parametrize(
    ("argv", "last_line"),
    [
        ([], "toolnexus-soul: error: a command is needed: compose, check, batch, memory, mcp"),
        (
            ["compose", "x", "--symlinks", "sometimes"],
            "toolnexus-soul compose: error: argument --symlinks:"
            " invalid choice: 'sometimes' (choose from 'follow', 'within', 'refuse')",
        ),
        (["compose", "a", "b"], "toolnexus-soul compose: error: unrecognized arguments: b"),
        (
            ["check", "a", "--max-file-bytes", "x"],
            "toolnexus-soul check: error: argument --max-file-bytes: not a whole number: 'x'",
        ),
        (["--version", "extra"], "toolnexus-soul: error: --version takes no other arguments"),
        (
            ["batch", "--workers", "0", "x"],
            "toolnexus-soul batch: error: argument --workers: must be 1 or more, not 0",
        ),
        (
            ["compose", "x", "--files", "SOUL.md,a/b.md"],
            "toolnexus-soul compose: error: argument --files: files must hold plain file names, not 'a/b.md'",
        ),
        (
            ["check", "x", "--files", "SOUL.md", "--files", "SOUL.md"],
            "toolnexus-soul check: error: argument"
            " --files: files must not name a file twice, as it does 'SOUL.md'",
        ),
    ],
)
def test_usage_errors_exit_2_in_one_style(argv: list[str], last_line: str, capsys: Capture) -> None:
    code, out, err = run(argv, capsys)
    assert (code, out) == (2, "")
    lines = err.splitlines()
    assert lines[-1] == last_line
    command = last_line.split(":", maxsplit=1)[0]  # the usage is that of the command the error is about
    assert lines[0].startswith(f"usage: {command} [-h]")


@pytest.mark.reader_independent  # each subprocess chooses its reader
@pytest.mark.parametrize("kind", TWINS)
def test_python_dash_m_on_the_example_persona(kind: str) -> None:
    env = {k: v for k, v in os.environ.items() if k != "TOOLNEXUS_SOUL_NO_EXTENSIONS"}
    if kind == "pure":
        env["TOOLNEXUS_SOUL_NO_EXTENSIONS"] = "1"
    done = subprocess.run(
        [sys.executable, "-m", "toolnexus.agents", "compose", str(EXAMPLE)],
        capture_output=True,
        env=env,
        check=True,
    )
    expected = (EXAMPLE.parent / "aster.soul.md").read_bytes()
    assert done.stdout == expected
    version = subprocess.run(
        [sys.executable, "-m", "toolnexus.agents", "--version"],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    reader = (
        "compiled reader"
        if kind == "compiled"
        else "pure-Python reader, as TOOLNEXUS_SOUL_NO_EXTENSIONS asks"
    )
    assert version.stdout == f"toolnexus-soul {__version__} ({reader})\n"


# ---- batch -------------------------------------------------------------------

SUMMARY = re.compile(r"^(\d+) homes, (\d+) files, (\d+\.\d) MB, \d+\.\d\d s, [\d,]+ homes/s\n$")


def test_batch_to_jsonl(tmp_path: Path, capsys: Capture) -> None:
    homes = []
    for index in range(3):
        home = tmp_path / f"h{index}"
        home.mkdir()
        (home / "SOUL.md").write_text(f"soul {index}" * (index + 1))
        homes.append(str(home))
    (Path(homes[2]) / "TOOLS.md").write_text("t" * 20)
    out = tmp_path / "souls.jsonl"
    code, stdout, stderr = run(["batch", *homes, "--jsonl", str(out), "--max-file-bytes", "10"], capsys)
    assert (code, stdout) == (0, "")
    summary = SUMMARY.match(stderr)
    assert summary is not None
    assert summary.groups() == ("3", "4", "0.0")
    records = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    # Every line is the record compose --json prints: the same keys.
    assert records == [{"dir": h, **compose(h, max_file_bytes=10).as_dict()} for h in homes]
    assert records[0] == {
        "dir": homes[0],
        "text": "## SOUL.md\n\nsoul 0",
        "found": ["SOUL.md"],
        "truncated_files": [],
        "cut_files": [],
        "used": None,
        "near_limit": False,
        "budget": None,
        "digest": hashlib.sha256(b"## SOUL.md\n\nsoul 0").hexdigest(),
        "max_file_bytes": 10,
        "symlinks": "follow",
        "files": [
            file_record("AGENTS.md"),
            file_record("SOUL.md", "present", read=6, on_disk=6),
            *(file_record(n) for n in ("IDENTITY.md", "USER.md", "TOOLS.md", "HEARTBEAT.md", "MEMORY.md")),
        ],
    }
    assert records[2]["found"] == records[2]["truncated_files"] == ["SOUL.md", "TOOLS.md"]


def test_batch_from_file_and_stdin(tmp_path: Path, capsys: Capture, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "USER.md").write_text(name)
    listing = tmp_path / "list.txt"
    listing.write_text(f"{tmp_path / 'a'}\n\n{tmp_path / 'b'}\n")
    code, stdout, _ = run(["batch", "--from-file", str(listing), "--no-text"], capsys)
    assert code == 0
    assert [json.loads(line)["dir"] for line in stdout.splitlines()] == [
        str(tmp_path / "a"),
        str(tmp_path / "b"),
    ]
    assert "text" not in json.loads(stdout.splitlines()[0])
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(os.fsencode(tmp_path / "b") + b"\r\n")))
    code, stdout, _ = run(["batch", str(tmp_path / "a"), "--from-file", "-", "--workers", "1"], capsys)
    assert code == 0
    assert [json.loads(line)["text"] for line in stdout.splitlines()] == [
        "## USER.md\n\na",
        "## USER.md\n\nb",
    ]


def test_batch_reports_problems(home: Path, capsys: Capture) -> None:
    (home / "SOUL.md").mkdir()
    code, stdout, _ = run(["batch", str(home)], capsys)
    assert code == 1
    assert json.loads(stdout)["files"][1] == file_record(
        "SOUL.md", "not a regular file", error="is a directory"
    )
    code, strict_out, stderr = run(["batch", str(home), "--strict"], capsys)
    assert (code, strict_out) == (1, stdout)
    assert stderr.splitlines()[0] == f"toolnexus-soul: {home}/SOUL.md: not a regular file: is a directory"


def test_batch_usage_errors(home: Path, capsys: Capture) -> None:
    code, out, err = run(["batch"], capsys)
    assert (code, out, err.splitlines()[-1]) == (
        2,
        "",
        "toolnexus-soul batch: error: batch needs at least one DIR or --from-file",
    )
    code, out, err = run(["batch", str(home), "--workers", "0"], capsys)
    assert (code, out, err.splitlines()[-1]) == (
        2,
        "",
        "toolnexus-soul batch: error: argument --workers: must be 1 or more, not 0",
    )
