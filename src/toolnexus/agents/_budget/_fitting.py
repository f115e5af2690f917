"""Law 6: the rate a plan's parts are cut at, then the total it is made for, searched until its soul fits.

A plan adds up the measures of headings, markers and kept parts; a count
that measures a soul as more than its parts (a tokenizer that merges across
a line break, a super-additive count), or parts cut at their text's rate
where that rate varies, can make the soul measure more than the total, or
far less. ``fitted`` then tries other souls, each one more measure: first
the plan for the total itself, its parts cut at a scaled rate (law 2 then
holds for the total); then, when the rate cannot help (the parts are too
short to move, or a soul misses in what the plan fixed: headings that
measure less in the soul than together, bodies kept whole that a count
measures as more together), plans for other totals. Each is placed by
what the last tries came to, scaled, then interpolated between what
fitted and what did not. The soul kept is the fullest that fitted; if none
did, each file keeps its least, which fits by law 3.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Final, NamedTuple

from .._vocabulary import Cut

__all__ = ["TRIES", "Attempt", "fitted"]

# Souls measured after the first, at most (the least of each, if none fits, among them).
TRIES: Final = 8


class Attempt(NamedTuple):
    """The soul of a plan made for the total less ``reserve``, its parts cut at ``scale`` times their rate."""

    used: int  # the soul, measured
    text: str
    found: tuple[str, ...]
    cuts: dict[int, Cut]
    bound: bool  # the total kept a file from all it could keep: a larger one would give a fuller soul
    planned: int  # what the plan added up to, in the budget's unit (the soul's measure, if the count adds up)
    shared: int  # what the plan shared among the files cut (the rest of ``planned`` is fixed)
    scale: float = 1.0
    ceiling: float = math.inf  # the rate from which every part cut is all its text gives: no higher is tried


Attempting = Callable[[int, float], Attempt]


def fitted(
    first: Attempt,
    attempt: Attempting,
    least: Callable[[], Attempt],
    total: int,
    spare: Callable[[int], tuple[int, int]],
) -> Attempt:
    """The fullest soul within ``total``, from ``first`` (the plan for the total itself) and ``attempt``.

    ``attempt(reserve, scale)`` is the soul of the plan for ``total -
    reserve`` (a negative reserve raises it), its parts cut at ``scale``
    times their text's rate. A soul is full enough from 7/8 of the total
    on, or when a larger total would give it nothing more. The plan for the
    total itself is kept while the rate its parts are cut at can be moved to
    fit (law 2 then holds for the total); then the total is moved. At most
    ``TRIES`` more souls are made, and only while ``spare(cut)`` (the calls
    and characters the cost model leaves, for ``cut`` files cut) allows one
    more of the longest soul yet; with none fitting, ``least()``, each
    file's least.
    """
    if _full(first, total):
        return first
    search = _Search(first, total, spare)
    if first.shared > 0:
        search.run(lambda: _rate(search), lambda rate: attempt(0, rate), _scale, again=False)
    if not search.done:
        search.reset(first)
        search.run(
            lambda: _total(search), lambda limit: attempt(total - int(limit), 1.0), _planned, again=True
        )
    return search.best if search.best is not None else least()


def _full(tried: Attempt, total: int) -> bool:
    """Does ``tried`` fit, full enough (7/8 of the total), or as full as a larger total would make it?"""
    return tried.used <= total and (tried.used >= total - total // 8 or not tried.bound)


class _Search:
    """Law 6's tries: the fullest soul that fitted, the closest that did not, and what they cost."""

    def __init__(self, first: Attempt, total: int, spare: Callable[[int], tuple[int, int]]) -> None:
        self.total, self.target, self.spare = total, total - total // 16, spare
        self.best: Attempt | None = first if first.used <= total else None
        self.most, self.longest = _cut(first), len(first.text)  # the least of each cuts no fewer files
        self.tries = 0
        self.stalled = 0  # tries in a row, on one side, whose soul measured as the one before
        self.done = False
        self.reset(first)

    def reset(self, first: Attempt) -> None:
        self.fits: Attempt | None = first if first.used <= self.total else None
        self.over: Attempt | None = None if self.fits else first
        self.behind: Attempt | None = None  # the soul a try on the same side replaced, to extrapolate from
        self.seen: set[float] = set()

    def affordable(self) -> bool:
        after = self.best is None  # the least of each, if none fits
        if self.tries + after >= TRIES:
            return False
        calls, chars = self.spare(self.most if self.best is None else _cut(self.best))
        return calls >= 1 + after and chars >= (1 + after) * (self.longest + self.longest // 8)

    def run(
        self,
        choose: Callable[[], float | None],
        make: Callable[[float], Attempt],
        where: Callable[[Attempt], float],
        *,
        again: bool,
    ) -> None:
        """Try what ``choose`` asks for, while it asks and the cost allows, until a soul is full.

        ``where`` places a soul on what is searched (a rate, or what a plan
        added up to): of the souls over the total the lowest is kept, and of
        those that fit the highest, as the closest (a count may measure a
        shorter soul as more: a marker's number gains a thousands separator). The same soul twice is a step
        too small (a total must rise further before a file keeps more) for
        a total, and, for a rate with nothing yet on the other side, the end
        of what rates can do.
        """
        while not self.done and self.affordable():
            point = choose()
            if point is None or point in self.seen:
                return
            self.seen.add(point)
            self.tries += 1
            tried = make(point)
            last = self.fits if tried.used <= self.total else self.over
            bracketed = self.fits is not None and self.over is not None
            if not again and not bracketed and last is not None and tried.text == last.text:
                return  # the rate moves nothing: the parts are as short, or as long, as they can be
            moved = last is None or tried.used != last.used  # last: the soul before, on the same side
            self.stalled = 0 if moved else self.stalled + 1
            self.most, self.longest = max(self.most, _cut(tried)), max(self.longest, len(tried.text))
            if tried.used > self.total:
                if self.over is None or where(tried) < where(self.over):
                    self.behind, self.over = self.over, tried
                continue
            if min(self.spare(_cut(tried))) < 0:
                return  # kept, it would cost more than the page allows for the files it cuts
            if self.fits is None or where(tried) >= where(self.fits):
                self.behind, self.fits = self.fits, tried  # the same soul again too, to move on from
            if self.best is None or tried.used >= self.best.used:
                self.best = tried
            self.done = _full(tried, self.total)


def _cut(tried: Attempt) -> int:
    return sum(cut.cut for cut in tried.cuts.values())


def _scale(tried: Attempt) -> float:
    return tried.scale


def _planned(tried: Attempt) -> float:
    return tried.planned


def _rate(search: _Search) -> float | None:
    """The scale to cut the parts at next: what is shared moves the soul; the rest of it is fixed."""
    fits, over, target = search.fits, search.over, search.target
    if fits is not None and over is not None:
        return _between(fits, over, target, stalled=search.stalled > 0)
    tried = over if over is not None else fits
    assert tried is not None
    fixed = tried.planned - tried.shared  # headings, markers and bodies kept whole, as planned
    behind = search.behind
    # The last two, on one side, extrapolated; not when the soul moved against its parts (a marker's
    # number gained a separator as they shrank): the step below then goes on.
    if behind is not None and (tried.used - behind.used) * (tried.scale - behind.scale) > 0:
        rate = tried.scale + (target - tried.used) * (tried.scale - behind.scale) / (tried.used - behind.used)
        rate = min(max(rate, tried.scale / 16), tried.scale * 64)
    elif tried.used <= fixed:  # the parts measure nothing yet: double the rate
        rate = tried.scale * 2 ** (1 + search.stalled)
        return min(rate, _top(tried)) if over is None and tried.scale < _top(tried) else None
    else:  # Each try that moved nothing squares the step: the part's rate is far from its text's.
        rate = tried.scale * ((target - fixed) / (tried.used - fixed)) ** (2**search.stalled)
    if over is not None:
        return rate if 0 < rate < tried.scale else None
    return min(rate, tried.scale * 64, _top(tried)) if rate > tried.scale < _top(tried) else None


def _between(fits: Attempt, over: Attempt, target: int, *, stalled: bool) -> float | None:
    """The scale between a soul that fitted and one that went over, by interpolation; None if too close.

    ``stalled``: the last try measured as the one before, on its side.
    """
    low, high = fits.scale, over.scale
    if low < _top(over) < high:  # a rate past the ceiling made the same soul as the ceiling
        high = _top(over)
    if high <= low or high - low < low / 64:
        return None
    if high > 2 * low:  # far apart: halve the ratio (a part's rate may vary anywhere between)
        return math.sqrt(low * high)
    if stalled:  # the soul's measure is flat here: halve the gap
        return (low + high) / 2
    # A soul's measure moves in steps (a line, a word): each try takes a quarter off at least.
    rate = low + (target - fits.used) * (high - low) / max(over.used - fits.used, 1)
    return min(max(rate, low + (high - low) / 4), high - (high - low) / 4)


def _top(tried: Attempt) -> float:
    """A hair past the ceiling of ``tried``'s rate, so that flooring to whole characters still reaches it."""
    return tried.ceiling * (1 + 1e-9)


def _total(search: _Search) -> float | None:
    """The total to plan for next; None when none lies between what fitted and what did not.

    Totals are placed by what the plans added up to (``planned``), which is
    what a plan for any total at or above it gives: a plan that kept every
    file whole under a large total is as full under a total just above what
    it took.
    """
    fits, over, target = search.fits, search.over, search.target
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
