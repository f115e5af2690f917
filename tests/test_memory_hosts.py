"""The memory tool as hosts' SDKs meet it: each API's shape, typed as its SDK types it, and calls.

The definitions are checked against the SDKs' own types (pydantic's
``TypeAdapter`` validates a ``TypedDict``), and a host's program that
passes them to those types is checked by ``mypy --strict`` (slow: mypy
reads the SDKs). Then what a model reads in a call's answer: no path of
the host's, no advice for a Python programmer, true sizes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from model_texts import DESCRIPTION
from toolnexus.agents import memory_tool

pytestmark = pytest.mark.reader_independent

ASTER = (Path(__file__).resolve().parents[1] / "examples" / "aster" / "MEMORY.md").read_bytes()

pydantic = pytest.importorskip("pydantic")
anthropic_types = pytest.importorskip("anthropic.types")
openai_chat = pytest.importorskip("openai.types.chat")
openai_responses = pytest.importorskip("openai.types.responses")

STRICT_SCHEMA = {
    "type": "object",
    "properties": {
        "action": {
            "type": "string",
            "enum": ["add", "replace", "remove"],
            "description": "add a new entry, replace an entry, or remove one",
        },
        "content": {
            "type": ["string", "null"],
            "description": "add: the new entry; replace: the entry's new text. One paragraph, short."
            " null for remove.",
        },
        "old_text": {
            "type": ["string", "null"],
            "description": "replace, remove: a short piece of text found in exactly one entry; null for add.",
        },
    },
    "required": ["action", "content", "old_text"],
    "additionalProperties": False,
}


@pytest.fixture
def memory(home: Path) -> Path:
    """The example persona's MEMORY.md, in a home of its own."""
    path = home / "MEMORY.md"
    path.write_bytes(ASTER)
    return path


def test_the_responses_api_shape_is_flat(home: Path) -> None:
    tool = memory_tool(home)
    definition = tool.definition("openai-responses")
    assert definition == {
        "type": "function",
        "name": "memory",
        "description": DESCRIPTION,
        "parameters": tool.parameters(),
        "strict": False,
    }


def test_strict_mode_requires_every_property_and_allows_null(home: Path) -> None:
    tool = memory_tool(home)
    assert tool.parameters(strict=True) == STRICT_SCHEMA
    assert tool.definition("openai", strict=True) == {
        "type": "function",
        "function": {
            "name": "memory",
            "description": DESCRIPTION,
            "parameters": STRICT_SCHEMA,
            "strict": True,
        },
    }
    assert tool.definition("openai-responses", strict=True) == {
        "type": "function",
        "name": "memory",
        "description": DESCRIPTION,
        "parameters": STRICT_SCHEMA,
        "strict": True,
    }
    assert tool.definition("anthropic", strict=True) == {
        "name": "memory",
        "description": DESCRIPTION,
        "input_schema": STRICT_SCHEMA,
        "strict": True,
    }


@pytest.mark.parametrize("strict", [False, True])
def test_every_style_validates_against_its_sdks_type(home: Path, strict: bool) -> None:
    tool = memory_tool(home)
    adapters: dict[str, Any] = {
        "openai": pydantic.TypeAdapter(openai_chat.ChatCompletionFunctionToolParam),
        "openai-responses": pydantic.TypeAdapter(openai_responses.FunctionToolParam),
        "anthropic": pydantic.TypeAdapter(anthropic_types.ToolParam),
    }
    for style, adapter in adapters.items():
        definition = tool.definition(style, strict=strict)  # type: ignore[call-overload]
        assert adapter.validate_python(definition) == definition
        json.dumps(definition)


@pytest.mark.parametrize(
    ("arguments", "entries"),
    [
        ({"action": "add", "content": "Likes tea.", "old_text": None}, 4),
        ({"action": "remove", "content": None, "old_text": "Dislikes"}, 2),
        ({"action": "replace", "content": "Likes tea.", "old_text": "Dislikes"}, 3),
    ],
)
def test_a_strict_call_sends_null_for_what_it_does_not_use(
    home: Path, memory: Path, arguments: dict[str, object], entries: int
) -> None:
    result = memory_tool(home).call(arguments)
    assert (result["ok"], result.get("entry_count")) == (True, entries)


def test_null_for_what_an_action_uses_is_refused(home: Path, memory: Path) -> None:
    result = memory_tool(home).call({"action": "add", "content": None, "old_text": None})
    assert (result["ok"], result["message"]) == (
        False,
        "content must be text, not null. MEMORY.md holds 3 entries, 160 of 2,200 characters.",
    )


@pytest.mark.slow
def test_a_hosts_strict_program_type_checks(tmp_path: Path) -> None:
    program = tmp_path / "host.py"
    program.write_text(
        textwrap.dedent(
            """\
            from anthropic.types import ToolParam
            from openai.types.chat import ChatCompletionFunctionToolParam
            from openai.types.responses import FunctionToolParam

            from toolnexus.agents import MemoryCallResult, memory_tool

            memory = memory_tool("/srv/personas/aster")
            anthropic_tools: list[ToolParam] = [memory.definition("anthropic")]
            chat_tools: list[ChatCompletionFunctionToolParam] = [memory.definition("openai", strict=True)]
            response_tools: list[FunctionToolParam] = [memory.definition("openai-responses")]
            result: MemoryCallResult = memory.call({"action": "add", "content": "x"})
            ok: bool = result["ok"]
            message: str = result["message"]
            count: int | None = result.get("entry_count")
            """
        )
    )
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--no-incremental",
            "--python-version",
            "3.10",
            str(program),
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=False,
    )
    assert (done.returncode, done.stdout.splitlines()[-1]) == (0, "Success: no issues found in 1 source file")


# ---- what a model reads ----------------------------------------------------------------


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
