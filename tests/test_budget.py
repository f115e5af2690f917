"""Budgets and file subsets: exact outputs, the contract's points, every entry point; both readers."""

from __future__ import annotations

import asyncio
import itertools
import json
import textwrap
from pathlib import Path
from typing import Any

import pytest

from conftest import Writer
from counts import lines, newlines, super_additive, tiktoken_count, tiktoken_encoding, words
from toolnexus.agents import (
    Budget,
    FileReport,
    FileStatus,
    SoulCache,
    _native,
    acompose,
    acompose_soul,
    compose,
    compose_many,
    compose_soul,
)
from toolnexus.agents._vocabulary import Excerpt
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
        (
            {"count": lambda text: len(text) + 1},
            ValueError,
            "Budget.count must measure the empty text as 0, got 1",
        ),
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
            ["x\n\n## SOUL.md"],
            ValueError,
            "files must hold names that can head a section, not 'x\\n\\n## SOUL.md':"
            " it holds a control character",
        ),
        (
            ["a\x85b", "c"],
            ValueError,
            "files must hold names that can head a section, not 'a\\x85b': it holds a control character",
        ),
        (
            ["a\u2028b"],
            ValueError,
            "files must hold names that can head a section, not 'a\\u2028b':"
            " it holds a line or paragraph separator",
        ),
        (
            ["c\udcffd"],
            ValueError,
            "files must hold names that can head a section, not 'c\\udcffd':"
            " it holds a byte that is not UTF-8",
        ),
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
        bytes_read=320,
        size_on_disk=320,
        cut=True,
        kept=94,
        left_out=225,
        kept_bytes=94,
        left_out_bytes=225,
    )
    assert soul.cut_files == ("MEMORY.md",)
    assert soul.truncated_files == ()
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
        bytes_read=14,
        size_on_disk=14,
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
    assert (empty.text, empty.found, empty.cut_files) == ("", (), ("AGENTS.md", "SOUL.md"))
    # Both files, cut, would need their headings and two markers: more than
    # 80. AGENTS.md alone fits whole; SOUL.md, last in the order, is left out.
    soul = compose(home, budget=Budget(total=80))
    assert soul.text == "## AGENTS.md\n\n" + "a" * 50
    assert soul.files[1] == FileReport(
        "SOUL.md",
        FileStatus.PRESENT,
        bytes_read=50,
        size_on_disk=50,
        cut=True,
        kept=0,
        left_out=50,
        kept_bytes=0,
        left_out_bytes=50,
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
    assert soul.cut_files == ("MEMORY.md",)
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
    assert soul.files[6].bytes_read <= 1025
    assert soul.files[6].cut


def test_count_is_called_about_once_a_text(home: Path, write: Writer) -> None:
    # Two 200 KB files cut to 5,000 words: read in part after the first read,
    # they cost count what was read of them, not a bisection of each part.
    write("MEMORY.md", "word " * 40_000)
    write("SOUL.md", "soul " * 40_000)
    texts: list[str] = []

    def counting(text: str) -> int:
        texts.append(text)
        return len(text.split())

    budget = Budget(total=5000, count=counting)
    texts.clear()
    soul = compose(home, budget=budget)
    assert len(soul.text.split()) <= 5000
    assert soul.cut_files == ("SOUL.md", "MEMORY.md")
    # n + 2 + 4c, and two for each file read after the first read (docs/reference/budgets.md).
    assert len(texts) <= 2 + 2 + 4 * 2 + 2 * 2
    assert sum(map(len, texts)) < 120_000  # under a third of what the two files hold
    assert len(set(texts)) == len(texts)  # no text twice


def test_a_tokenizer_count(home: Path, write: Writer) -> None:
    tokens = tiktoken_count()
    if tokens is None:
        pytest.skip("tiktoken is not installed (the tokens extra)")
    write("MEMORY.md", "the other thing, then the rest\n" * 2000)
    write("SOUL.md", "There is the answer. " * 20)
    soul = compose(home, budget=Budget(total=700, count=tokens))
    assert tokens(soul.text) <= 700
    assert soul.used == tokens(soul.text)
    assert soul.cut_files == ("MEMORY.md",)
    assert soul.files[1].cut is False


def test_the_guides_token_recipe_counts_special_tokens_as_text(
    home: Path, write: Writer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The budgets guide's recipe, run as written, on a home whose file holds a special token's text.
    tiktoken = pytest.importorskip("tiktoken")
    encoding = tiktoken_encoding()
    with pytest.raises(ValueError, match="disallowed special token"):
        encoding.encode("<|endoftext|>")  # what the recipe must not do: refuse a persona's text
    monkeypatch.setattr(tiktoken, "get_encoding", lambda name: encoding)  # the named ones download
    guide = (Path(__file__).resolve().parents[1] / "docs/how-to/budgets.md").read_text(encoding="utf-8")
    (block,) = [b for b in guide.split("```python\n")[1:] if "import tiktoken" in b]
    recipe: dict[str, object] = {}
    exec(compile(textwrap.dedent(block.split("```", 1)[0]), "docs/how-to/budgets.md", "exec"), recipe)
    budget = recipe["TOKENS"]
    assert isinstance(budget, Budget)
    assert (budget.total, budget.per_file) == (8000, 3000)
    write("SOUL.md", "Never print <|endoftext|> to a user.")
    write("MEMORY.md", "- the <|endoftext|> token ends a document\n" * 1000)
    soul = compose(home, budget=budget)
    tokens = tiktoken_count()
    assert tokens is not None
    line = "- the <|endoftext|> token ends a document\n"
    assert soul.text == (
        "## SOUL.md\n\nNever print <|endoftext|> to a user.\n\n## MEMORY.md\n\n"
        + line * 58
        + "[... 38,767 bytes of MEMORY.md left out ...]\n"
        + (line * 19)[:-1]
    )
    assert (soul.used, tokens(soul.text)) == (2951, 2951)
    assert (soul.cut_files, soul.files[-1].kept, soul.files[-1].left_out) == (("MEMORY.md",), 2847, 34152)


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
    with SoulCache() as cache:
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
    assert record["near_limit"] is True  # per_file cut a file: the soul is at the budget's limit
    files = record["files"]
    assert isinstance(files, list)
    assert files[6] == {
        "name": "MEMORY.md",
        "status": "present",
        "bytes_read": 319,
        "size": 319,
        "size_on_disk": 319,
        "truncated": False,
        "stable": True,
        "errno": None,
        "error": None,
        "cut": True,
        "kept": 94,
        "left_out": 225,
        "kept_bytes": 94,
        "left_out_bytes": 225,
        "symlink": False,
        "invalid_utf8": False,
    }
    plain = compose(home).as_dict()
    assert (plain["budget"], plain["used"], plain["cut_files"], plain["near_limit"]) == (
        None,
        None,
        [],
        False,
    )
    assert list(plain) == list(record)  # the same keys, with a budget or without


def test_near_limit_is_true_once_the_budget_cut_anything(home: Path, write: Writer) -> None:
    write("SOUL.md", "You are Kavi.")
    write("MEMORY.md", LINES)
    # A total so small that not even a heading fits: every file left out, an empty soul at its limit.
    nothing = compose(home, budget=Budget(total=10))
    assert (nothing.text, nothing.used, nothing.cut_files, nothing.near_limit) == (
        "",
        0,
        ("SOUL.md", "MEMORY.md"),
        True,
    )
    assert nothing.as_dict()["near_limit"] is True
    # per_file alone, which cuts MEMORY.md: at the limit too, with no total to measure against.
    per_file = compose(home, budget=Budget(per_file=100))
    assert (per_file.cut_files, per_file.near_limit) == (("MEMORY.md",), True)
    # Nothing cut: near the limit only at 85% of the total or more.
    used = len(compose(home).text)
    assert used == 360
    assert [compose(home, budget=Budget(total=total)).near_limit for total in (360, 423, 424, 1000)] == [
        True,
        True,  # 360 >= 0.85 * 423
        False,
        False,
    ]
    assert compose(home, budget=Budget(total=360)).cut_files == ()
    assert compose(home).near_limit is False  # no budget, no limit


# ---- the command line -------------------------------------------------------------


def test_cli_compose_and_check_with_a_budget(home: Path, write: Writer, capsys: Capture) -> None:
    write("MEMORY.md", LINES + "\n")
    write("SOUL.md", "soul")
    assert main(["compose", str(home), "--per-file", "100"]) == 0
    out, err = capsys.readouterr()
    assert (out, err) == (compose(home, budget=Budget(per_file=100)).text, "")
    assert main(["check", str(home), "--budget", "300"]) == 1
    out, _ = capsys.readouterr()
    soul = compose(home, budget=Budget(total=300))
    assert (soul.used, soul.files[6].kept) == (296, 222)
    assert out == (
        f"{home}\n"
        "  file         status                   on disk        read  kept (characters)\n"
        "  AGENTS.md    missing                        -           -\n"
        "  SOUL.md      present                      4 B         4 B  all 4\n"
        "  IDENTITY.md  missing                        -           -\n"
        "  USER.md      missing                        -           -\n"
        "  TOOLS.md     missing                        -           -\n"
        "  HEARTBEAT.md missing                        -           -\n"
        "  MEMORY.md    cut                        320 B       320 B  222 of 319\n"
        f"  2 of 7 present, 296 characters, sha256 {soul.digest[:16]}\n"
        "  budget: 296 characters (99% of 300, near its limit); 1 cut: MEMORY.md\n"
    )
    assert main(["check", str(home), "--budget", "4000"]) == 0
    out, _ = capsys.readouterr()
    assert out.splitlines()[-1] == "  budget: 351 characters (9% of 4,000); nothing cut"


def test_cli_check_says_when_nothing_fits(home: Path, write: Writer, capsys: Capture) -> None:
    write("SOUL.md", "s" * 300)
    write("MEMORY.md", "m" * 3000)
    assert main(["check", str(home), "--budget", "20"]) == 1
    out, _ = capsys.readouterr()
    assert out == (
        f"{home}\n"
        "  file         status                   on disk        read  kept (characters)\n"
        "  AGENTS.md    missing                        -           -\n"
        "  SOUL.md      left out                   300 B       300 B  0 of 300\n"
        "  IDENTITY.md  missing                        -           -\n"
        "  USER.md      missing                        -           -\n"
        "  TOOLS.md     missing                        -           -\n"
        "  HEARTBEAT.md missing                        -           -\n"
        "  MEMORY.md    left out                 3,000 B     3,000 B  0 of 3,000\n"
        "  2 of 7 present, none fits the budget, 0 characters, sha256 e3b0c44298fc1c14\n"
        "  budget: 0 characters (0% of 20); 2 cut: SOUL.md, MEMORY.md\n"
    )
    assert main(["check", str(home), "--budget", "70", "--keep", "head"]) == 1
    out, _ = capsys.readouterr()
    digest = compose(home, budget=Budget(total=70, keep="head")).digest
    assert out.splitlines()[3:11] == [
        "  SOUL.md      cut                        300 B       300 B  18 of 300",
        "  IDENTITY.md  missing                        -           -",
        "  USER.md      missing                        -           -",
        "  TOOLS.md     missing                        -           -",
        "  HEARTBEAT.md missing                        -           -",
        "  MEMORY.md    left out                 3,000 B     3,000 B  0 of 3,000",
        f"  2 of 7 present, 1 in the soul (1 left out), 70 characters, sha256 {digest[:16]}",
        "  budget: 70 characters (100% of 70, near its limit); 2 cut: SOUL.md, MEMORY.md",
    ]


def test_cli_batch_with_a_budget(home: Path, write: Writer, capsys: Capture) -> None:
    write("MEMORY.md", LINES)
    assert main(["batch", str(home), "--budget", "120", "--keep", "head", "--count", "bytes"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["cut_files"] == ["MEMORY.md"]
    assert record["used"] <= 120
    assert record["text"] == compose(home, budget=Budget(total=120, keep="head", count=utf8_bytes)).text


@pytest.mark.reader_independent
@pytest.mark.parametrize("value", ["0", "-3", "many"])
def test_cli_rejects_a_bad_budget(value: str, capsys: Capture) -> None:
    assert main(["compose", ".", "--budget", value]) == 2
    out, err = capsys.readouterr()
    why = "not a whole number: 'many'" if value == "many" else f"must be 1 or more, not {value}"
    assert (out, err.splitlines()[-1]) == ("", f"toolnexus-soul compose: error: argument --budget: {why}")


# ---- the laws, on the cases that broke them (one test per case) -----------------


def test_a_file_that_fits_is_whole_up_to_the_cap(home: Path, write: Writer) -> None:
    write("MEMORY.md", "a" * 2_000_000)
    plain = compose(home).text
    assert plain == "## MEMORY.md\n\n" + "a" * 2_000_000
    for budget in (Budget(total=10_000_000), Budget(), Budget(per_file=2_000_000)):
        soul = compose(home, budget=budget)
        assert (soul.text, soul.cut_files) == (plain, ())
        assert soul.files[6] == FileReport(
            "MEMORY.md",
            FileStatus.PRESENT,
            bytes_read=2_000_000,
            size_on_disk=2_000_000,
            cut=False,
            kept=2_000_000,
            left_out=0,
            kept_bytes=2_000_000,
            left_out_bytes=0,
        )
    write("MEMORY.md", "b" * 796)
    assert (
        compose(home, max_file_bytes=1000, budget=Budget(per_file=796)).text == "## MEMORY.md\n\n" + "b" * 796
    )


def test_white_space_counts_after_the_trim(home: Path, write: Writer) -> None:
    write("AGENTS.md", "\n" * 73)
    assert compose(home, budget=Budget(total=14, keep="head")).text == "## AGENTS.md\n\n"
    (home / "AGENTS.md").unlink()
    write("SOUL.md", "x" + " " * 1000)
    for total in (13, 54, 55, 57):
        soul = compose(home, budget=Budget(total=total))
        assert (soul.text, soul.cut_files) == ("## SOUL.md\n\nx", ())
        assert (soul.files[1].bytes_read, soul.files[1].kept_bytes, soul.files[1].left_out_bytes) == (
            1001,
            1,
            0,
        )


def test_blank_lines_do_not_push_another_file_out(home: Path, write: Writer) -> None:
    write("HEARTBEAT.md", "\n" * 1000)
    write("MEMORY.md", "- prefers metric units\n- answer in French")
    plain = "## HEARTBEAT.md\n\n\n\n## MEMORY.md\n\n- prefers metric units\n- answer in French"
    assert len(plain) == 74
    for total in range(74, 123):
        assert compose(home, budget=Budget(total=total)).text == plain


def test_a_large_padded_file_is_its_trimmed_body(home: Path, write: Writer) -> None:
    body = "You are Aster, a calm research assistant who cites every source and keeps answers short."
    write("SOUL.md", body + " " * (1_677_717 - len(body)))
    soul = compose(home, budget=Budget(total=100_000))
    assert soul.text == "## SOUL.md\n\n" + body
    assert soul.cut_files == ()


def test_a_count_whose_unit_spans_many_bytes(home: Path, write: Writer) -> None:
    word = "w" * 1000
    write("SOUL.md", word)
    for total in (3, 9, 10):
        assert compose(home, budget=Budget(total=total, count=words)).text == f"## SOUL.md\n\n{word}"
    write("SOUL.md", "x" * 240)
    assert compose(home, budget=Budget(per_file=1, count=lines)).text == "## SOUL.md\n\n" + "x" * 240


def test_a_base64_key_in_memory_under_a_word_count(home: Path, write: Writer) -> None:
    key = "QUJD" * 1024  # 4 KB, one word
    write("SOUL.md", "You are Aster, calm and precise.")  # 6 words
    write("MEMORY.md", f"- deploy key: {key}\n- prefers metric")  # 7 words
    plain = compose(home).text
    assert words(plain) == 17
    soul = compose(home, budget=Budget(total=17, count=words))
    assert (soul.text, soul.cut_files) == (plain, ())
    # Fair share: SOUL.md fits its equal share whatever MEMORY.md holds.
    write("MEMORY.md", " ".join(f"note{n}" for n in range(5000)) + f" {key}")
    soul = compose(home, budget=Budget(total=22, count=words))
    assert soul.cut_files == ("MEMORY.md",)
    assert soul.text.startswith("## SOUL.md\n\nYou are Aster, calm and precise.\n\n## MEMORY.md\n\n")
    assert words(soul.text) <= 22


def test_heading_and_marker_are_kept_when_they_fit(home: Path, write: Writer) -> None:
    write("SOUL.md", "hello world" * 10)
    for total in (51, 52):
        assert compose(home, budget=Budget(total=total)).text == f"## SOUL.md\n\n{marker('SOUL.md', 110)}"
    assert compose(home, budget=Budget(total=53)).text == f"## SOUL.md\n\nh\n{marker('SOUL.md', 109)}"
    assert compose(home, budget=Budget(total=50)).text == ""


def test_cuts_over_the_cap_keep_the_line_rules(home: Path, write: Writer) -> None:
    # 3,204 bytes seen at its start and 801 at its end (a fifth of the cap),
    # all of which a roomy total keeps: the start up to the last line end in
    # its last fifth (line 74's), the end from the first line start in its first.
    lines = [f"- note {n:03d}: the user prefers metric units" for n in range(1, 199)]
    write("MEMORY.md", "\r\n".join(lines).encode()[:8490])
    soul = compose(home, max_file_bytes=4005, budget=Budget(total=100_000))
    head = "\r\n".join(lines[:74])
    tail = "\r\n".join(lines[179:197]) + "\r\n- note 198: the use"
    assert soul.text == f"## MEMORY.md\n\n{head}\n{marker('MEMORY.md', 4517)}\n{tail}"
    assert soul.files[6] == FileReport(
        "MEMORY.md",
        FileStatus.PRESENT,
        bytes_read=4006,
        size_on_disk=8490,
        cut=True,
        kept=3973,
        left_out=None,
        kept_bytes=3973,
        left_out_bytes=4517,
    )


def test_the_size_is_what_was_read(home: Path, write: Writer) -> None:
    write("MEMORY.md", "m" * 1000)
    assert compose(home, budget=Budget(total=200)).files[6].bytes_read == 1000
    write("MEMORY.md", "m" * 796)
    assert compose(home, max_file_bytes=1000, budget=Budget(per_file=100)).files[6].bytes_read == 796
    write("MEMORY.md", "m" * 3_000_000)
    read = compose(home, budget=Budget(total=20_000)).files[6].bytes_read
    assert 20_000 < read < 4 * 20_000 + 100  # its start and end (4 bytes a character at most), not the file


def test_no_marker_says_nothing_was_left_out(home: Path, write: Writer) -> None:
    # 64 characters measure 65: over per_file, so cut to a share of 64, 47
    # for the start and 15 for the end (line breaks paid), each part its
    # share's worth at the body's rate (46 and 14), measured: 60 units.
    write("MEMORY.md", "a" * 64)
    soul = compose(home, budget=Budget(per_file=64, count=lambda s: len(s) + len(s) ** 2 // 4096))
    assert soul.text == f"## MEMORY.md\n\n{'a' * 46}\n{marker('MEMORY.md', 4)}\n{'a' * 14}"
    assert (soul.files[6].kept, soul.files[6].left_out, soul.files[6].left_out_bytes) == (60, 5, 4)


def test_word_and_line_counts_keep_the_line_rule(home: Path, write: Writer) -> None:
    rows = [f"line {n:02d} has four words" for n in range(1, 31)]
    write("SOUL.md", "\n".join(rows))
    soul = compose(home, budget=Budget(total=60, count=words))
    # The end's share is 9 words; at the body's rate a little less: its start
    # falls in line 29, whose \n is too far back to move to.
    head, tail = "\n".join(rows[:7]), "ine 29 has four words\nline 30 has four words"
    assert soul.text == f"## SOUL.md\n\n{head}\n{marker('SOUL.md', 485)}\n{tail}"
    soul = compose(home, budget=Budget(per_file=4, count=lines))
    assert soul.text == "## SOUL.md\n\n" + "\n".join(rows[:2]) + "\n" + marker("SOUL.md", 644)


class Tally(str):
    """A name that counts how often it is compared: to see a check's cost without a clock."""

    comparisons = 0

    def __eq__(self, other: object) -> bool:
        Tally.comparisons += 1
        return str.__eq__(self, other)

    __hash__ = str.__hash__


@pytest.mark.reader_independent
def test_files_are_checked_in_linear_time(home: Path) -> None:
    names = [Tally(f"note-{n}.md") for n in range(3000)]
    Tally.comparisons = 0
    assert compose(home, files=names).found == ()
    assert Tally.comparisons <= 3 * len(names)  # a list scanned per name: 4.5 million


@pytest.mark.reader_independent
@pytest.mark.parametrize("files", [{"SOUL.md"}, frozenset({"SOUL.md", "USER.md"}), {"SOUL.md": 1}.keys()])
def test_unordered_files_are_refused(home: Path, files: object) -> None:
    with pytest.raises(TypeError) as caught:
        compose(home, files=files)  # type: ignore[arg-type]
    assert str(caught.value) == f"files must be an ordered sequence of names, not {type(files).__name__}"


def test_compose_soul_takes_files(home: Path, write: Writer) -> None:
    write("TOOLS.md", "tools")
    write("NOTES.md", "notes")
    assert compose_soul(home, files=["NOTES.md", "TOOLS.md"]) == (
        "## NOTES.md\n\nnotes\n\n## TOOLS.md\n\ntools",
        ["NOTES.md", "TOOLS.md"],
    )
    assert asyncio.run(acompose_soul(home, files=["TOOLS.md"])) == ("## TOOLS.md\n\ntools", ["TOOLS.md"])


def test_a_file_over_the_cap_read_to_its_last_byte_is_exact(home: Path, write: Writer) -> None:
    # Eleven bytes at a cap of ten: the start and end read are the whole file.
    write("SOUL.md", " " * 10 + "x")
    soul = compose(home, max_file_bytes=10, budget=Budget(total=1000))
    assert soul.text == f"## SOUL.md\n\n{marker('SOUL.md', 1)}"
    assert soul.files[1] == FileReport(
        "SOUL.md",
        FileStatus.PRESENT,
        bytes_read=11,
        size_on_disk=11,
        cut=True,
        kept=0,
        left_out=1,
        kept_bytes=0,
        left_out_bytes=1,
    )
    write("SOUL.md", " " * 11)  # over the cap, and an empty body: nothing to mark
    assert compose(home, max_file_bytes=10, budget=Budget(total=1000)).text == "## SOUL.md\n\n"


def test_a_cut_file_that_has_all_it_can_use_cuts_no_other(home: Path, write: Writer) -> None:
    # Newlines as the unit: markers cost nothing. SOUL.md (equal, later) is
    # cut to what is left, one unit, which its line break takes; AGENTS.md,
    # kept whole, keeps more.
    write("AGENTS.md", "a\naa\na")
    write("SOUL.md", "a\naa\na")
    soul = compose(home, budget=Budget(total=9, count=newlines))
    assert soul.text == f"## AGENTS.md\n\na\naa\na\n\n## SOUL.md\n\n{marker('SOUL.md', 6)}"


def test_a_super_additive_count_lowers_the_total_no_further_than_it_must(home: Path, write: Writer) -> None:
    for name in ("AGENTS.md", "TOOLS.md", "MEMORY.md"):
        write(name, f"- a note for {name}, about metric units\n" * 800)
    soul = compose(home, budget=Budget(total=20_000, count=super_additive))
    # 7,300 characters is the most any soul can have under this count
    # (n + n²/4096 <= 20,000). Cut at the rate of whole bodies (9.4 units a
    # character), the soul measured a sixth of the total; raised, then
    # lowered, by interpolation, it ends past seven eighths of it.
    assert (soul.used, len(soul.text)) == (18_593, 6_916)
    assert [f.kept for f in soul.files if f.cut] == [2995, 3061, 2995]


# ---- what a third independent tester found: the docs now say what is done ------------


def test_bytes_never_read_count_as_left_out_even_if_blank(home: Path) -> None:
    (home / "MEMORY.md").write_bytes(b"\n" * 3_000_000)  # cap 2 MiB: e = 419,430; 902,848 never read
    soul = compose(home, budget=Budget(total=20_000))
    assert (soul.text, soul.cut_files) == (
        "## MEMORY.md\n\n[... 902,848 bytes of MEMORY.md left out ...]",
        ("MEMORY.md",),
    )
    (home / "MEMORY.md").write_bytes(b" " * 100)
    soul = compose(home, max_file_bytes=50, budget=Budget(total=1000))  # 40 + 10 read, 50 not
    assert soul.text == "## MEMORY.md\n\n[... 50 bytes of MEMORY.md left out ...]"


def test_a_file_one_byte_over_the_cap_is_read_whole(home: Path) -> None:
    (home / "MEMORY.md").write_bytes(b" " * 51)
    soul = compose(home, max_file_bytes=50, budget=Budget(total=1000))
    assert (soul.text, soul.cut_files, soul.files[-1].cut, soul.files[-1].bytes_read) == (
        "## MEMORY.md\n\n",
        (),
        False,
        51,
    )
    (home / "MEMORY.md").write_bytes(b"x" * 51)
    soul = compose(home, max_file_bytes=50, budget=Budget(total=1000))
    # A share of 51 - 1 (something is left out): an end of 12 - 1 and a start of 38 - 1.
    assert (
        soul.text == "## MEMORY.md\n\n" + "x" * 37 + "\n[... 3 bytes of MEMORY.md left out ...]\n" + "x" * 11
    )


def test_keep_head_sees_the_cap_less_a_kilobyte_of_a_file_over_it(home: Path) -> None:
    data = (b"line of text\n" * 2400)[:30_000]
    (home / "MEMORY.md").write_bytes(data)
    soul = compose(home, max_file_bytes=10_000, budget=Budget(total=10**8, keep="head"))
    report = soul.files[-1]
    # 8,976 bytes seen from the start; the start ends at the last line end in them.
    start = data[: data.rindex(b"\n", 0, 10_000 - 1024)]
    assert (report.kept_bytes, soul.text) == (
        len(start),
        "## MEMORY.md\n\n"
        + start.decode()
        + f"\n[... {30_000 - len(start):,} bytes of MEMORY.md left out ...]",
    )


def test_a_share_gives_the_end_a_quarter_rounded_down(home: Path) -> None:
    body = "abcdefghij" * 30
    (home / "SOUL.md").write_text(body)
    marker = "[... 255 bytes of SOUL.md left out ...]"
    soul = compose(home, budget=Budget(total=len("## SOUL.md\n\n") + len(marker) + 47))
    assert soul.text == f"## SOUL.md\n\n{body[:35]}\n{marker}\n{body[-10:]}"


@pytest.mark.parametrize("total", [10, 11])
def test_a_soul_that_fits_a_count_whose_pieces_add_up_to_more_is_unchanged(
    home: Path, write: Writer, total: int
) -> None:
    # Headings and bodies measured apart count 11 lines, the soul 10 (a joint
    # ends no line of its own): law 1 reads MEMORY.md whole, and keeps it.
    write("SOUL.md", "a\nb")
    write("MEMORY.md", "x\n" + "y" * 20_000 + "\nz")
    plain = compose(home)
    assert lines(plain.text) == 10
    soul = compose(home, budget=Budget(total=total, count=lines))
    assert soul.text == plain.text
    assert soul.text == "## SOUL.md\n\na\nb\n\n## MEMORY.md\n\nx\n" + "y" * 20_000 + "\nz"
    assert (soul.cut_files, soul.used) == ((), 10)


def reads_of(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The bytes each read of a budget's windows takes (after its first read, a plain compose)."""
    reader, sizes = _native.reader, list[int]()

    class Counting:
        def __getattr__(self, name: str) -> Any:
            return getattr(reader, name)

        def read_excerpts(self, *args: Any) -> tuple[Excerpt, ...]:
            excerpts = reader.read_excerpts(*args)
            sizes.extend(len(e.head or b"") + len(e.tail or b"") for e in excerpts)
            return excerpts

    monkeypatch.setattr(_native, "reader", Counting())
    return sizes


@pytest.mark.parametrize(
    ("size", "total", "text"),
    [
        (3_000_000, 285, "## MEMORY.md\n\n- a note\n[... 1,951,416 bytes of MEMORY.md left out ...]"),
        (17_000, 40, "## MEMORY.md\n\n- a note"),
    ],
)
def test_a_file_that_ends_in_white_space_is_read_in_growing_reads(
    home: Path, write: Writer, monkeypatch: pytest.MonkeyPatch, size: int, total: int, text: str
) -> None:
    # Its body's end is found only by reading back past the White_Space.
    write("MEMORY.md", "- a note\n" + " " * (size - 9))
    sizes = reads_of(monkeypatch)
    assert compose(home, budget=Budget(total=total)).text == text
    assert all(later >= 4 * earlier or later == size for earlier, later in itertools.pairwise(sizes))
    assert sum(sizes) < 2.5 * sizes[-1]
    assert sizes[-1] <= 2**21 + 1
