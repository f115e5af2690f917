"""``toolnexus-soul mcp DIR``'s server, driven by the official MCP client in this process, on each reader.

The server the command runs (the SDK's low-level ``Server``, whichever SDK
generation is installed) is connected to the official client through the
SDK's own in-memory transport: every request a host makes, its exact
answer as JSON, and the errors a host can act on (every bad argument
-32602, a home that is gone one -32603 for everything that reads it).
What only a process shows (stdio, signals, exit statuses) is in
``test_mcp_stdio.py``; live resources in ``test_mcp_live.py``.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp")

from conftest import is_root
from mcp_peer import Peer, served, talk
from toolnexus.agents import BOOTSTRAP_ORDER, Budget, compose, memory_tool

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "aster"
GONE = (-32603, "the persona's home cannot be served: no such directory")
MARKDOWN = "text/markdown"


@pytest.fixture
def aster(tmp_path: Path) -> Path:
    return Path(shutil.copytree(EXAMPLE, tmp_path / "aster"))


def text(body: str, *, error: bool = False, structured: dict[str, Any] | None = None) -> dict[str, Any]:
    """A tool call's result as JSON."""
    result: dict[str, Any] = {"content": [{"type": "text", "text": body}], "isError": error}
    if structured is not None:
        result["structuredContent"] = structured
    return result


def test_a_session(aster: Path) -> None:
    seen: dict[str, Any] = {}

    async def session(peer: Peer) -> None:
        seen["tools"] = await peer.request("tools/list")
        add = {"action": "add", "content": "Likes tea.", "old_text": None}
        seen["added"] = await peer.request("tools/call", {"name": "memory", "arguments": add})
        seen["again"] = await peer.request("tools/call", {"name": "memory", "arguments": add})
        remove = {"action": "remove", "old_text": "no such note"}
        seen["refused"] = await peer.request("tools/call", {"name": "memory", "arguments": remove})
        seen["bad"] = await peer.request("tools/call", {"name": "memory", "arguments": {"action": "fly"}})
        seen["elsewhere"] = await peer.request("tools/call", {"name": "no_tool", "arguments": {}})
        profile = {"action": "add", "content": "Reads on a phone."}
        seen["profile"] = await peer.request("tools/call", {"name": "user_memory", "arguments": profile})
        seen["prompts"] = await peer.request("prompts/list")
        seen["prompt"] = await peer.request("prompts/get", {"name": "soul"})
        seen["small"] = await peer.request("prompts/get", {"name": "soul", "arguments": {"budget": "300"}})
        seen["resources"] = await peer.request("resources/list")
        seen["soul"] = await peer.request("resources/read", {"uri": "soul://soul"})
        seen["memory"] = await peer.request("resources/read", {"uri": "soul://file/MEMORY.md"})
        removal: dict[str, object] = {"action": "remove", "old_text": "Likes tea", "content": None}
        await peer.request("tools/call", {"name": "memory", "arguments": removal})
        seen["after"] = await peer.request("resources/read", {"uri": "soul://soul"})

    talk(aster, session, "MEMORY.md", "USER.md")
    with memory_tool(aster) as memory, memory_tool(aster, file="USER.md") as profile:
        assert seen["tools"] == {
            "tools": [
                {"name": "memory", "description": memory.description(), "inputSchema": memory.parameters()},
                {
                    "name": "user_memory",
                    "description": profile.description(),
                    "inputSchema": profile.parameters(),
                },
            ]
        }
    added = "Added the entry. MEMORY.md holds 4 entries, 173 of 2,200 characters."
    added += " The change shows in your prompt from the next session."
    usage = {"entry_count": 4, "used": 173, "limit": 2200}
    assert seen["added"] == text(
        added, structured={"ok": True, "action": "add", "message": added, "added": True, **usage}
    )
    again = (
        "The entry was already there: nothing was added. MEMORY.md holds 4 entries, 173 of 2,200 characters."
    )
    assert seen["again"] == text(
        again, structured={"ok": True, "action": "add", "message": again, "added": False, **usage}
    )
    refused = seen["refused"]["structuredContent"]
    assert (seen["refused"]["isError"], refused["error"]) == (True, "no_match")
    assert refused["message"].startswith("No entry holds 'no such note'. The entries start:")
    fly = "action must be 'add', 'replace' or 'remove', not 'fly'."
    fly += " MEMORY.md holds 4 entries, 173 of 2,200 characters."
    assert seen["bad"] == text(
        fly, error=True, structured={"ok": False, "action": None, "message": fly, "error": "invalid", **usage}
    )
    assert seen["elsewhere"] == text(
        "there is no tool 'no_tool' here: the tools are memory, user_memory", error=True
    )
    assert seen["profile"]["isError"] is False
    budget = {
        "name": "budget",
        "description": "fit the soul to this many characters (a whole number)",
        "required": False,
    }
    assert seen["prompts"] == {
        "prompts": [
            {
                "name": "soul",
                "description": "The persona's system prompt (its soul), composed from its home now",
                "arguments": [budget],
            }
        ]
    }
    soul_then = seen["soul"]["contents"][0]["text"]
    assert seen["prompt"] == {
        "description": "The persona's system prompt: give it to the model as its system prompt",
        "messages": [{"role": "user", "content": {"type": "text", "text": soul_then}}],
    }
    small = seen["small"]["messages"][0]["content"]["text"]
    assert small == compose(aster, budget=Budget(total=300)).text != ""
    assert seen["resources"] == {
        "resources": [
            {
                "name": "soul",
                "uri": "soul://soul",
                "description": "the persona's soul, composed now",
                "mimeType": MARKDOWN,
            },
            *(
                {
                    "name": name,
                    "uri": f"soul://file/{name}",
                    "description": f"{name}, as the soul holds it",
                    "mimeType": MARKDOWN,
                }
                for name in compose(aster).found
            ),
        ]
    }
    assert soul_then.endswith("- Likes tea.")
    memory_then = soul_then.split("## MEMORY.md\n\n", 1)[1]
    assert seen["memory"] == {
        "contents": [{"uri": "soul://file/MEMORY.md", "mimeType": MARKDOWN, "text": memory_then}]
    }
    assert (
        seen["after"]["contents"][0]["text"]
        == compose(aster).text
        == soul_then.removesuffix("\n- Likes tea.")
    )


