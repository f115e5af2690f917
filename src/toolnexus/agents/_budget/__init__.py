"""Prompt budgets: fit a soul to a model's window, and say what was cut.

``compose_budgeted`` composes one home under ``options.budget`` as
docs/reference/budgets.md lays down:

1. it composes the home plainly, each file capped at what the budget could
   keep whole (``_first``): when that soul is whole and the budget holds
   it, it is the answer (law 1), at the cost of a plain compose;
2. otherwise the files that read cut apart into bodies, and it reads the
   longer ones whole, or, when a file is long for what the budget could
   keep, only its start and end (``_reading``), reading more of a file until
   what it read settles every question the budget asks of it; once files
   over the cap are read as far as it allows and the others whole, the
   soul as read (each file keeping all that was read of it) is the answer
   when the total holds it, measured once;
3. it decides how many files the soul holds (law 3), which are cut, and what
   each cut file may keep (``_shares``, law 2);
4. it cuts each at line boundaries (``_cuts``, law 4), keeping its start and
   end around one marker line, and measures the soul; when it misses the
   total, law 6 searches the rate the parts are cut at, then the total the
   plan is made for (``_fitting``).

``_bodies`` says where a body lies in a file's bytes.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from typing import Final

from .._options import Budget, Options
from .._vocabulary import Composed, Cut, CutRow, FileRead, FileStatus
from ._cuts import ceiling, render
from ._first import first_read, unchanged, whole_bodies
from ._fitting import Attempt, fitted
from ._reading import UNLIMITED, Body, Reading, bytes_per_unit
from ._shares import Measures, Plan, plan, waterfill
from ._tally import Tally

__all__ = ["compose_budgeted"]

_PRESENT: Final = FileStatus.PRESENT.value  # as a FileRead holds it
_new = tuple.__new__  # skips a NamedTuple's own __new__: a third of the cost
_CHARS_A_UNIT: Final = 8  # the soul of every file as read is tried up to this many characters a unit


def _unchanged(bodies: Sequence[Body], measures: Measures) -> tuple[str, int] | None:
    """The soul without a budget and its measure, if the budget holds it (law 1); else None."""
    budget = measures.budget
    if not all(body.whole and not body.over_cap for body in bodies):
        return None
    if budget.per_file is not None and any(body.measure > budget.per_file for body in bodies):
        return None
    text = "".join(measures.heading(body, p) + body.text for p, body in enumerate(bodies))
    used = measures.tally.measure(text) if budget.count is not None else len(text)
    if budget.total is not None and used > budget.total:
        return None
    return text, used


def compose_budgeted(home: bytes, options: Options) -> Composed:
    """One home's soul under ``options.budget``, with its ``cuts`` and ``used``.

    ``cuts`` has one entry per name: a ``Cut`` for each present file (also
    those left out entirely), None for the others; ``used`` is the soul in
    the budget's unit.
    """
    budget = options.budget
    assert budget is not None
    tally = Tally(budget)
    first = first_read(home, options)
    tally.read = len(first.text)
    done, measured = unchanged(first, options, tally)
    if done is not None:
        return done
    measures = Measures(tally, options)
    whole = whole_bodies(first, options, measured, tally)
    if all(read.status != _PRESENT or index in whole for index, read in enumerate(first.reads)):
        # Every file read whole by the first read, and the soul not held: nothing more to read.
        return _fitted([whole[index] for index in sorted(whole)], measures, first.reads)
    reading = Reading(home, options, lambda lengths: _reach(lengths, budget), first, whole, tally=tally)
    holding = True  # the soul composed without the budget might hold, for all that was read tells
    tried_as_read = False  # the soul of every file as the cap lets it be read (once)
    while True:  # read on until what was read settles the laws
        bodies = reading.bodies
        held = _unchanged(bodies, measures)
        if held is not None:  # law 1: every file whole
            text, used = held
            names = tuple(body.name for body in bodies)
            cuts = _kept(bodies, measures, len(reading.reads))
            return _new(Composed, (text, names, tuple(reading.reads), cuts, used))
        if all(body.whole for body in bodies):
            break  # nothing more to read
        if not tried_as_read and _read_to_cap(bodies, reading):  # one count may do
            tried_as_read = True
            capped = _as_read(bodies, measures, reading)
            if capped is not None:
                return capped
        # Once it cannot hold, reading more never lets it: that is not asked again.
        holding = holding and _might_hold(bodies, measures)
        planned = functools.partial(plan, bodies, measures, exact=False)
        wanted = _unsettled(bodies, planned, measures, holding=holding)
        if not wanted or not reading.more(wanted):
            break
    return _fitted(reading.bodies, measures, tuple(reading.reads))


def _read_to_cap(bodies: Sequence[Body], reading: Reading) -> bool:
    """Is every file over the cap read as far as the cap allows, and every other one whole?"""
    return all(not body.over_cap if body.whole else body.over_cap and reading.at_cap(body) for body in bodies)


def _as_read(bodies: Sequence[Body], measures: Measures, reading: Reading) -> Composed | None:
    """The soul of every file as the cap lets it be read (``_read_to_cap``), if the total holds it.

    Files over the cap are cut whatever the total; a total that holds each
    of them keeping all that was read of it (its start and its end) and
    every other file whole plans no cut beyond the cap's, so that soul is
    the answer when it fits: measured once (in characters, its length),
    and, with ``per_file``, each file first (a file read in part as what
    was read of its start and end joined by a line break, which bounds the
    two parts together by that measure and one unit). Tried only when the
    soul has at most 8 characters a unit of the total: else the plan cuts.
    """
    budget, tally = measures.budget, measures.tally
    total, per_file = budget.total, budget.per_file
    if total is None:
        return None
    chosen = Plan(len(bodies), {p: UNLIMITED for p, body in enumerate(bodies) if not body.whole}, False)
    within = [bodies[p] for p in chosen.shares]  # the files over the cap
    for body in within:  # kept as read: with per_file, within it if the measures below say so
        body.verified = (len(body.text), len(body.tail))
    text, found, cuts = render(bodies, chosen, measures)
    used = -1
    # Beyond 8 characters a unit of the total, the plan cuts: not measured.
    if len(text) <= total * _CHARS_A_UNIT and (per_file is None or _each_within(bodies, per_file, tally)):
        used = tally.measure(text) if tally.counted else len(text)
    if not 0 <= used <= total:
        for body in within:
            body.verified = None  # a plan that cuts them measures their parts
        return None
    return _new(Composed, (text, found, tuple(reading.reads), _rows(cuts, len(reading.reads)), used))


def _each_within(bodies: Sequence[Body], per_file: int, tally: Tally) -> bool:
    """Does every file keep, as read, at most ``per_file``?

    A file read in part is measured as what was read of its start and its
    end, joined by a line break: the two measure together at most that and
    one unit (in characters, exactly their lengths).
    """
    for body in bodies:
        if body.whole:
            most = body.measure
        elif tally.counted:
            most = tally.measure(f"{body.text}\n{body.tail}") + 1
        else:
            most = len(body.text) + len(body.tail)
        if most > per_file:
            return False
    return True


def _kept(bodies: Sequence[Body], measures: Measures, count: int) -> tuple[CutRow | None, ...]:
    """The cuts of a soul that holds every body whole: measured where they were, else when asked."""
    cuts: list[CutRow | None] = [None] * count
    at = 0
    for position, body in enumerate(bodies):
        at += len(measures.heading(body, position))
        units = body.text_units
        shown = () if units >= 0 else (at, at + len(body.text))
        cuts[body.index] = (False, units, units, body.nbytes, 0, shown)
        at += len(body.text)
    return tuple(cuts)


def _fitted(bodies: Sequence[Body], measures: Measures, reads: Sequence[FileRead]) -> Composed:
    """The soul of the plan for ``bodies``, searched for a total that fits when it does not (law 6)."""
    budget, tally = measures.budget, measures.tally
    total = budget.total

    def attempt(reserve: int, scale: float = 1.0, *, weigh: bool = False) -> Attempt:
        chosen = plan(bodies, measures, reserve, weigh=weigh)
        measures.scale = scale
        text, found, cuts = render(bodies, chosen, measures)
        used = tally.measure(text) if tally.counted else len(text)
        shared = sum(chosen.shares.values())
        top = ceiling(bodies, chosen, measures) if tally.counted and total is not None else math.inf
        return Attempt(used, text, found, cuts, chosen.bound, chosen.planned, shared, scale, top)

    def spare(cut: int) -> tuple[int, int]:
        # Files found not worth cutting (their marker measured, and no shorter than them).
        small = sum(body.marker >= 0 and body.whole and body.measure <= body.marker for body in bodies)
        return tally.spare(len(bodies), cut, small, measures.weighed, measures.fixed(bodies))

    best = attempt(0)
    # In characters the plan is exact: its soul fits, as full as the line rules let it be.
    if total is not None and tally.counted:
        whole_total = total

        def least() -> Attempt:
            """Each file its least; law 3 worked out if the least of every file, as a soul, goes over."""
            tried = attempt(whole_total + 1)
            return tried if tried.used <= whole_total else attempt(whole_total + 1, weigh=True)

        best = fitted(best, attempt, least, total, spare)
    return _new(Composed, (best.text, best.found, tuple(reads), _rows(best.cuts, len(reads)), best.used))


def _rows(cuts: dict[int, Cut], count: int) -> tuple[CutRow | None, ...]:
    """The ``Cut`` of each of ``count`` names (None: not present), as plain tuples, which a soul keeps.

    Plain tuples are nothing the cyclic collector walks.
    """
    return tuple([None if (cut := cuts.get(index)) is None else (*cut,) for index in range(count)])


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


def _might_hold(bodies: Sequence[Body], measures: Measures) -> bool:
    """Could the budget hold the soul composed without it (law 1), for all that was read tells?

    Only with no file over the cap, and every body within ``per_file`` as
    far as it was measured. In characters, headings and bodies add up to the
    soul. For another count, what was read is measured as one text: the soul
    with what was not read taken out, which measures at most one unit more
    than the soul for each gap (a word, a line that a gap cuts in two).
    """
    budget = measures.budget
    total = budget.total
    if total is None or any(body.over_cap for body in bodies):
        return False
    if budget.per_file is not None and any(body.measure > budget.per_file for body in bodies):
        return False
    if budget.count is None:
        return measures.headings(bodies) + sum(body.measure for body in bodies) <= total
    pieces: list[str] = []
    for position, body in enumerate(bodies):
        pieces += (measures.heading(body, position), body.text, body.tail)
    gaps = sum(not body.whole for body in bodies)
    return measures.tally.measure("".join(pieces)) - gaps <= total


def _unsettled(
    bodies: Sequence[Body], planned: Callable[[], Plan], measures: Measures, *, holding: bool
) -> dict[int, tuple[bool, bool]]:
    """Which bodies read in part must be read further, at their start and at their end.

    A body read in part is settled when both its ends were found, it is
    worth cutting (it measures more than its marker), and, if the soul
    holds it, the plan cuts it, it measures more than its share and than
    every file kept whole that could have been cut instead (so it is cut
    rightly, and in the right order), and what was read of each end holds
    more than that end may keep.
    """
    if holding:  # law 1 may ask for the whole soul: read every body whole
        whole = {p: (True, True) for p, body in enumerate(bodies) if not body.whole and not body.maxed}
        if whole:
            return whole
    budget = measures.budget
    chosen = planned()
    kept_whole = sorted(
        (body for position, body in enumerate(bodies[: chosen.holds]) if position not in chosen.shares),
        key=lambda body: -body.measure,
    )

    def largest_whole() -> int:
        """The largest file kept whole that could have been cut instead (its marker measured only now)."""
        return next((body.measure for body in kept_whole if measures.worth_cutting(body)), -1)

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
            if share is None or (not must and body.measure <= max(share, largest_whole())):
                head = tail = True
            else:
                tail_units = share // 4 if budget.keep == "head+tail" else 0
                head_units = share - tail_units - measures.newline
                head = head or 0 < head_units >= body.head_measure
                tail = tail or 0 < tail_units - measures.newline >= body.tail_measure
        if head or tail:
            wanted[position] = (head, tail)
    return wanted
