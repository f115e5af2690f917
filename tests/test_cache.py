"""SoulCache: the same object while nothing changed, never stale, on both readers.

The staleness cases run on both ways of validating: ``notify`` with no pause
between a write and the next compose, ``stat`` with the racy window off and
a tick of the timestamp clock between them. What only one way has (the racy
window; inotify's own edges) is tested on its own, here and in
test_cache_notify.py.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from conftest import Writer, make_homes
from toolnexus.agents import BootstrapFileError, Budget, CacheStats, SoulCache, Validate, compose
from toolnexus.agents._cache import _stat as _fresh_stat


@pytest.fixture
def aged(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make every file look old enough to trust: the cache's clock runs 10 s ahead."""
    real = time.time_ns
    monkeypatch.setattr(_fresh_stat, "_clock", lambda: real() + 10_000_000_000)


@pytest.fixture
def no_racy_window(monkeypatch: pytest.MonkeyPatch) -> None:
    """Only the signature decides: shows that it alone sees each change."""
    monkeypatch.setattr(_fresh_stat, "RACY_WINDOW_NS", 0)
    real = time.time_ns
    monkeypatch.setattr(_fresh_stat, "_clock", lambda: real() + 10_000_000_000)


def tick() -> None:
    # Longer than the kernel's coarse timestamp clock (one jiffy, <= 10 ms).
    time.sleep(0.03)


class Mode:
    """A way of validating, for tests that must hold for both."""

    def __init__(self, validate: Validate, settle: Callable[[], None]) -> None:
        self.validate = validate
        self.settle = settle  # between a write and the compose that must see it

    def cache(self, maxsize: int = 1024) -> SoulCache:
        return SoulCache(maxsize, validate=self.validate)

    def stats(
        self, hits: int, misses: int, stale: int, size: int, maxsize: int = 1024, homes: int = 1
    ) -> CacheStats:
        notified = homes if self.validate == "notify" else 0
        return CacheStats(hits, misses, stale, size, maxsize, notified, homes - notified)


@pytest.fixture(params=["notify", "stat"])
def mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[Mode]:
    if request.param == "stat":
        request.getfixturevalue("no_racy_window")
        yield Mode("stat", tick)
    else:
        yield Mode("notify", lambda: None)


def test_hit_returns_the_same_object(home: Path, write: Writer, mode: Mode) -> None:
    write("SOUL.md", "soul")
    mode.settle()
    cache = mode.cache()
    first = cache.compose(home)
    assert first.text == "## SOUL.md\n\nsoul"
    assert cache.compose(home) is first
    assert cache.compose(str(home)) is first
    assert cache.compose(bytes(home)) is first
    assert cache.stats == mode.stats(hits=3, misses=1, stale=0, size=1)
    # Calls seen before skip the argument checks (a Path remembered as its
    # text, as a str says it); a path-like that is not a Path may say
    # something else each time, so it is checked every time.
    assert set(cache._calls.table) == {str(home), bytes(home)}


def test_a_path_like_is_asked_each_time(tmp_path: Path, mode: Mode) -> None:
    first, second = make_homes(tmp_path, 2)
    mode.settle()

    class Pointer:
        """A path-like whose path can be changed: the cache must not remember what it said."""

        def __init__(self) -> None:
            self.target = first

        def __fspath__(self) -> str:
            return str(self.target)

    pointer = Pointer()
    cache = mode.cache()
    assert cache.compose(pointer).text == "## SOUL.md\n\nsoul 0"
    pointer.target = second
    assert cache.compose(pointer).text == "## SOUL.md\n\nsoul 1"
    assert cache._calls.table == {}


def test_fresh_files_are_reread_but_keep_identity(home: Path, write: Writer) -> None:
    write("SOUL.md", "soul")
    cache = SoulCache(validate="stat")
    first = cache.compose(home)
    # Written just now: within the racy window, so not trusted, but re-reading
    # finds the same soul and hands back the same object.
    assert cache.compose(home) is first
    assert cache.stats == CacheStats(hits=0, misses=1, stale=1, size=1, maxsize=1024, stat_checked=1)


def test_notified_files_are_trusted_at_once(home: Path, write: Writer) -> None:
    write("SOUL.md", "soul")
    cache = SoulCache(validate="notify")
    first = cache.compose(home)
    # No racy window: the kernel reports a write before the write returns.
    assert cache.compose(home) is first
    assert cache.stats == CacheStats(hits=1, misses=1, stale=0, size=1, maxsize=1024, notified=1)


def test_same_size_rewrite_with_mtime_restored(home: Path, write: Writer, mode: Mode) -> None:
    path = write("SOUL.md", "version A")
    cache = mode.cache()
    first = cache.compose(home)
    assert first.text == "## SOUL.md\n\nversion A"
    assert cache.compose(home) is first
    mode.settle()
    before = path.stat()
    path.write_text("version B")  # same size
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))  # ctime still moves
    assert path.stat().st_size == before.st_size
    assert path.stat().st_mtime_ns == before.st_mtime_ns
    assert cache.compose(home).text == "## SOUL.md\n\nversion B"
    assert cache.stats.stale == 1


