"""How a budget shares its total among the files of a soul: laws 2 and 3 of docs/reference/budgets.md.

``Measures`` measures headings, markers and bodies in the budget's unit,
each text once; ``plan`` decides how many files the soul holds (law 3),
which are cut, and what each cut file may keep: an equal share of what is
left, by water-filling (max-min), the largest files cut first (law 2).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from .._options import Options
from ._reading import UNLIMITED, Body
from ._tally import Tally

__all__ = ["Measures", "Plan", "included", "marker", "plan", "waterfill"]


def marker(name: str, left_out_bytes: int) -> str:
    """The line that stands where a file was cut."""
    return f"[... {left_out_bytes:,} bytes of {name} left out ...]"


def waterfill(demands: Sequence[int], available: int) -> list[int]:
    """Max-min fair shares of ``available`` units among ``demands``.

    Each demand up to the common level is met in full; the others get the
    level. Units the level leaves over go one each to the first of those, in
    order, so the result is deterministic and never more than one unit apart.
    """
    if sum(demands) <= available:
        return list(demands)
    shares = [0] * len(demands)
    left = available
    unmet = sorted(range(len(demands)), key=demands.__getitem__)
    while unmet and demands[unmet[0]] <= left // len(unmet):
        index = unmet.pop(0)
        shares[index] = demands[index]
        left -= demands[index]
    level, extra = divmod(left, len(unmet)) if unmet else (0, 0)
    for rank, index in enumerate(sorted(unmet)):
        shares[index] = level + (1 if rank < extra else 0)
    return shares


class Plan(NamedTuple):
    """Which files the soul holds (the first ``holds`` present), and each cut one's share."""

    holds: int
    shares: dict[int, int]  # position among the present files -> units it may keep; the rest are whole
    bound: bool = True  # the total keeps a file from all it could keep (a larger one would keep more)
    planned: int = 0  # what the plan adds up to: headings, markers, bodies kept whole and shares


class Measures:
    """The budget's count of headings, markers and the line break, each text measured once.

    Headings are measured together, as the soul holds them one after
    another: what the plan asks of them is what the first files' headings
    take together. Markers are measured one by one, as the plan cuts files.
    """

    def __init__(self, tally: Tally, options: Options) -> None:
        self.tally = tally
        self.budget = tally.budget
        self._layout = options.layout
        self._markers: dict[tuple[str, int], str] = {}
        self._headings: dict[tuple[int, ...], int] = {}
        self.holds: dict[tuple[tuple[int, bool, int, int, int], ...], int] = {}  # for ``included``
        self.names = options.names
        self.scale = 1.0  # law 6: the rate a part is cut at, as a multiple of its text's (under a total)

    @property
    def weighed(self) -> bool:
        """Was law 3 worked out (the least of every file, measured one by one, more than the total)?"""
        return bool(self.holds)

    def fixed(self, bodies: Sequence[Body]) -> int:
        """The characters of the headings and whole markers of ``bodies``, the present files."""
        return sum(
            len(self.heading(body, position)) + len(self.whole_marker(body))
            for position, body in enumerate(bodies)
        )

    @property
    def newline(self) -> int:
        """What a line break around a marker costs: one character, or one unit of another count.

        A part cut at its text's rate is an estimate anyway; the soul,
        measured, says whether the cuts fit.
        """
        return 1

    def heading(self, body: Body, position: int) -> str:
        return (self._layout.nexts if position else self._layout.firsts)[body.index]

    def headings(self, bodies: Sequence[Body]) -> int:
        """The headings of ``bodies``, the first files of a soul, measured together as the soul holds them."""
        if self.budget.count is None:  # characters add up: no text to build
            layout = self._layout
            return sum(
                len((layout.nexts if p else layout.firsts)[body.index]) for p, body in enumerate(bodies)
            )
        key = tuple(body.index for body in bodies)
        units = self._headings.get(key)
        if units is None:
            text = "".join(self.heading(body, position) for position, body in enumerate(bodies))
            units = self._headings[key] = self.tally.measure(text) if text else 0
        return units

    def whole_marker(self, body: Body) -> str:
        """The marker of ``body`` left out whole: the most its marker can say."""
        key = (body.name, body.nbytes)
        text = self._markers.get(key)
        if text is None:
            text = self._markers[key] = marker(body.name, body.nbytes)
        return text

    def marker_all(self, body: Body) -> int:
        """The measure of ``whole_marker(body)`` (kept on the body: a plan asks for it often)."""
        if body.marker < 0:
            body.marker = self.tally.measure(self.whole_marker(body))
        return body.marker

    def must_cut(self, body: Body) -> bool:
        """Cut whatever the total: over the cap, or longer than ``per_file``."""
        per_file = self.budget.per_file
        return body.over_cap or (per_file is not None and body.measure > per_file)

    def worth_cutting(self, body: Body) -> bool:
        """Would cutting it to its marker shorten the soul?"""
        return not body.whole or body.measure > self.marker_all(body)

    def cut_at_least(self, body: Body) -> bool:
        """Is the least ``body`` can take its whole marker (it must be cut, or cutting it is shorter)?"""
        return self.must_cut(body) or self.worth_cutting(body)

    def least(self, body: Body) -> str:
        """The least ``body`` can take: its whole marker, or itself if it is not to be cut."""
        return self.whole_marker(body) if self.cut_at_least(body) else body.text


