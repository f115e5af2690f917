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

Exit status 0 when the tool lost nothing.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from toolnexus.agents import memory_tool

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
        tool.add(note(worker, number))
        print(f"{time.perf_counter() - start:.9f}")  # the latency of each add, for the parent


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
            latencies += [float(line) for line in out.split()]
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--processes", type=int, default=8)
    parser.add_argument("--notes", type=int, default=200, help="notes each process adds")
    parser.add_argument("--rounds", type=int, default=5, help="runs of the one-writer measure")
    parser.add_argument("--worker", nargs=4, help=argparse.SUPPRESS)  # KIND HOME N NOTES: one writer
    args = parser.parse_args()
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
