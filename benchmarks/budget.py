"""What a budget costs against a plain compose, and how often it calls ``count``: both readers.

Two homes, each composed plain and under budgets, rounds interleaved, each
contender after an untimed pass of its own (medians in µs per compose, and
the median of the per-round ratios to plain):

- the example persona (examples/aster, a 1.4 KB soul): a budget that fits
  (``Budget(total=10**9)``), one that cuts half of it in characters, and one
  that cuts half of it in UTF-8 bytes (``count=lambda s: len(s.encode())``);
- a home of three 3 MB files of mixed scripts (scenarios.py, ``large``):
  ``Budget(total=20_000)`` against no budget.

Then the ``count`` calls of one compose: a budget that fits (one, for the
soul), and budgets that cut (at most files + 2 + 4 per file cut;
``benchmarks/host.py`` has the characters, on issue 29's homes).

    python benchmarks/budget.py [--rounds 9] [--reader compiled|pure]

Uses the public API and the twins of the checkout the package is imported
from, so that an older checkout's virtualenv can run it for a "before"
figure. Exit status 0 when every target is met.
"""

from __future__ import annotations

import argparse
import functools
import statistics
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import toolnexus.agents
from toolnexus.agents import Budget, compose

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
# The twins (the reader swap): those of the checkout the package comes from,
# when it comes from one (an older checkout, for a "before"), else this one's.
sys.path.insert(0, str(HERE.parent / "tests"))
_ITS_TESTS = Path(toolnexus.agents.__file__).resolve().parents[3] / "tests"
if (_ITS_TESTS / "twins.py").exists():
    sys.path.insert(0, str(_ITS_TESTS))

from scenarios import make_large, per_home_us  # noqa: E402
from twins import using  # noqa: E402

EXAMPLE = str(HERE.parent / "examples" / "aster")
# Targets: at most this many times a plain compose; at least this many times faster for large.
FITS, HALF_CHARS, HALF_BYTES = 1.3, 2.0, 2.5
LARGE = {"compiled": 20.0, "pure": 40.0}


def utf8_bytes(text: str) -> int:
    return len(text.encode("utf-8"))


class Counted:
    """A count that counts its calls."""

    def __init__(self, count: Callable[[str], int]) -> None:
        self.count, self.calls = count, 0

    def __call__(self, text: str) -> int:
        self.calls += 1
        return self.count(text)


def timed(
    contenders: dict[str, Callable[[str], object]], dirs: list[str], rounds: int
) -> dict[str, list[float]]:
    samples: dict[str, list[float]] = {name: [] for name in contenders}
    for _ in range(rounds):
        for name, run in contenders.items():
            per_home_us(run, dirs)  # untimed
            samples[name].append(per_home_us(run, dirs))
    return samples


def ratio(samples: dict[str, list[float]], name: str, base: str) -> float:
    return statistics.median(a / b for a, b in zip(samples[name], samples[base], strict=True))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--reader", choices=("compiled", "pure"), action="append")
    args = parser.parse_args()
    readers = args.reader or ["compiled", "pure"]
    plain = compose(EXAMPLE)
    chars, nbytes = len(plain.text), utf8_bytes(plain.text)
    small = {
        "fits": Budget(total=10**9),
        "half, characters": Budget(total=chars // 2),
        "half, UTF-8 bytes": Budget(total=nbytes // 2, count=utf8_bytes),
    }
    met = True
    print(f"toolnexus-soul {toolnexus.agents.__version__}, {args.rounds} interleaved rounds, medians")
    with tempfile.TemporaryDirectory(prefix="tns-budget-") as tmp:
        large_dirs = make_large(Path(tmp), 4)
        for reader in readers:
            with using(reader):
                print(f"\n{reader} reader")
                contenders: dict[str, Callable[[str], object]] = {"plain": compose}
                for name, budget in small.items():
                    contenders[name] = functools.partial(compose, budget=budget)
                samples = timed(contenders, [EXAMPLE] * 200, args.rounds)
                print(f"  example home ({chars:,} characters)  µs      x plain  target")
                print(f"    {'plain':<28} {statistics.median(samples['plain']):7.1f}")
                for name, target in zip(small, (FITS, HALF_CHARS, HALF_BYTES), strict=True):
                    times = ratio(samples, name, "plain")
                    met &= times <= target
                    print(
                        f"    {name:<28} {statistics.median(samples[name]):7.1f}  {times:6.2f}  <= {target}"
                        f"  {'met' if times <= target else 'MISSED'}"
                    )
                twenty = Budget(total=20_000)
                large = timed(
                    {"plain": compose, "budget": functools.partial(compose, budget=twenty)},
                    large_dirs,
                    args.rounds,
                )
                faster = ratio(large, "plain", "budget")
                met &= faster >= LARGE[reader]
                print("  three 3 MB files                   µs     x faster")
                print(f"    {'plain':<28} {statistics.median(large['plain']):7.1f}")
                done = "met" if faster >= LARGE[reader] else "MISSED"
                median = statistics.median(large["budget"])
                label = "Budget(total=20_000)"
                print(f"    {label:<28} {median:7.1f}  {faster:6.1f}  >= {LARGE[reader]:.0f}  {done}")
                met &= count_calls(large_dirs[0])
    return 0 if met else 1


def count_calls(large: str) -> bool:
    """Print the count calls of one compose under each budget; whether a fitting one keeps to its bound."""
    plain = compose(EXAMPLE)
    cases = [
        ("example, fits", EXAMPLE, 10**9),
        ("example, half", EXAMPLE, utf8_bytes(plain.text) // 2),
        ("three 3 MB files, 20,000", large, 20_000),
    ]
    print("  count calls per compose (UTF-8 bytes)")
    ok = True
    for label, home, total in cases:
        counted = Counted(utf8_bytes)
        budget = Budget(total=total, count=counted)
        counted.calls = 0  # a Budget measures "" when it is made: not the compose's
        soul = compose(home, budget=budget)
        cut = len(soul.cut_files if hasattr(type(soul), "cut_files") else soul.cut)  # its name before 0.3
        present = len(compose(home).found)
        most = 1 if not cut else present + 2 + 4 * cut
        bound = "<= 1 (the soul)" if not cut else f"<= {most} (files + 2 + 4 a file cut)"
        ok &= counted.calls <= most
        print(f"    {label:<28} {counted.calls:5d}  {bound}")
    return ok


if __name__ == "__main__":
    raise SystemExit(main())