# Each bad argument, and its error: (method, params, message); every one is -32602.
BAD: list[tuple[str, dict[str, object], str]] = [
    ("prompts/get", {"name": "soul", "arguments": {"budget": "0"}}, "'0'"),
    ("prompts/get", {"name": "soul", "arguments": {"budget": "+100"}}, "'+100'"),
    ("prompts/get", {"name": "soul", "arguments": {"budget": "1e3"}}, "'1e3'"),
    ("prompts/get", {"name": "soul", "arguments": {"budget": " 7"}}, "' 7'"),
    ("prompts/get", {"name": "soul", "arguments": {"budget": "٣"}}, "'٣'"),
    ("prompts/get", {"name": "soul", "arguments": {"budget": "1" * 19}}, f"'{'1' * 19}'"),
    ("prompts/get", {"name": "soul", "arguments": {"budget": "9" * 4301}}, f"'{'9' * 39}…'"),
    ("prompts/get", {"name": "soul", "arguments": {"budget": "x" * 100_000}}, f"'{'x' * 39}…'"),
]
WHY = "budget must be a whole number of characters from 1 to 999,999,999,999,999,999, not "
TEMPLATE = "soul://file/{name}"


def test_every_bad_argument_is_invalid_params(aster: Path) -> None:
    seen: dict[str, Any] = {}
    other: list[tuple[str, dict[str, object], str]] = [
        ("prompts/get", {"name": "nope"}, "there is no prompt 'nope' here: the prompt is 'soul'"),
        ("prompts/get", {"name": "n" * 50}, f"there is no prompt '{'n' * 39}…' here: the prompt is 'soul'"),
        (
            "resources/read",
            {"uri": "soul://file/HEARTBEAT.md"},
            "there is no resource 'soul://file/HEARTBEAT.md' here",
        ),
        (
            "resources/read",
            {"uri": "soul://file/notes.md"},
            "there is no resource 'soul://file/notes.md' here",
        ),
        ("resources/read", {"uri": "soul://soul/"}, "there is no resource 'soul://soul/' here"),
        ("resources/subscribe", {"uri": "soul://file/x.md"}, "there is no resource 'soul://file/x.md' here"),
        (
            "resources/unsubscribe",
            {"uri": "file:///etc/passwd"},
            "there is no resource 'file:///etc/passwd' here",
        ),
        (
            "completion/complete",
            {"ref": {"type": "ref/prompt", "name": "other"}, "argument": {"name": "budget", "value": ""}},
            "there is no prompt 'other' here: the prompt is 'soul'",
        ),
        (
            "completion/complete",
            {"ref": {"type": "ref/prompt", "name": "soul"}, "argument": {"name": "size", "value": ""}},
            "the prompt 'soul' has no argument 'size': its argument is 'budget'",
        ),
        (
            "completion/complete",
            {"ref": {"type": "ref/resource", "uri": "soul://{x}"}, "argument": {"name": "name", "value": ""}},
            f"there is no resource template 'soul://{{x}}' here: the template is {TEMPLATE!r}",
        ),
        (
            "completion/complete",
            {"ref": {"type": "ref/resource", "uri": TEMPLATE}, "argument": {"name": "file", "value": ""}},
            f"the template {TEMPLATE!r} has no argument 'file': its argument is 'name'",
        ),
    ]

    async def session(peer: Peer) -> None:
        for method, params, _ in [*BAD, *other]:
            seen[repr(params)] = await peer.refusal(method, params)
        seen["tool"] = await peer.request("tools/call", {"name": "t" * 100_000, "arguments": {}})

    talk(aster, session)
    for _, params, quoted in BAD:
        assert seen[repr(params)] == (-32602, WHY + quoted)
    for _, params, message in other:
        assert seen[repr(params)] == (-32602, message)
    assert seen["tool"] == text(f"there is no tool '{'t' * 39}…' here: the tools are memory", error=True)
    assert os.listdir(aster) == os.listdir(EXAMPLE)


