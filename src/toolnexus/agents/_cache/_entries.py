"""What a ``SoulCache`` holds: the key of a soul, its entry (kept fresh by notification or by stat),
a call's checked arguments, and the counters it reports.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from .._options import Options
from .._report import Soul
from ._stat import Signed

_new = tuple.__new__

__all__ = ["CacheStats", "Call", "Key", "Notified", "StatChecked"]


class CacheStats(NamedTuple):
    """Counters since the cache was made (or last cleared), and what it holds now."""

    hits: int
    misses: int
    stale: int
    size: int
    maxsize: int
    notified: int = 0  # homes held that notification keeps fresh
    stat_checked: int = 0  # homes held that are validated by stat on each call


# A budget's shape: its total, per_file and keep, and whether it counts characters.
Shape = tuple[int | None, int | None, str, bool] | None


class Key(NamedTuple):
    """What a soul is cached under: its home and every option that shapes it; of a budget, its shape.

    A budget's count is a function, compared by identity: one made afresh
    per call (a tokenizer's lambda in a session handler) is a new budget
    each time. Keyed by its shape, such budgets share their home's one entry
    (each recomposes, and takes the entry's place) instead of filling the
    cache with copies of one soul; the entry answers only the budget it was
    composed with.
    """

    home: bytes
    cap: int
    symlinks: str  # the policy's word
    files: tuple[str, ...]
    shape: Shape

    @classmethod
    def of(cls, home: bytes, options: Options) -> Key:
        budget = options.budget
        shape = None if budget is None else (budget.total, budget.per_file, budget.keep, budget.count is None)
        # tuple.__new__ skips the NamedTuple's own __new__: a third of the cost, on every miss.
        return _new(cls, (home, options.cap, options.policy.word, options.files, shape))


@dataclass(slots=True)
class Notified:
    """A soul kept fresh by notification."""

    soul: Soul
    # No event for its home since it was read: a hit as it stands. An entry
    # an event made stale is kept until recomposed, so that an equal soul
    # comes back as this object.
    fresh: bool = True


@dataclass(slots=True)
class StatChecked:
    """A soul kept fresh by ``stat``: what its names looked like before it was read."""

    soul: Soul
    signed: Signed


class Call(NamedTuple):
    """A call's checked arguments, remembered for the next call with the same ones."""

    home: bytes  # as the cache keys it (``SoulCache._home``)
    path: bytes  # as the call gave it: what strict mode's errors name
    options: Options
    key: Key