def test_swap_by_rename(home: Path, write: Writer, mode: Mode) -> None:
    write("MEMORY.md", "old memory")
    cache = mode.cache()
    assert cache.compose(home).text == "## MEMORY.md\n\nold memory"
    mode.settle()
    write("MEMORY.md.tmp", "new memory")
    os.replace(home / "MEMORY.md.tmp", home / "MEMORY.md")
    assert cache.compose(home).text == "## MEMORY.md\n\nnew memory"


def test_added_and_deleted_files(home: Path, write: Writer, mode: Mode) -> None:
    write("SOUL.md", "soul")
    cache = mode.cache()
    assert cache.compose(home).found == ("SOUL.md",)
    write("AGENTS.md", "agents")
    mode.settle()
    assert cache.compose(home).found == ("AGENTS.md", "SOUL.md")
    (home / "SOUL.md").unlink()
    mode.settle()
    assert cache.compose(home).text == "## AGENTS.md\n\nagents"
    (home / "AGENTS.md").unlink()
    mode.settle()
    assert cache.compose(home).text == ""


def test_file_turned_into_a_symlink(tmp_path: Path, home: Path, write: Writer, mode: Mode) -> None:
    write("SOUL.md", "same words")
    (tmp_path / "elsewhere.md").write_text("same words")
    cache = mode.cache()
    first = cache.compose(home)
    (home / "SOUL.md").unlink()
    (home / "SOUL.md").symlink_to(tmp_path / "elsewhere.md")
    mode.settle()
    # follow: the same text, re-read; its report now says SOUL.md is reached through a symlink.
    again = cache.compose(home)
    assert (again.text, first.files[1].symlink, again.files[1].symlink) == (first.text, False, True)
    assert cache.compose(home) is again
    assert cache.stats.stale == 1
    # within: the cached "within" soul must not survive the swap to an outside link.
    within = mode.cache()
    (home / "SOUL.md").unlink()
    write("SOUL.md", "inside")
    assert within.compose(home, symlinks="within").text == "## SOUL.md\n\ninside"
    (home / "SOUL.md").unlink()
    (home / "SOUL.md").symlink_to(tmp_path / "elsewhere.md")
    mode.settle()
    assert within.compose(home, symlinks="within").text == ""


def test_symlink_retargeted(home: Path, write: Writer, mode: Mode) -> None:
    write("a.md", "first target")
    write("b.md", "second target")
    (home / "USER.md").symlink_to("a.md")
    cache = mode.cache()
    assert cache.compose(home).text == "## USER.md\n\nfirst target"
    (home / "USER.md").unlink()
    (home / "USER.md").symlink_to("b.md")
    mode.settle()
    assert cache.compose(home).text == "## USER.md\n\nsecond target"
    assert cache.compose(home, symlinks="refuse").text == ""


def test_options_are_part_of_the_key(home: Path, write: Writer, mode: Mode) -> None:
    write("SOUL.md", "abcdef")
    mode.settle()
    cache = mode.cache()
    full = cache.compose(home)
    capped = cache.compose(home, max_file_bytes=3)
    assert capped.text == "## SOUL.md\n\nabc\n[truncated: exceeds 3 bytes bootstrap cap]"
    assert full.text == "## SOUL.md\n\nabcdef"
    assert cache.compose(home, max_file_bytes=3) is capped
    assert cache.compose(home, symlinks="refuse") is not full
    assert len(cache) == 3


def test_lru_eviction(tmp_path: Path, mode: Mode) -> None:
    homes = []
    for name in ("a", "b", "c"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "SOUL.md").write_text(name)
        homes.append(tmp_path / name)
    mode.settle()
    cache = mode.cache(maxsize=2)
    first_a = cache.compose(homes[0])
    cache.compose(homes[1])
    assert cache.compose(homes[0]) is first_a  # a is now the most recent
    cache.compose(homes[2])  # evicts b
    assert cache.compose(homes[0]) is first_a
    cache.compose(homes[1])
    assert cache.stats == mode.stats(hits=2, misses=4, stale=0, size=2, maxsize=2, homes=2)


def test_invalidate_and_clear(home: Path, write: Writer, mode: Mode) -> None:
    write("SOUL.md", "soul")
    mode.settle()
    cache = mode.cache()
    first = cache.compose(home)
    cache.compose(home, max_file_bytes=2)
    assert cache.invalidate(home) == 2
    assert cache.invalidate(home) == 0
    second = cache.compose(home)
    assert second is not first
    assert second == first
    cache.clear()
    assert cache.stats == CacheStats(hits=0, misses=0, stale=0, size=0, maxsize=1024)
    assert repr(cache) == (
        f"SoulCache(size=0, maxsize=1024, validate={mode.validate!r}, hits=0, misses=0, stale=0, "
        "notified=0, stat_checked=0)"
    )


