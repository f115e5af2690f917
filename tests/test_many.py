"""compose_many and the asyncio wrappers, on both readers."""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import re
import signal
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import Executor, Future, ProcessPoolExecutor, ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

import pytest

from conftest import fork
from toolnexus.agents import (
    BootstrapFileError,
    Soul,
    SoulCache,
    _native,
    acompose,
    acompose_soul,
    compose,
    compose_many,
    compose_soul,
)
from toolnexus.agents._vocabulary import Composed, Excerpt

T = TypeVar("T")


def make_homes(root: Path, count: int) -> list[Path]:
    homes = []
    for index in range(count):
        home = root / f"home-{index:03d}"
        home.mkdir()
        if index % 3:
            (home / "SOUL.md").write_text(f"soul {index}")
        if index % 5 == 0:
            (home / "MEMORY.md").write_text("m" * (index + 1))
        homes.append(home)
    return homes


def test_order_and_content(tmp_path: Path) -> None:
    homes = make_homes(tmp_path, 150)  # several chunks
    souls = compose_many(homes)
    assert souls == [compose(h) for h in homes]
    assert souls[1].text == "## SOUL.md\n\nsoul 1"
    assert souls[0].text == "## MEMORY.md\n\nm"


@pytest.mark.parametrize("workers", [1, 2, 7])
def test_workers(tmp_path: Path, workers: int) -> None:
    homes = make_homes(tmp_path, 70)
    assert compose_many(homes, workers=workers, max_file_bytes=3) == [
        compose(h, max_file_bytes=3) for h in homes
    ]


def test_own_executor_stays_open(tmp_path: Path) -> None:
    homes = make_homes(tmp_path, 10)
    with ThreadPoolExecutor(max_workers=3) as pool:
        assert compose_many(homes, executor=pool) == [compose(h) for h in homes]
        assert pool.submit(lambda: 42).result() == 42


def test_empty_input() -> None:
    assert compose_many([]) == []
    assert compose_many(iter(())) == []


def test_strict_failure_names_the_directory(tmp_path: Path) -> None:
    homes = make_homes(tmp_path, 200)
    (homes[137] / "TOOLS.md").mkdir()
    (homes[190] / "USER.md").mkdir()
    with ThreadPoolExecutor(max_workers=2) as pool:
        with pytest.raises(BootstrapFileError) as caught:
            compose_many(homes, executor=pool, strict=True)
        assert caught.value.filename == os.path.join(str(homes[137]), "TOOLS.md")
        assert str(homes[137]) in str(caught.value)
        # Nothing left running or queued: the pool takes new work at once.
        assert pool.submit(lambda: "free").result(timeout=5) == "free"
    # Without strict, the same homes compose.
    assert len(compose_many(homes, strict=False)) == 200


def test_bad_items_are_named_by_index(tmp_path: Path) -> None:
    with pytest.raises(TypeError) as caught:
        compose_many([tmp_path, tmp_path, 3])  # type: ignore[list-item]
    assert str(caught.value) == "dirs[2]: dir must be str, bytes or os.PathLike, not int"
    with pytest.raises(ValueError, match=r"^dirs\[0\]: dir must not contain a NUL byte$"):
        compose_many(["a\0b"])


@pytest.mark.parametrize(
    ("dirs", "message"),
    [
        ("abc", "dirs must be an iterable of paths, not a single path (str)"),
        (b"abc", "dirs must be an iterable of paths, not a single path (bytes)"),
        (Path("abc"), "dirs must be an iterable of paths, not a single path (PosixPath)"),
        (None, "dirs must be an iterable of paths, not NoneType"),
        (42, "dirs must be an iterable of paths, not int"),
    ],
)
def test_dirs_must_be_many_paths(dirs: object, message: str) -> None:
    if isinstance(dirs, Path) and sys.platform == "win32":
        message = message.replace("PosixPath", "WindowsPath")
    with pytest.raises(TypeError) as caught:
        compose_many(dirs)  # type: ignore[arg-type]
    assert str(caught.value) == message


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"workers": True}, TypeError, "workers must be an int, not bool"),
        ({"workers": 1.5}, TypeError, "workers must be an int, not float"),
        ({"executor": "x"}, TypeError, "executor must be a concurrent.futures.Executor, not str"),
    ],
)
def test_bad_option_types(
    tmp_path: Path, kwargs: dict[str, object], error: type[Exception], message: str
) -> None:
    with pytest.raises(error) as caught:
        compose_many([tmp_path], **kwargs)  # type: ignore[arg-type]
    assert str(caught.value) == message


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"workers": 0}, "workers must be >= 1, got 0"),
        ({"workers": 2, "executor": ThreadPoolExecutor(1)}, "give workers or executor, not both"),
        ({"max_file_bytes": 0}, "max_file_bytes must be between 1 and 9223372036854775806, got 0"),
        ({"symlinks": "maybe"}, "symlinks must be 'follow', 'within' or 'refuse', got 'maybe'"),
    ],
)
def test_bad_options(tmp_path: Path, kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)) as caught:
        compose_many([tmp_path], **kwargs)  # type: ignore[arg-type]
    assert str(caught.value) == message
    executor = kwargs.get("executor")
    if isinstance(executor, ThreadPoolExecutor):
        executor.shutdown()


