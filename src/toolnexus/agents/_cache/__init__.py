"""``SoulCache``, and how ``compose_many`` and ``acompose`` compose through one.

``_soulcache`` holds the cache itself (the LRU, its lock, statistics,
forks), ``_entries`` what it holds and ``_calls`` the calls it has seen;
``_stat`` and ``_notified`` the two ways an entry is kept fresh: ``_ways``
makes the kernel watches of a notified cache, and ``_watch`` files them and
turns events into homes. The two functions
below are the cache's interface to the rest of the package: they alone
reach into it, and hand out souls as ``SoulCache.compose`` does
(``delivered``: strict mode applied).
"""

from __future__ import annotations

from collections.abc import Callable

from .._compose import delivered
from .._options import Options
from .._report import Soul
from ._soulcache import CacheStats, NotificationError, SoulCache, Validate
from ._stat import RACY_WINDOW_NS

__all__ = [
    "RACY_WINDOW_NS",
    "CacheStats",
    "NotificationError",
    "SoulCache",
    "Validate",
    "compose_through",
    "lookup_in_loop",
]

Compose = Callable[[list[bytes], Options], list[Soul]]


def compose_through(
    cache: SoulCache, homes: list[bytes], options: Options, run: Callable[[list[bytes], Compose], list[Soul]]
) -> list[Soul]:
    """The souls of ``homes``, as ``cache.compose`` gives them, in order.

    Those the cache holds come from it; ``run(missing, compose)`` composes
    the rest (``compose`` caches what it composes), on an executor of the
    caller's.
    """
    keys = [cache._home(home) for home in homes]
    found = [cache._lookup(key, options) for key in keys]
    missing = [key for key, soul in zip(keys, found, strict=True) if soul is None]
    fresh = iter(run(missing, cache._compose_missing) if missing else ())
    souls = [soul if soul is not None else next(fresh) for soul in found]
    return [delivered(home, soul, options) for home, soul in zip(homes, souls, strict=True)]


def lookup_in_loop(cache: SoulCache, home: bytes, options: Options) -> Soul | None:
    """The cached soul of ``home`` if it can be had without the disk (a notified hit); else None."""
    soul = cache._lookup(cache._home(home), options, stat=False)
    return None if soul is None else delivered(home, soul, options)
