"""``toolnexus-soul mcp DIR``, driven by the official MCP client over stdio: a real client and server.

One session per reader (the server process is told which with
``TOOLNEXUS_SOUL_NO_EXTENSIONS``) covers listing, calling (good, bad, and
a tool that is not there), the prompt, the resources, and a change made
through a tool showing in the next read. Without the SDK, the command says
what to install.
"""

from __future__ import annotations

import io
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
from contextlib import redirect_stderr
from pathlib import Path
from typing import Any

import pytest

from toolnexus.agents import Budget, compose, memory_tool
from toolnexus.agents.cli import main
from twins import ReaderName

anyio = pytest.importorskip("anyio")
stdio = pytest.importorskip("mcp.client.stdio")
client_session = pytest.importorskip("mcp.client.session")
exceptions = pytest.importorskip("mcp.shared.exceptions")

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "aster"


@pytest.fixture
def aster(tmp_path: Path) -> Path:
    return Path(shutil.copytree(EXAMPLE, tmp_path / "aster"))


def server(home: Path, reader: ReaderName, *extra: str) -> Any:
    """How the client starts ``toolnexus-soul mcp HOME``, on the reader ``reader``."""
    env = {"TOOLNEXUS_SOUL_NO_EXTENSIONS": "1" if reader == "pure" else ""}
    return stdio.StdioServerParameters(
        command=sys.executable, args=["-m", "toolnexus.agents", "mcp", str(home), *extra], env=env
    )


async def _session(home: Path, reader: ReaderName, *extra: str) -> dict[str, Any]:
    """Drive the server through every request a host makes; what came back, for the test to check."""
    seen: dict[str, Any] = {}
    async with stdio.stdio_client(server(home, reader, *extra)) as (read, write):  # noqa: SIM117
        async with client_session.ClientSession(read, write) as session:
            seen["init"] = await session.initialize()
            seen["tools"] = (await session.list_tools()).tools
            seen["added"] = await session.call_tool("memory", {"action": "add", "content": "Likes tea."})
            seen["again"] = await session.call_tool("memory", {"action": "add", "content": "Likes tea."})
            seen["refused"] = await session.call_tool(
                "memory", {"action": "remove", "old_text": "no such note"}
            )
            seen["bad"] = await session.call_tool("memory", {"action": "fly"})
            seen["elsewhere"] = await session.call_tool("no_tool", {})
            seen["profile"] = await session.call_tool(
                "user_memory", {"action": "add", "content": "Reads on a phone."}
            )
            seen["prompts"] = (await session.list_prompts()).prompts
            seen["prompt"] = await session.get_prompt("soul", {})
            seen["small"] = await session.get_prompt("soul", {"budget": "300"})
            seen["resources"] = (await session.list_resources()).resources
            seen["soul"] = await session.read_resource("soul://soul")
            seen["memory"] = await session.read_resource("soul://file/MEMORY.md")
            await session.call_tool("memory", {"action": "remove", "old_text": "Likes tea"})
            seen["after"] = await session.read_resource("soul://soul")
    return seen