@pytest.mark.parametrize("budget", ["1", "999999999999999999", ""])
def test_the_budgets_digits_are_read_up_to_18(aster: Path, budget: str) -> None:
    seen: dict[str, Any] = {}

    async def session(peer: Peer) -> None:
        seen["prompt"] = await peer.request("prompts/get", {"name": "soul", "arguments": {"budget": budget}})

    talk(aster, session)
    expected = compose(aster, budget=Budget(total=int(budget)) if budget else None).text
    assert seen["prompt"]["messages"][0]["content"]["text"] == expected


def test_a_memory_file_served_is_in_the_soul_served(aster: Path) -> None:
    # The tool tells the model its notes are in its prompt: over MCP, they are.
    seen: dict[str, Any] = {}

    async def session(peer: Peer) -> None:
        add = {"action": "add", "content": "Ships on Fridays.", "old_text": None}
        seen["added"] = await peer.request("tools/call", {"name": "notes_memory", "arguments": add})
        seen["prompt"] = await peer.request("prompts/get", {"name": "soul"})
        seen["resources"] = await peer.request("resources/list")
        seen["notes"] = await peer.request("resources/read", {"uri": "soul://file/notes.md"})

    talk(aster, session, "notes.md")
    assert seen["added"]["isError"] is False
    soul = compose(aster).text + "\n\n## notes.md\n\n- Ships on Fridays."
    assert seen["prompt"]["messages"][0]["content"]["text"] == soul
    assert seen["resources"]["resources"][-1]["uri"] == "soul://file/notes.md"
    assert seen["notes"]["contents"][0]["text"] == "- Ships on Fridays."


