"""The Soul report, on both readers."""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path

import pytest

from conftest import Writer, check_note
from toolnexus.agents import (
    BOOTSTRAP_ORDER,
    Budget,
    FileReport,
    FileStatus,
    SymlinkPolicy,
    compose,
    compose_soul,
)
from toolnexus.agents.cli import main


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
    plain = {"symlink": False, "invalid_utf8": False}
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
            {"name": name, **missing, "error": "No such file or directory", **no_budget, **plain}
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
                **plain,
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


# ---- what else a host should know of a file: bytes that are not UTF-8, a symlink ----


def test_a_body_with_bytes_that_are_not_utf8_says_so(home: Path, write: Writer) -> None:
    write("AGENTS.md", b"ok \xff ok")  # a byte no UTF-8 character starts with
    write("SOUL.md", "ok \ufffd ok")  # U+FFFD itself, well-formed: the file's own
    write("USER.md", b"\xef\xbb\xbf \n cut here\xe2\x82")  # past the cap, a character cut short
    write("TOOLS.md", b"abcdefghi\xff")  # the byte past the cap is no part of the body
    soul = compose(home, max_file_bytes=9)
    flags = {f.name: (f.status.value, f.invalid_utf8) for f in soul.files}
    assert flags == {
        "AGENTS.md": ("present", True),
        "SOUL.md": ("present", False),
        "IDENTITY.md": ("missing", False),
        "USER.md": ("present", False),  # cut at 9 bytes: BOM, White_Space and "cut"
        "TOOLS.md": ("present", False),
        "HEARTBEAT.md": ("missing", False),
        "MEMORY.md": ("missing", False),
    }
    notice = "\n[truncated: exceeds 9 bytes bootstrap cap]"
    assert soul.text == (
        "## AGENTS.md\n\nok \ufffd ok\n\n## SOUL.md\n\nok \ufffd ok\n\n"
        f"## USER.md\n\ncut{notice}\n\n## TOOLS.md\n\nabcdefghi{notice}"
    )
    whole = compose(home, files=["USER.md"])  # with no cap to cut it short
    assert (whole.text, whole.files[0].invalid_utf8) == ("## USER.md\n\ncut here\ufffd", True)
    record = soul.as_dict()["files"]
    assert isinstance(record, list)
    assert [(f["name"], f["invalid_utf8"]) for f in record[:2]] == [("AGENTS.md", True), ("SOUL.md", False)]


def test_a_budget_says_so_of_the_bytes_it_read(home: Path, write: Writer) -> None:
    start = b"\xff" + b"a" * 99_999  # ill-formed where a budget reads
    middle = b"a" * 50_000 + b"\xff" + b"a" * 49_999  # ill-formed where a small budget never reads
    write("SOUL.md", start)
    write("MEMORY.md", middle)
    small = compose(home, budget=Budget(total=400))
    assert [(f.name, f.cut, f.left_out, f.invalid_utf8) for f in small.files if f.present] == [
        ("SOUL.md", True, None, True),
        ("MEMORY.md", True, None, False),  # read in part: the byte was never read
    ]
    assert small.text.startswith("## SOUL.md\n\n\ufffd")
    roomy = compose(home, budget=Budget(total=300_000))  # holds the soul: every file read whole
    assert [(f.name, f.cut, f.invalid_utf8) for f in roomy.files if f.present] == [
        ("SOUL.md", False, True),
        ("MEMORY.md", False, True),
    ]
    assert [f.invalid_utf8 for f in compose(home).files if f.present] == [True, True]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="within's openat2 is Linux's")
def test_a_file_reached_through_a_symlink_says_so(tmp_path: Path, home: Path, write: Writer) -> None:
    (tmp_path / "passwd").write_text("root:x:0:0")
    write("AGENTS.md", "agents")
    os.link(home / "AGENTS.md", tmp_path / "agents-elsewhere.md")  # another hard link: no symlink
    (home / "SOUL.md").symlink_to(tmp_path / "passwd")
    (home / "USER.md").symlink_to("nowhere.md")
    (home / "TOOLS.md").symlink_to("TOOLS.md")
    expected = {
        "follow": [
            ("AGENTS.md", "present", False),
            ("SOUL.md", "present", True),  # read, and the report says how
            ("IDENTITY.md", "missing", False),
            ("USER.md", "missing", True),
            ("TOOLS.md", "unreadable", True),
        ],
        "within": [
            ("AGENTS.md", "present", False),
            ("SOUL.md", "refused symlink", False),  # refused: nothing was reached through it
            ("IDENTITY.md", "missing", False),
            ("USER.md", "missing", True),
            ("TOOLS.md", "unreadable", True),
        ],
        "refuse": [
            ("AGENTS.md", "present", False),
            ("SOUL.md", "refused symlink", False),
            ("IDENTITY.md", "missing", False),
            ("USER.md", "refused symlink", False),
            ("TOOLS.md", "refused symlink", False),
        ],
    }
    policies: tuple[SymlinkPolicy, ...] = ("follow", "within", "refuse")
    for policy in policies:
        soul = compose(home, symlinks=policy)
        assert [(f.name, f.status.value, f.symlink) for f in soul.files[:5]] == expected[policy], policy
    followed = compose(home).as_dict()["files"]
    assert isinstance(followed, list)
    assert [f["symlink"] for f in followed] == [False, True, False, True, True, False, False]


def test_the_command_line_tells_both(
    tmp_path: Path, home: Path, write: Writer, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "passwd").write_text("root:x:0:0")
    (home / "SOUL.md").symlink_to(tmp_path / "passwd")
    (home / "USER.md").symlink_to("nowhere.md")
    write("MEMORY.md", b"- likes \xe9t\xe9")  # Latin-1, not UTF-8
    (tmp_path / "notes.md").write_bytes(b"\xff")
    (home / "TOOLS.md").symlink_to(tmp_path / "notes.md")
    assert main(["check", str(home)]) == 0
    out, err = capsys.readouterr()
    soul = compose(home)
    rows = [
        "  file         status                   on disk        read",
        "  AGENTS.md    missing                        -           -",
        "  SOUL.md      present                     10 B        10 B  through a symlink",
        "  IDENTITY.md  missing                        -           -",
        "  USER.md      missing                        -           -",  # the JSON record tells more
        "  TOOLS.md     present                      1 B         1 B  through a symlink; not valid UTF-8",
        "  HEARTBEAT.md missing                        -           -",
        "  MEMORY.md    present                     11 B        11 B  not valid UTF-8",
        f"  3 of 7 present, {len(soul.text)} characters, sha256 {soul.digest[:16]}",
    ]
    assert (out, err) == ("".join(f"{line}\n" for line in [str(home), *rows]), check_note())
    assert main(["compose", str(home), "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert [(f["name"], f["symlink"], f["invalid_utf8"]) for f in record["files"]] == [
        ("AGENTS.md", False, False),
        ("SOUL.md", True, False),
        ("IDENTITY.md", False, False),
        ("USER.md", True, False),
        ("TOOLS.md", True, True),
        ("HEARTBEAT.md", False, False),
        ("MEMORY.md", False, True),
    ]