def test_a_session_over_stdio(aster: Path, reader: ReaderName) -> None:
    seen = anyio.run(_session, aster, reader, "--file", "MEMORY.md", "--file", "USER.md")
    assert seen["init"].server_info.name == "toolnexus-soul"
    with memory_tool(aster) as memory, memory_tool(aster, file="USER.md") as profile:
        assert [(t.name, t.description, t.input_schema) for t in seen["tools"]] == [
            ("memory", memory.description(), memory.parameters()),
            ("user_memory", profile.description(), profile.parameters()),
        ]
    added, again = seen["added"], seen["again"]
    message = "Added the entry. MEMORY.md holds 4 entries, 173 of 2,200 characters."
    assert (added.is_error, added.content[0].text) == (
        False,
        message + " The change shows in your prompt from the next session.",
    )
    assert added.structured_content == {
        "ok": True,
        "action": "add",
        "message": added.content[0].text,
        "added": True,
        "entry_count": 4,
        "used": 173,
        "limit": 2200,
    }
    assert (again.is_error, again.structured_content["added"]) == (False, False)
    refused = seen["refused"]
    assert refused.is_error is True
    assert refused.content[0].text.startswith("No entry holds 'no such note'. The entries start:")
    assert refused.structured_content["error"] == "no_match"
    assert (seen["bad"].is_error, seen["bad"].content[0].text) == (
        True,
        "action must be 'add', 'replace' or 'remove', not 'fly'. MEMORY.md holds 4 entries, 173 of 2,200"
        " characters.",
    )
    assert (seen["elsewhere"].is_error, seen["elsewhere"].content[0].text) == (
        True,
        "there is no tool 'no_tool' here: the tools are memory, user_memory",
    )
    assert seen["profile"].is_error is False
    # The prompt and the resources are the soul as it is when they are read.
    assert [(p.name, [a.name for a in p.arguments]) for p in seen["prompts"]] == [("soul", ["budget"])]
    assert seen["prompt"].messages[0].content.text == seen["soul"].contents[0].text
    assert seen["small"].messages[0].content.text == compose(aster, budget=Budget(total=300)).text != ""
    assert [str(r.uri) for r in seen["resources"]] == [
        "soul://soul",
        *(f"soul://file/{name}" for name in compose(aster).found),
    ]
    soul_then = seen["soul"].contents[0].text
    assert soul_then.endswith("- Likes tea.")
    assert seen["memory"].contents[0].text == soul_then.split("## MEMORY.md\n\n", 1)[1]
    assert seen["after"].contents[0].text == compose(aster).text == soul_then.removesuffix("\n- Likes tea.")


@pytest.mark.reader_independent
def test_without_the_sdk_it_says_what_to_install(
    aster: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "mcp.server.stdio", None)  # as if it were not installed
    stderr = io.StringIO()
    with redirect_stderr(stderr):
        code = main(["mcp", str(aster)])
    assert (code, stderr.getvalue()) == (
        1,
        "toolnexus-soul: the mcp command needs the MCP SDK: pip install 'toolnexus-soul[mcp]'\n",
    )
    assert capsys.readouterr().out == ""


@pytest.mark.reader_independent
def test_its_usage_errors(aster: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["mcp", str(aster), "--file", "../SOUL.md"]) == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        "toolnexus-soul mcp: error: argument --file: file must be a plain file name, not '../SOUL.md'"
    )
    assert main(["mcp", str(aster), "--budget", "0"]) == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        "toolnexus-soul mcp: error: argument --budget: must be 1 or more, not 0"
    )
    assert main(["mcp", str(aster / "missing")]) == 1
    assert capsys.readouterr().err == f"toolnexus-soul: {aster / 'missing'}: No such file or directory\n"
    assert os.listdir(aster) == os.listdir(EXAMPLE)  # nothing written


# ---- what a host's tester found (each a test) -------------------------------------------

INIT = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "0"},
        },
    }
)
PING = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "ping"})


def command(home: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "toolnexus.agents", "mcp", str(home), *extra]