def test_a_file_whose_name_is_not_a_plain_uri_is_served_percent_encoded(aster: Path) -> None:
    seen: dict[str, Any] = {}
    name = "notes of Ärzte #1.md"
    uri = "soul://file/notes%20of%20%C3%84rzte%20%231.md"

    async def session(peer: Peer) -> None:
        add = {"action": "add", "content": "Ships on Fridays.", "old_text": None}
        await peer.request("tools/call", {"name": "notes_of_rzte_1_memory", "arguments": add})
        seen["resources"] = await peer.request("resources/list")
        seen["encoded"] = await peer.request("resources/read", {"uri": uri})
        seen["as named"] = await peer.request("resources/read", {"uri": "soul://file/" + name})

    talk(aster, session, name)
    assert seen["resources"]["resources"][-1] == {
        "name": name,
        "uri": uri,
        "description": f"{name}, as the soul holds it",
        "mimeType": MARKDOWN,
    }
    contents = [{"uri": uri, "mimeType": MARKDOWN, "text": "- Ships on Fridays."}]
    assert seen["encoded"] == seen["as named"] == {"contents": contents}


def test_limit_is_every_served_memory_files_limit(aster: Path) -> None:
    seen: dict[str, Any] = {}

    async def session(peer: Peer) -> None:
        for tool in ("memory", "user_memory"):
            add = {"action": "add", "content": "Likes tea.", "old_text": None}
            seen[tool] = await peer.request("tools/call", {"name": tool, "arguments": add})
        seen["tools"] = await peer.request("tools/list")

    talk(aster, session, "MEMORY.md", "USER.md", limit=180)
    assert [seen[tool]["structuredContent"]["limit"] for tool in ("memory", "user_memory")] == [180, 180]
    assert seen["user_memory"]["isError"] is True  # USER.md is past 180 characters already
    assert seen["user_memory"]["structuredContent"]["error"] == "full"
    with memory_tool(aster, limit=180) as memory:
        assert seen["tools"]["tools"][0]["description"] == memory.description()


def test_a_budget_fits_the_soul_resource_and_the_prompt_not_the_files(aster: Path) -> None:
    seen: dict[str, Any] = {}

    async def session(peer: Peer) -> None:
        seen["prompt"] = await peer.request("prompts/get", {"name": "soul"})
        seen["soul"] = await peer.request("resources/read", {"uri": "soul://soul"})
        seen["resources"] = await peer.request("resources/list")
        seen["soul file"] = await peer.request("resources/read", {"uri": "soul://file/SOUL.md"})

    talk(aster, session, budget=120)
    fitted = compose(aster, budget=Budget(total=120))
    assert fitted.cut_files  # the budget leaves files out of the soul
    assert (
        seen["prompt"]["messages"][0]["content"]["text"] == seen["soul"]["contents"][0]["text"] == fitted.text
    )
    # Every file present is a resource, whole, whatever the budget left of it in the soul.
    listed = [each["name"] for each in seen["resources"]["resources"][1:]]
    assert listed == list(compose(aster).found)
    assert seen["soul file"]["contents"][0]["text"] == (EXAMPLE / "SOUL.md").read_text().strip()


def test_templates_and_the_completion_of_names(aster: Path) -> None:
    seen: dict[str, Any] = {}

    def complete(value: str) -> dict[str, object]:
        return {
            "ref": {"type": "ref/resource", "uri": TEMPLATE},
            "argument": {"name": "name", "value": value},
        }

    async def session(peer: Peer) -> None:
        seen["templates"] = await peer.request("resources/templates/list")
        for value in ("", "m", "MEM", "s", "ag", "x"):
            seen[value] = (await peer.request("completion/complete", complete(value)))["completion"]
        budget = {"ref": {"type": "ref/prompt", "name": "soul"}, "argument": {"name": "budget", "value": "1"}}
        seen["budget"] = (await peer.request("completion/complete", budget))["completion"]

    talk(aster, session, "MEMORY.md", "notes.md")
    assert seen["templates"] == {
        "resourceTemplates": [
            {
                "name": "file",
                "uriTemplate": TEMPLATE,
                "description": "a file of the soul served, as the soul holds it: its name completes",
                "mimeType": MARKDOWN,
            }
        ]
    }
    present = list(compose(aster).found)  # notes.md is not there: no resource, no completion
    assert seen[""] == {"values": present, "total": len(present), "hasMore": False}
    assert seen["m"] == seen["MEM"] == {"values": ["MEMORY.md"], "total": 1, "hasMore": False}
    assert seen["s"] == {"values": ["SOUL.md"], "total": 1, "hasMore": False}
    assert seen["ag"] == {"values": ["AGENTS.md"], "total": 1, "hasMore": False}
    assert seen["x"] == seen["budget"] == {"values": [], "total": 0, "hasMore": False}