def included(bodies: Sequence[Body], measures: Measures, total: int) -> int:
    """How many files the soul holds (law 3): the most whose least forms, as one soul, fit the total.

    Worked out once for the bodies as read (a plan is made more than once).
    """
    key = tuple((body.index, body.whole, body.nbytes, len(body.text), len(body.tail)) for body in bodies)
    holds = measures.holds.get(key)
    if holds is None:
        holds = measures.holds[key] = _included(bodies, measures, total)
    return holds


def _included(bodies: Sequence[Body], measures: Measures, total: int) -> int:
    if measures.budget.count is None:  # characters add up: no soul to build
        used = 0
        for position, body in enumerate(bodies):
            units = measures.marker_all(body) if measures.cut_at_least(body) else body.measure
            used += len(measures.heading(body, position)) + units
            if used > total:
                return position
        return len(bodies)
    least = [measures.heading(body, position) + measures.least(body) for position, body in enumerate(bodies)]
    low, high = 0, len(bodies)  # the largest count that fits, by bisection
    while low < high:
        middle = (low + high + 1) // 2
        if measures.tally.measure("".join(least[:middle])) <= total:
            low = middle
        else:
            high = middle - 1
    return low


def _demand(body: Body, measures: Measures) -> int:
    """The most a cut file can use: less than all of it, no more than per_file, no more than was read.

    A file read in part as far as the cap allows keeps at most what was read
    of it, and the line breaks that join it to its marker.
    """
    if body.whole:
        most = body.measure - 1
    elif body.maxed:
        if measures.budget.keep == "head+tail":
            most = body.head_measure + body.tail_measure + 2 * measures.newline
        else:
            most = body.head_measure + measures.newline
    else:
        most = UNLIMITED
    per_file = measures.budget.per_file
    return most if per_file is None else min(most, per_file)


def plan(
    bodies: Sequence[Body], measures: Measures, reserve: int = 0, *, exact: bool = True, weigh: bool = False
) -> Plan:
    """What the budget does to ``bodies`` (the present files, in order): laws 2 and 3.

    The total, less ``reserve``, pays for the headings, the markers of the
    files cut (each priced as its whole marker) and the files kept whole;
    what is left is shared equally among the files cut (water-filling). The
    files cut are those that must be, then the largest (later ones first
    among equals) until every file kept whole fits under that share; where
    nothing fits, each file's least.

    The soul holds every file when a plan for all of them fits: then their
    least fits too (law 3), and nothing more need be measured to know it.
    Only when none does is law 3 worked out (``included``), and only if
    ``exact``: a plan that decides what to read holds every file then, each
    at its least. A plan for a lowered total that fits the total itself
    holds every file too; ``weigh`` works law 3 out all the same (law 6:
    the least of every file, measured as a soul, went over).
    """
    total = measures.budget.total
    if total is None:
        return Plan(
            len(bodies),
            {p: _demand(b, measures) for p, b in enumerate(bodies) if measures.must_cut(b)},
            False,
        )
    limit = total - reserve
    # A plan that fits the total itself shows the least of every file fits
    # it (law 3); a raised total (a negative reserve) shares more.
    found, cut, cost = _sharing(bodies, len(bodies), measures, min(limit, total))
    if found is not None:
        return found if limit <= total else _sharing(bodies, len(bodies), measures, limit)[0] or found
    if weigh or limit >= total or _sharing(bodies, len(bodies), measures, total)[0] is None:
        holds = included(bodies, measures, total) if exact else len(bodies)
    else:  # the total itself holds every file's least, added up (law 3 is not worked out)
        holds = len(bodies)
    if holds < len(bodies):
        found, cut, cost = _sharing(bodies, holds, measures, limit)
        if found is not None:
            return found
    # Nothing fits the lowered total: each file its least (every file that
    # must be or is worth cutting, cut to its marker).
    return Plan(holds, dict.fromkeys(cut, 0), True, cost)


def _sharing(
    bodies: Sequence[Body], holds: int, measures: Measures, limit: int
) -> tuple[Plan | None, list[int], int]:
    """The plan for the first ``holds`` bodies within ``limit``, the files it cut, and what they add up to.

    The plan is None if none fits; what the files add up to is then their least.

    A file is known to be worth cutting only once the plan would cut it (its
    marker is measured then): a file kept whole is never asked.
    """
    chosen = bodies[:holds]
    cost = measures.headings(chosen)
    cut: list[int] = []
    others: list[int] = []
    for position, body in enumerate(chosen):
        if measures.must_cut(body):
            cut.append(position)
            cost += measures.marker_all(body)
        else:
            cost += body.measure
            others.append(position)
    others.sort(key=lambda p: (-chosen[p].measure, -p))
    demand = {position: _demand(chosen[position], measures) for position in cut}
    waiting = iter(others)
    following = next(waiting, None)
    while True:
        found: Plan | None = None
        if cost <= limit:
            order = sorted(cut)
            demands = [demand[position] for position in order]
            shares = waterfill(demands, limit - cost)
            level = UNLIMITED
            for share, wanted in zip(shares, demands, strict=True):
                if share < wanted and share < level:
                    level = share
            found = Plan(holds, dict(zip(order, shares, strict=True)), level < UNLIMITED, cost + sum(shares))
            if following is None or chosen[following].measure <= level:
                # Max-min: every file kept whole fits under the share of those cut.
                return found, cut, found.planned
        while following is not None and not measures.worth_cutting(chosen[following]):
            following = next(waiting, None)  # not worth cutting: kept whole whatever the total
        if following is None:
            # Nothing more worth cutting: the plan as it stands, if it fits.
            return found, cut, cost if found is None else found.planned
        cut.append(following)
        body = chosen[following]
        cost += measures.marker_all(body) - body.measure
        demand[following] = _demand(body, measures)
        following = next(waiting, None)
