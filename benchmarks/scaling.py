"""How the cost of one soul grows with file size and with the number of files.

Two tables, compiled and pure reader side by side, medians of interleaved
rounds in microseconds per ``compose_soul`` call:

- one file (SOUL.md) of 1 KB to 3 MB of mixed text (capped at 2 MB);
- 0 to 7 present files of 4 KB each.

    python benchmarks/scaling.py [--rounds 9]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # twins: the reader swap

from scenarios import BOOTSTRAP_ORDER, SEED
from toolnexus.agents import compose_soul
from twins import using

SIZES = [1024, 4096, 16 * 1024, 64 * 1024, 256 * 1024, 1024 * 1024, 2 * 1024 * 1024, 3 * 1024 * 1024]


def text(size: int, rng: random.Random) -> bytes:
    words = ["soul", "memory", "agent", "notes", "café", "→", "தமிழ்", "😀", "the", "and"]
    out = bytearray()
    while len(out) < size:
        out += rng.choice(words).encode() + b" "
    return bytes(out[:size]).decode("utf-8", "ignore").encode()


def per_call_us(directory: str) -> Callable[[], float]:
    def run() -> float:
        repeat = 20
        start = time.perf_counter_ns()
        for _ in range(repeat):
            compose_soul(directory)
        return (time.perf_counter_ns() - start) / repeat / 1000

    return run


def side_by_side(directory: str, rounds: int) -> tuple[float, float]:
    samples: dict[str, list[float]] = {"compiled": [], "pure": []}
    for _ in range(rounds):
        for name in ("compiled", "pure"):
            with using(name):
                per_call_us(directory)()
                samples[name].append(per_call_us(directory)())
    return statistics.median(samples["compiled"]), statistics.median(samples["pure"])


def label(size: int) -> str:
    return f"{size // 1024} KB" if size < 1024 * 1024 else f"{size // (1024 * 1024)} MB"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args()
    rng = random.Random(SEED)
    with tempfile.TemporaryDirectory(prefix="tns-scale-") as tmp:
        print(f"{'one file':>9} {'compiled µs':>12} {'pure µs':>10} {'compiled MB/s':>14}")
        for size in SIZES:
            home = Path(tmp, f"size-{size}")
            home.mkdir()
            (home / "SOUL.md").write_bytes(text(size, rng))
            compiled, pure = side_by_side(str(home), args.rounds)
            rate = min(size, 2 * 1024 * 1024) / compiled
            print(f"{label(size):>9} {compiled:>12.1f} {pure:>10.1f} {rate:>14.0f}")
        print()
        print(f"{'files':>9} {'compiled µs':>12} {'pure µs':>10}")
        body = text(4096, rng)
        for count in range(len(BOOTSTRAP_ORDER) + 1):
            home = Path(tmp, f"count-{count}")
            home.mkdir()
            for name in BOOTSTRAP_ORDER[:count]:
                (home / name).write_bytes(body)
            compiled, pure = side_by_side(str(home), args.rounds)
            print(f"{count:>9} {compiled:>12.1f} {pure:>10.1f}")


if __name__ == "__main__":
    main()
