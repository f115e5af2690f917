"""The ``toolnexus-soul`` command line, in process on both readers."""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import READERS, Writer
from toolnexus.agents import compose
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


def test_compose_json(home: Path, write: Writer, capsys: Capture) -> None:
    write("SOUL.md", "abcdef")
    (home / "USER.md").mkdir()
    code, out, err = run(["compose", str(home), "--json", "--max-file-bytes", "4"], capsys)
    assert (code, err) == (0, "")
    record = json.loads(out)
    text = "## SOUL.md\n\nabcd\n[truncated: exceeds 4 bytes bootstrap cap]"
    assert record["dir"] == str(home)
    assert record["text"] == text
    assert record["found"] == ["SOUL.md"]
    assert record["digest"] == hashlib.sha256(text.encode()).hexdigest()
    assert record["max_file_bytes"] == 4
    assert record["symlinks"] == "follow"
    assert [f["status"] for f in record["files"]] == [
        "missing",
        "present",
        "missing",
        "not a regular file",
        "missing",
        "missing",
        "missing",
    ]
    assert record["files"][1] == {
        "name": "SOUL.md",
        "status": "present",
        "size": 5,
        "truncated": True,
        "stable": True,
        "errno": None,
        "error": None,
    }


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


def test_compose_bad_cap(home: Path, capsys: Capture) -> None:
    assert run(["compose", str(home), "--max-file-bytes", "0"], capsys) == (
        2,
        "",
        "toolnexus-soul: error: max_file_bytes must be between 1 and 9223372036854775806, got 0\n",
    )


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
    assert (code, err) == (0, "")
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
    assert (code, err) == (1, "")
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
def test_usage_errors_exit_2(capsys: Capture) -> None:
    with pytest.raises(SystemExit) as caught:
        main([])
    assert caught.value.code == 2
    with pytest.raises(SystemExit) as caught:
        main(["compose", "x", "--symlinks", "sometimes"])
    assert caught.value.code == 2


@pytest.mark.reader_independent  # each subprocess chooses its reader
@pytest.mark.parametrize("kind", READERS)
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
    reader = "compiled" if kind == "compiled" else "pure-Python"
    assert version.stdout.endswith(f"({reader} reader)\n")


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
    texts = [compose(h, max_file_bytes=10).text for h in homes]
    assert records[0] == {
        "dir": homes[0],
        "digest": hashlib.sha256(texts[0].encode()).hexdigest(),
        "found": ["SOUL.md"],
        "sizes": {"SOUL.md": 6},
        "truncated": [],
        "text": "## SOUL.md\n\nsoul 0",
    }
    assert records[2]["found"] == ["SOUL.md", "TOOLS.md"]
    assert records[2]["sizes"] == {"SOUL.md": 11, "TOOLS.md": 11}
    assert records[2]["truncated"] == ["SOUL.md", "TOOLS.md"]
    assert [r["text"] for r in records] == texts


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
    assert json.loads(stdout)["problems"] == [
        {"name": "SOUL.md", "status": "not a regular file", "error": "is a directory"}
    ]
    code, strict_out, stderr = run(["batch", str(home), "--strict"], capsys)
    assert (code, strict_out) == (1, stdout)
    assert stderr.splitlines()[0] == f"toolnexus-soul: {home}/SOUL.md: not a regular file: is a directory"


def test_batch_usage_errors(home: Path, capsys: Capture) -> None:
    assert run(["batch"], capsys) == (
        2,
        "",
        "toolnexus-soul: error: batch needs at least one DIR or --from-file\n",
    )
    assert run(["batch", str(home), "--workers", "0"], capsys) == (
        2,
        "",
        "toolnexus-soul: error: --workers must be >= 1, got 0\n",
    )
