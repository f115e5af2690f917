"""Instruction counts under callgrind: a noise-free figure to compare commits.

Runs a fixed small workload (composing 200 typical homes 5 times) under
``valgrind --tool=callgrind`` once per reader and prints the instructions
executed by the whole process, minus the same process doing everything but
the composing (start-up, imports, data generation). Counts are repeatable
for the same build, inputs and environment, whatever else the machine does.

    python benchmarks/callgrind.py            # needs valgrind on PATH
    python benchmarks/callgrind.py --reader compiled
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
from pathlib import Path
from scenarios import make_typical
from toolnexus.agents import compose_soul
from twins import use
dirs = make_typical(Path({root!r}), 200)
use({reader!r})
if {compose}:
    for _ in range(5):
        for d in dirs:
            compose_soul(d)
"""


def instructions(reader: str, compose: bool) -> int:
    with tempfile.TemporaryDirectory(prefix="tns-cg-") as tmp:
        script = WORKLOAD.format(
            here=str(HERE),
            tests=str(HERE.parent / "tests"),
            root=str(Path(tmp, "data")),
            reader=reader,
            compose=compose,
        )
        done = subprocess.run(
            [
                "valgrind",
                "--tool=callgrind",
                f"--callgrind-out-file={os.devnull}",
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
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not on PATH")
    print(f"{'reader':<9} {'instructions per soul':>22}")
    for reader in args.reader or ("compiled", "pure"):
        total = instructions(reader, True) - instructions(reader, False)
        print(f"{reader:<9} {total / 1000:>22,.0f}")


if __name__ == "__main__":
    main()
