"""What the cyclic garbage collector walks: a soul nothing (one object with a count function), a cache a few.

A full collection walks every object on the collector's lists; a host that
keeps souls, or a ``SoulCache`` of 100,000 homes, must not make each of them
pause it (docs/performance.md). Counted with ``gc.get_objects()`` after full
collections, which take plain tuples of atomic values off the lists as
CPython does: deterministic, no clock.
"""

from __future__ import annotations

import gc
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Final

import pytest

from toolnexus.agents import Budget, Soul, SoulCache, compose

EXAMPLE: Final = Path(__file__).resolve().parents[1] / "examples" / "aster"
HOMES: Final = 60  # more than ONCE: one object more a home would show
# Objects the collector walks that are the process's, not the homes': a list
# to hold the souls, a cache and what it keeps once (its dicts, its queue's).
ONCE: Final = 40


def homes(root: Path, count: int = HOMES) -> list[Path]:
    """``count`` copies of the example persona (six files, 1.4 KB of soul)."""
    made = []
    for index in range(count):
        home = root / f"{index // 50:02d}" / f"home-{index:04d}"
        shutil.copytree(EXAMPLE, home)
        made.append(home)
    return made


def collected() -> int:
    """Objects on the collector's lists after full collections (each takes plain tuples off, a level)."""
    for _ in range(3):
        gc.collect()
    return len(gc.get_objects())


def walked(make: Callable[[], object]) -> tuple[int, object]:
    """How many more objects the collector walks once ``make()`` is made, and kept.

    Counts the whole process: a thread an earlier test left running may add
    a few (its frames), so the bounds below leave ``ONCE`` for them; one
    object more a home still shows (``HOMES`` is more than ``ONCE``).
    """
    before = collected()
    kept = make()
    return collected() - before, kept


def held(make: Callable[[], object]) -> tuple[int, object]:
    """The objects on the collector's lists that ``make()`` made and its result holds, and the result.

    Exact whatever else the process does: only what is reachable from the
    result and was not there before is counted.
    """
    collected()
    there = gc.get_objects()  # kept alive, so that no new object takes one of their ids
    old = {id(each) for each in there}
    kept = make()
    collected()
    seen: set[int] = set()
    todo = [kept]
    count = 0
    while todo:
        each = todo.pop()
        if id(each) in seen or id(each) in old:
            continue
        seen.add(id(each))
        count += gc.is_tracked(each)
        todo.extend(gc.get_referents(each))
    del there
    return count, kept


@pytest.mark.parametrize("budget", [None, Budget(total=600)], ids=["plain", "characters"])
def test_a_soul_is_nothing_for_the_collector(tmp_path: Path, budget: Budget | None) -> None:
    dirs = homes(tmp_path)
    compose(dirs[0], budget=budget)  # what a first compose makes once (a missing file's report, cached)
    count, souls = held(lambda: [compose(home, budget=budget) for home in dirs])
    assert isinstance(souls, list)
    assert [type(soul) for soul in souls] == [Soul] * HOMES
    assert [gc.is_tracked(soul) for soul in souls] == [False] * HOMES
    assert count == 1  # their list: nothing in a soul can lead back to it, so it is not walked
    walks, _ = walked(lambda: [compose(home, budget=budget) for home in dirs])
    assert walks <= 1 + ONCE  # and nothing kept elsewhere, a home
    assert [soul.files for soul in souls] == [compose(home, budget=budget).files for home in dirs]


@pytest.mark.parametrize("share", [1, 2])
def test_a_soul_under_a_count_function_is_one_object_for_the_collector(tmp_path: Path, share: int) -> None:
    dirs = homes(tmp_path)
    words = len(compose(dirs[0]).text.split())
    budget = Budget(total=words // share, count=lambda text: len(text.split()))  # made once, shared
    compose(dirs[0], budget=budget)
    count, souls = held(lambda: [compose(home, budget=budget) for home in dirs])
    assert isinstance(souls, list)
    assert all(bool(soul.cut_files) == (share > 1) for soul in souls)  # held whole, or cut
    # The host's count function might lead back to the soul: it stays on the lists.
    assert [gc.is_tracked(soul) for soul in souls] == [True] * HOMES
    assert count == HOMES + 1  # the souls and their list
    walks, _ = walked(lambda: [compose(home, budget=budget) for home in dirs])
    assert walks <= HOMES + 1 + ONCE  # and nothing kept elsewhere, a home


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify is Linux's")
@pytest.mark.parametrize("validate", ["notify", "stat"])
def test_a_cache_keeps_nothing_a_home_for_the_collector(tmp_path: Path, validate: str) -> None:
    dirs = homes(tmp_path)
    with SoulCache(maxsize=HOMES, validate=validate) as cache:  # type: ignore[arg-type]
        cache.compose(dirs[0])
        count, _ = walked(lambda: [cache.compose(home) for home in dirs[1:]])
        assert cache.stats.size == HOMES
        assert count <= ONCE  # nothing for each home: its soul, keys and records are off the lists
        assert [cache.compose(home) for home in dirs] == [compose(home) for home in dirs]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify is Linux's")
def test_a_cache_of_budgeted_souls_keeps_at_most_two_objects_a_home(tmp_path: Path) -> None:
    dirs = homes(tmp_path)
    budget = Budget(total=600, count=lambda text: len(text.split()))
    with SoulCache(maxsize=HOMES) as cache:
        cache.compose(dirs[0], budget=budget)
        count, _ = walked(lambda: [cache.compose(home, budget=budget) for home in dirs[1:]])
        # The soul, and the call's arguments it remembers (they hold the budget, an object of the host's).
        assert count <= 2 * (HOMES - 1) + ONCE
        assert all(cache.compose(home, budget=budget) is cache.compose(home, budget=budget) for home in dirs)
