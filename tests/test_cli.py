"""The ``toolnexus-soul`` command line, in process on both readers."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from conftest import Writer
from toolnexus.agents.cli import main

Capture = pytest.CaptureFixture[str]
EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "aster"


def run(argv: list[str], capsys: Capture) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_compose_prints_the_soul_byte_exact(
    reader: ModuleType, home: Path, write: Writer, capsys: Capture
) -> None:
    write("SOUL.md", "  Ünïcode soul  ")
    write("AGENTS.md", "agents")
    assert run(["compose", str(home)], capsys) == (
        0,
        "## AGENTS.md\n\nagents\n\n## SOUL.md\n\nÜnïcode soul",
        "",
    )


def test_compose_json(reader: ModuleType, home: Path, write: Writer, capsys: Capture) -> None:
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


def test_compose_symlink_policy(reader: ModuleType, tmp_path: Path, home: Path, capsys: Capture) -> None:
    (tmp_path / "secret").write_text("secret")
    (home / "SOUL.md").symlink_to(tmp_path / "secret")
    assert run(["compose", str(home)], capsys) == (0, "## SOUL.md\n\nsecret", "")
    assert run(["compose", str(home), "--symlinks", "within"], capsys) == (0, "", "")


def test_compose_strict_failure(reader: ModuleType, home: Path, capsys: Capture) -> None:
    (home / "TOOLS.md").mkdir()
    assert run(["compose", str(home), "--strict"], capsys) == (
        1,
        "",
        f"toolnexus-soul: {home}/TOOLS.md: not a regular file: is a directory\n",
    )


def test_compose_bad_cap(reader: ModuleType, home: Path, capsys: Capture) -> None:
    assert run(["compose", str(home), "--max-file-bytes", "0"], capsys) == (
        2,
        "",
        "toolnexus-soul: error: max_file_bytes must be between 1 and 9223372036854775806, got 0\n",
    )


def test_check_table(reader: ModuleType, home: Path, write: Writer, capsys: Capture) -> None:
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
        "  AGENTS.md    truncated                1,025 B\n"
        "  SOUL.md      present                     10 B\n"
        "  IDENTITY.md  missing                        -\n"
        "  USER.md      missing                        -\n"
        "  TOOLS.md     missing                        -\n"
        "  HEARTBEAT.md missing                        -\n"
        "  MEMORY.md    missing                        -\n"
        f"  2 of 7 present, 1,102 characters, sha256 {digest[:16]}\n"
    )


def test_check_fails_for_unusable_files(reader: ModuleType, home: Path, capsys: Capture) -> None:
    (home / "USER.md").mkdir()
    (home / "SOUL.md").symlink_to("SOUL.md")
    code, out, _ = run(["check", str(home)], capsys)
    assert code == 1
    lines = out.splitlines()
    assert lines[2] == f"  SOUL.md      unreadable                     -  {os.strerror(40)}"
    assert lines[4] == "  USER.md      not a regular file             -  is a directory"


def test_check_fails_for_a_missing_directory(reader: ModuleType, tmp_path: Path, capsys: Capture) -> None:
    code, out, _ = run(["check", str(tmp_path / "absent")], capsys)
    assert code == 1
    assert out.splitlines()[0] == f"{tmp_path / 'absent'}  (not a directory)"


def test_check_several_directories(reader: ModuleType, tmp_path: Path, capsys: Capture) -> None:
    for name in ("one", "two"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "SOUL.md").write_text(name)
    code, out, _ = run(["check", str(tmp_path / "one"), str(tmp_path / "two")], capsys)
    assert code == 0
    assert [line for line in out.splitlines() if not line.startswith(" ")] == [
        str(tmp_path / "one"),
        str(tmp_path / "two"),
    ]


def test_usage_errors_exit_2(capsys: Capture) -> None:
    with pytest.raises(SystemExit) as caught:
        main([])
    assert caught.value.code == 2
    with pytest.raises(SystemExit) as caught:
        main(["compose", "x", "--symlinks", "sometimes"])
    assert caught.value.code == 2


@pytest.mark.parametrize("kind", ["compiled", "pure"])
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
