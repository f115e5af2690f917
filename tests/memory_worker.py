"""A process that writes a persona's memory, for the memory tool's laws (run as a script).

    python memory_worker.py tool    HOME WORKER SEED COUNT   # the tool's add, replace and remove
    python memory_worker.py naive   HOME WORKER SEED COUNT   # read, change, write back: what peers ship
    python memory_worker.py append  HOME WORKER SEED COUNT   # a shell's `echo "- note" >> MEMORY.md`
    python memory_worker.py rename  HOME WORKER SEED COUNT   # an editor saving by rename
    python memory_worker.py inplace HOME WORKER SEED COUNT   # an editor saving in place
    python memory_worker.py split   HOME WORKER SEED COUNT   # an append in two writes, 0.5-4.5 ms apart
    python memory_worker.py halves  HOME WORKER SEED COUNT   # a save in place in two writes, 0.5-4.5 ms apart
    python memory_worker.py truncate HOME WORKER SEED COUNT  # append a line, then empty the file
    python memory_worker.py unsave  HOME WORKER SEED COUNT   # append a line, then save by rename without it
    python memory_worker.py rm      HOME WORKER SEED COUNT   # append a line, then remove the file

``TNS_NO_EXCHANGE=1`` in the environment makes the tool's workers act as on a
file system without ``RENAME_EXCHANGE``.

Each prints one line per operation, flushed, once it is done: ``add TOKEN``,
``replace TOKEN``, ``remove TOKEN`` (or ``refused TOKEN``). ``operations``
gives the same stream of operations for a worker and seed, so that a test
can replay what a killed worker did. Every entry holds one token,
``<WORKER.N>``, found in no other.
"""

from __future__ import annotations

import contextlib
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
    if os.environ.get("TNS_NO_EXCHANGE") == "1":
        from toolnexus.agents._memory import _system

        _system.Folder.exchange = lambda self, first, second: False  # type: ignore[method-assign]
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


def run_remover(mode: str, home: str, worker: str, seed: int, count: int) -> None:
    """A person who writes a line and then removes it: by truncating, by a save without it, by rm."""
    rng = random.Random(f"{worker}:{seed}")
    path = Path(home) / "MEMORY.md"
    for number in range(count):
        tok = token(worker, number)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        os.write(fd, f"- old {tok} from {mode}\n".encode())
        os.close(fd)
        time.sleep(rng.random() * 0.002)
        if mode == "truncate":
            os.truncate(path, 0)
        elif mode == "rm":
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
        else:
            data = path.read_bytes() if path.exists() else b""
            kept = b"".join(line for line in data.splitlines(keepends=True) if b"- old <" not in line)
            temp = path.with_name(f"MEMORY.md.editor-{worker}")
            temp.write_bytes(kept)
            os.replace(temp, path)
        say(f"add {tok}")
        time.sleep(rng.random() * 0.002)


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
        elif mode == "split":  # one save, two writes, a gap between
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            cut = rng.randrange(1, len(line))
            os.write(fd, line[:cut])
            time.sleep(rng.uniform(0.0005, 0.0045))
            os.write(fd, line[cut:])
            os.close(fd)
        elif mode == "halves":  # an editor's save in place, in two writes
            data = path.read_bytes() if path.exists() else b""
            if data and not data.endswith(b"\n"):
                data += b"\n"
            whole = data + line
            fd = os.open(path, os.O_WRONLY | os.O_TRUNC | os.O_CREAT, 0o644)
            cut = rng.randrange(1, len(whole))
            os.write(fd, whole[:cut])
            time.sleep(rng.uniform(0.0005, 0.0045))
            os.write(fd, whole[cut:])
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
                fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)  # the file may not be there yet
                with open(fd, "r+b") as handle:
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
    elif mode in ("truncate", "unsave", "rm"):
        run_remover(mode, home, worker, int(seed), int(count))
    else:
        run_external(mode, home, worker, int(seed), int(count))


if __name__ == "__main__":
    main()
