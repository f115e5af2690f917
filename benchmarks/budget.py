"""A budget reads what it can keep: large homes with and without one.

The ``large`` homes of scenarios.py (three 3 MB files of mixed scripts each)
composed with no budget and with ``Budget(total=20_000)``, on each reader,
rounds interleaved, each contender after an untimed pass of its own. Prints
medians in µs per home and the median of the per-round ratios, against the
target of the budget issue: with the budget at least 10x faster. Also the
bytes each file read under the budget.

    python benchmarks/budget.py [--rounds 9] [--total 20000]

Exit status 0 when the target is met on both readers.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # twins: the reader swap

from scenarios import make_large, per_home_us
from toolnexus.agents import Budget, compose
from twins import using

TARGET = 10.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--total", type=int, default=20_000)
    args = parser.parse_args()
    budget = Budget(total=args.total)
    met = True
    with tempfile.TemporaryDirectory(prefix="tns-budget-") as tmp:
        dirs = make_large(Path(tmp), 4)
        print(f"4 homes of three 3 MB files, medians of {args.rounds} interleaved rounds, µs per home")
        for reader in ("compiled", "pure"):
            samples: dict[str, list[float]] = {"no budget": [], "budget": []}
            with using(reader):
                contenders: dict[str, Callable[[str], object]] = {
                    "no budget": compose,
                    "budget": lambda d: compose(d, budget=budget),
                }
                for _ in range(args.rounds):
                    for name, run in contenders.items():
                        per_home_us(run, dirs)  # untimed
                        samples[name].append(per_home_us(run, dirs))
                soul = compose(dirs[0], budget=budget)
            ratio = statistics.median(
                a / b for a, b in zip(samples["no budget"], samples["budget"], strict=True)
            )
            ok = ratio >= TARGET
            met &= ok
            print(
                f"  {reader:<9} no budget {statistics.median(samples['no budget']):9.1f}"
                f"   Budget(total={args.total:,}) {statistics.median(samples['budget']):8.1f}"
                f"   ratio {ratio:6.1f}  >= {TARGET:.0f}  {'met' if ok else 'MISSED'}"
            )
        read = ", ".join(f"{f.name} {f.size:,} B" for f in soul.files if f.size)
        print(f"  read under the budget: {read}; the soul: {soul.used:,} characters")
    return 0 if met else 1


if __name__ == "__main__":
    raise SystemExit(main())