def test_strict_raises_from_the_cache_too(home: Path, mode: Mode) -> None:
    (home / "USER.md").mkdir()
    mode.settle()
    cache = mode.cache()
    for _ in range(2):
        with pytest.raises(BootstrapFileError) as caught:
            cache.compose(home, strict=True)
        assert caught.value.filename == os.path.join(str(home), "USER.md")
    assert cache.compose(home).found == ()
    assert cache.stats.hits == 2


def test_missing_directory_is_cached_and_then_found(tmp_path: Path, mode: Mode) -> None:
    home = tmp_path / "later" / "home"
    cache = mode.cache()
    assert cache.compose(home).text == ""
    assert cache.compose(home).text == ""
    home.mkdir(parents=True)
    mode.settle()
    assert cache.compose(home).text == ""
    (home / "SOUL.md").write_text("arrived")
    mode.settle()
    assert cache.compose(home).text == "## SOUL.md\n\narrived"


def test_threads_share_one_cache(tmp_path: Path, mode: Mode) -> None:
    homes = make_homes(tmp_path, 8)
    mode.settle()
    cache = mode.cache(maxsize=4)
    expected = {str(h): compose(h).text for h in homes}
    barrier = threading.Barrier(4)

    def work(worker: int) -> list[bool]:
        barrier.wait()
        return [
            cache.compose(homes[(worker + i) % 8]).text == expected[str(homes[(worker + i) % 8])]
            for i in range(200)
        ]

    with ThreadPoolExecutor(max_workers=4) as pool:
        results = [ok for batch in pool.map(work, range(4)) for ok in batch]
    assert all(results)
    stats = cache.stats
    assert stats.hits + stats.misses + stats.stale == 800
    assert stats.size <= 4


@pytest.mark.reader_independent
@pytest.mark.parametrize(
    ("value", "error", "message"),
    [
        (0, ValueError, "maxsize must be >= 1, got 0"),
        (True, TypeError, "maxsize must be an int, not bool"),
        (1.5, TypeError, "maxsize must be an int, not float"),
    ],
)
def test_bad_maxsize(value: object, error: type[Exception], message: str) -> None:
    with pytest.raises(error) as caught:
        SoulCache(value)  # type: ignore[arg-type]
    assert str(caught.value) == message


@pytest.mark.reader_independent
def test_bad_validate() -> None:
    with pytest.raises(ValueError, match=r"^validate must be one of 'auto', 'notify', 'stat', not 'poll'$"):
        SoulCache(validate="poll")  # type: ignore[arg-type]


def test_bad_arguments_name_themselves(tmp_path: Path) -> None:
    cache = SoulCache()
    with pytest.raises(TypeError, match=r"^dir must be str, bytes or os.PathLike, not int$"):
        cache.compose(3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"^symlinks must be"):
        cache.compose(tmp_path, symlinks="sometimes")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"^strict must be a bool, not int$"):
        cache.compose(tmp_path, strict=1)  # type: ignore[arg-type]


def test_a_budget_made_per_call_keeps_one_entry(tmp_path: Path, mode: Mode) -> None:
    # The budgets guide's token recipe inside a session handler: a fresh Budget, a fresh count, each call.
    homes = make_homes(tmp_path, 3)
    mode.settle()
    with mode.cache(maxsize=3) as cache:
        for home in homes[1:]:
            cache.compose(home)
        souls = [
            cache.compose(homes[0], budget=Budget(total=100, count=lambda text: len(text.split())))
            for _ in range(50)
        ]
        assert len(cache) == 3  # one entry for homes[0] and that budget's shape; the others stay
        assert all(soul.text == "## SOUL.md\n\nsoul 0" for soul in souls)
        assert cache.stats.hits == 0  # a new count each time: composed each time, as it must be
        # Each is a soul the cache never held (another count): a miss, not a changed file.
        assert (cache.stats.misses, cache.stats.stale) == (2 + 50, 0)
        # Made once, a budget hits.
        budget = Budget(total=100, count=lambda text: len(text.split()))
        first = cache.compose(homes[0], budget=budget)
        assert cache.compose(homes[0], budget=budget) is first
        assert (cache.stats.hits, len(cache)) == (1, 3)
        assert [cache.compose(home) for home in homes[1:]] == [compose(home) for home in homes[1:]]
        assert cache.stats.hits == 3  # the other homes were never pushed out
        # A file that shaped it changed: composed again for the same budget, stale.
        (homes[0] / "SOUL.md").write_text("soul 0, edited")
        mode.settle()
        assert cache.compose(homes[0], budget=budget).text == "## SOUL.md\n\nsoul 0, edited"
        assert (cache.stats.misses, cache.stats.stale) == (2 + 50 + 1, 1)
