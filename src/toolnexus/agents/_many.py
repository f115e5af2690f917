"""Many homes at once: ``compose_many`` over an executor, and asyncio wrappers.

Homes are handed out in chunks, so the per-task cost of an executor is paid
once per chunk, not once per home. Threads are the default: the compiled
reader releases the GIL for its I/O. Any ``concurrent.futures.Executor``
works, a process pool included: ``_compose_chunk`` and ``Soul`` pickle.
"""

from __future__ import annotations

import asyncio
import functools
import os
from collections.abc import Iterable
from concurrent.futures import FIRST_EXCEPTION, Executor, Future, ThreadPoolExecutor, wait
from typing import Final

from ._compose import MAX_BOOTSTRAP_FILE_BYTES, SymlinkPolicy, _check_cap, _check_policy, _dir_bytes
from ._compose import compose as _compose
from ._compose import compose_soul as _compose_soul
from ._report import Soul

__all__ = ["acompose", "acompose_soul", "compose_many"]

PathArg = str | bytes | os.PathLike[str] | os.PathLike[bytes]

# Homes per task: large enough to hide an executor's per-task cost (tens of
# µs), small enough that two workers finish close together.
_CHUNK: Final = 64


def _compose_chunk(
    dirs: list[bytes], max_file_bytes: int, symlinks: SymlinkPolicy, strict: bool
) -> list[Soul]:
    return [_compose(d, max_file_bytes=max_file_bytes, symlinks=symlinks, strict=strict) for d in dirs]


def compose_many(
    dirs: Iterable[PathArg],
    *,
    workers: int | None = None,
    executor: Executor | None = None,
    max_file_bytes: int = MAX_BOOTSTRAP_FILE_BYTES,
    symlinks: SymlinkPolicy = "follow",
    strict: bool = False,
) -> list[Soul]:
    """``compose`` every directory of ``dirs``; the souls come back in input order.

    ``workers`` sizes the thread pool made for the call (default: the number
    of CPUs); ``executor`` uses yours instead (threads, processes, anything
    that implements ``concurrent.futures.Executor``) and leaves it running.
    If a home fails (``strict=True`` and a file that cannot be used), the
    homes not yet started are cancelled, those running finish, and the first
    failure in input order is raised; its message names the file and so the
    directory.
    """
    paths = []
    for index, item in enumerate(dirs):
        try:
            paths.append(_dir_bytes(item))
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"dirs[{index}]: {exc}") from None
    cap = _check_cap(max_file_bytes)
    _check_policy(symlinks)
    if not isinstance(strict, bool):
        raise TypeError(f"strict must be a bool, not {type(strict).__name__}")
    if executor is not None and workers is not None:
        raise ValueError("give workers or executor, not both")
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
        raise ValueError(f"workers must be an int >= 1, got {workers!r}")
    if not paths:
        return []
    chunks = [paths[i : i + _CHUNK] for i in range(0, len(paths), _CHUNK)]
    if executor is not None:
        return _run(executor, chunks, cap, symlinks, strict)
    with ThreadPoolExecutor(max_workers=workers or os.cpu_count() or 1) as pool:
        return _run(pool, chunks, cap, symlinks, strict)


def _run(
    executor: Executor, chunks: list[list[bytes]], cap: int, symlinks: SymlinkPolicy, strict: bool
) -> list[Soul]:
    futures: list[Future[list[Soul]]] = []
    try:
        # extend() keeps what was submitted before a failing submit, to cancel it.
        futures.extend(executor.submit(_compose_chunk, chunk, cap, symlinks, strict) for chunk in chunks)
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


async def acompose(
    dir: PathArg,
    *,
    max_file_bytes: int = MAX_BOOTSTRAP_FILE_BYTES,
    symlinks: SymlinkPolicy = "follow",
    strict: bool = False,
) -> Soul:
    """``compose`` in a worker thread, so the event loop never blocks on disk."""
    call = functools.partial(_compose, dir, max_file_bytes=max_file_bytes, symlinks=symlinks, strict=strict)
    return await asyncio.get_running_loop().run_in_executor(None, call)


async def acompose_soul(
    dir: PathArg, *, max_file_bytes: int = MAX_BOOTSTRAP_FILE_BYTES
) -> tuple[str, list[str]]:
    """``compose_soul`` in a worker thread, so the event loop never blocks on disk."""
    call = functools.partial(_compose_soul, dir, max_file_bytes=max_file_bytes)
    return await asyncio.get_running_loop().run_in_executor(None, call)
