"""Is a memory-mapped read of a bootstrap file faster than read()?

Measures, per file size from 1 KB to 3 MB (capped at 2 MB like the default),
the two ways to get a file's capped bytes decoded into a ``str``:

- ``read``: open, fstat, one bounded read into a new buffer, decode, close;
- ``reuse``: the same, reading into one buffer kept across calls (as the
  compiled reader can), so no fresh pages are faulted in per call;
- ``mmap``: open, fstat, map ``min(size, cap + 1)`` bytes, decode straight
  from the mapping, unmap, close.

Rounds are interleaved so both see the same machine state; the table gives
medians in microseconds and the mmap/read ratio. Run:

    python benchmarks/mmap_vs_read.py [--rounds 15]
"""

from __future__ import annotations

import argparse
import mmap
import os
import random
import statistics
import tempfile
import time
from collections.abc import Callable

CAP = 2 * 1024 * 1024
SIZES = [1024, 4096, 16 * 1024, 64 * 1024, 256 * 1024, 1024 * 1024, 2 * 1024 * 1024, 3 * 1024 * 1024]
FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC


def mixed_text(size: int, seed: int) -> bytes:
    """Mostly ASCII with Tamil and emoji, cut to ``size`` bytes."""
    rng = random.Random(seed)
    words = ["soul", "memory", "agent", "தமிழ்", "நினைவு", "😀", "🚀", "the", "and", "tools"]
    out = bytearray()
    while len(out) < size:
        out += rng.choice(words).encode() + b" "
    return bytes(out[:size])


def via_read(path: str) -> str:
    fd = os.open(path, FLAGS)
    try:
        size = os.fstat(fd).st_size
        data = os.read(fd, min(size + 1, CAP + 1))
        return data[: min(len(data), CAP)].decode("utf-8", "replace")
    finally:
        os.close(fd)


_BUFFER = bytearray(CAP + 1)


def via_reused_buffer(path: str) -> str:
    fd = os.open(path, FLAGS)
    try:
        size = os.fstat(fd).st_size
        with memoryview(_BUFFER) as view:
            got = os.preadv(fd, [view[: min(size + 1, CAP + 1)]], 0)
            return str(view[: min(got, CAP)], "utf-8", "replace")
    finally:
        os.close(fd)


def via_mmap(path: str) -> str:
    fd = os.open(path, FLAGS)
    try:
        size = os.fstat(fd).st_size
        length = min(size, CAP + 1)
        with mmap.mmap(fd, length, prot=mmap.PROT_READ) as mapped, memoryview(mapped) as view:
            return str(view[: min(length, CAP)], "utf-8", "replace")
    finally:
        os.close(fd)


def timed(func: Callable[[str], str], path: str, repeat: int) -> float:
    start = time.perf_counter_ns()
    for _ in range(repeat):
        func(path)
    return (time.perf_counter_ns() - start) / repeat / 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    header = ("size", "read µs", "reuse µs", "mmap µs", "mmap/read", "mmap/reuse")
    print("  ".join(f"{h:>10}" for h in header))
    with tempfile.TemporaryDirectory() as tmp:
        for size in SIZES:
            path = os.path.join(tmp, f"f{size}")
            with open(path, "wb") as handle:
                handle.write(mixed_text(size, size))
            assert via_read(path) == via_mmap(path) == via_reused_buffer(path)
            repeat = max(3, 2_000_000 // size)
            reads: list[float] = []
            reuses: list[float] = []
            maps: list[float] = []
            for _ in range(args.rounds):
                reads.append(timed(via_read, path, repeat))
                reuses.append(timed(via_reused_buffer, path, repeat))
                maps.append(timed(via_mmap, path, repeat))
            r, u, m = statistics.median(reads), statistics.median(reuses), statistics.median(maps)
            label = f"{size // 1024} KB" if size < 1024 * 1024 else f"{size // (1024 * 1024)} MB"
            print(
                "  ".join(
                    f"{v:>10}"
                    for v in (label, f"{r:.1f}", f"{u:.1f}", f"{m:.1f}", f"{m / r:.2f}", f"{m / u:.2f}")
                )
            )


if __name__ == "__main__":
    main()
