"""Large homes against the transcode floor, and this checkout against an earlier one.

Scenarios (scenarios.py): mixed (three 3 MB files of ASCII, Tamil and
emoji), ascii (three 3 MB ASCII files), dense (four 3 MB files: Tamil, CJK,
Cyrillic, typographic English), all cut at the 2 MB cap; and typical (2,000
homes of 0.2-8 KB files).

Contenders: the transcode floor (transcode_floor.c: the syscalls plus one
validated transcode into a reused buffer, in this process through ctypes);
``compose_soul`` with the compiled and with the pure reader, each in a
worker process of its own; and, given ``--today PYTHON`` (an interpreter
with an earlier toolnexus-soul installed), the same two readers of that
release, also in workers. Workers use only the public API, so any release
can be measured. Rounds are interleaved: each contender in turn runs one
untimed pass and one timed pass per round. Per contender, the median time
per home and the minor page faults per compose (``getrusage``, timed pass
only), in worker processes started afresh for each scenario; per target,
the median of the per-round ratios.

    python benchmarks/large.py [--rounds 9] [--today /path/to/python]

Exit status 0 when every target measured is met.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
CAP = 2 * 1024 * 1024
SCENARIOS = ("mixed", "ascii", "dense", "typical")

# (scenario, target): compiled/floor <= target.
FLOOR_TARGETS = [("mixed", 1.2), ("ascii", 2.0), ("dense", 1.2)]
FAULT_MARGIN = 1.2  # faults per compose <= soul bytes / 4096 * this


def worker(dirs_file: str) -> None:
    """Serve timed passes over the homes of a scenario, one per line read."""
    from toolnexus.agents import compose_soul

    homes: dict[str, list[str]] = json.loads(Path(dirs_file).read_text())
    for line in sys.stdin:
        dirs = homes[line.strip()]
        for directory in dirs:  # untimed: the page cache and the allocator settle
            compose_soul(directory)
        faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        start = time.perf_counter_ns()
        for directory in dirs:
            compose_soul(directory)
        elapsed = time.perf_counter_ns() - start
        faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults
        print(json.dumps({"us": elapsed / len(dirs) / 1000, "faults": faults / len(dirs)}), flush=True)


class Worker:
    """A worker process running ``compose_soul`` with one interpreter and reader."""

    def __init__(self, python: str, pure: bool, dirs_file: Path) -> None:
        env = dict(os.environ)
        env.pop("TOOLNEXUS_SOUL_NO_EXTENSIONS", None)
        if pure:
            env["TOOLNEXUS_SOUL_NO_EXTENSIONS"] = "1"
        check = "from toolnexus.agents import _native; print(_native.ACCELERATED)"
        loaded = subprocess.run([python, "-c", check], env=env, capture_output=True, text=True, check=True)
        if loaded.stdout.strip() != str(not pure):
            raise RuntimeError(f"{python}: expected ACCELERATED={not pure}, got {loaded.stdout.strip()}")
        self._process = subprocess.Popen(
            [python, str(Path(__file__).resolve()), "--worker", str(dirs_file)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
            text=True,
            cwd=tempfile.gettempdir(),  # import the installed package, not a checkout's src/
        )

    def __call__(self, scenario: str) -> tuple[float, float]:
        assert self._process.stdin is not None
        assert self._process.stdout is not None
        self._process.stdin.write(scenario + "\n")
        self._process.stdin.flush()
        answer = json.loads(self._process.stdout.readline())
        return answer["us"], answer["faults"]

    def close(self) -> None:
        assert self._process.stdin is not None
        self._process.stdin.close()
        self._process.wait()


def floor_runner(dirs: list[str]) -> Callable[[str], tuple[float, float]]:
    from floor import TranscodeFloor

    floor = TranscodeFloor(dirs, CAP)

    def run(_: str) -> tuple[float, float]:
        floor()
        start = time.perf_counter_ns()
        floor()
        return (time.perf_counter_ns() - start) / len(dirs) / 1000, 0.0

    return run


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--today", help="an interpreter with an earlier release installed")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker)
        return 0

    sys.path.insert(0, str(HERE))
    from scenarios import make_ascii, make_dense, make_large, make_typical
    from toolnexus.agents import compose_soul

    with tempfile.TemporaryDirectory(prefix="tns-large-") as tmp:
        root = Path(tmp)
        homes = {
            "mixed": make_large(root, 2),
            "ascii": make_ascii(root, 2),
            "dense": make_dense(root, 2),
            "typical": make_typical(root, 2000),
        }
        dirs_file = root / "homes.json"
        dirs_file.write_text(json.dumps(homes))
        soul_bytes = {
            name: statistics.mean(_stored_bytes(compose_soul(d)[0]) for d in ds) for name, ds in homes.items()
        }
        pythons = {"compiled": (sys.executable, False), "pure": (sys.executable, True)}
        if args.today:
            pythons.update({"compiled@today": (args.today, False), "pure@today": (args.today, True)})
        results = {}
        for name in SCENARIOS:
            # Fresh workers per scenario: what an allocator learned from one
            # scenario's sizes must not spare another its page faults.
            workers = {label: Worker(python, pure, dirs_file) for label, (python, pure) in pythons.items()}
            try:
                results[name] = measure(name, homes[name], workers, args.rounds)
            finally:
                for each in workers.values():
                    each.close()
    return report(results, soul_bytes, args.rounds, bool(args.today))


def _stored_bytes(text: str) -> int:
    """Bytes of a str's characters as CPython stores them (1, 2 or 4 per character)."""
    top = max(map(ord, text), default=0)
    return len(text) * (1 if top < 0x100 else 2 if top < 0x10000 else 4)


