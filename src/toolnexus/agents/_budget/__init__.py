"""Prompt budgets: fit a soul to a model's window, and say what was cut.

``compose_budgeted`` composes one home under ``options.budget`` as
docs/reference/budgets.md lays down:

1. it composes the home plainly, each file capped at what the budget could
   keep whole (``_first``): when that soul is whole and the budget holds
   it, it is the answer (law 1), at the cost of a plain compose;
2. otherwise the files that read cut apart into bodies, and it reads the
   longer ones whole, or, when a file is long for what the budget could
   keep, only its start and end (``_reading``), reading more of a file until
   what it read settles every question the budget asks of it;
3. it decides how many files the soul holds (law 3), which are cut, and what
   each cut file may keep (``_shares``, law 2);
4. it cuts each at line boundaries (``_cuts``, law 4), keeping its start and
   end around one marker line, and measures the soul; a count that does not
   add up has its total lowered until the soul fits (law 6).

``_bodies`` says where a body lies in a file's bytes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from .._options import Budget, Options
from .._vocabulary import Composed, Cut, FileStatus
from ._cuts import render
from ._first import first_read, texts, unchanged, whole_bodies
from ._reading import UNLIMITED, Body, Reading, bytes_per_unit
from ._shares import Measures, Plan, plan, waterfill

__all__ = ["compose_budgeted"]

# Passes of sharing with a lowered total, for a count that does not add up,
# before the soul falls back to the least each file can take (which fits).
_LOWERINGS: Final = 8
_PRESENT: Final = FileStatus.PRESENT


def _unchanged(bodies: Sequence[Body], measures: Measures) -> str | None:
    """The soul without a budget, if the budget holds it (law 1); else None."""
    budget = measures.budget
    if not all(body.whole and not body.over_cap for body in bodies):
        return None
    if budget.per_file is not None and any(body.measure > budget.per_file for body in bodies):
        return None
    text = "".join(measures.heading(body, p) + body.text for p, body in enumerate(bodies))
    if budget.total is not None and budget.measure(text) > budget.total:
        return None
    return text


def compose_budgeted(home: bytes, options: Options) -> Composed:
    """One home's soul under ``options.budget``, with its ``cuts`` and ``used``.

    ``cuts`` has one entry per name: a ``Cut`` for each present file (also
    those left out entirely), None for the others; ``used`` is the soul in
    the budget's unit.
    """
    budget = options.budget
    assert budget is not None
    measures = Measures(budget, options)
    first = first_read(home, options)
    done, measured = unchanged(first, options, budget)
    if done is not None:
        return done
    whole = whole_bodies(first, options, texts(first, options), measured, budget)
    if all(read[0] is not _PRESENT or index in whole for index, read in enumerate(first.reads)):
        # Every file read whole by the first read, and the soul not held: nothing more to read.
        bodies = [whole[index] for index in sorted(whole)]
        text, found, cuts, used = _fitted(bodies, measures)
        return Composed(text, found, first.reads, cuts, used)
    reading = Reading(home, options, lambda lengths: _reach(lengths, budget), first, whole)
    while True:  # read on until what was read settles the laws
        bodies = reading.bodies
        held = _unchanged(bodies, measures)
        if held is not None:  # law 1: every file whole
            kept = {body.index: Cut(False, body.measure, 0, body.nbytes, 0) for body in bodies}
            names = tuple(body.name for body in bodies)
            reads = tuple(reading.reads)
            return Composed(held, names, reads, _per_name(kept, len(reads)), budget.measure(held))
        if all(body.whole for body in bodies):
            break  # nothing more to read
        wanted = _unsettled(bodies, plan(bodies, measures), measures)
        if not wanted or not reading.more(wanted):
            break
    text, found, cuts, used = _fitted(reading.bodies, measures)
    return Composed(text, found, tuple(reading.reads), cuts, used)


def _fitted(
    bodies: Sequence[Body], measures: Measures
) -> tuple[str, tuple[str, ...], tuple[Cut | None, ...], int]:
    """The soul of the plan for ``bodies``, lowered until it fits a count that does not add up (law 6).

    For a count that adds up, the plan's soul fits as it is. Otherwise the
    total is lowered by the excess (at most eight times) until the soul
    fits, then raised back by bisection as far as it still fits; with
    nothing lower fitting, each file's least, which fits by law 3.
    """
    budget = measures.budget
    total = budget.total

    def attempt(reserve: int) -> tuple[str, tuple[str, ...], dict[int, Cut], int]:
        text, found, cuts = render(bodies, plan(bodies, measures, reserve), measures)
        return text, found, cuts, budget.measure(text)

    best = attempt(0)
    if total is not None and best[3] > total:
        low, high = 0, 0  # a reserve known too small, and one that fits
        for lowering in range(_LOWERINGS + 1):
            high = total + 1 if lowering == _LOWERINGS else high + best[3] - total
            best = attempt(high)
            if best[3] <= total:
                break
            low = high
        while high - low > 1:  # the least reserve that fits: a share as large as will do
            middle = (low + high) // 2
            trial = attempt(middle)
            if trial[3] <= total:
                high, best = middle, trial
            else:
                low = middle
    text, found, cuts, used = best
    return text, found, _per_name(cuts, len(measures.names)), used


def _reach(lengths: list[int], budget: Budget) -> int:
    """The most units one file could keep, from the present files' lengths: to size the first reads.

    Water-filling the total over the least the others need (a quarter of
    their bytes, in characters) bounds it; ``per_file`` bounds it too.
    """
    most = min(budget.per_file or UNLIMITED, budget.total or UNLIMITED)
    if budget.total is not None and lengths:
        least = [length // bytes_per_unit(budget) for length in lengths]
        most = min(most, max(waterfill(least, budget.total)) + 1)
    return most


def _per_name(cuts: dict[int, Cut], count: int) -> tuple[Cut | None, ...]:
    return tuple(cuts.get(index) for index in range(count))


def _might_hold(bodies: Sequence[Body], measures: Measures) -> bool:
    """Could the budget hold the soul composed without it (law 1), for all that was read tells?

    Only with no file over the cap, and every body within ``per_file`` as
    far as it was measured. Headings and bodies measured apart add up to
    the soul for characters; for another count each joint may count one
    unit twice (a line, a word), so the soul may measure that much less.
    """
    budget = measures.budget
    if budget.total is None or any(body.over_cap for body in bodies):
        return False
    if budget.per_file is not None and any(body.measure > budget.per_file for body in bodies):
        return False
    units = sum(measures.of(measures.heading(body, p)) + body.measure for p, body in enumerate(bodies))
    joints = 0 if budget.count is None else 2 * len(bodies) - 1
    return units - joints <= budget.total


def _unsettled(bodies: Sequence[Body], chosen: Plan, measures: Measures) -> dict[int, tuple[bool, bool]]:
    """Which bodies read in part must be read further, at their start and at their end.

    A body read in part is settled when both its ends were found, it is
    worth cutting (it measures more than its marker), and, if the soul
    holds it, the plan cuts it, it measures more than its share and than
    every file kept whole that could have been cut instead (so it is cut
    rightly, and in the right order), and what was read of each end holds
    more than that end may keep.
    """
    if _might_hold(bodies, measures):  # law 1 asks for the whole soul: read every body whole
        whole = {p: (True, True) for p, body in enumerate(bodies) if not body.whole and not body.maxed}
        if whole:
            return whole
    budget = measures.budget
    kept_whole = [
        body.measure
        for position, body in enumerate(bodies[: chosen.holds])
        if position not in chosen.shares and measures.worth_cutting(body)
    ]
    largest_whole = max(kept_whole, default=-1)
    wanted: dict[int, tuple[bool, bool]] = {}
    for position, body in enumerate(bodies):
        if body.whole or body.maxed:
            continue
        head, tail = not body.start_known, not body.end_known
        must = measures.must_cut(body)
        if not must and body.measure <= measures.marker_all(body):
            head = tail = True
        if position < chosen.holds:
            share = chosen.shares.get(position)
            if share is None or (not must and body.measure <= max(share, largest_whole)):
                head = tail = True
            else:
                tail_units = share // 4 if budget.keep == "head+tail" else 0
                head_units = share - tail_units - measures.newline
                head = head or 0 < head_units >= body.head_measure
                tail = tail or 0 < tail_units - measures.newline >= body.tail_measure
        if head or tail:
            wanted[position] = (head, tail)
    return wanted
