"""Law 6: the total a plan is made for, searched for until its soul fits.

A plan adds up the measures of headings, markers and kept parts; a count
that measures a soul as more than its parts (a tokenizer that merges across
a line break, a super-additive count), or parts cut at their text's rate,
can make the soul measure more than the total. ``fitted`` then tries plans
for a lowered total, by interpolation between what fitted and what did not,
each try one more measure of a soul. A soul below half the total, of a
plan the total held back, says the count's rate grows with the text (the
rates the cuts were made at were too high): it is raised the same way. The
soul kept is the fullest that fitted; if none did, each file keeps its
least, which fits by law 3.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final, NamedTuple

from .._vocabulary import Cut

__all__ = ["TRIES", "Attempt", "fitted"]

# Souls measured after the first, at most.
TRIES: Final = 4


class Attempt(NamedTuple):
    """The soul of a plan made for the total less ``reserve``."""

    used: int  # the soul, measured
    text: str
    found: tuple[str, ...]
    cuts: dict[int, Cut]
    bound: bool  # the total kept a file from all it could keep: a larger one would give a fuller soul


def fitted(
    first: Attempt, attempt: Callable[[int], Attempt], total: int, spare: Callable[[int], tuple[int, int]]
) -> Attempt:
    """The fullest soul within ``total``, from ``first`` (the plan for the total itself) and ``attempt``.

    ``attempt(reserve)`` is the soul of the plan for ``total - reserve``; a
    negative reserve raises the total. A soul is full enough from 7/8 of the
    total on, or when a larger total would give it nothing more. At most
    ``TRIES`` more souls are made, and only while ``spare(cut)`` (the calls
    and characters the cost model leaves, for ``cut`` files cut) allows one
    more and, with none fitting yet, the least after it: then, with none
    fitting, ``attempt(total + 1)``, each file's least.
    """
    if first.used <= total and (first.used >= total // 2 or not first.bound):
        return first
    fits: tuple[int, Attempt] | None = (0, first) if first.used <= total else None
    over: tuple[int, int] | None = None if fits else (0, first.used)  # a reserve too small, its soul
    below: tuple[int, int] | None = None  # the fitting reserve before the last, to extrapolate from
    cut, longest = _cut(first), len(first.text)
    for _ in range(TRIES):
        calls, chars = spare(cut)
        after = 0 if fits is not None else 1  # the least, if nothing fits
        if calls < 1 + after or chars < (1 + after) * (longest + longest // 8):
            break
        reserve = _next(fits, over, below, total)
        if reserve is None:
            break
        tried = attempt(reserve)
        cut, longest = min(cut, _cut(tried)), max(longest, len(tried.text))
        if tried.used > total:
            if over is None or reserve > over[0]:
                over = (reserve, tried.used)
            continue
        if fits is not None and tried.used <= fits[1].used:
            break  # a larger total gave no fuller soul
        if fits is not None:
            below = (fits[0], fits[1].used)
        fits = (reserve, tried)
        if tried.used >= total - total // 8 or not tried.bound:
            break  # full enough, or as full as it can be
    return fits[1] if fits is not None else attempt(total + 1)


def _cut(tried: Attempt) -> int:
    return sum(cut.cut for cut in tried.cuts.values())


def _next(
    fits: tuple[int, Attempt] | None,
    over: tuple[int, int] | None,
    below: tuple[int, int] | None,
    total: int,
) -> int | None:
    """The reserve to try next; None when no other lies between what fitted and what did not."""
    target = total - total // 16  # aim inside the total: a little under it is full enough
    if fits is not None and over is not None:  # between the two, by interpolation
        low, low_used = fits[0], fits[1].used
        high, high_used = over
        if low - high <= 1:
            return None
        step = (target - low_used) * (low - high) // max(high_used - low_used, 1)
        return min(max(low - step, high + 1), low - 1)
    if over is not None:  # lower the total by the excess, in proportion to the soul, and an eighth more
        high, used = over
        excess = used - total
        return min(high + excess * total // used + excess // 8 + 1, total + 1)
    assert fits is not None
    low, used = fits[0], fits[1].used
    if below is None:  # raise it as if the soul grew with it, unit for unit
        return low - (target - used)
    # Extrapolate from the last two souls that fitted.
    earlier, earlier_used = below
    return low - (target - used) * max(earlier - low, 1) // max(used - earlier_used, 1)