Samples = dict[str, list[tuple[float, float]]]


def measure(scenario: str, dirs: list[str], workers: dict[str, Worker], rounds: int) -> Samples:
    contenders: dict[str, Callable[[str], tuple[float, float]]] = {"floor": floor_runner(dirs), **workers}
    samples: Samples = {name: [] for name in contenders}
    for _ in range(rounds):
        for name, run in contenders.items():
            samples[name].append(run(scenario))
    return samples


def ratio(samples: Samples, top: str, bottom: str) -> float:
    return statistics.median(a[0] / b[0] for a, b in zip(samples[top], samples[bottom], strict=True))


def report(results: dict[str, Samples], soul_bytes: dict[str, float], rounds: int, today: bool) -> int:
    columns = list(results["mixed"])
    print(f"Medians of {rounds} interleaved rounds, µs per home (minor page faults per compose)")
    print(f"{'scenario':<9}" + "".join(f"{c:>19}" for c in columns))
    for name, samples in results.items():
        cells = []
        for column in columns:
            us = statistics.median(s[0] for s in samples[column])
            faults = statistics.median(s[1] for s in samples[column])
            cells.append(f"{us:.1f} ({faults:.0f})" if column != "floor" else f"{us:.1f}")
        print(f"{name:<9}" + "".join(f"{c:>19}" for c in cells))
    print()
    # (what, measured, at most)
    checks = [
        (f"{scenario}: compiled/floor", ratio(results[scenario], "compiled", "floor"), target)
        for scenario, target in FLOOR_TARGETS
    ]
    for scenario in SCENARIOS:
        allowed = round(soul_bytes[scenario] / 4096 * FAULT_MARGIN, 1)
        faults = statistics.median(s[1] for s in results[scenario]["compiled"])
        checks.append((f"{scenario}: compiled faults/compose", faults, allowed))
    if today:
        typical = results["typical"]
        checks.append(("typical: compiled/compiled@today", ratio(typical, "compiled", "compiled@today"), 1.0))
        checks.extend(
            (f"{scenario}: pure/pure@today", ratio(results[scenario], "pure", "pure@today"), 1.0)
            for scenario in SCENARIOS
        )
    met = True
    print(f"{'target':<36}{'measured':>10}  target")
    for label, value, target in checks:
        ok = value <= target
        met &= ok
        print(f"{label:<36}{value:>10.2f}  <= {target:<8} {'met' if ok else 'MISSED'}")
    for scenario in SCENARIOS:
        print(f"{scenario}: pure/compiled {ratio(results[scenario], 'pure', 'compiled'):.2f}", end="; ")
        print(f"compiled/floor {ratio(results[scenario], 'compiled', 'floor'):.2f}")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
