"""Many homes at once: ``compose_many`` over an executor, and asyncio wrappers.

Homes are handed out in chunks, so the per-task cost of an executor is paid
once per chunk, not once per home. Threads are the default: the compiled
reader does a chunk's I/O and most of its decoding without the GIL. Any
``concurrent.futures.Executor`` works, a process pool included:
``compose_homes``, its options and ``Soul`` pickle.

The default threads are kept between calls, one pool per worker count:
fresh threads would start with fresh malloc arenas and fault in every page
of the souls they build (measured: a third of the speed-up gone).
"""

from __future__ import annotations

import asyncio
import functools
import os
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import (
    FIRST_EXCEPTION,
    Executor,
    Future,
    ThreadPoolExecutor,
    wait,
)
from typing import TYPE_CHECKING, Final, cast

from ._cache import SoulCache, compose_through, lookup_in_loop
from ._compose import compose_homes, compose_text
from ._options import ComposeOptions, Options, PathArg, check_int, check_options, home_path, takes_options
from ._report import Soul

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["acompose", "acompose_soul", "compose_many"]

# Homes per task: large enough to hide an executor's per-task cost (tens of
# µs), small enough that two workers finish close together.
_CHUNK: Final = 64


class _SharedPools:
    """Thread pools kept between calls, one per worker count."""

    def __init__(self) -> None:
        self.forget()

    def forget(self) -> None:
        # Also what a forked child does: it has none of its parent's threads,
        # and a lock that was held at the fork would never be released.
        self._lock = threading.Lock()
        self._pools: dict[int, ThreadPoolExecutor] = {}

    def get(self, workers: int) -> ThreadPoolExecutor:
        with self._lock:
            pool = self._pools.get(workers)
            if pool is None:
                pool = ThreadPoolExecutor(workers, thread_name_prefix="toolnexus-soul")
                self._pools[workers] = pool
            return pool


_POOLS = _SharedPools()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_POOLS.forget)


@takes_options
def compose_many(
    dirs: Iterable[PathArg],
    *,
    workers: int | None = None,
    executor: Executor | None = None,
    cache: SoulCache | None = None,
    **options: Unpack[ComposeOptions],
) -> list[Soul]:
    """``compose`` every directory of ``dirs``, with its options; the souls come back in input order.

    ``workers`` is the number of threads (default: the number of CPUs), from
    a pool kept for later calls; ``executor`` uses yours instead (threads,
    processes, anything that implements ``concurrent.futures.Executor``).
    If a home fails (``strict=True`` and a file that cannot be used), the
    homes not yet started are cancelled, those running finish, and the first
    failure in input order is raised; its message names the file and so the
    directory. With a ``cache``, the homes it holds come from it, as
    ``cache.compose`` would give them, and only the rest are composed (and
    cached), on threads of this process: a cache takes the default threads or
    a ``ThreadPoolExecutor``, and any other executor is a ValueError.
    """
    homes = _homes(dirs)
    checked = check_options(options, "compose_many")
    if executor is not None and workers is not None:
        raise ValueError("give workers or executor, not both")
    if workers is not None:
        workers = check_int(workers, "workers", 1)
    if executor is not None and not isinstance(executor, Executor):
        raise TypeError(f"executor must be a concurrent.futures.Executor, not {type(executor).__name__}")
    if cache is not None and not isinstance(cache, SoulCache):
        raise TypeError(f"cache must be a SoulCache or None, not {type(cache).__name__}")
    if cache is not None and executor is not None and not isinstance(executor, ThreadPoolExecutor):
        # The cache watches before it reads: only what this process reads can be cached, never stale.
        raise ValueError(
            "cache needs this process's threads: give workers, or a ThreadPoolExecutor as executor,"
            f" not a {type(executor).__name__}"
        )
    if not homes:
        return []
    pool = executor if executor is not None else _POOLS.get(workers or os.cpu_count() or 1)
    if cache is None:
        return _run(pool, _chunks(homes), checked, compose_homes)
    return compose_through(
        cache, homes, checked, lambda missing, into: _run(pool, _chunks(missing), checked, into)
    )


def _chunks(homes: list[bytes]) -> list[list[bytes]]:
    return [homes[i : i + _CHUNK] for i in range(0, len(homes), _CHUNK)]


def _homes(dirs: object) -> list[bytes]:
    """``dirs`` as checked homes' paths; a single path, or no iterable at all, is a TypeError."""
    if isinstance(dirs, (str, bytes, os.PathLike)):
        # A str is iterable: "abc" would compose three homes a, b and c.
        raise TypeError(f"dirs must be an iterable of paths, not a single path ({type(dirs).__name__})")
    try:
        items = iter(cast("Iterable[object]", dirs))
    except TypeError:
        raise TypeError(f"dirs must be an iterable of paths, not {type(dirs).__name__}") from None
    homes = []
    for index, item in enumerate(items):
        try:
            homes.append(home_path(item))
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"dirs[{index}]: {exc}") from None
    return homes


def _run(
    executor: Executor,
    chunks: list[list[bytes]],
    options: Options,
    compose: Callable[[list[bytes], Options], list[Soul]],
) -> list[Soul]:
    futures: list[Future[list[Soul]]] = []
    try:
        # One reader call per chunk: the compiled reader does all of its I/O
        # without the GIL, so another worker assembles souls meanwhile.
        # extend() keeps what was submitted before a failing submit, to cancel it.
        futures.extend(executor.submit(compose, chunk, options) for chunk in chunks)
        wait(futures, return_when=FIRST_EXCEPTION)
    finally:
        # After a failure (or an interrupt), cancel what has not started and
        # let what runs finish, so nothing goes on reading behind our back.
        for future in futures:
            future.cancel()
        wait(futures)
    for future in futures:
        if not future.cancelled() and (failure := future.exception()) is not None:
            raise failure  # the first failure in input order
    return [soul for future in futures for soul in future.result()]


@takes_options
async def acompose(
    dir: PathArg, *, cache: SoulCache | None = None, **options: Unpack[ComposeOptions]
) -> Soul:
    """``compose`` in a worker thread, so the event loop never blocks on disk.

    Takes ``compose``'s options (checked in the loop). With a ``cache``, as
    ``cache.compose``; a home that notification keeps fresh is looked up in
    the loop itself (no disk is touched), and only a miss, or a home
    validated by ``stat``, goes to a thread.
    """
    home = home_path(dir)
    checked = check_options(options, "acompose")
    work: Callable[[], list[Soul]]
    if cache is None:
        work = functools.partial(compose_homes, [home], checked)
    else:
        if not isinstance(cache, SoulCache):
            raise TypeError(f"cache must be a SoulCache or None, not {type(cache).__name__}")
        soul = lookup_in_loop(cache, home, checked)
        if soul is not None:
            return soul
        # What the cache misses is composed in the same thread.
        work = functools.partial(
            compose_through, cache, [home], checked, lambda missing, into: into(missing, checked)
        )
    (soul,) = await asyncio.get_running_loop().run_in_executor(None, work)
    return soul


@takes_options
async def acompose_soul(dir: PathArg, **options: Unpack[ComposeOptions]) -> tuple[str, list[str]]:
    """``compose_soul`` in a worker thread, so the event loop never blocks on disk.

    Takes ``compose``'s options, checked in the loop.
    """
    home = home_path(dir)
    checked = check_options(options, "acompose_soul")
    work = functools.partial(compose_text, home, checked)
    return await asyncio.get_running_loop().run_in_executor(None, work)
