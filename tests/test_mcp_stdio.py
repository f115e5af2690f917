"""``toolnexus-soul mcp DIR`` as a host runs it: a process on stdio, its options, its streams, its end.

A live session on each protocol generation with the official client (the
handshake's, and 2026-07-28's on mcp 2.x), the command's usage errors and
what it says of a DIR it cannot serve, what it says without the SDK, and
how it ends: Ctrl-C, standard input or output closed or failing. Each
server process picks its reader by itself: these tests run once.
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

import anyio
import pytest

from toolnexus.agents import Budget, compose
from toolnexus.agents.cli import main

pytestmark = pytest.mark.reader_independent
pytest.importorskip("mcp")

from mcp_peer import GENERATION, TIMEOUT, Peer, command, connected, put, wire  # noqa: E402

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "aster"


@pytest.fixture
def aster(tmp_path: Path) -> Path:
    return Path(shutil.copytree(EXAMPLE, tmp_path / "aster"))


def capabilities(peer: Peer) -> dict[str, Any]:
    """What the server said it can do, as JSON."""
    if GENERATION == 2:
        return wire(peer.client.server_capabilities)
    return wire(peer.session.get_server_capabilities())


def test_a_live_session_on_the_handshakes_protocol(aster: Path) -> None:
    seen: dict[str, Any] = {}
    memory = "soul://file/MEMORY.md"

    async def session() -> None:
        async with connected(command(aster, None, "--limit", "5000", "--budget", "300")) as peer:
            seen["capabilities"] = capabilities(peer)
            await peer.request("resources/subscribe", {"uri": memory})
            put(aster / "MEMORY.md", "- Written by hand.")
            seen["by hand"] = await peer.until(
                [{"method": "notifications/resources/updated", "params": {"uri": memory}}]
            )
            add = {"action": "add", "content": "Likes tea.", "old_text": None}
            seen["added"] = await peer.request("tools/call", {"name": "memory", "arguments": add})
            seen["by the tool"] = await peer.until(
                [{"method": "notifications/resources/updated", "params": {"uri": memory}}]
            )
            seen["memory"] = await peer.request("resources/read", {"uri": memory})
            seen["prompt"] = await peer.request("prompts/get", {"name": "soul"})

    anyio.run(session)
    assert seen["capabilities"]["resources"] == {"subscribe": True, "listChanged": True}
    assert seen["capabilities"]["completions"] == {}
    assert (
        seen["by hand"]
        == seen["by the tool"]
        == [{"method": "notifications/resources/updated", "params": {"uri": memory}}]
    )
    assert seen["added"]["structuredContent"]["limit"] == 5000
    assert seen["memory"]["contents"][0]["text"] == "- Written by hand.\n- Likes tea."
    assert seen["prompt"]["messages"][0]["content"]["text"] == compose(aster, budget=Budget(total=300)).text


def test_a_live_session_on_2026_07_28(aster: Path) -> None:
    if GENERATION == 1:
        pytest.skip("2026-07-28 needs mcp 2.x")
    subscriptions: Any = pytest.importorskip("mcp.client.subscriptions")
    seen: dict[str, Any] = {}
    expected = {subscriptions.ResourcesListChanged(), subscriptions.ResourceUpdated(uri="soul://soul")}

    async def session() -> None:
        async with connected(command(aster, None), modern=True) as peer:
            seen["version"] = peer.client.protocol_version
            seen["capabilities"] = capabilities(peer)
            async with peer.client.listen(
                resources_list_changed=True, resource_subscriptions=["soul://soul"]
            ) as stream:
                put(aster / "HEARTBEAT.md", "Check the kiln at noon.")
                came: set[Any] = set()
                with anyio.fail_after(TIMEOUT):
                    async for event in stream:
                        came.add(event)
                        if came >= expected:
                            break
                seen["events"] = came
            seen["soul"] = await peer.request("resources/read", {"uri": "soul://soul"})

    anyio.run(session)
    assert seen["version"] == "2026-07-28"
    assert seen["capabilities"]["resources"] == {"subscribe": True, "listChanged": True}
    assert seen["events"] == expected
    assert seen["soul"]["contents"][0]["text"] == compose(aster).text


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--file", "../SOUL.md"], "argument --file: file must be a plain file name, not '../SOUL.md'"),
        (["--budget", "0"], "argument --budget: must be 1 or more, not 0"),
        (["--limit", "0"], "argument --limit: must be 1 or more, not 0"),
        (["--limit", "x"], "argument --limit: invalid int value: 'x'"),
        (
            ["--file", "MEMORY.md", "--file", "ÄÖ.md"],
            "argument --file: two files would be tools of one name: memory, memory",
        ),
    ],
)
def test_its_usage_errors(
    aster: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    assert main(["mcp", str(aster), *argv]) == 2
    assert capsys.readouterr().err.splitlines()[-1] == f"toolnexus-soul mcp: error: {message}"
    assert sorted(os.listdir(aster)) == sorted(os.listdir(EXAMPLE))  # nothing written


def test_a_dir_it_cannot_serve_is_told_as_every_command_tells_it(
    aster: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["mcp", str(aster / "missing")]) == 1
    assert capsys.readouterr().err == f"toolnexus-soul: {aster / 'missing'}: no such directory\n"
    assert main(["compose", str(aster / "missing")]) == 1
    assert capsys.readouterr().err == f"toolnexus-soul: {aster / 'missing'}: no such directory\n"
    assert main(["mcp", str(aster / "SOUL.md")]) == 1
    assert capsys.readouterr().err == f"toolnexus-soul: {aster / 'SOUL.md'}: not a directory\n"
    # A usage error is told first, whatever DIR is.
    assert main(["mcp", str(aster / "missing"), "--file", "../x.md"]) == 2


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


def test_a_file_name_that_is_not_utf8_is_told_as_bytes(
    aster: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    name = os.fsdecode(b"x\xff.md")
    assert main(["mcp", str(aster), "--file", name]) == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        "toolnexus-soul mcp: error: argument --file: must be UTF-8 text, not x\\xff.md"
    )


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


def argv(home: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "toolnexus.agents", "mcp", str(home), *extra]


def test_ctrl_c_ends_a_server_that_has_answered(aster: Path) -> None:
    # A request the SDK cannot validate is answered, and nothing is logged on the way.
    bad = json.dumps({"jsonrpc": "2.0", "id": 3, "method": "resources/read", "params": {"uri": 7}})
    server = subprocess.Popen(
        argv(aster), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert server.stdin is not None
    assert server.stdout is not None
    server.stdin.write(f"{INIT}\n{bad}\n{PING}\n".encode())
    server.stdin.flush()
    assert json.loads(server.stdout.readline())["id"] == 1
    refused = json.loads(server.stdout.readline())
    assert (refused["id"], refused["error"]["code"]) == (3, -32602)
    assert json.loads(server.stdout.readline()) == {"jsonrpc": "2.0", "id": 2, "result": {}}
    server.send_signal(signal.SIGINT)  # stdin still open: the client has not gone
    try:
        assert server.wait(timeout=30) == 130
    finally:
        server.kill()
        _, err = server.communicate()
    assert err == b""


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
    shell = " ".join(map(shlex.quote, argv(aster)))
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
