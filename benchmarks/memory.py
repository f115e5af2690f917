"""The memory tool against the naive read-modify-write peers ship: notes lost, speed, and latency.

Contention: PROCESSES processes each add NOTES notes to one MEMORY.md at
once, first the naive way (read the file, add a line, write it back, as
every peer's memory tool does), then through the memory tool. Prints, for
each, the notes acknowledged, the notes the file holds at the end, the
notes lost (the tool must show 0) and operations per second, and for the
tool the latency of its adds (p50, p99). Then one writer in this process
(a mix of adds, replaces and removes, as a model makes them): operations
per second (the median of ROUNDS runs) and the latency of each kind of
operation over all of them (p50, p99, in ms).

    python benchmarks/memory.py [--processes 8] [--notes 200] [--rounds 5]
    python benchmarks/memory.py --editors 1000   # the documented exception, counted

``--editors N``: two tools add N notes each while an editor saves the file
N times (reads it, adds a line, saves: by ``os.replace``, by ``sed -i``, by
vim's ``:wq!``), then while ``git checkout -- MEMORY.md`` runs N times: how many of
the tool's notes an editor's save replaced (the one exception of the
memory file's law 2: an editor that read before a change and saves after
it replaces it), how many of the editor's own lines were lost, and how many
checkouts failed ("File exists": the tool made the file between git's
unlink and its exclusive create).

Exit status 0 when the tool lost nothing.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from toolnexus.agents import MemoryToolError, memory_tool

HUGE = 10**9  # a limit no run reaches: the contention is the point, not the bound


def note(worker: int, number: int) -> str:
    return f"note {number} of writer {worker}"


def naive_writer(home: Path, worker: int, notes: int) -> None:
    path = home / "MEMORY.md"
    for number in range(notes):
        text = path.read_text(encoding="utf-8") if path.exists() else ""
        path.write_text(text + f"- {note(worker, number)}\n", encoding="utf-8")


def tool_writer(home: Path, worker: int, notes: int) -> None:
    tool = memory_tool(home, limit=HUGE)
    for number in range(notes):
        start = time.perf_counter()
        try:
            tool.add(note(worker, number))
        except MemoryToolError:  # beaten sixteen times in a row: not acknowledged
            continue
        print(f"{number} {time.perf_counter() - start:.9f}")  # each acknowledged add, and its latency


def percentiles(seconds: list[float]) -> str:
    """p50 and p99 of ``seconds``, in milliseconds."""
    ordered = sorted(seconds)
    p50 = statistics.median(ordered)
    p99 = ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]
    return f"{p50 * 1e3:>8.2f}{p99 * 1e3:>8.2f}"


def contend(kind: str, processes: int, notes: int) -> tuple[int, float, list[float]]:
    """Run ``processes`` writers of ``kind`` on one new home: (notes lost, seconds, each add's latency)."""
    with tempfile.TemporaryDirectory(prefix="tns-memory-") as tmp:
        home = Path(tmp)
        start = time.perf_counter()
        children = [
            subprocess.Popen(
                [sys.executable, __file__, "--worker", kind, str(home), str(n), str(notes)],
                stdout=subprocess.PIPE,
                text=True,
            )
            for n in range(processes)
        ]
        latencies: list[float] = []
        for child in children:
            out, _ = child.communicate()
            if child.returncode != 0:
                raise SystemExit(f"a {kind} writer failed with status {child.returncode}")
            latencies += [float(line.split()[1]) for line in out.splitlines()]
        seconds = time.perf_counter() - start
        text = (home / "MEMORY.md").read_text(encoding="utf-8")
        kept = {line[2:] for line in text.splitlines()}
        lost = sum(note(w, n) not in kept for w in range(processes) for n in range(notes))
        return lost, seconds, latencies


def one_writer_ops(operations: int, latencies: dict[str, list[float]]) -> float:
    """Operations per second of one tool in this process: adds, and a replace and a remove now and then.

    Each operation's latency goes to ``latencies``, by kind.
    """
    with tempfile.TemporaryDirectory(prefix="tns-memory-") as tmp:
        tool = memory_tool(tmp, limit=HUGE)
        start = time.perf_counter()
        for number in range(operations):
            begun = time.perf_counter()
            if number % 5 == 3:
                tool.replace(note(0, number - 1), note(0, number))
                kind = "replace"
            elif number % 5 == 4:
                tool.remove(note(0, number - 1))
                kind = "remove"
            else:
                tool.add(note(0, number))
                kind = "add"
            latencies.setdefault(kind, []).append(time.perf_counter() - begun)
        return operations / (time.perf_counter() - start)


def editor_saves(kind: str, home: Path, count: int) -> tuple[int, int]:
    """``count`` saves of ``kind``, each adding ``editor N``, 0-2 ms apart; its own lines lost, its failures.

    A line counts as lost only if its save succeeded (vim declines to save a
    file that changed since it read it).
    """
    path = home / "MEMORY.md"
    rng = random.Random(5)
    failed: set[int] = set()
    for number in range(count):
        time.sleep(rng.random() * 0.002)
        line = f"- editor {number}"
        if kind == "os.replace":
            text = path.read_text(encoding="utf-8") if path.exists() else ""
            (home / "MEMORY.md.swp").write_text(text + line + "\n", encoding="utf-8")
            os.replace(home / "MEMORY.md.swp", path)
            continue
        argv = {
            "sed -i": ["sed", "-i", f"$a {line}", str(path)],
            "vim": [
                "vim",
                "-u",
                "NONE",
                "-i",
                "NONE",
                "-Nes",
                "-c",
                f"$put ='{line}'",
                "-c",
                "wq!",
                str(path),
            ],
            "git checkout": ["git", "-C", str(home), "checkout", "-q", "--", "MEMORY.md"],
        }[kind]
        if subprocess.run(argv, capture_output=True, check=False).returncode != 0:
            failed.add(number)
    text = path.read_text(encoding="utf-8")
    saved = [n for n in range(count) if n not in failed and kind in ("os.replace", "sed -i")]
    return sum(f"- editor {n}\n" not in text for n in saved), len(failed)


def editors(saves: int) -> None:
    """The exception of law 2, counted: tool notes an editor's save replaced, and git's failed checkouts."""
    print(f"two tools adding {saves:,} notes each, against an editor saving {saves:,} times")
    print(f"  {'editor':<14}{'acknowledged notes replaced':>30}{'own lines lost':>16}{'failed':>8}")
    for kind in ("os.replace", "sed -i", "vim", "git checkout"):
        if shutil.which(kind.split()[0]) is None and kind != "os.replace":
            print(f"  {kind:<14}{'(not installed)':>22}")
            continue
        with tempfile.TemporaryDirectory(prefix="tns-editors-") as tmp:
            home = Path(tmp)
            (home / "MEMORY.md").write_text("- a first note\n", encoding="utf-8")
            if kind == "git checkout":
                who = ["-c", "user.name=bench", "-c", "user.email=bench@localhost"]
                for argv in (["init", "-q"], ["add", "MEMORY.md"], [*who, "commit", "-qm", "notes"]):
                    subprocess.run(["git", "-C", tmp, *argv], check=True)
            tools = [
                subprocess.Popen(
                    [sys.executable, __file__, "--worker", "tool", tmp, str(n), str(saves)],
                    stdout=subprocess.DEVNULL,
                )
                for n in range(2)
            ]
            lost, failed = editor_saves(kind, home, saves)
            for tool in tools:
                tool.wait()
            memory_tool(home, limit=HUGE).add("one more change")
            kept = set((home / "MEMORY.md").read_text(encoding="utf-8").splitlines())
            replaced = sum(f"- {note(w, n)}" not in kept for w in range(2) for n in range(saves))
            print(f"  {kind:<14}{replaced:>12,} of {2 * saves:,}{lost:>16,}{failed:>8,}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--processes", type=int, default=8)
    parser.add_argument("--notes", type=int, default=200, help="notes each process adds")
    parser.add_argument("--rounds", type=int, default=5, help="runs of the one-writer measure")
    parser.add_argument("--editors", type=int, metavar="N", help="count the exception of law 2 instead")
    parser.add_argument("--worker", nargs=4, help=argparse.SUPPRESS)  # KIND HOME N NOTES: one writer
    args = parser.parse_args()
    if args.editors:
        editors(args.editors)
        return 0
    if args.worker:
        kind, home, worker, notes = args.worker
        (naive_writer if kind == "naive" else tool_writer)(Path(home), int(worker), int(notes))
        return 0
    total = args.processes * args.notes
    print(f"{args.processes} processes adding {args.notes:,} notes each to one MEMORY.md ({total:,} notes)")
    print(f"  {'writer':<28}{'lost':>8}{'kept':>8}{'ops/s':>10}{'p50 ms':>8}{'p99 ms':>8}")
    lost_by_tool = 0
    for kind, label in (("naive", "naive read-modify-write"), ("tool", "memory tool")):
        lost, seconds, latencies = contend(kind, args.processes, args.notes)
        spread = percentiles(latencies) if latencies else ""
        print(f"  {label:<28}{lost:>8,}{total - lost:>8,}{total / seconds:>10,.0f}{spread}")
        if kind == "tool":
            lost_by_tool = lost
    by_kind: dict[str, list[float]] = {}
    one = statistics.median(one_writer_ops(args.notes, by_kind) for _ in range(args.rounds))
    print(f"one memory tool, adds, replaces and removes: {one:,.0f} ops/s (median of {args.rounds} runs)")
    print(f"  {'operation':<12}{'count':>8}{'p50 ms':>8}{'p99 ms':>8}")
    for operation, timings in by_kind.items():
        print(f"  {operation:<12}{len(timings):>8,}{percentiles(timings)}")
    return 0 if lost_by_tool == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
