"""How a budget shares its total among the files of a soul: laws 2 and 3 of docs/reference/budgets.md.

``Measures`` measures headings, markers and bodies in the budget's unit,
each text once; ``plan`` decides how many files the soul holds (law 3),
which are cut, and what each cut file may keep: an equal share of what is
left, by water-filling (max-min), the largest files cut first (law 2).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import NamedTuple

from .._options import Budget, Options
from ._reading import UNLIMITED, Body

__all__ = ["Measures", "Plan", "marker", "plan", "waterfill"]


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


class Measures:
    """The budget's count of headings, markers and bodies, each text measured once."""

    def __init__(self, budget: Budget, options: Options) -> None:
        self.budget = budget
        self._layout = options.layout
        self._seen: dict[str, int] = {}
        self._markers: dict[tuple[str, int], str] = {}
        self.names = options.names

    @functools.cached_property
    def newline(self) -> int:
        """What a line break around a marker costs (measured when first asked)."""
        return self.of("\n")

    def of(self, text: str) -> int:
        if self.budget.count is None:
            return len(text)  # as cheap as the look-up
        units = self._seen.get(text)
        if units is None:
            units = self._seen[text] = self.budget.measure(text)
        return units

    def heading(self, body: Body, position: int) -> str:
        return (self._layout.nexts if position else self._layout.firsts)[body.index]

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
            body.marker = self.of(self.whole_marker(body))
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


def _included(bodies: Sequence[Body], measures: Measures, total: int) -> int:
    """How many files the soul holds (law 3): the most whose least forms, as one soul, fit the total."""
    if measures.budget.count is None:  # characters add up: no soul to build
        used = 0
        for position, body in enumerate(bodies):
            units = measures.marker_all(body) if measures.cut_at_least(body) else body.measure
            used += measures.of(measures.heading(body, position)) + units
            if used > total:
                return position
        return len(bodies)
    least = [measures.heading(body, position) + measures.least(body) for position, body in enumerate(bodies)]
    low, high = 0, len(bodies)  # the largest count that fits, by bisection
    while low < high:
        middle = (low + high + 1) // 2
        if measures.budget.measure("".join(least[:middle])) <= total:
            low = middle
        else:
            high = middle - 1
    return low


def _demand(body: Body, measures: Measures) -> int:
    """The most a cut file can use: less than all of it, no more than per_file, no more than was read."""
    if body.whole:
        most = body.measure - 1
    else:
        most = body.head_measure + body.tail_measure if body.maxed else UNLIMITED
    per_file = measures.budget.per_file
    return most if per_file is None else min(most, per_file)


def plan(bodies: Sequence[Body], measures: Measures, reserve: int = 0) -> Plan:
    """What the budget does to ``bodies`` (the present files, in order): laws 2 and 3.

    The total, less ``reserve``, pays for the headings, the markers of the
    files cut (each priced as its whole marker) and the files kept whole;
    what is left is shared equally among the files cut (water-filling). The
    files cut are those that must be, then the largest (later ones first
    among equals) until every file kept whole fits under that share; where
    no share allows that, the fewest largest that let the soul fit; where
    nothing fits, each file's least.
    """
    total = measures.budget.total
    if total is None:
        return Plan(
            len(bodies), {p: _demand(b, measures) for p, b in enumerate(bodies) if measures.must_cut(b)}
        )
    holds = _included(bodies, measures, total)
    chosen = bodies[:holds]
    cost = 0
    cut: list[int] = []
    candidates: list[int] = []
    for position, body in enumerate(chosen):
        cost += measures.of(measures.heading(body, position))
        if measures.must_cut(body):
            cut.append(position)
            cost += measures.marker_all(body)
        else:
            cost += body.measure
            if measures.worth_cutting(body):
                candidates.append(position)
    candidates.sort(key=lambda p: (-chosen[p].measure, -p))
    demand = {position: _demand(chosen[position], measures) for position in (*cut, *candidates)}
    limit = total - reserve
    fewest: Plan | None = None
    for more in range(len(candidates) + 1):
        if more:
            position = candidates[more - 1]
            cut.append(position)
            cost += measures.marker_all(chosen[position]) - chosen[position].measure
        if cost > limit:
            continue
        order = sorted(cut)
        demands = [demand[position] for position in order]
        shares = waterfill(demands, limit - cost)
        found = Plan(holds, dict(zip(order, shares, strict=True)))
        fewest = fewest or found
        if more == len(candidates):
            return found
        level = UNLIMITED
        for share, wanted in zip(shares, demands, strict=True):
            if share < wanted and share < level:
                level = share
        if chosen[candidates[more]].measure <= level:
            return found  # max-min: every file kept whole fits under the share of those cut
    # Markers take so much of a small total that no share has every file kept
    # whole under it: the fewest largest files that fit, or else the least of
    # each (every file that must be or is worth cutting, cut to its marker).
    return fewest or Plan(holds, dict.fromkeys(cut, 0))
