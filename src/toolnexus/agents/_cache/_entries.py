"""What a ``SoulCache`` holds: the key of a soul, and the counters it reports.

A cached soul is stored as itself, under its key: what keeps it fresh is
kept beside it (``_stat.Signed``, by key; the keys an event made stale, in a
set). Keys and signatures are plain tuples of atomic values, which CPython
takes off the cyclic collector's lists: a cache of 100,000 homes holds about
one object per home that a full collection walks, the soul itself.
"""

from __future__ import annotations

from typing import NamedTuple, TypeAlias

from .._options import Options

__all__ = ["CacheStats", "Key", "home_of", "key_of"]


class CacheStats(NamedTuple):
    """Counters since the cache was made (or last cleared), and what it holds now.

    ``hits``: calls answered with the cached soul. ``misses``: souls composed
    for a key the cache did not hold (a home and options never seen, or
    evicted, or a budget whose ``count`` is another function than the cached
    soul's). ``stale``: souls composed again for a key it held, because a file
    that shaped the soul changed (or, validated by stat, was written too
    recently to tell). ``size``: souls held; ``maxsize``: the most it holds;
    ``notified`` and ``stat_checked``: homes held that notification keeps
    fresh, and that are validated by stat on each call.
    """

    hits: int
    misses: int
    stale: int
    size: int
    maxsize: int
    notified: int = 0  # homes held that notification keeps fresh
    stat_checked: int = 0  # homes held that are validated by stat on each call


# A budget's shape: its total, per_file and keep, and whether it counts characters.
Shape: TypeAlias = tuple[int | None, int | None, str, bool] | None
# What a soul is cached under: its home and every option that shapes it; of
# a budget, its shape. A budget's count is a function, compared by identity:
# one made afresh per call (a tokenizer's lambda in a session handler) is a
# new budget each time. Keyed by its shape, such budgets share their home's
# one entry (each recomposes, and takes the entry's place) instead of filling
# the cache with copies of one soul; the entry answers only the budget it was
# composed with.
Key: TypeAlias = tuple[bytes, int, str, tuple[str, ...], Shape]  # the policy by its word


def key_of(home: bytes, options: Options) -> Key:
    """The key of ``home``'s soul under ``options``: (home, cap, symlinks, files, shape)."""
    budget = options.budget
    shape = None if budget is None else (budget.total, budget.per_file, budget.keep, budget.count is None)
    return (home, options.cap, options.policy.word, options.files, shape)


def home_of(key: Key) -> bytes:
    """The home a key is of: its first field."""
    home, _, _, _, _ = key
    return home
