"""A host at scale: a budget's count, a cache of many homes and the collector, before and after.

Issue 29's figures, each for this checkout and, with ``--before SRC``, for
another (installed into a directory of its own), rounds interleaved, each
version in a fresh interpreter (a worker: this script with ``--worker``):

- **count work**: on the example (``examples/aster``), seven files of 7.4 KB
  (52 KB) and three 5 MB files (over the 2 MB cap), the calls to ``count``
  and the characters handed to it (per character of the soul composed
  without the budget) under a total that holds the soul (and a ``per_file``
  that does too), half the soul and an eighth, with a stand-in BPE whose
  cost is linear in its input (regular-expression tokens); and the time of
  a plain compose and of the budget that fits, on the example;
- **the collector**: ``--homes`` copies of the example in one notified
  ``SoulCache`` and in one validated by stat: the objects the cyclic
  collector walks per home, and a full collection's pause, filled, against
  the same interpreter with the cache empty; a ``Soul``'s objects;
- **fill and hit**: a cold ``compose`` of each home, the floor the kernel
  charges for notification (a watch of the home's directory on a fresh
  queue, a ``statfs``, then its compose, as ``benchmarks/scale.py``
  measures it), the notified fill and a warm hit, in µs per home.

    python benchmarks/host.py [--before DIR] [--homes 20000] [--rounds 3]

Make a "before" by installing the other commit, with its extensions, into a
directory of its own: ``git worktree add --detach /tmp/before main && pip
install --no-deps --target /tmp/before-site /tmp/before`` (then
``--before /tmp/before-site``). Linux only (inotify). Exit status 0 when
every target is met by this checkout.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

HERE: Final = Path(__file__).resolve().parent
EXAMPLE: Final = HERE.parent / "examples" / "aster"
THIS: Final = HERE.parent / "src"
AN_HOUR_AGO: Final = time.time() - 3600
BOOTSTRAP: Final = ("AGENTS.md", "SOUL.md", "IDENTITY.md", "USER.md", "TOOLS.md", "HEARTBEAT.md", "MEMORY.md")
_TOKEN: Final = re.compile(r"\w+|[^\w\s]")
# Issue 29's targets.
FITS_CHARS, CUT_CHARS = 1.05, 3.0
TRACKED_A_HOME, PAUSE, SOUL_OBJECTS, FILL, FILL_FLOOR, WARM_US = 3, 5.0, 2, 1.5, 1.5, 2.5
# What the fill may add to the floor (a watch, a statfs, a compose) a home: the cache's
# bookkeeping in Python, about 42 to 49 µs here. Proposed (issue 29's notes) in place of
# 1.5 x a cold compose, which would leave it 9 µs; printed here and by scale.py, not part
# of either's exit status.
PROPOSED_BOOKKEEPING_US = 55


# ---- the homes ------------------------------------------------------------------------


def _text(rng: random.Random, size: int, words: list[str]) -> bytes:
    out: list[str] = []
    length = 0
    while length < size:
        line = "- " + " ".join(rng.choice(words) for _ in range(11))
        out.append(line)
        length += len(line.encode()) + 1
    return "\n".join(out).encode()[:size].decode("utf-8", "ignore").encode()


def make_count_homes(root: Path) -> dict[str, str]:
    rng = random.Random(29)
    words = ["the", "agent", "answers", "questions", "about", "lab", "notes", "and", "cites", "every"]
    seven = root / "seven"
    seven.mkdir(parents=True)
    for name in BOOTSTRAP:
        (seven / name).write_bytes(_text(rng, 52 * 1024 // 7, [*words, "café", "→"]))
    three = root / "three"
    three.mkdir()
    for name in ("AGENTS.md", "TOOLS.md", "MEMORY.md"):
        (three / name).write_bytes(_text(rng, 5 * 1024 * 1024, [*words, "தமிழ்", "😀"]))
    return {
        "the example (1.4 KB)": str(EXAMPLE),
        "seven files (52 KB)": str(seven),
        "three 5 MB files": str(three),
    }


def make_homes(root: Path, count: int) -> list[str]:
    """``count`` copies of the example persona, dated an hour back (outside stat's racy window)."""
    files = {path.name: path.read_bytes() for path in EXAMPLE.iterdir() if path.suffix == ".md"}
    dirs = []
    for index in range(count):
        home = root / f"{index // 1000:03d}" / f"home-{index:06d}"
        home.mkdir(parents=True)
        for name, data in files.items():
            (home / name).write_bytes(data)
            os.utime(home / name, (AN_HOUR_AGO, AN_HOUR_AGO))
        dirs.append(str(home))
    return dirs


# ---- the workers: each in a fresh interpreter, on one version --------------------------


class Counted:
    """A stand-in BPE (regular-expression tokens, linear in its input), its calls and characters counted."""

    def __init__(self) -> None:
        self.calls = self.chars = 0

    def __call__(self, text: str) -> int:
        self.calls += 1
        self.chars += len(text)
        return len(_TOKEN.findall(text))


def count_work(homes: dict[str, str]) -> dict[str, Any]:
    from toolnexus.agents import Budget, compose

    figures: dict[str, Any] = {}
    for label, home in homes.items():
        plain = compose(home).text
        whole = len(_TOKEN.findall(plain))
        rows = {}
        cases = {"fits": (10**9, None), "fits, per_file": (10**9, 10**9), "half": (whole // 2, None)}
        cases["an eighth"] = (whole // 8, None)
        for case, (total, per_file) in cases.items():
            counted = Counted()
            budget = Budget(total=total, per_file=per_file, count=counted)
            counted.calls = counted.chars = 0
            soul = compose(home, budget=budget)
            cut = soul.cut_files if hasattr(type(soul), "cut_files") else soul.cut  # its name before 0.3
            rows[case] = {
                "calls": counted.calls,
                "chars": counted.chars / len(plain),
                "files": len(plain and soul.found) or 0,
                "present": len(compose(home).found),
                "cut": len(cut),
            }
        figures[label] = rows
    # The budget that fits, against a plain compose, on the example (default count).
    fits = Budget(total=10**9)
    plain_us, fits_us = [], []
    for _ in range(5):
        plain_us.append(_per_call_us(lambda: compose(str(EXAMPLE)), 2000))
        fits_us.append(_per_call_us(lambda: compose(str(EXAMPLE), budget=fits), 2000))
    figures["timing"] = {
        "plain": statistics.median(plain_us),
        "fits": statistics.median(fits_us),
        "ratio": statistics.median(b / a for a, b in zip(plain_us, fits_us, strict=True)),
    }
    return figures


def _per_call_us(run: Callable[[], object], calls: int) -> float:
    start = time.perf_counter_ns()
    for _ in range(calls):
        run()
    return (time.perf_counter_ns() - start) / calls / 1000


def _per_home_us(run: Callable[[str], object], dirs: list[str]) -> float:
    start = time.perf_counter_ns()
    for directory in dirs:
        run(directory)
    return (time.perf_counter_ns() - start) / len(dirs) / 1000


def _walked() -> int:
    """Objects on the collector's lists after full collections (a level of plain tuples off at each)."""
    for _ in range(3):
        gc.collect()
    return len(gc.get_objects())


def _pause_ms() -> float:
    """A full collection's pause: the median of seven."""
    times = []
    for _ in range(7):
        start = time.perf_counter_ns()
        gc.collect()
        times.append((time.perf_counter_ns() - start) / 1e6)
    return statistics.median(times)


def _floor_us(dirs: list[str]) -> float:
    """A watch of each home's directory on a fresh queue, a statfs, and its compose (scale.py's floor)."""
    from scale import notify_floor  # the version this worker runs: imported here, in the worker

    return notify_floor(dirs)


def collector(dirs: list[str]) -> dict[str, Any]:
    from toolnexus.agents import SoulCache, compose

    figures: dict[str, Any] = {}
    _per_home_us(compose, dirs)  # untimed: the page cache, the allocator
    figures["cold"] = _per_home_us(compose, dirs)
    figures["floor"] = _floor_us(dirs)
    souls = 2000
    before = _walked()
    kept = [compose(directory) for directory in dirs[:souls]]
    figures["soul objects"] = (_walked() - before - 1) / len(kept)
    del kept
    empty = _walked()
    figures["empty pause"] = _pause_ms()
    for validate in ("notify", "stat"):
        cache = SoulCache(maxsize=len(dirs), validate=validate)
        figures[f"{validate} fill"] = _per_home_us(cache.compose, dirs)
        _per_home_us(cache.compose, dirs)  # untimed
        figures[f"{validate} warm"] = _per_home_us(cache.compose, dirs)
        figures[f"{validate} objects"] = (_walked() - empty) / len(dirs)
        figures[f"{validate} pause"] = _pause_ms()
        cache.close()
        del cache
        _walked()
    return figures


def worker(part: str, data: str) -> None:
    result = count_work(json.loads(data)) if part == "count" else collector(json.loads(data))
    print(json.dumps(result))


# ---- the run -------------------------------------------------------------------------


def run_worker(src: Path, part: str, data: object) -> Any:
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as handle:
        json.dump(data, handle)
    try:
        env = {**os.environ, "PYTHONPATH": str(src)}
        done = subprocess.run(
            [sys.executable, __file__, "--worker", part, "--data", handle.name],
            capture_output=True,
            text=True,
            check=True,
            env=env,
        )
    finally:
        os.unlink(handle.name)
    return json.loads(done.stdout.splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", type=Path, help="another version, installed into a directory of its own")
    parser.add_argument("--homes", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--worker", choices=("count", "collector"), help=argparse.SUPPRESS)
    parser.add_argument("--data", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker, Path(args.data).read_text())
        return 0
    versions = {"after": THIS}
    if args.before:
        versions = {"before": args.before.resolve(), **versions}
    root = Path(tempfile.mkdtemp(prefix="tns-host-"))
    try:
        count_homes = make_count_homes(root / "count")
        started = time.monotonic()
        dirs = make_homes(root / "homes", args.homes)
        print(f"{args.homes:,} copies of examples/aster made in {time.monotonic() - started:.0f} s")
        count = {name: run_worker(src, "count", count_homes) for name, src in versions.items()}
        rounds: dict[str, list[dict[str, float]]] = {name: [] for name in versions}
        for _ in range(args.rounds):
            for name, src in versions.items():
                rounds[name].append(run_worker(src, "collector", dirs))
    finally:
        shutil.rmtree(root)
    met = report_count(count)
    met &= report_collector(rounds, args.homes)
    return 0 if met else 1


def report_count(count: dict[str, Any]) -> bool:
    names = list(count)
    print("\nCount work: calls to count, and characters handed to it per character of the plain soul")
    print(
        f"  {'home':<22} {'budget':<15} " + "  ".join(f"{name:>22}" for name in names) + "   target (after)"
    )
    met = True
    after = count["after"]
    for label, rows in after.items():
        if label == "timing":
            continue
        for case, row in rows.items():
            cells = []
            for name in names:
                each = count[name][label][case]
                cells.append(f"{each['calls']:6d} calls {each['chars']:7.2f} x")
            # A total that holds the soul (files over the cap kept as far as it reads them): one count.
            if case.startswith("fits"):
                calls = 1 if case == "fits" else row["present"] + 1
                ok = row["calls"] <= calls and (case != "fits" or row["chars"] <= FITS_CHARS)
                target = f"{calls} call{'s' if calls > 1 else ''}" + (
                    f", <= {FITS_CHARS} x" if case == "fits" else ""
                )
            else:
                calls = row["present"] + 2 + 4 * row["cut"]
                ok = row["calls"] <= calls and row["chars"] <= CUT_CHARS
                target = f"<= {calls} calls, <= {CUT_CHARS} x"
            met &= ok
            print(
                f"  {label:<22} {case:<15} "
                + "  ".join(f"{cell:>22}" for cell in cells)
                + f"   {target}  {'met' if ok else 'MISSED'}"
            )
    print(
        "  the example, µs: "
        + "; ".join(
            f"{name}: plain {count[name]['timing']['plain']:.1f}, fits {count[name]['timing']['fits']:.1f}"
            f" ({count[name]['timing']['ratio']:.2f} x)"
            for name in names
        )
        + "  (target <= 1.3 x)"
    )
    return met


def report_collector(rounds: dict[str, list[dict[str, float]]], homes: int) -> bool:
    names = list(rounds)
    medians = {
        name: {key: statistics.median(r[key] for r in runs) for key in runs[0]}
        for name, runs in rounds.items()
    }
    print(
        f"\nThe collector and the fill: {homes:,} homes, {len(rounds['after'])} rounds interleaved, medians"
    )
    print(f"  {'':<36}" + "".join(f"{name:>12}" for name in names))
    rows = [
        ("cold compose, µs a home", "cold"),
        ("floor: watch, statfs, compose, µs", "floor"),
        ("fill, notified, µs a home", "notify fill"),
        ("warm hit, notified, µs", "notify warm"),
        ("fill, stat, µs a home", "stat fill"),
        ("warm hit, stat, µs", "stat warm"),
        ("objects the collector walks: a soul", "soul objects"),
        ("  a notified home", "notify objects"),
        ("  a stat-checked home", "stat objects"),
        ("full collection, ms: cache empty", "empty pause"),
        ("  notified cache filled", "notify pause"),
        ("  stat cache filled", "stat pause"),
    ]
    for label, key in rows:
        print(f"  {label:<36}" + "".join(f"{medians[name][key]:12.2f}" for name in names))
    after = medians["after"]
    fill = after["notify fill"] / after["cold"]
    over_floor = after["notify fill"] / after["floor"]
    checks = [
        (
            f"a notified home: {after['notify objects']:.2f} objects",
            after["notify objects"] <= TRACKED_A_HOME,
        ),
        (
            f"a stat-checked home: {after['stat objects']:.2f} objects",
            after["stat objects"] <= TRACKED_A_HOME,
        ),
        (f"a soul: {after['soul objects']:.2f} objects", after["soul objects"] <= SOUL_OBJECTS),
        *(
            (
                f"full collection, {v} cache: {after[f'{v} pause'] / after['empty pause']:.1f} x empty",
                after[f"{v} pause"] <= PAUSE * after["empty pause"],
            )
            for v in ("notify", "stat")
        ),
        (f"warm hit: {after['notify warm']:.2f} µs", after["notify warm"] <= WARM_US),
        (f"fill: {fill:.2f} x a cold compose", fill <= FILL),
        (f"fill: {over_floor:.2f} x the floor", over_floor <= FILL_FLOOR),
    ]
    print(f"  targets (after; fill <= {FILL} x cold, and <= {FILL_FLOOR} x the floor at 100,000):")
    met = True
    for text, ok in checks:
        met &= ok
        print(f"    {text:<44} {'met' if ok else 'MISSED'}")
    extra = after["notify fill"] - after["floor"]
    proposed = "met" if extra <= PROPOSED_BOOKKEEPING_US else "MISSED"
    limit = PROPOSED_BOOKKEEPING_US
    print(f"    fill: the floor + {extra:.1f} µs (proposed: + {limit} µs at most) {proposed}")
    return met


if __name__ == "__main__":
    raise SystemExit(main())