class _Inline(Executor):
    """An executor of another kind than threads: it runs each task where it is submitted."""

    def submit(self, fn: Callable[..., T], /, *args: object, **kwargs: object) -> Future[T]:
        future: Future[T] = Future()
        future.set_result(fn(*args, **kwargs))
        return future


@pytest.mark.reader_independent  # refused before anything is read
@pytest.mark.parametrize("kind", [ProcessPoolExecutor, _Inline])
def test_a_cache_takes_threads_only(tmp_path: Path, kind: Callable[[], Executor]) -> None:
    # A cache watches a home before it reads it; a soul read elsewhere could be cached stale.
    executor = kind()
    with SoulCache() as cache, pytest.raises(ValueError, match=r"^cache needs") as caught:
        compose_many([tmp_path], executor=executor, cache=cache)
    executor.shutdown()
    assert str(caught.value) == (
        "cache needs this process's threads: give workers, or a ThreadPoolExecutor as executor,"
        f" not a {type(executor).__name__}"
    )
    with SoulCache() as cache, ThreadPoolExecutor(1) as threads:
        assert compose_many([tmp_path], executor=threads, cache=cache) == [compose(tmp_path)]


@pytest.mark.reader_independent  # the workers import the package afresh, with its default reader
def test_process_pool(tmp_path: Path) -> None:
    # Chunks and Souls cross a process boundary (pickled both ways).
    homes = make_homes(tmp_path, 80)
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=2, mp_context=context) as pool:
        souls = compose_many(homes, executor=pool)
    assert souls == [compose(h) for h in homes]
    assert all(isinstance(s, Soul) for s in souls)
    assert souls[5].digest == compose(homes[5]).digest


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_shared_pool_survives_a_fork(tmp_path: Path) -> None:
    homes = make_homes(tmp_path, 130)
    expected = [compose(h).text for h in homes]
    assert [s.text for s in compose_many(homes, workers=2)] == expected  # the pool now exists
    pid = fork()
    if pid == 0:  # child: the parent's pool threads are gone; a new pool must be made
        ok = False
        try:
            ok = [s.text for s in compose_many(homes, workers=2)] == expected
        finally:
            os._exit(0 if ok else 1)
    deadline = time.monotonic() + 60
    while (done := os.waitpid(pid, os.WNOHANG)) == (0, 0):
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            pytest.fail("compose_many hung in a forked child")
        time.sleep(0.01)
    assert os.waitstatus_to_exitcode(done[1]) == 0


def test_async_wrappers_run_off_the_event_loop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (home,) = make_homes(tmp_path, 1)
    (home / "SOUL.md").write_text("async soul")
    threads: list[int] = []
    reader = _native.reader

    class Recording:
        """The reader, noting the thread of each compose."""

        def compose_homes(self, *args: Any) -> list[Composed]:
            threads.append(threading.get_ident())
            return reader.compose_homes(*args)

        def read_excerpts(self, *args: Any) -> tuple[Excerpt, ...]:
            return reader.read_excerpts(*args)

        def decode_utf8(self, data: bytes | memoryview) -> str:
            return reader.decode_utf8(data)

        def untrack(self, value: object) -> None:
            reader.untrack(value)

    monkeypatch.setattr(_native, "reader", Recording())

    async def main() -> tuple[Soul, tuple[str, list[str]], int]:
        soul = await acompose(home, symlinks="within")
        pair = await acompose_soul(home, max_file_bytes=5)
        return soul, pair, threading.get_ident()

    soul, pair, loop_thread = asyncio.run(main())
    assert soul.text == "## SOUL.md\n\nasync soul\n\n## MEMORY.md\n\nm"
    assert pair == compose_soul(home, max_file_bytes=5)
    assert pair[0] == "## SOUL.md\n\nasync\n[truncated: exceeds 5 bytes bootstrap cap]\n\n## MEMORY.md\n\nm"
    assert len(threads) == 3
    assert loop_thread not in threads[:2]


def test_async_errors_propagate(tmp_path: Path) -> None:
    (tmp_path / "SOUL.md").mkdir()

    async def main() -> None:
        await acompose(tmp_path, strict=True)

    with pytest.raises(BootstrapFileError):
        asyncio.run(main())
