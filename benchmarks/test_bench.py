"""pytest-benchmark: compiled reader, pure reader, baseline and floors, side by side.

    python -m pytest benchmarks -n0 --benchmark-enable --benchmark-group-by=group

Each benchmark is one pass over a whole scenario (500 typical homes, 2 large
homes of mixed scripts, 2 of dense scripts, 500 empty homes); groups put the
contenders of a scenario together.
Without ``--benchmark-enable`` (as in CI) every pass runs once, untimed.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from pytest_benchmark.fixture import BenchmarkFixture

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # twins: the reader swap

from floor import DecodeFloor, SyscallFloor, TranscodeFloor
from scenarios import baseline_compose_soul, make_dense, make_empty, make_large, make_typical
from toolnexus.agents import (
    MAX_BOOTSTRAP_FILE_BYTES,
    Budget,
    SoulCache,
    compose,
    compose_many,
    compose_soul,
)
from toolnexus.agents._cache import _stat as _fresh_stat
from twins import ReaderName, using

# Smaller than compare.py's defaults: pytest-benchmark repeats each pass many times.
TYPICAL_HOMES = 500
LARGE_HOMES = 2

SCENARIOS = ("typical", "large", "dense", "empty")
READERS: tuple[ReaderName, ...] = ("compiled", "pure")


@pytest.fixture(scope="module")
def scenario_dirs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[str]]:
    """The scenarios' homes, generated once for the module."""
    root = tmp_path_factory.mktemp("bench")
    return {
        "typical": make_typical(root, TYPICAL_HOMES),
        "large": make_large(root, LARGE_HOMES),
        "dense": make_dense(root, LARGE_HOMES),
        "empty": make_empty(root, TYPICAL_HOMES),
    }


def _over(func: Callable[[str], object], dirs: list[str]) -> Callable[[], None]:
    def one_pass() -> None:
        for directory in dirs:
            func(directory)

    return one_pass


@pytest.mark.parametrize("scenario", SCENARIOS)
@pytest.mark.parametrize("kind", READERS)
def test_reader(
    benchmark: BenchmarkFixture, scenario_dirs: dict[str, list[str]], scenario: str, kind: ReaderName
) -> None:
    benchmark.group = scenario
    with using(kind):
        benchmark(_over(compose_soul, scenario_dirs[scenario]))


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_baseline(benchmark: BenchmarkFixture, scenario_dirs: dict[str, list[str]], scenario: str) -> None:
    benchmark.group = scenario
    benchmark(_over(baseline_compose_soul, scenario_dirs[scenario]))


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_syscall_floor(
    benchmark: BenchmarkFixture, scenario_dirs: dict[str, list[str]], scenario: str
) -> None:
    benchmark.group = scenario
    benchmark(SyscallFloor(scenario_dirs[scenario], MAX_BOOTSTRAP_FILE_BYTES))


@pytest.mark.parametrize("scenario", ["large", "dense"])
def test_decode_floor(
    benchmark: BenchmarkFixture, scenario_dirs: dict[str, list[str]], scenario: str
) -> None:
    benchmark.group = scenario
    benchmark(_over(DecodeFloor(MAX_BOOTSTRAP_FILE_BYTES), scenario_dirs[scenario]))


@pytest.mark.parametrize("scenario", ["large", "dense"])
def test_transcode_floor(
    benchmark: BenchmarkFixture, scenario_dirs: dict[str, list[str]], scenario: str
) -> None:
    benchmark.group = scenario
    benchmark(TranscodeFloor(scenario_dirs[scenario], MAX_BOOTSTRAP_FILE_BYTES))


@pytest.mark.parametrize("how", ["cold compose", "warm cache, stat", "warm cache, auto", "compose_many x2"])
def test_many(
    benchmark: BenchmarkFixture,
    monkeypatch: pytest.MonkeyPatch,
    scenario_dirs: dict[str, list[str]],
    how: str,
) -> None:
    dirs = scenario_dirs["typical"]
    benchmark.group = "many (typical, compiled)"
    if how == "cold compose":
        benchmark(_over(compose, dirs))
    elif how.startswith("warm cache"):
        # The files were just written: move the cache's clock past the racy
        # window instead of sleeping, so that warm stat-validated calls are hits.
        real = _fresh_stat._clock
        monkeypatch.setattr(_fresh_stat, "_clock", lambda: real() + 10 * _fresh_stat.RACY_WINDOW_NS)
        cache = SoulCache(maxsize=len(dirs), validate="stat" if how.endswith("stat") else "auto")
        _over(cache.compose, dirs)()
        benchmark(_over(cache.compose, dirs))
        assert cache.stats.misses == len(dirs)
    else:
        benchmark(lambda: compose_many(dirs, workers=2))


@pytest.mark.parametrize("kind", READERS)
@pytest.mark.parametrize("budget", [None, Budget(total=20_000)], ids=["no budget", "total 20,000"])
def test_budget(
    benchmark: BenchmarkFixture,
    scenario_dirs: dict[str, list[str]],
    kind: ReaderName,
    budget: Budget | None,
) -> None:
    benchmark.group = "budget (large)"
    with using(kind):
        benchmark(_over(lambda d: compose(d, budget=budget), scenario_dirs["large"]))


def test_all_contenders_compose_the_same_souls(scenario_dirs: dict[str, list[str]]) -> None:
    # Not a benchmark: the contenders must do the same job for the table to mean anything.
    for directory in scenario_dirs["typical"][:50]:
        with using("pure"):
            pure = compose_soul(directory)
        assert compose_soul(directory) == pure
        assert baseline_compose_soul(directory)[1] == pure[1]


SCRIPTS = sorted(
    path.name
    for path in Path(__file__).parent.glob("*.py")
    if path.name != "test_bench.py" and 'if __name__ == "__main__":' in path.read_text(encoding="utf-8")
)


@pytest.mark.parametrize("script", SCRIPTS)
def test_every_script_answers_help(script: str) -> None:
    # --help says what a script does and exits at once (callgrind.py once
    # started a two-minute valgrind run instead).
    done = subprocess.run(
        [sys.executable, str(Path(__file__).parent / script), "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.startswith("usage: ")