@pytest.mark.reader_independent
def test_ctrl_c_ends_a_server_that_has_answered(aster: Path) -> None:
    server = subprocess.Popen(
        command(aster), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert server.stdin is not None
    assert server.stdout is not None
    server.stdin.write(f"{INIT}\n{PING}\n".encode())
    server.stdin.flush()
    assert json.loads(server.stdout.readline())["id"] == 1
    assert json.loads(server.stdout.readline()) == {"jsonrpc": "2.0", "id": 2, "result": {}}
    server.send_signal(signal.SIGINT)  # stdin still open: the client has not gone
    try:
        assert server.wait(timeout=30) == 130
    finally:
        server.kill()
        _, err = server.communicate()
    assert err == b""


@pytest.mark.reader_independent
@pytest.mark.parametrize(
    ("redirect", "status", "message"),
    [
        ("stdout to /dev/full", 1, "cannot serve on standard input and output: No space left on device"),
        ("stdout closed", 1, "cannot write to standard output: Bad file descriptor"),
        ("stdin closed", 1, "cannot read standard input: Bad file descriptor"),
        ("reader gone", 141, ""),
    ],
)
def test_its_streams_failing_end_it_in_one_line(
    aster: Path, redirect: str, status: int, message: str
) -> None:
    shell = " ".join(map(shlex.quote, command(aster)))
    script = {
        "stdout to /dev/full": f"printf '%s\\n' {shlex.quote(INIT)} | {shell} >/dev/full",
        "stdout closed": f"printf '%s\\n' {shlex.quote(INIT)} | {shell} >&-",
        "stdin closed": f"{shell} <&-",
        # A ping every half second until the server is gone: however slow it is to
        # start, one of its answers comes after head has left.
        "reader gone": f"(printf '%s\\n' {shlex.quote(INIT)}; for _ in $(seq 80); do sleep 0.5;"
        f" printf '%s\\n' {shlex.quote(PING)} || break; done) | {shell} | head -c 1 >/dev/null;"
        " exit ${PIPESTATUS[1]}",
    }[redirect]
    done = subprocess.run(["bash", "-c", script], capture_output=True, timeout=60, check=False)
    assert done.returncode == status
    assert done.stderr.decode() == (f"toolnexus-soul: {message}\n" if message else "")


async def _bad_requests(home: Path, reader: ReaderName) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    async with stdio.stdio_client(server(home, reader)) as (read, write):  # noqa: SIM117
        async with client_session.ClientSession(read, write) as session:
            await session.initialize()
            for name, request in {
                "budget 0": session.get_prompt("soul", {"budget": "0"}),
                "budget +100": session.get_prompt("soul", {"budget": "+100"}),
                "budget huge": session.get_prompt("soul", {"budget": "x" * 1_000_000}),
                "no prompt": session.get_prompt("nope", {}),
                "no resource": session.read_resource("soul://file/HEARTBEAT.md"),
            }.items():
                try:
                    seen[name] = await request
                except exceptions.MCPError as exc:
                    seen[name] = (exc.code, exc.message)
            seen["tool"] = await session.call_tool("t" * 100_000, {})
    return seen


def test_bad_requests_are_mcp_errors_with_no_traceback(
    aster: Path, reader: ReaderName, capfd: pytest.CaptureFixture[str]
) -> None:
    seen = anyio.run(_bad_requests, aster, reader)
    why = "budget must be a whole number of characters, 1 or more, not"
    assert seen["budget 0"] == (-32602, f"{why} '0'")
    assert seen["budget +100"] == (-32602, f"{why} '+100'")
    assert seen["budget huge"] == (-32602, f"{why} '{'x' * 39}…'")
    assert seen["no prompt"] == (-32602, "there is no prompt 'nope' here: the prompt is 'soul'")
    assert seen["no resource"] == (-32602, "there is no resource 'soul://file/HEARTBEAT.md' here")
    assert (seen["tool"].is_error, seen["tool"].content[0].text) == (
        True,
        f"there is no tool '{'t' * 39}…' here: the tools are memory",
    )
    assert "Traceback" not in capfd.readouterr().err


async def _notes(home: Path, reader: ReaderName) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    async with stdio.stdio_client(server(home, reader, "--file", "notes.md")) as (read, write):  # noqa: SIM117
        async with client_session.ClientSession(read, write) as session:
            await session.initialize()
            seen["added"] = await session.call_tool(
                "notes_memory", {"action": "add", "content": "Ships on Fridays."}
            )
            seen["prompt"] = await session.get_prompt("soul", {})
            seen["resources"] = (await session.list_resources()).resources
            seen["notes"] = await session.read_resource("soul://file/notes.md")
    return seen


def test_a_memory_file_served_is_in_the_soul_served(aster: Path, reader: ReaderName) -> None:
    # The tool tells the model its notes are in its prompt: over MCP, they are.
    seen = anyio.run(_notes, aster, reader)
    assert seen["added"].is_error is False
    assert (
        seen["prompt"].messages[0].content.text
        == compose(aster).text + "\n\n## notes.md\n\n- Ships on Fridays."
    )
    assert [str(r.uri) for r in seen["resources"]][-1] == "soul://file/notes.md"
    assert seen["notes"].contents[0].text == "- Ships on Fridays."


@pytest.mark.reader_independent
def test_a_file_name_that_is_not_utf8_is_told_as_bytes(
    aster: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    name = os.fsdecode(b"x\xff.md")
    assert main(["mcp", str(aster), "--file", name]) == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        "toolnexus-soul mcp: error: argument --file: must be UTF-8 text, not x\\xff.md"
    )
