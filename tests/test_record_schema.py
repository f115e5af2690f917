"""The JSON record's schema (docs/record.schema.json) holds what the command line prints, and nothing else.

Real output of ``compose --json`` and of ``batch``, on both readers, over
homes that give every kind of line and report: the example persona with and
without a budget, a file cut at the cap, a FIFO, an unreadable file, a
refused symlink, a directory name that is not UTF-8, and the error lines of
a home that is not there and of a name with a NUL. The schema is strict:
any key of a real record renamed, or any required key taken away, fails it.
"""

from __future__ import annotations

import base64
import io
import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any, Final

import pytest

from conftest import is_root
from toolnexus.agents.cli import main

jsonschema = pytest.importorskip("jsonschema")

ROOT: Final = Path(__file__).resolve().parents[1]
SCHEMA: Final = json.loads((ROOT / "docs" / "record.schema.json").read_text(encoding="utf-8"))
VALIDATOR: Final = jsonschema.Draft202012Validator(SCHEMA)
# Keys a record may lack: text under --no-text, dir_b64 for a name that is UTF-8.
OPTIONAL: Final = {"text", "dir_b64"}

Capture = pytest.CaptureFixture[str]


def errors(record: dict[str, Any]) -> list[str]:
    return [error.message for error in VALIDATOR.iter_errors(record)]


@pytest.fixture
def homes(tmp_path: Path) -> list[Path]:
    """The example persona; one with a cut file, a FIFO, an unreadable file, a refused link; an odd name."""
    aster = Path(shutil.copytree(ROOT / "examples" / "aster", tmp_path / "aster"))
    odd = Path(os.fsdecode(os.fsencode(tmp_path) + b"/odd\xff"))
    odd.mkdir()
    (odd / "SOUL.md").write_text("x" * 100)
    os.mkfifo(odd / "AGENTS.md")
    (odd / "USER.md").symlink_to(aster / "USER.md")
    (odd / "TOOLS.md").write_text("tools")
    (odd / "TOOLS.md").chmod(0)
    return [aster, odd]


@pytest.mark.reader_independent
def test_the_schema_is_a_schema() -> None:
    jsonschema.Draft202012Validator.check_schema(SCHEMA)


def test_compose_json_is_a_record_of_the_schema(homes: list[Path], capsys: Capture) -> None:
    aster, odd = homes
    records = []
    for argv in (
        ["compose", str(aster), "--json"],
        ["compose", str(aster), "--json", "--budget", "1200"],
        ["compose", str(aster), "--json", "--budget", "900", "--per-file", "100", "--keep", "head"],
        ["compose", str(aster), "--json", "--budget", "900", "--count", "bytes"],
        ["compose", str(odd), "--json", "--max-file-bytes", "50", "--symlinks", "refuse"],
    ):
        code = main(argv)
        records.append(json.loads(capsys.readouterr().out))
        assert code == 0
    assert [errors(record) for record in records] == [[]] * 5
    assert [record["cut_files"] for record in records[:2]] == [
        [],
        ["AGENTS.md", "SOUL.md", "USER.md", "TOOLS.md"],
    ]
    assert records[3]["budget"] == {
        "total": 900,
        "per_file": None,
        "keep": "head+tail",
        "count": "utf8_bytes",
    }
    odd_record = records[4]
    assert (odd_record["dir_b64"], odd_record["truncated_files"]) == (
        base64.b64encode(os.fsencode(odd)).decode(),
        ["SOUL.md"],
    )
    statuses = {report["name"]: report["status"] for report in odd_record["files"]}
    assert statuses == {
        "AGENTS.md": "not a regular file",
        "SOUL.md": "present",
        "IDENTITY.md": "missing",
        "USER.md": "refused symlink",
        "TOOLS.md": "present" if is_root() else "unreadable",  # root reads a file of mode 0
        "HEARTBEAT.md": "missing",
        "MEMORY.md": "missing",
    }


def test_every_batch_line_is_a_record_of_the_schema(
    homes: list[Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Capture
) -> None:
    aster, odd = homes
    listing = os.fsencode(f"{aster}\n{tmp_path}/nowhere\n{tmp_path}/bad\0name\n") + os.fsencode(odd) + b"\n"
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(listing)))
    code = main(["batch", "--from-file", "-", "--budget", "700"])
    with_text = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    code_without = main(["batch", str(aster), str(odd), "--no-text", "--symlinks", "within"])
    without_text = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert (code, code_without) == (1, 1)  # the odd home has files that exist but cannot be used
    assert [errors(record) for record in with_text + without_text] == [[]] * 6
    assert with_text[1:3] == [
        {"dir": f"{tmp_path}/nowhere", "error": "no such directory"},
        {"dir": f"{tmp_path}/bad\0name", "error": "not a path: it holds a NUL byte"},
    ]
    assert ["text" in record for record in with_text + without_text] == [
        True,
        False,
        False,
        True,
        False,
        False,
    ]


def test_a_key_renamed_or_taken_away_fails_the_schema(homes: list[Path], capsys: Capture) -> None:
    """Strict: what a consumer pins breaks when a key moves, at every level of a real record."""
    assert main(["compose", str(homes[1]), "--json", "--budget", "300"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert errors(record) == []
    for key in record:
        renamed = {(f"{key}_renamed" if name == key else name): value for name, value in record.items()}
        assert errors(renamed), key
        if key not in OPTIONAL:
            assert errors({name: value for name, value in record.items() if name != key}), key
    report = record["files"][0]
    for key in report:
        changed = {(f"{key}_renamed" if name == key else name): value for name, value in report.items()}
        assert errors({**record, "files": [changed, *record["files"][1:]]}), key
    budget = record["budget"]
    for key in budget:
        changed = {(f"{key}_renamed" if name == key else name): value for name, value in budget.items()}
        assert errors({**record, "budget": changed}), key
    error_line = {"dir": "x", "error": "no such directory"}
    assert errors(error_line) == []
    assert errors({**error_line, "found": []})
    assert errors({"dir": "x", "reason": "no such directory"})
