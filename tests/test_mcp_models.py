"""The memory tool's schema as other agent frameworks take it from the server: strict converters, test models.

The schema the server lists is handed, as each framework takes an MCP
tool, to openai-agents' strict conversion (``MCPUtil.to_function_tool``
with ``convert_schemas_to_strict``) and to a pydantic-ai ``TestModel``,
and their calls go back to the server, in this process, through the
official client. A strict model must be able to make every call with no
stand-in value, and a test model's run must complete with the memory
changed; both failed on 0.3.0's schema (only ``action`` required, the
texts plain strings), and each test shows that schema failing too.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

# Slow: importing the two frameworks takes seconds, more than the tests themselves.
pytestmark = [pytest.mark.reader_independent, pytest.mark.slow]
pytest.importorskip("mcp")
jsonschema: Any = pytest.importorskip("jsonschema")

from mcp_peer import Peer, talk  # noqa: E402
from toolnexus.agents import memory_tool  # noqa: E402

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "aster"
# Every call a strict model makes: every property, null for the text its action does not use.
CALLS: list[dict[str, object]] = [
    {"action": "add", "content": "Likes tea.", "old_text": None},
    {"action": "replace", "content": "Likes green tea.", "old_text": "Likes tea"},
    {"action": "remove", "content": None, "old_text": "Dislikes bullet lists"},
]
# 0.3.0's schema: only the action required, the texts plain strings.
OLD_TEXT: dict[str, object] = {"type": "string"}


def old_schema(schema: dict[str, Any]) -> dict[str, Any]:
    properties = {
        name: ({**OLD_TEXT, "description": each["description"]} if name != "action" else each)
        for name, each in schema["properties"].items()
    }
    return {**schema, "properties": properties, "required": ["action"]}


@pytest.fixture
def aster(tmp_path: Path) -> Path:
    return Path(shutil.copytree(EXAMPLE, tmp_path / "aster"))


def test_a_strict_model_makes_every_call_through_openai_agents_strict_conversion(aster: Path) -> None:
    agents: Any = pytest.importorskip("agents")
    agents_mcp: Any = pytest.importorskip("agents.mcp")
    tool_context: Any = pytest.importorskip("agents.tool_context")
    strict_schema: Any = pytest.importorskip("agents.strict_schema")
    agents.set_tracing_disabled(True)  # nothing to export, and no network to export it to
    seen: dict[str, Any] = {}

    class Bridge(agents_mcp.MCPServer):  # type: ignore[misc]
        """openai-agents' view of the server: its calls go to the official client's session."""

        def __init__(self, peer: Peer) -> None:
            super().__init__()
            self.peer = peer

        @property
        def name(self) -> str:
            return "toolnexus-soul"

        async def connect(self) -> None:
            pass

        async def cleanup(self) -> None:
            pass

        async def list_tools(self, run_context: Any = None, agent: Any = None) -> list[Any]:
            return list((await self.peer.session.list_tools()).tools)

        async def call_tool(self, tool_name: str, arguments: Any, meta: Any = None) -> Any:
            return await self.peer.session.call_tool(tool_name, arguments)

        async def list_prompts(self) -> Any:
            raise NotImplementedError

        async def get_prompt(self, name: str, arguments: Any = None) -> Any:
            raise NotImplementedError

    async def session(peer: Peer) -> None:
        bridge = Bridge(peer)
        (listed,) = await bridge.list_tools()
        tool = agents_mcp.MCPUtil.to_function_tool(listed, bridge, convert_schemas_to_strict=True)
        seen["strict"], seen["schema"] = tool.strict_json_schema, tool.params_json_schema
        seen["outputs"] = []
        for arguments in CALLS:
            text = json.dumps(arguments)
            context = tool_context.ToolContext(
                context=None, tool_name="memory", tool_call_id="call", tool_arguments=text
            )
            seen["outputs"].append(await tool.on_invoke_tool(context, text))

    talk(aster, session)
    with memory_tool(aster) as memory:
        assert seen["strict"] is True
        assert seen["schema"] == memory.parameters()  # strict already: the conversion changes nothing
        for arguments in CALLS:
            jsonschema.validate(arguments, seen["schema"])
        assert [output["text"] for output in seen["outputs"]] == [
            "Added the entry. MEMORY.md holds 4 entries, 173 of 2,200 characters. The change shows in your"
            " prompt from the next session.",
            "Replaced the entry. MEMORY.md holds 4 entries, 179 of 2,200 characters. The change shows in your"
            " prompt from the next session.",
            "Removed the entry. MEMORY.md holds 3 entries, 131 of 2,200 characters. The change shows in your"
            " prompt from the next session.",
        ]
        assert memory.entries()[-1] == "Likes green tea."
    # 0.3.0's schema, converted: a strict model had to send "" for the text it does not use.
    old = strict_schema.ensure_strict_json_schema(old_schema(seen["schema"]))
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(CALLS[0], old)
    jsonschema.validate({**CALLS[0], "old_text": ""}, old)


def test_a_pydantic_ai_test_model_run_completes_with_the_memory_changed(aster: Path) -> None:
    pydantic_ai: Any = pytest.importorskip("pydantic_ai")
    test_models: Any = pytest.importorskip("pydantic_ai.models.test")
    seen: dict[str, Any] = {}

    def agent_of(peer: Peer, listed: dict[str, Any], schema: dict[str, Any]) -> Any:
        async def memory(**arguments: object) -> object:
            result = await peer.request("tools/call", {"name": "memory", "arguments": arguments})
            if result["isError"]:
                raise pydantic_ai.ModelRetry(result["content"][0]["text"])
            return result["structuredContent"]

        tool = pydantic_ai.Tool.from_schema(memory, "memory", listed["description"], schema)
        return pydantic_ai.Agent(test_models.TestModel(), tools=[tool])

    async def session(peer: Peer) -> None:
        (listed,) = (await peer.request("tools/list"))["tools"]
        run = await agent_of(peer, listed, listed["inputSchema"]).run("Remember what matters.")
        seen["output"] = run.output
        seen["calls"] = [
            part.args
            for message in run.all_messages()
            for part in message.parts
            if part.part_kind == "tool-call"
        ]
        with pytest.raises(pydantic_ai.UnexpectedModelBehavior):  # 0.3.0's schema: {"action": "add"} forever
            await agent_of(peer, listed, old_schema(listed["inputSchema"])).run("Remember what matters.")

    talk(aster, session)
    assert seen["calls"] == [{"action": "add", "content": "a", "old_text": "a"}]
    assert json.loads(seen["output"]) == {
        "memory": {
            "ok": True,
            "action": "add",
            "message": "Added the entry. MEMORY.md holds 4 entries, 164 of 2,200 characters. The change"
            " shows in your prompt from the next session.",
            "added": True,
            "entry_count": 4,
            "used": 164,
            "limit": 2200,
        }
    }
    with memory_tool(aster) as memory:
        assert memory.entries()[-1] == "a"
