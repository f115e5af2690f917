"""The compiled reader's UTF-8 decoder against CPython's, on each dense script.

Decodes 2 MB of each script of scenarios.DENSE (Tamil, CJK, Cyrillic,
typographic English) with ``_capread.decode_utf8`` and with
``bytes.decode("utf-8", "replace")``, rounds interleaved, each after an
untimed pass of its own. Prints medians in MB/s and the median of per-round
ratios, against the target of the large-files issue: at least 2x CPython's
speed on each script.

    python benchmarks/decode.py [--rounds 15]

Exit status 0 when every script meets the target.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from scenarios import DENSE, dense_text
from toolnexus.agents._native import _capread

TARGET = 2.0
SIZE = 2 * 1024 * 1024


def seconds(decode: Callable[[bytes], str], data: bytes) -> float:
    start = time.perf_counter()
    decode(data)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    contenders: dict[str, Callable[[bytes], str]] = {
        "CPython": lambda data: data.decode("utf-8", "replace"),
        "compiled": _capread.decode_utf8,
    }
    met = True
    print(f"2 MB of each script, medians of {args.rounds} interleaved rounds, MB/s")
    print(f"{'script':<10}{'CPython':>10}{'compiled':>10}{'ratio':>8}")
    for script in DENSE:
        data = dense_text(script, SIZE)
        assert _capread.decode_utf8(data) == data.decode()
        times: dict[str, list[float]] = {name: [] for name in contenders}
        for _ in range(args.rounds):
            for name, decode in contenders.items():
                decode(data)  # untimed: the allocator's state is then this contender's own
                times[name].append(seconds(decode, data))
        ratio = statistics.median(c / d for c, d in zip(times["CPython"], times["compiled"], strict=True))
        rates = {name: len(data) / statistics.median(values) / 1e6 for name, values in times.items()}
        ok = ratio >= TARGET
        met &= ok
        print(
            f"{script:<10}{rates['CPython']:>10.0f}{rates['compiled']:>10.0f}{ratio:>8.2f}"
            f"  >= {TARGET}  {'met' if ok else 'MISSED'}"
        )
    return 0 if met else 1


if __name__ == "__main__":
    raise SystemExit(main())
