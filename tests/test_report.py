"""The Soul report, on both readers."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from conftest import Writer
from toolnexus.agents import BOOTSTRAP_ORDER, FileReport, FileStatus, compose, compose_soul


def test_report_matches_compose_soul(home: Path, write: Writer) -> None:
    write("AGENTS.md", "  agents  ")
    write("TOOLS.md", "t" * 20)
    (home / "USER.md").mkdir()
    soul = compose(home, max_file_bytes=10)
    text, found = compose_soul(home, max_file_bytes=10)
    assert (
        soul.text
        == text
        == (
            "## AGENTS.md\n\nagents\n\n## TOOLS.md\n\ntttttttttt\n[truncated: exceeds 10 bytes bootstrap cap]"
        )
    )
    assert soul.found == tuple(found) == ("AGENTS.md", "TOOLS.md")
    assert soul.truncated_files == ("TOOLS.md",)
    assert soul.max_file_bytes == 10
    assert soul.symlinks == "follow"
    assert [f.name for f in soul.files] == list(BOOTSTRAP_ORDER)
    assert soul.files[0] == FileReport("AGENTS.md", FileStatus.PRESENT, bytes_read=10, size_on_disk=10)
    assert soul.files[4] == FileReport(
        "TOOLS.md", FileStatus.PRESENT, bytes_read=11, truncated=True, size_on_disk=20
    )
    assert soul.files[3] == FileReport("USER.md", FileStatus.NOT_REGULAR, error="is a directory")
    assert soul.digest == hashlib.sha256(text.encode("utf-8")).hexdigest()
    assert str(soul) == text


def test_digest_of_empty_soul(home: Path) -> None:
    assert compose(home).digest == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"


def test_soul_is_immutable_and_comparable(home: Path, write: Writer) -> None:
    write("SOUL.md", "soul")
    first = compose(home)
    second = compose(home)
    assert first == second
    assert hash(first) == hash(second)
    with pytest.raises(AttributeError, match=r"^Soul is immutable: cannot set 'text'$"):
        first.text = "changed"
    with pytest.raises(AttributeError, match=r"^Soul is immutable: cannot delete 'found'$"):
        del first.found
    with pytest.raises(AttributeError):
        first.anything = 1
    with pytest.raises(AttributeError):
        first.files[1].bytes_read = 0  # type: ignore[misc]
    assert isinstance(first.found, tuple)
    assert isinstance(first.files, tuple)


def test_repr_stays_short(home: Path, write: Writer) -> None:
    write("SOUL.md", "x" * 100_000)
    assert repr(compose(home)) == "Soul(found=('SOUL.md',), max_file_bytes=2097152, symlinks='follow')"


def test_as_dict(home: Path, write: Writer) -> None:
    write("SOUL.md", "soul")
    record = compose(home).as_dict()
    no_budget = {"cut": False, "kept": None, "left_out": None, "kept_bytes": None, "left_out_bytes": None}
    missing = {
        "status": "missing",
        "bytes_read": 0,
        "size": 0,
        "size_on_disk": None,
        "truncated": False,
        "stable": True,
        "errno": 2,
    }
    assert record == {
        "text": "## SOUL.md\n\nsoul",
        "found": ["SOUL.md"],
        "truncated_files": [],
        "cut_files": [],
        "used": None,
        "near_limit": False,
        "budget": None,
        "digest": hashlib.sha256(b"## SOUL.md\n\nsoul").hexdigest(),
        "max_file_bytes": 2 * 1024 * 1024,
        "symlinks": "follow",
        "files": [
            {"name": name, **missing, "error": "No such file or directory", **no_budget}
            if name != "SOUL.md"
            else {
                "name": "SOUL.md",
                "status": "present",
                "bytes_read": 4,
                "size": 4,
                "size_on_disk": 4,
                "truncated": False,
                "stable": True,
                "errno": None,
                "error": None,
                **no_budget,
            }
            for name in BOOTSTRAP_ORDER
        ],
    }


@pytest.mark.reader_independent
def test_status_text() -> None:
    assert [str(s) for s in FileStatus] == [
        "present",
        "missing",
        "not a regular file",
        "unreadable",
        "refused symlink",
    ]
