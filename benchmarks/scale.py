"""One SoulCache for many homes: watches, filling, warm hits, and the stat strategy, at scale.

Makes ``--homes`` copies of the example persona (five files, 1.4 KB of
soul), their files dated an hour back (outside stat's racy window), and
measures, in rounds, each after an untimed pass of its own:

- cold: ``compose`` of every home, no cache (the files in the page cache);
- floor: what notification costs the kernel, with no cache: for each home,
  a fresh inotify queue's watch of its directory and a ``statfs`` (what
  tells a network filesystem), then its ``compose`` (the first read of a
  watched directory's files costs more);
- fill: a new ``SoulCache(maxsize=homes)`` (notified, the default on Linux)
  composing every home once; then how many homes it keeps notified, and the
  kernel's watches on its queue (``/proc/self/fdinfo``), per home;
- warm: every home again, through the filled cache (all hits);
- stat: the same with ``validate="stat"``: its fill, its warm hits, and a
  hit inside the racy window (a home written less than 2 s before it was
  read), which reads the home again.

Prints medians in µs per home, and the targets: at most 1.5 watches a home,
a fill at most 1.5 x a cold compose, every home notified.

    python benchmarks/scale.py [--homes 100000] [--rounds 3] [--window 300]

Runs on whichever toolnexus-soul is imported, so an older checkout's
virtualenv can run it for a "before" figure. Exit status 0 when the targets
are met. Linux only (inotify).
"""

from __future__ import annotations

import argparse
import gc
import importlib
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from host import PROPOSED_BOOKKEEPING_US
from scenarios import per_home_us
from toolnexus.agents import SoulCache, compose

try:
    selector = importlib.import_module("toolnexus.agents._native")
except ImportError:  # 0.2: the selector was _reader
    selector = importlib.import_module("toolnexus.agents._reader")
notifier = selector.notifier

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "aster"
TARGET_WATCHES = 1.5
TARGET_FILL = 1.5
AN_HOUR_AGO = time.time() - 3600


def make_homes(root: Path, count: int) -> list[str]:
    """``count`` copies of the example persona, dated an hour back."""
    files = {path.name: path.read_bytes() for path in EXAMPLE.iterdir() if path.suffix == ".md"}
    dirs = []
    for index in range(count):
        home = root / f"{index // 1000:03d}" / f"home-{index:06d}"
        home.mkdir(parents=True)
        for name, data in files.items():
            path = home / name
            path.write_bytes(data)
            os.utime(path, (AN_HOUR_AGO, AN_HOUR_AGO))
        dirs.append(str(home))
    return dirs


def kernel_watches() -> int:
    """Inotify watches held by this process, on every queue it has open."""
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{fd}") != "anon_inode:inotify":
                continue
            info = Path(f"/proc/self/fdinfo/{fd}").read_text()
        except OSError:
            continue
        count += sum(line.startswith("inotify wd:") for line in info.splitlines())
    return count


def notify_floor(dirs: list[str]) -> float:
    """µs per home of a watch of its directory, a statfs, and its compose: no cache, no bookkeeping."""
    assert notifier is not None
    fd = notifier.open_queue()
    mask = 0x2 | 0x4 | 0x8 | 0x40 | 0x80 | 0x100 | 0x200 | 0x400 | 0x800 | 0x1000000 | 0x2000000 | 0x20000000
    try:
        start = time.perf_counter_ns()
        for directory in dirs:
            home = os.fsencode(directory)
            notifier.add_watch(fd, home, mask)
            notifier.filesystem_type(home)
            compose(directory)
        return (time.perf_counter_ns() - start) / len(dirs) / 1000
    finally:
        os.close(fd)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--homes", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--window", type=int, default=300, help="homes written just before a stat hit")
    args = parser.parse_args()
    limit = int(Path("/proc/sys/fs/inotify/max_user_watches").read_text())
    root = Path(tempfile.mkdtemp(prefix="tns-scale-"))
    samples: dict[str, list[float]] = {
        name: [] for name in ("cold", "floor", "fill", "warm", "stat fill", "stat warm", "stat in window")
    }
    try:
        started = time.monotonic()
        dirs = make_homes(root, args.homes)
        print(f"{args.homes:,} homes (copies of examples/aster) made in {time.monotonic() - started:.0f} s;")
        print(f"fs.inotify.max_user_watches here: {limit:,}; {args.rounds} rounds, medians, µs per home")
        watches = notified = 0
        for _ in range(args.rounds):
            per_home_us(compose, dirs)  # untimed
            samples["cold"].append(per_home_us(compose, dirs))
            samples["floor"].append(notify_floor(dirs))
            gc.collect()
            with SoulCache(maxsize=len(dirs)) as cache:
                samples["fill"].append(per_home_us(cache.compose, dirs))
                watches, notified = kernel_watches(), cache.stats.notified
                per_home_us(cache.compose, dirs)  # untimed
                samples["warm"].append(per_home_us(cache.compose, dirs))
            with SoulCache(maxsize=len(dirs), validate="stat") as cache:
                samples["stat fill"].append(per_home_us(cache.compose, dirs))
                per_home_us(cache.compose, dirs)  # untimed
                samples["stat warm"].append(per_home_us(cache.compose, dirs))
                recent = dirs[: args.window]
                for directory in recent:  # written now: inside the racy window, a hit reads again
                    Path(directory, "SOUL.md").write_bytes(Path(directory, "SOUL.md").read_bytes())
                per_home_us(cache.compose, recent)  # untimed: read again, as changed
                samples["stat in window"].append(per_home_us(cache.compose, recent))
                for directory in recent:
                    os.utime(Path(directory, "SOUL.md"), (AN_HOUR_AGO, AN_HOUR_AGO))
            gc.collect()
        medians = {name: statistics.median(values) for name, values in samples.items()}
        cold = medians["cold"]
        for name, value in medians.items():
            print(f"  {name:<15} {value:9.2f}   {value / cold:5.2f} x cold")
        per_home = watches / len(dirs)
        fill = medians["fill"] / cold
        print(f"  fill over the floor: {medians['fill'] / medians['floor']:.2f} x")
        extra = medians["fill"] - medians["floor"]
        proposed = "met" if extra <= PROPOSED_BOOKKEEPING_US else "MISSED"
        limit = PROPOSED_BOOKKEEPING_US
        print(f"  fill: the floor + {extra:.1f} µs a home (proposed: + {limit} µs at most) {proposed}")
        checks = [
            (f"watches a home: {per_home:.3f} ({watches:,} in all)", per_home <= TARGET_WATCHES),
            (f"homes notified: {notified:,} of {len(dirs):,}", notified == len(dirs)),
            (f"fill: {fill:.2f} x a cold compose", fill <= TARGET_FILL),
        ]
        met = True
        for text, ok in checks:
            met &= ok
            print(f"  {text:<44} {'met' if ok else 'MISSED'}")
    finally:
        shutil.rmtree(root)
    return 0 if met else 1


if __name__ == "__main__":
    raise SystemExit(main())
