"""The memory tool as hosts' SDKs meet it: each API's shape, typed as its SDK types it, and calls.

The definitions are checked against the SDKs' own types (pydantic's
``TypeAdapter`` validates a ``TypedDict``), and a host's program that
passes them to those types is checked by ``mypy --strict`` (slow: mypy
reads the SDKs). Then what a model reads in a call's answer: no path of
the host's, no advice for a Python programmer, true sizes.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from model_texts import DESCRIPTION, SCHEMA
from toolnexus.agents import memory_tool

pytestmark = pytest.mark.reader_independent


pydantic = pytest.importorskip("pydantic")
anthropic_types = pytest.importorskip("anthropic.types")
openai_chat = pytest.importorskip("openai.types.chat")
openai_responses = pytest.importorskip("openai.types.responses")


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
    assert tool.parameters(strict=True) == tool.parameters() == SCHEMA
    assert tool.definition("openai", strict=True) == {
        "type": "function",
        "function": {
            "name": "memory",
            "description": DESCRIPTION,
            "parameters": SCHEMA,
            "strict": True,
        },
    }
    assert tool.definition("openai-responses", strict=True) == {
        "type": "function",
        "name": "memory",
        "description": DESCRIPTION,
        "parameters": SCHEMA,
        "strict": True,
    }
    assert tool.definition("anthropic", strict=True) == {
        "name": "memory",
        "description": DESCRIPTION,
        "input_schema": SCHEMA,
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
