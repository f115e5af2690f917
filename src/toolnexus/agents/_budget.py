"""Prompt budgets: fit a soul to a model's window, and say what was cut.

``compose_budgeted`` composes one home under ``options.budget`` as
docs/format.md section 12 lays down:

1. it asks the reader which files are there and how long (no bytes read);
2. it reads each file whole, or, when the file is long for what the budget
   could keep, only its start and end (``_bodies_read``), reading more of a
   file until what it read settles every question the budget asks of it;
3. a soul the budget holds is the soul without a budget (law 1);
4. otherwise it decides how many files the soul holds (law 3), which are
   cut, and what each cut file may keep: an equal share of what is left,
   the largest files cut first (law 2);
5. it cuts each at line boundaries (law 4), keeping its start and end
   around one marker line, and measures the soul; a count that does not add
   up has its total lowered until the soul fits (law 6).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final, NamedTuple

from ._args import Budget, Options
from ._bodies_read import UNLIMITED, Body, Reading, bytes_per_unit
from ._format import WHITESPACE
from ._vocabulary import Composed, Cut

__all__ = ["NEAR_LIMIT", "compose_budgeted", "marker", "waterfill"]

# A soul at this share of its total or more is near its limit (Soul.near_limit).
NEAR_LIMIT: Final = 0.85
# Passes of sharing with a lowered total, for a count that does not add up,
# before the soul falls back to the least each file can take (which fits).
_LOWERINGS: Final = 8


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
    unmet = sorted(range(len(demands)), key=lambda i: demands[i])
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
        self.newline = self.of("\n")  # what a line break around a marker costs

    def of(self, text: str) -> int:
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
        """The measure of ``whole_marker(body)``."""
        return self.of(self.whole_marker(body))

    def must_cut(self, body: Body) -> bool:
        """Cut whatever the total: over the cap, or longer than ``per_file``."""
        per_file = self.budget.per_file
        return body.over_cap or (per_file is not None and body.measure > per_file)

    def worth_cutting(self, body: Body) -> bool:
        """Would cutting it to its marker shorten the soul?"""
        return not body.whole or body.measure > self.marker_all(body)

    def least(self, body: Body) -> str:
        """The least ``body`` can take: its whole marker, or itself if it is not to be cut."""
        if self.must_cut(body) or self.worth_cutting(body):
            return self.whole_marker(body)
        return body.text


def _included(bodies: Sequence[Body], measures: Measures, total: int) -> int:
    """How many files the soul holds (law 3): the most whose least forms, as one soul, fit the total."""
    least = [measures.heading(body, position) + measures.least(body) for position, body in enumerate(bodies)]
    if measures.budget.count is None:  # characters add up: no soul to build
        used = 0
        for position, text in enumerate(least):
            used += len(text)
            if used > total:
                return position
        return len(bodies)
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
    cost = sum(measures.of(measures.heading(body, position)) for position, body in enumerate(chosen))
    cut: list[int] = []
    candidates: list[int] = []
    for position, body in enumerate(chosen):
        if measures.must_cut(body):
            cut.append(position)
            cost += measures.marker_all(body)
        else:
            cost += body.measure
            if measures.worth_cutting(body):
                candidates.append(position)
    candidates.sort(key=lambda p: (-chosen[p].measure, -p))
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
        demands = [_demand(chosen[p], measures) for p in order]
        shares = waterfill(demands, limit - cost)
        found = Plan(holds, dict(zip(order, shares, strict=True)))
        fewest = fewest or found
        level = min((s for s, d in zip(shares, demands, strict=True) if s < d), default=UNLIMITED)
        if more == len(candidates) or chosen[candidates[more]].measure <= level:
            return found  # max-min: every file kept whole fits under the share of those cut
    # Markers take so much of a small total that no share has every file kept
    # whole under it: the fewest largest files that fit, or else the least of
    # each (every file that must be or is worth cutting, cut to its marker).
    return fewest or Plan(holds, dict.fromkeys(cut, 0))


# ---- cutting -----------------------------------------------------------------


def _prefix(text: str, units: int, budget: Budget, *, whole: bool, trim: bool = False) -> str:
    """The longest start of ``text`` within ``units``, ending at a line end when one is near (law 4).

    ``text`` is a whole body (which the start never reaches the end of) or
    the start of one as read (whose next character is not known). With
    ``trim``, White_Space at its end is left out (the body's end was not
    found: it may be White_Space after the body).
    """
    if units < 0 or not text:
        return ""
    last = len(text) - 1 if whole else len(text)
    if budget.count is None:
        stop = min(units, last)
    else:
        low, high = 0, last  # the longest start that fits, by bisection
        while low < high:
            middle = (low + high + 1) // 2
            if budget.measure(text[:middle]) <= units:
                low = middle
            else:
                high = middle - 1
        stop = low
    while trim and stop and text[stop - 1] in WHITESPACE:
        stop -= 1
    if stop and text[stop - 1] == "\r" and (text[stop : stop + 1] == "\n" or stop == len(text)):
        stop -= 1  # never half of a \r\n (at the end of what was read, the next byte is not known)
    line = text.rfind("\n", stop - stop // 5, stop + 1)  # a line end in its last fifth
    if line > 0:
        stop = line - (text[line - 1] == "\r")  # the line break goes with what is left out
    return text[:stop]


def _suffix(text: str, units: int, budget: Budget, begin: int, *, whole: bool, trim: bool = False) -> str:
    """The longest end of ``text[begin:]`` within ``units``, starting at a line start when one is near.

    ``text`` is a whole body, or the end of one as read (whose previous
    character is not known). With ``trim``, White_Space at its start is
    left out (the body's start was not found).
    """
    if units < 0 or begin >= len(text):
        return ""
    if budget.count is None:
        start = max(len(text) - units, begin)
    else:
        low, high = begin, len(text)  # the earliest start that fits, by bisection
        while low < high:
            middle = (low + high) // 2
            if budget.measure(text[middle:]) <= units:
                high = middle
            else:
                low = middle + 1
        start = low
    while trim and start < len(text) and text[start] in WHITESPACE:
        start += 1
    if start >= len(text):
        return ""
    # A line start in its first fifth: just after a newline (the character
    # before text[0], of an end as read, is not known).
    newline = text.find("\n", max(start - 1, 0), start + (len(text) - start) // 5)
    if newline >= 0 and newline + 1 < len(text):
        start = newline + 1
    if text[start] == "\n" and (text[start - 1 : start] == "\r" or (start == 0 and not whole)):
        start += 1  # never half of a \r\n
    return text[start:]


def _utf8(text: str) -> int:
    return len(text.encode("utf-8"))


def cut_body(body: Body, share: int, measures: Measures) -> tuple[str, Cut]:
    """A cut file's section body: its start, the marker line, its end; and what was kept.

    ``share`` pays for what is kept and for the line break that joins each
    kept part to the marker. At least one character is always left out.
    """
    budget = measures.budget
    tail = share // 4 if budget.keep == "head+tail" else 0
    prefix = _prefix(
        body.text, share - tail - measures.newline, budget, whole=body.whole, trim=not body.end_known
    )
    if budget.keep == "head":
        suffix = ""
    elif body.whole:
        suffix = _suffix(body.text, tail - measures.newline, budget, len(prefix) + 1, whole=True)
    else:
        suffix = _suffix(
            body.tail, tail - measures.newline, budget, 0, whole=False, trim=not body.start_known
        )
    kept_bytes = _utf8(prefix) + _utf8(suffix)
    left_out_bytes = body.nbytes - kept_bytes
    kept = budget.measure(prefix) + budget.measure(suffix)
    text = "\n".join(part for part in (prefix, marker(body.name, left_out_bytes), suffix) if part)
    left_out = body.measure - kept if body.whole else None
    return text, Cut(True, kept, left_out, kept_bytes, left_out_bytes)


def render(
    bodies: Sequence[Body], chosen: Plan, measures: Measures
) -> tuple[str, tuple[str, ...], dict[int, Cut]]:
    """The soul of a plan, the names in it, and a ``Cut`` per present file (by its index among the names)."""
    pieces: list[str] = []
    found: list[str] = []
    cuts: dict[int, Cut] = {}
    for position, body in enumerate(bodies):
        if position >= chosen.holds:  # left out: no room even for its heading and marker
            left_out = body.measure if body.whole else None
            cuts[body.index] = Cut(True, 0, left_out, 0, body.nbytes)
            continue
        pieces.append(measures.heading(body, position))
        share = chosen.shares.get(position)
        if share is None:
            pieces.append(body.text)
            cuts[body.index] = Cut(False, body.measure, 0, body.nbytes, 0)
        else:
            text, cuts[body.index] = cut_body(body, share, measures)
            pieces.append(text)
        found.append(body.name)
    return "".join(pieces), tuple(found), cuts


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


def compose_budgeted(path: bytes, options: Options) -> Composed:
    """One home's soul under ``options.budget``, with its ``cuts`` and ``used``.

    ``cuts`` has one entry per name: a ``Cut`` for each present file (also
    those left out entirely), None for the others; ``used`` is the soul in
    the budget's unit.
    """
    budget = options.budget
    assert budget is not None
    measures = Measures(budget, options)
    reading = Reading(path, options, lambda lengths: _reach(lengths, budget))
    while True:  # read on until what was read settles the laws
        bodies = reading.bodies
        text = _unchanged(bodies, measures)
        if text is not None:  # law 1: every file whole
            whole = {body.index: Cut(False, body.measure, 0, body.nbytes, 0) for body in bodies}
            found = tuple(body.name for body in bodies)
            reads = tuple(reading.reads)
            return Composed(text, found, reads, _per_name(whole, len(reads)), budget.measure(text))
        wanted = _unsettled(bodies, plan(bodies, measures), measures)
        if not wanted or not reading.more(wanted):
            break
    text, found, cuts, used = _fitted(bodies, measures)
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


def _unsettled(bodies: Sequence[Body], chosen: Plan, measures: Measures) -> dict[int, tuple[bool, bool]]:
    """Which bodies read in part must be read further, at their start and at their end.

    A body read in part is settled when both its ends were found, it is
    worth cutting (it measures more than its marker), and, if the soul
    holds it, the plan cuts it, it measures more than its share and than
    every file kept whole that could have been cut instead (so it is cut
    rightly, and in the right order), and what was read of each end holds
    more than that end may keep.
    """
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
