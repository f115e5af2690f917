"""A process that writes a persona's memory, for the memory tool's laws (run as a script).

    python memory_worker.py tool    HOME WORKER SEED COUNT   # the tool's add, replace and remove
    python memory_worker.py naive   HOME WORKER SEED COUNT   # read, change, write back: what peers ship
    python memory_worker.py append  HOME WORKER SEED COUNT   # a shell's `echo "- note" >> MEMORY.md`
    python memory_worker.py rename  HOME WORKER SEED COUNT   # an editor saving by rename
    python memory_worker.py inplace HOME WORKER SEED COUNT   # an editor saving in place

Each prints one line per operation, flushed, once it is done: ``add TOKEN``,
``replace TOKEN``, ``remove TOKEN`` (or ``refused TOKEN``). ``operations``
gives the same stream of operations for a worker and seed, so that a test
can replay what a killed worker did. Every entry holds one token,
``<WORKER.N>``, found in no other.
"""

from __future__ import annotations

import os
import random
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from toolnexus.agents import MemoryTool, MemoryToolError, memory_tool


def token(worker: str, number: int) -> str:
    return f"<{worker}.{number}>"


def operations(worker: str, seed: int, count: int) -> Iterator[tuple[str, str, str]]:
    """(action, token, text) of each operation: adds; replaces and removes of this worker's own entries."""
    rng = random.Random(f"{worker}:{seed}")
    live: list[str] = []
    for number in range(count):
        roll = rng.random()
        if live and roll < 0.2:
            yield ("remove", live.pop(rng.randrange(len(live))), "")
        elif live and roll < 0.4:
            old = live[rng.randrange(len(live))]
            yield ("replace", old, f"{old} revised")
        else:
            new = token(worker, number)
            live.append(new)
            yield ("add", new, f"note {new} from worker {worker}")


def perform(tool: MemoryTool, action: str, tok: str, text: str) -> None:
    """Do one operation of ``operations`` with ``tool``."""
    if action == "add":
        tool.add(text)
    elif action == "replace":
        tool.replace(tok, text)
    else:
        tool.remove(tok)


def say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def run_tool(home: str, worker: str, seed: int, count: int) -> None:
    tool = memory_tool(home, limit=10**9)
    for action, tok, text in operations(worker, seed, count):
        try:
            perform(tool, action, tok, text)
        except MemoryToolError:
            say(f"refused {tok}")
            continue
        say(f"{action} {tok}")


def run_naive(home: str, worker: str, seed: int, count: int) -> None:
    """Read the file, add a line, write it back: every peer's way, and how notes are lost."""
    path = Path(home) / "MEMORY.md"
    for number in range(count):
        text = path.read_text(encoding="utf-8") if path.exists() else ""
        tok = token(worker, number)
        path.write_text(text + f"- note {tok} from worker {worker}\n", encoding="utf-8")
        say(f"add {tok}")


def run_external(mode: str, home: str, worker: str, seed: int, count: int) -> None:
    """A writer that takes no lock: a shell's append, or an editor's save by rename or in place."""
    rng = random.Random(f"{worker}:{seed}")
    path = Path(home) / "MEMORY.md"
    for number in range(count):
        tok = token(worker, number)
        line = f"- note {tok} from {mode}\n".encode()
        if mode == "append":
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            os.write(fd, line)
            os.close(fd)
        else:
            data = path.read_bytes() if path.exists() else b""
            if data and not data.endswith(b"\n"):
                data += b"\n"
            if mode == "rename":
                temp = path.with_name(f"MEMORY.md.editor-{worker}")
                temp.write_bytes(data + line)
                os.replace(temp, path)
            else:
                with open(path, "r+b") as handle:
                    handle.write(data + line)
                    handle.truncate()
        say(f"add {tok}")
        time.sleep(rng.random() * 0.002)


def main() -> None:
    mode, home, worker, seed, count = sys.argv[1:6]
    if mode == "tool":
        run_tool(home, worker, int(seed), int(count))
    elif mode == "naive":
        run_naive(home, worker, int(seed), int(count))
    else:
        run_external(mode, home, worker, int(seed), int(count))


if __name__ == "__main__":
    main()
