"""Instruction counts under callgrind: a noise-free figure to compare commits.

Runs a fixed small workload (composing 200 typical homes 5 times) under
``valgrind --tool=callgrind`` once per reader and prints the instructions
executed by the composing alone, per soul: callgrind collects only while
the workload's loop runs (``--toggle-collect`` of the ``functools.reduce``
that calls it, which the package never calls), so that start-up, imports
and data generation, whose counts vary by millions from one process to the
next, count for nothing. Counts are repeatable for the same build, inputs
and environment, whatever else the machine does.

    python benchmarks/callgrind.py            # needs valgrind on PATH
    python benchmarks/callgrind.py --reader compiled
    python benchmarks/callgrind.py --call compose --call compose-options

``--call`` chooses what each home is composed with (``compose_soul(d)`` by
default): ``compose(d)``; ``compose(d).files``, with its reports made;
``compose`` given its options (their default values), which is the path of
a host that passes any; a warm hit of a notified ``SoulCache``, without
options and with them; or its fill (``cache-fill``: each home composed into
a cache that had none, its bookkeeping counted, the kernel's work not).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
WORKLOAD = """
import sys
sys.path.insert(0, {here!r})
sys.path.insert(0, {tests!r})
import functools
from pathlib import Path
from scenarios import make_typical
from toolnexus.agents import SoulCache, compose, compose_soul
from twins import use
dirs = make_typical(Path({root!r}), 200)
use({reader!r})
cache = SoulCache(validate="notify")
{setup}
def measured(_, __):
    for _ in range(5):
        for d in dirs:
            {call}
functools.reduce(measured, [None], None)
"""
# What each home is composed with, by --call; and what is done first, uncounted.
_OPTIONS = "max_file_bytes=2 * 1024 * 1024, symlinks='follow', strict=False"
CALLS = {
    "compose_soul": ("pass", "compose_soul(d)"),
    "compose": ("pass", "compose(d)"),
    "compose-files": ("pass", "compose(d).files"),
    "compose-options": ("pass", f"compose(d, {_OPTIONS})"),
    # Warm hits of a notified cache (its own instructions: the kernel's are not counted).
    "cache-hit": ("for d in dirs: cache.compose(d)", "cache.compose(d)"),
    "cache-hit-options": (f"for d in dirs: cache.compose(d, {_OPTIONS})", f"cache.compose(d, {_OPTIONS})"),
    # A notified fill: each round of the loop fills a cache of its own (made first, uncounted);
    # against "compose", what the cache's bookkeeping adds in Python (the kernel's part uncounted).
    "cache-fill": (
        "fresh = iter([SoulCache(maxsize=10_000) for _ in range(5)])\n"
        "def fill(d):\n"
        "    global cache\n"
        "    if d is dirs[0]:\n"
        "        cache = next(fresh)\n"
        "    cache.compose(d)",
        "fill(d)",
    ),
}


def instructions(reader: str, call: str = "compose_soul") -> int:
    """The instructions of the workload's loop (1,000 souls)."""
    with tempfile.TemporaryDirectory(prefix="tns-cg-") as tmp:
        script = WORKLOAD.format(
            here=str(HERE),
            tests=str(HERE.parent / "tests"),
            root=str(Path(tmp, "data")),
            reader=reader,
            setup=CALLS[call][0],
            call=CALLS[call][1],
        )
        done = subprocess.run(
            [
                "valgrind",
                "--tool=callgrind",
                f"--callgrind-out-file={os.devnull}",
                "--collect-atstart=no",
                "--toggle-collect=functools_reduce",
                sys.executable,
                "-c",
                script,
            ],
            capture_output=True,
            text=True,
            check=True,
            # One hash seed: set and dict layouts, and so the counts, repeat.
            env={**os.environ, "PYTHONHASHSEED": "0"},
        )
    match = re.search(r"Collected\s*:\s*(\d+)", done.stderr)
    if match is None:
        raise RuntimeError(done.stderr[-2000:])
    return int(match.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--reader",
        action="append",
        choices=("compiled", "pure"),
        help="only this reader (may be given twice)",
    )
    parser.add_argument(
        "--call", action="append", choices=tuple(CALLS), help="what to compose with (may be given again)"
    )
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not on PATH")
    # Imported once untimed, so that no run pays for compiling a changed module.
    paths = [str(HERE), str(HERE.parent / "tests")]
    subprocess.run(
        [sys.executable, "-c", f"import sys; sys.path[:0] = {paths!r}; import scenarios, twins"], check=True
    )
    print(f"{'reader':<9} {'call':<16} {'instructions per soul':>22}")
    for reader in args.reader or ("compiled", "pure"):
        for call in args.call or ("compose_soul",):
            total = instructions(reader, call)
            print(f"{reader:<9} {call:<16} {total / 1000:>22,.0f}")


if __name__ == "__main__":
    main()
