"""How soon a subscriber of ``toolnexus-soul mcp`` hears of a write: the latency of live resources.

Starts the server on a copy of examples/aster, as a host does (a process on
stdio, spoken to in JSON-RPC lines), subscribes to ``soul://file/SOUL.md``,
and ROUNDS times replaces SOUL.md with new text (as an editor saves) and
times the wait for ``notifications/resources/updated``; then does the same
with a change the server's own memory tool makes (a ``replace``, sent with
no wait for its answer), subscribed to ``soul://file/MEMORY.md``. Prints
the latency of each (p50, p99, max, in ms): what the kernel's notification
(inotify, through the notified cache) gives, with no polling in between.

    python benchmarks/mcp_live.py [--rounds 200]

Needs the MCP SDK (pip install 'toolnexus-soul[mcp]').
"""

from __future__ import annotations

import argparse
import json
import os
import select
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import IO, Any

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "aster"
WAIT = 30.0  # seconds: a notification that takes longer is a failure, not a figure


class Server:
    """``toolnexus-soul mcp HOME``, spoken to a line at a time."""

    def __init__(self, home: Path) -> None:
        command = [sys.executable, "-m", "toolnexus.agents", "mcp", str(home)]
        # Unbuffered: a line read must not leave the next one in a buffer that select() cannot see.
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
        self.ids = 0

    def send(self, message: dict[str, Any]) -> None:
        stdin: IO[bytes] | None = self.process.stdin
        assert stdin is not None
        stdin.write((json.dumps({"jsonrpc": "2.0", **message}) + "\n").encode())
        stdin.flush()

    def receive(self) -> dict[str, Any]:
        stdout: IO[bytes] | None = self.process.stdout
        assert stdout is not None
        if not select.select([stdout], [], [], WAIT)[0]:
            raise SystemExit(f"nothing came from the server in {WAIT:.0f} s")
        line: dict[str, Any] = json.loads(stdout.readline())
        return line

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self.ids += 1
        self.send({"id": self.ids, "method": method, "params": params})
        while "id" not in (answer := self.receive()):
            pass
        return answer

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        self.process.wait(timeout=WAIT)


def told(server: Server, uri: str, since: float) -> float:
    """Seconds from ``since`` until the server says ``uri`` was updated."""
    while True:
        message = server.receive()
        if message.get("method") == "notifications/resources/updated" and message["params"]["uri"] == uri:
            return time.perf_counter() - since


def figures(name: str, seconds: list[float]) -> str:
    ms = sorted(value * 1000 for value in seconds)
    p99 = ms[min(len(ms) - 1, round(0.99 * (len(ms) - 1)))]
    return f"{name:<28} p50 {statistics.median(ms):7.2f} ms   p99 {p99:7.2f} ms   max {ms[-1]:7.2f} ms"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        home = Path(shutil.copytree(EXAMPLE, Path(scratch) / "aster"))
        server = Server(home)
        try:
            init = {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "b", "version": "0"},
            }
            server.request("initialize", init)
            server.send({"method": "notifications/initialized"})
            for name in ("SOUL.md", "MEMORY.md"):
                server.request("resources/subscribe", {"uri": f"soul://file/{name}"})
            saved, replaced = [], []
            for number in range(args.rounds):
                spare = home / ".SOUL.md.saving"
                spare.write_text(f"Curious, round {number}.")
                started = time.perf_counter()
                os.replace(spare, home / "SOUL.md")
                saved.append(told(server, "soul://file/SOUL.md", started))
            call = {"name": "memory", "arguments": {"action": "add", "content": "Round 0.", "old_text": None}}
            server.send({"id": 0, "method": "tools/call", "params": call})  # its answer may come after
            told(server, "soul://file/MEMORY.md", 0.0)
            for number in range(args.rounds):
                change = {
                    "action": "replace",
                    "content": f"Round {number + 1}.",
                    "old_text": f"Round {number}.",
                }
                started = time.perf_counter()
                server.send(
                    {
                        "id": -1 - number,
                        "method": "tools/call",
                        "params": {"name": "memory", "arguments": change},
                    }
                )
                replaced.append(told(server, "soul://file/MEMORY.md", started))
        finally:
            server.close()
    print(figures("a person's save (os.replace)", saved))
    print(figures("the memory tool's replace", replaced))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
