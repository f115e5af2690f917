"""Law 6: the total a plan is made for, searched for until its soul fits.

A plan adds up the measures of headings, markers and kept parts; a count
that measures a soul as more than its parts (a tokenizer that merges across
a line break, a super-additive count), or parts cut at their text's rate,
can make the soul measure more than the total, or far less. ``fitted`` then
tries plans for other totals, each try one more measure of a soul: scaled
from what the last plan added up to by how far its soul missed, then by
interpolation between what fitted and what did not. A soul under 7/8 of the
total, of a plan the total held back, is raised the same way (parts cut at
a rate too high, headings that measure less in the soul than together, a
count whose rate grows with the text). The soul kept is the fullest that
fitted; if none did, each file keeps its least, which fits by law 3.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final, NamedTuple

from .._vocabulary import Cut

__all__ = ["TRIES", "Attempt", "fitted"]

# Souls measured after the first, at most (the least of each, if none fits, among them).
TRIES: Final = 6


class Attempt(NamedTuple):
    """The soul of a plan made for the total less ``reserve``."""

    used: int  # the soul, measured
    text: str
    found: tuple[str, ...]
    cuts: dict[int, Cut]
    bound: bool  # the total kept a file from all it could keep: a larger one would give a fuller soul
    planned: int  # what the plan added up to, in the budget's unit (the soul's measure, if the count adds up)


def fitted(
    first: Attempt,
    attempt: Callable[[int], Attempt],
    least: Callable[[], Attempt],
    total: int,
    spare: Callable[[int], tuple[int, int]],
) -> Attempt:
    """The fullest soul within ``total``, from ``first`` (the plan for the total itself) and ``attempt``.

    ``attempt(reserve)`` is the soul of the plan for ``total - reserve``; a
    negative reserve raises the total. A soul is full enough from 7/8 of the
    total on, or when a larger total would give it nothing more. The next
    total is found from what the plans tried added up to and what their
    souls measured: scaled by their ratio, then interpolated between the
    fullest that fitted and the least that did not. At most ``TRIES`` more
    souls are made, and only while ``spare(cut)`` (the calls and characters
    the cost model leaves, for ``cut`` files cut) allows one more of the
    longest soul yet; with none fitting, ``least()``, each file's least.
    """
    target = total - total // 16  # aim inside the total: a little under it is full enough
    if first.used <= total and (first.used >= total - total // 8 or not first.bound):
        return first
    fits: Attempt | None = first if first.used <= total else None
    over: Attempt | None = None if fits else first
    most, longest = _cut(first), len(first.text)  # the least of each cuts no fewer files than any plan
    tried_limits = {total}
    for _ in range(TRIES - (fits is None)):  # the last try kept for the least, if none fits
        after = fits is None  # the least of each, if none fits
        calls, chars = spare(most if fits is None else _cut(fits))
        if calls < 1 + after or chars < (1 + after) * (longest + longest // 8):
            break
        limit = _next(fits, over, target)
        if limit is None or limit in tried_limits:
            break
        tried_limits.add(limit)
        tried = attempt(total - limit)
        most, longest = max(most, _cut(tried)), max(longest, len(tried.text))
        if tried.used > total:
            if over is None or tried.planned < over.planned:
                over = tried
            continue
        if fits is not None and tried.used < fits.used:
            break  # a larger total gave a soul no fuller (the count is not a length)
        # The same soul again (a larger total kept nothing more): kept, to be raised from.
        if min(spare(_cut(tried))) < 0:
            break  # kept, it would cost more than the page allows for the files it cuts
        fits = tried
        if tried.used >= total - total // 8 or not tried.bound:
            break  # full enough, or as full as it can be
    return fits if fits is not None else least()


def _cut(tried: Attempt) -> int:
    return sum(cut.cut for cut in tried.cuts.values())


def _next(fits: Attempt | None, over: Attempt | None, target: int) -> int | None:
    """The total to plan for next; None when none lies between what fitted and what did not.

    Totals are placed by what the plans added up to (``planned``), which is
    what a plan for any total at or above it gives: a plan that kept every
    file whole under a large total is as full under a total just above what
    it took.
    """
    if fits is not None and over is not None:  # between the two, by interpolation
        low, high = fits.planned, over.planned
        if high - low <= 1:
            return None
        step = (target - fits.used) * (high - low) // max(over.used - fits.used, 1)
        return min(max(low + step, low + 1), high - 1)
    if over is not None:  # scale what the plan added up to by how far its soul went over, and an eighth more
        scaled = over.planned * target // max(over.used, 1)
        return max(min(scaled - (over.planned - scaled) // 8, over.planned - 1), 0)
    assert fits is not None
    return max(fits.planned * target // max(fits.used, 1), fits.planned + 1)  # raise it in proportion