def test_a_home_gone_is_one_error_and_a_home_made_again_is_served(aster: Path, tmp_path: Path) -> None:
    seen: dict[str, Any] = {}
    add: dict[str, object] = {
        "name": "memory",
        "arguments": {"action": "add", "content": "Likes tea.", "old_text": None},
    }
    complete: dict[str, object] = {
        "ref": {"type": "ref/resource", "uri": TEMPLATE},
        "argument": {"name": "name", "value": ""},
    }
    reads: list[tuple[str, dict[str, object]]] = [
        ("prompts/get", {"name": "soul"}),
        ("resources/list", {}),
        ("resources/read", {"uri": "soul://soul"}),
        ("resources/read", {"uri": "soul://file/SOUL.md"}),
        ("tools/call", add),
        ("completion/complete", complete),
    ]

    async def session(peer: Peer) -> None:
        shutil.rmtree(aster)
        seen["gone"] = [await peer.refusal(method, params) for method, params in reads]
        # Lists that do not read the home answer still: a host can tell what it serves.
        seen["tools"] = await peer.request("tools/list")
        aster.write_text("a file now")
        seen["a file"] = [await peer.refusal(method, params) for method, params in reads]
        aster.unlink()
        shutil.copytree(EXAMPLE, aster)  # made again: another directory at the path
        seen["added"] = await peer.request("tools/call", add)
        seen["again"] = {method: await peer.request(method, params) for method, params in reads[:4]}

    talk(aster, session)
    assert seen["gone"] == [GONE] * len(reads)
    assert seen["a file"] == [(-32603, "the persona's home cannot be served: not a directory")] * len(reads)
    assert [tool["name"] for tool in seen["tools"]["tools"]] == ["memory"]
    assert seen["added"]["isError"] is False
    assert compose(aster).text.endswith("- Likes tea.")  # the new directory's MEMORY.md
    assert seen["again"]["resources/read"]["contents"][0]["text"] == (EXAMPLE / "SOUL.md").read_text().strip()
    assert seen["again"]["prompts/get"]["messages"][0]["content"]["text"] == compose(aster).text


def test_a_home_that_cannot_be_searched_is_refused_alike(aster: Path) -> None:
    if is_root():
        pytest.skip("root searches any directory")
    seen: dict[str, Any] = {}

    async def session(peer: Peer) -> None:
        aster.chmod(0)
        try:
            seen["prompt"] = await peer.refusal("prompts/get", {"name": "soul"})
            add = {"action": "add", "content": "x", "old_text": None}
            seen["tool"] = await peer.refusal("tools/call", {"name": "memory", "arguments": add})
        finally:
            aster.chmod(0o755)

    talk(aster, session)
    refused = (-32603, "the persona's home cannot be served: permission denied: it cannot be searched")
    assert seen["prompt"] == seen["tool"] == refused


def test_the_soul_served_is_the_bootstrap_files_then_the_memory_files(aster: Path) -> None:
    made, home = served(aster, ("USER.md", "notes.md", "MEMORY.md"))
    try:
        assert home.files == (*BOOTSTRAP_ORDER, "notes.md")
        assert [tool.file for tool in home.tools.values()] == ["USER.md", "notes.md", "MEMORY.md"]
    finally:
        home.close()
    assert made.name == "toolnexus-soul"
