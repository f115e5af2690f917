"""Budgets and file subsets: exact outputs, the contract's points, every entry point; both readers."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path

import pytest

from conftest import Writer
from toolnexus.agents import (
    Budget,
    FileReport,
    FileStatus,
    SoulCache,
    acompose,
    acompose_soul,
    compose,
    compose_many,
    compose_soul,
)
from toolnexus.agents.cli import main, utf8_bytes

Capture = pytest.CaptureFixture[str]
MB = 1024 * 1024
LINES = "\n".join(f"line {n:02d}" for n in range(1, 41))  # 40 lines of 7 characters


def marker(name: str, left_out: int) -> str:
    return f"[... {left_out:,} bytes of {name} left out ...]"


# ---- the value ---------------------------------------------------------------


@pytest.mark.reader_independent
@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"total": 0}, ValueError, "Budget.total must be >= 1, got 0"),
        ({"total": -5}, ValueError, "Budget.total must be >= 1, got -5"),
        ({"total": True}, TypeError, "Budget.total must be an int, not bool"),
        ({"total": 1.5}, TypeError, "Budget.total must be an int, not float"),
        ({"per_file": "10"}, TypeError, "Budget.per_file must be an int, not str"),
        ({"per_file": 0}, ValueError, "Budget.per_file must be >= 1, got 0"),
        ({"keep": "tail"}, ValueError, "Budget.keep must be 'head+tail' or 'head', got 'tail'"),
        ({"keep": None}, TypeError, "Budget.keep must be a str, not NoneType"),
        ({"count": 3}, TypeError, "Budget.count must be callable, not int"),
    ],
)
def test_bad_budgets_name_the_field(kwargs: dict[str, object], error: type[Exception], message: str) -> None:
    with pytest.raises(error) as caught:
        Budget(**kwargs)  # type: ignore[arg-type]
    assert str(caught.value) == message


@pytest.mark.reader_independent
def test_a_budget_is_a_frozen_hashable_value() -> None:
    budget = Budget(total=100, per_file=50, keep="head")
    assert budget == Budget(total=100, per_file=50, keep="head")
    assert hash(budget) == hash(Budget(total=100, per_file=50, keep="head"))
    assert Budget() == Budget(None, None, "head+tail", None)
    with pytest.raises(AttributeError):
        budget.total = 5  # type: ignore[misc]


def test_a_count_that_returns_no_count(home: Path, write: Writer) -> None:
    write("SOUL.md", "soul")
    with pytest.raises(TypeError, match=r"^Budget.count must return an int, not str$"):
        compose(home, budget=Budget(total=100, count=lambda text: "many"))  # type: ignore[arg-type, return-value]
    with pytest.raises(ValueError, match=r"^Budget.count must return a count >= 0, got -1$"):
        compose(home, budget=Budget(total=100, count=lambda text: -1))


@pytest.mark.reader_independent
def test_budget_must_be_a_budget(home: Path) -> None:
    with pytest.raises(TypeError, match=r"^budget must be a Budget or None, not int$"):
        compose(home, budget=100)  # type: ignore[arg-type]


# ---- files= ------------------------------------------------------------------


def test_files_choose_and_order(home: Path, write: Writer) -> None:
    write("TOOLS.md", "tools")
    write("AGENTS.md", "agents")
    write("NOTES.md", "notes")
    soul = compose(home, files=["TOOLS.md", "NOTES.md", "AGENTS.md", "SOUL.md"])
    assert soul.text == "## TOOLS.md\n\ntools\n\n## NOTES.md\n\nnotes\n\n## AGENTS.md\n\nagents"
    assert soul.found == ("TOOLS.md", "NOTES.md", "AGENTS.md")
    assert [f.name for f in soul.files] == ["TOOLS.md", "NOTES.md", "AGENTS.md", "SOUL.md"]
    assert soul.files[3] == FileReport(
        "SOUL.md", FileStatus.MISSING, errno=2, error="No such file or directory"
    )
    assert compose(home, files=("AGENTS.md",)).text == "## AGENTS.md\n\nagents"
    assert compose(home, files=[]).text == ""


@pytest.mark.parametrize(
    ("files", "error", "message"),
    [
        ("SOUL.md", TypeError, "files must be a sequence of names, not a single str"),
        (b"SOUL.md", TypeError, "files must be a sequence of names, not a single bytes"),
        (5, TypeError, "files must be a sequence of names, not int"),
        ([b"SOUL.md"], TypeError, "files must hold str names, not bytes"),
        ([""], ValueError, "files must hold plain file names, not ''"),
        (["."], ValueError, "files must hold plain file names, not '.'"),
        ([".."], ValueError, "files must hold plain file names, not '..'"),
        (["a/b.md"], ValueError, "files must hold plain file names, not 'a/b.md'"),
        (["/etc/passwd"], ValueError, "files must hold plain file names, not '/etc/passwd'"),
        (["a\0b"], ValueError, "files must hold plain file names, not 'a\\x00b'"),
        (
            ["SOUL.md", "USER.md", "SOUL.md"],
            ValueError,
            "files must not name a file twice, as it does 'SOUL.md'",
        ),
    ],
)
def test_bad_files(home: Path, files: object, error: type[Exception], message: str) -> None:
    with pytest.raises(error) as caught:
        compose(home, files=files)  # type: ignore[arg-type]
    assert str(caught.value) == message


# ---- exact outputs -------------------------------------------------------------


def test_head_and_tail_cut_at_line_boundaries(home: Path, write: Writer) -> None:
    write("MEMORY.md", LINES + "\n")
    soul = compose(home, budget=Budget(per_file=100))
    # 75 characters for the head, back to the end of line 09 (71); 25 for the
    # tail, forward to the start of line 38 (23): 319 - 94 = 225 left out.
    head = "\n".join(f"line {n:02d}" for n in range(1, 10))
    tail = "line 38\nline 39\nline 40"
    assert soul.text == f"## MEMORY.md\n\n{head}\n{marker('MEMORY.md', 225)}\n{tail}"
    assert soul.files[6] == FileReport(
        "MEMORY.md",
        FileStatus.PRESENT,
        size=320,
        cut=True,
        kept=94,
        left_out=225,
        kept_bytes=94,
        left_out_bytes=225,
    )
    assert soul.cut == ("MEMORY.md",)
    assert soul.truncated == ()
    assert soul.used == len(soul.text)


def test_keep_head(home: Path, write: Writer) -> None:
    write("MEMORY.md", LINES)
    soul = compose(home, budget=Budget(per_file=100, keep="head"))
    head = "\n".join(f"line {n:02d}" for n in range(1, 13))  # 100 characters, back to the end of line 12
    assert soul.text == f"## MEMORY.md\n\n{head}\n{marker('MEMORY.md', 319 - 95)}"


def test_a_file_within_its_share_is_whole(home: Path, write: Writer) -> None:
    write("SOUL.md", "You are Aster.")
    write("USER.md", "The user.")
    soul = compose(home, budget=Budget(total=1000, per_file=100))
    assert soul.text == "## SOUL.md\n\nYou are Aster.\n\n## USER.md\n\nThe user."
    assert soul.files[1] == FileReport(
        "SOUL.md",
        FileStatus.PRESENT,
        size=14,
        cut=False,
        kept=14,
        left_out=0,
        kept_bytes=14,
        left_out_bytes=0,
    )
    assert (soul.used, soul.near_limit) == (49, False)


def test_no_room_leaves_files_out_from_the_end(home: Path, write: Writer) -> None:
    write("AGENTS.md", "a" * 50)
    write("SOUL.md", "s" * 50)
    empty = compose(home, budget=Budget(total=10))
    assert (empty.text, empty.found, empty.cut) == ("", (), ("AGENTS.md", "SOUL.md"))
    # Both files, cut, would need their headings and two markers: more than
    # 80. AGENTS.md alone fits whole; SOUL.md, last in the order, is left out.
    soul = compose(home, budget=Budget(total=80))
    assert soul.text == "## AGENTS.md\n\n" + "a" * 50
    assert soul.files[1] == FileReport(
        "SOUL.md", FileStatus.PRESENT, size=50, cut=True, kept=0, left_out=50, kept_bytes=0, left_out_bytes=50
    )
    assert compose_soul(home, budget=Budget(total=80)) == (soul.text, ["AGENTS.md"])


def test_crlf_is_never_split(home: Path, write: Writer) -> None:
    lines = [f"tool {n:02d}" for n in range(1, 41)]
    write("TOOLS.md", "\r\n".join(lines))
    # per_file 104: 78 characters for the head, whose end falls in line 09
    # ("tool 09\r\n" is 72-80): back to the \n at 71, then before its \r.
    # 26 for the tail, which starts on the \n of line 37's \r\n: after it.
    text = compose(home, budget=Budget(per_file=104)).text
    head = "\r\n".join(lines[:8])
    tail = "\r\n".join(lines[37:])
    assert text == f"## TOOLS.md\n\n{head}\n{marker('TOOLS.md', 358 - len(head) - len(tail))}\n{tail}"


def test_counts_in_words_and_bytes(home: Path, write: Writer) -> None:
    write("SOUL.md", " ".join(f"w{n}" for n in range(200)))
    write("USER.md", "é" * 300)  # 600 bytes
    words = compose(home, budget=Budget(total=60, count=lambda text: len(text.split())))
    assert len(words.text.split()) <= 60
    assert words.used == len(words.text.split())
    in_bytes = compose(home, budget=Budget(total=400, count=utf8_bytes))
    assert len(in_bytes.text.encode()) <= 400
    user = in_bytes.files[3]
    assert (user.cut, user.kept, user.kept_bytes) == (True, user.kept_bytes, user.kept)
    assert user.kept_bytes is not None
    assert user.kept_bytes % 2 == 0  # never half an é


# ---- fairness, and reading bounded by the budget ----------------------------------


def test_a_big_memory_cannot_starve_a_small_soul(home: Path, write: Writer) -> None:
    soul_text = "You are Aster. " * 26 + "Be brief."  # 399 characters
    write("MEMORY.md", ("- a note, newest last\n" * 100_000) + "- the newest note")
    write("SOUL.md", soul_text)
    soul = compose(home, budget=Budget(total=2000))
    assert soul.text.startswith(f"## SOUL.md\n\n{soul_text}\n\n## MEMORY.md\n\n- a note, newest last\n")
    assert soul.text.endswith("- a note, newest last\n- the newest note")  # the end of MEMORY.md is kept
    assert len(soul.text) <= 2000
    assert soul.cut == ("MEMORY.md",)
    assert soul.near_limit
    memory = soul.files[6]
    assert memory.size < 20_000  # read: what the budget can keep, not 2.2 MB
    assert memory.kept is not None
    assert memory.kept > 1400
    assert memory.left_out is None  # it was not all read
    assert memory.left_out_bytes == 2_200_017 - (memory.kept_bytes or 0)


def test_files_beyond_the_cap_keep_their_end(home: Path, write: Writer) -> None:
    # With a budget the cap bounds what is read, and the budget's marker, not
    # the truncation notice, says what was left out: the newest notes stay.
    write("MEMORY.md", "old\n" * 1000 + "newest")
    soul = compose(home, max_file_bytes=1024, budget=Budget(total=100_000))
    assert soul.text.endswith("old\nold\nnewest")
    assert "[truncated" not in soul.text
    assert soul.files[6].size <= 1025
    assert soul.files[6].cut


def test_count_is_called_logarithmically(home: Path, write: Writer) -> None:
    write("MEMORY.md", "word " * 40_000)
    write("SOUL.md", "soul " * 40_000)
    calls = 0

    def counting(text: str) -> int:
        nonlocal calls
        calls += 1
        return len(text.split())

    soul = compose(home, budget=Budget(total=5000, count=counting))
    assert len(soul.text.split()) <= 5000
    assert calls <= 120  # 2 files: a few measures each, and two bisections of ~17 steps


def tiktoken_encoding() -> Callable[[str], int]:
    tiktoken = pytest.importorskip("tiktoken")
    # A real tiktoken BPE, built here: the named encodings download their ranks.
    merges = [b"th", b"he", b"the", b" t", b"in", b"er", b"an", b"re"]
    ranks = {bytes([b]): b for b in range(256)} | {pair: 256 + rank for rank, pair in enumerate(merges)}
    encoding = tiktoken.Encoding(
        name="toolnexus-test",
        pat_str=r"\s?\w+|\s+(?!\S)|\s+|[^\s\w]+",
        mergeable_ranks=ranks,
        special_tokens={},
    )

    def tokens(text: str) -> int:
        return len(encoding.encode(text))

    return tokens


def test_a_tokenizer_count(home: Path, write: Writer) -> None:
    tokens = tiktoken_encoding()
    write("MEMORY.md", "the other thing, then the rest\n" * 2000)
    write("SOUL.md", "There is the answer. " * 20)
    soul = compose(home, budget=Budget(total=700, count=tokens))
    assert tokens(soul.text) <= 700
    assert soul.used == tokens(soul.text)
    assert soul.cut == ("MEMORY.md",)
    assert soul.files[1].cut is False


# ---- every entry point ---------------------------------------------------------


def test_every_entry_point_takes_budget_and_files(tmp_path: Path) -> None:
    homes = []
    for index in range(3):
        home = tmp_path / f"h{index}"
        home.mkdir()
        (home / "AGENTS.md").write_text("agents " * 40)
        (home / "NOTES.md").write_text(f"notes {index} " * 40)
        homes.append(home)
    budget = Budget(total=150)
    files = ["NOTES.md", "AGENTS.md"]
    expected = [compose(h, files=files, budget=budget) for h in homes]
    assert expected[0].found == ("NOTES.md", "AGENTS.md")
    assert expected[0].budget == budget
    assert compose_many(homes, files=files, budget=budget) == expected
    cache = SoulCache()
    first = cache.compose(homes[0], files=files, budget=budget)
    assert first == expected[0]
    assert cache.compose(homes[0], files=files, budget=budget) == first
    assert cache.compose(homes[0], budget=budget) != first  # the options are part of the key
    assert asyncio.run(acompose(homes[1], files=files, budget=budget)) == expected[1]
    assert asyncio.run(acompose_soul(homes[2], budget=budget)) == compose_soul(homes[2], budget=budget)


def test_the_report_says_what_the_budget_did(home: Path, write: Writer) -> None:
    write("MEMORY.md", LINES)
    soul = compose(home, budget=Budget(per_file=100))
    record = soul.as_dict()
    assert record["budget"] == {"total": None, "per_file": 100, "keep": "head+tail", "count": None}
    assert record["used"] == len(soul.text)
    assert record["near_limit"] is False
    files = record["files"]
    assert isinstance(files, list)
    assert files[6] == {
        "name": "MEMORY.md",
        "status": "present",
        "size": 319,
        "truncated": False,
        "stable": True,
        "errno": None,
        "error": None,
        "cut": True,
        "kept": 94,
        "left_out": 225,
        "kept_bytes": 94,
        "left_out_bytes": 225,
    }
    assert "budget" not in compose(home).as_dict()


# ---- the command line -------------------------------------------------------------


def test_cli_compose_and_check_with_a_budget(home: Path, write: Writer, capsys: Capture) -> None:
    write("MEMORY.md", LINES + "\n")
    write("SOUL.md", "soul")
    assert main(["compose", str(home), "--per-file", "100"]) == 0
    out, err = capsys.readouterr()
    assert (out, err) == (compose(home, budget=Budget(per_file=100)).text, "")
    assert main(["check", str(home), "--budget", "300"]) == 1
    out, _ = capsys.readouterr()
    lines = out.splitlines()
    soul = compose(home, budget=Budget(total=300))
    kept = soul.files[6].kept
    assert lines[2] == "  SOUL.md      present                      4 B"
    assert lines[7] == f"  MEMORY.md    cut                        320 B  kept {kept} characters of 319"
    assert soul.used is not None
    share = f"{soul.used / 300:.0%} of 300"
    assert lines[9] == f"  budget: {soul.used} characters ({share}, near its limit); 1 cut: MEMORY.md"
    assert main(["check", str(home), "--budget", "4000"]) == 0
    out, _ = capsys.readouterr()
    assert out.splitlines()[-1] == "  budget: 351 characters (9% of 4,000); nothing cut"


def test_cli_batch_with_a_budget(home: Path, write: Writer, capsys: Capture) -> None:
    write("MEMORY.md", LINES)
    assert main(["batch", str(home), "--budget", "120", "--keep", "head", "--count", "bytes"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["cut"] == ["MEMORY.md"]
    assert record["used"] <= 120
    assert record["text"] == compose(home, budget=Budget(total=120, keep="head", count=utf8_bytes)).text


@pytest.mark.reader_independent
@pytest.mark.parametrize("value", ["0", "-3", "many"])
def test_cli_rejects_a_bad_budget(value: str, capsys: Capture) -> None:
    with pytest.raises(SystemExit) as caught:
        main(["compose", ".", "--budget", value])
    assert caught.value.code == 2
    assert "--budget" in capsys.readouterr().err
