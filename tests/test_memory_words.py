"""What a model reads in the memory tool's answers: true, in its own words, and copyable back.

No path of the host's, no advice for a Python programmer, true sizes; an
add repeated adds nothing; the entry whose text is ``old_text`` wins; a
markdown item is its text; entries' text quoted as it is written, so that a
model can send it back. Each was found by a tester wiring the package into
a host.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from toolnexus.agents import memory_tool

pytestmark = pytest.mark.reader_independent


def test_no_path_of_the_host_reaches_the_model(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    tool = memory_tool(home)
    os.rename(home, tmp_path / "moved")
    result = tool.call({"action": "add", "content": "x"})
    assert result["message"] == (
        "the persona's directory is no longer the one this memory tool was made for (renamed, replaced or"
        " removed)."
    )
    assert str(tmp_path) not in json.dumps(result)


def test_no_advice_for_a_programmer_reaches_the_model(home: Path) -> None:
    result = memory_tool(home).call('{"action": "add", "content": ' + "9" * 5000 + "}")
    assert result["message"] == (
        "the arguments hold a number with too many digits to read. MEMORY.md holds 0 entries, 0 of 2,200"
        " characters."
    )


def test_a_memory_too_full_says_its_true_size(home: Path, memory: Path) -> None:
    result = memory_tool(home).call({"action": "add", "content": "x" * 10_000_000})
    assert result["error"] == "full"
    assert result["message"].startswith(
        "This change would take MEMORY.md to 10,000,163 of its 2,200 characters."
    )


def test_an_argument_name_that_is_not_text_is_named_so(home: Path) -> None:
    result = memory_tool(home).call({"action": "add", 1: "x"})  # type: ignore[dict-item]
    assert result["message"] == (
        "an argument's name must be text, not a number. MEMORY.md holds 0 entries, 0 of 2,200 characters."
    )


def test_an_add_repeated_keeps_one_copy(home: Path, memory: Path) -> None:
    tool = memory_tool(home)
    first = tool.call({"action": "add", "content": "Answer in French."})
    again = tool.call({"action": "add", "content": "  Answer in French.\n"})
    assert (first["added"], again["ok"], again["added"]) == (True, True, False)
    assert again["message"] == (
        "The entry was already there: nothing was added. MEMORY.md holds 4 entries, 180 of 2,200 characters."
    )
    assert memory.read_text().count("Answer in French.") == 1
    assert tool.add("Answer in French.").entry_count == 4


def test_an_entry_that_is_old_text_wins_over_those_that_hold_it(home: Path) -> None:
    (home / "MEMORY.md").write_text("- test\n- tests run nightly\n")
    tool = memory_tool(home)
    tool.remove("test")
    assert tool.entries() == ("tests run nightly",)


def test_a_markdown_item_is_the_entry(home: Path) -> None:
    tool = memory_tool(home)
    tool.add("- fact")
    tool.call({"action": "add", "content": "-  another fact"})
    assert (home / "MEMORY.md").read_text() == "- fact\n- another fact\n"


def test_the_user_file_is_the_users_profile(home: Path) -> None:
    description = memory_tool(home, file="USER.md").description()
    assert description.startswith("What you know about the user: their profile, kept in USER.md,")
    assert "long-term memory" not in description
    assert description.endswith(
        "The profile holds at most 1,375 characters: when it is full, replace or"
        " remove entries (merge or shorten them) before adding."
    )


@pytest.mark.parametrize("kind", [str, bytes, Path])
def test_a_missing_home_is_named_as_it_was_given(tmp_path: Path, kind: type) -> None:
    missing = kind(os.fsencode(tmp_path / "missing")) if kind is bytes else kind(tmp_path / "missing")
    with pytest.raises(FileNotFoundError) as raised:
        memory_tool(missing)
    assert raised.value.filename == os.fspath(missing)
    assert type(raised.value.filename) is (bytes if kind is bytes else str)


def test_entries_are_quoted_as_they_are_written(home: Path) -> None:
    # What a model reads it can send back: backslashes, tabs and quotes as written.
    (home / "MEMORY.md").write_text("- Repo lives in C:\\src\\aster\n- tab\there\n- says 'hi' and \"bye\"\n")
    tool = memory_tool(home)
    result = tool.call({"action": "remove", "old_text": "C:\\nope"})
    assert result["message"] == (
        "No entry holds 'C:\\nope'. The entries start: 'Repo lives in C:\\src\\aster'; 'tab\there';"
        " 'says 'hi' and \"bye\"'. Give a short piece of one entry's text, exactly as it is written."
        " MEMORY.md holds 3 entries, 61 of 2,200 characters."
    )
    copied = result["message"].split("'")[3]
    assert copied == "Repo lives in C:\\src\\aster"
    assert tool.call({"action": "remove", "old_text": copied})["ok"] is True


def test_what_cannot_stand_in_a_message_is_escaped(home: Path) -> None:
    result = memory_tool(home).call({"action": "remove", "old_text": "a\x1bb\nc\u2028d\udcff"})
    assert result["message"] == (
        "No entry holds 'a\\x1bb\\nc\\u2028d\\udcff'. There are no entries. Give a short piece of one"
        " entry's text, exactly as it is written. MEMORY.md holds 0 entries, 0 of 2,200 characters."
    )
    json.dumps(result).encode("utf-8")  # clean UTF-8, as a model's API wants


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (
            b'{"action": "add", "content": "caf\xe9"}',
            "the arguments are not JSON text: their bytes are not UTF-8.",
        ),
        ('\ufeff{"action": "add", "content": "x"}', "Added the entry."),
        (
            '{"action": "add", content: "x"}',
            "the arguments are not JSON: Expecting property name enclosed in double quotes at character 18.",
        ),
    ],
)
def test_json_text_is_answered_truly(home: Path, arguments: str | bytes, message: str) -> None:
    result = memory_tool(home).call(arguments)
    assert result["message"].startswith(message + " MEMORY.md holds ")
    assert "utf-8-sig" not in result["message"]


def test_an_empty_markdown_item_is_empty(home: Path) -> None:
    tool = memory_tool(home)
    result = tool.call({"action": "add", "content": "- "})
    assert (result["error"], result["message"]) == (
        "invalid",
        "content is empty: an entry needs some text. MEMORY.md holds 0 entries, 0 of 2,200 characters.",
    )
    tool.add("-")  # no item: a dash is text
    assert (home / "MEMORY.md").read_text() == "- -\n"


def test_old_text_quoted_as_the_prompt_shows_the_line(home: Path) -> None:
    (home / "MEMORY.md").write_text("- apple pie\n- pears\n")
    tool = memory_tool(home)
    assert tool.call({"action": "remove", "old_text": "- apple pie"})["ok"] is True
    assert tool.entries() == ("pears",)
    result = tool.call({"action": "remove", "old_text": "- figs"})
    assert result["message"].startswith("No entry holds '- figs'. The entries start: 'pears'.")


def test_a_limit_of_one_character_is_said_so(home: Path) -> None:
    assert (
        memory_tool(home, limit=1)
        .description()
        .endswith(
            "The memory holds at most 1 character: when it is full, replace or remove entries (merge or"
            " shorten them) before adding."
        )
    )
