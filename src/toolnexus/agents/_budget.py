"""Prompt budgets: fit a soul to a model's window, and say what was cut.

``compose_budgeted`` composes one home under ``options.budget``:

1. it asks the reader what is there and how big (no bytes read), and plans
   how much of each file's start and end the budget could keep;
2. it reads only that (``read_excerpts``: the head, and the tail by
   ``pread``), growing a file's windows when they hold too little;
3. it shares what the budget leaves after headings and markers fairly:
   max-min (water-filling), so a small file that fits its equal share is
   never cut, however large the others;
4. it cuts each file that does not fit at a line boundary near its share,
   keeping its start (and its end), with one marker line between that names
   the file and how many bytes were left out;
5. it measures the soul, and shares again with less if a count that does not
   add up (a tokenizer) went over.

The rules are written down in docs/format.md, "Budgets".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, NamedTuple

from . import _reader
from ._args import Budget, Options
from ._reader import Excerpt, FileRead, Status

__all__ = ["NEAR_LIMIT", "Cut", "compose_budgeted", "marker", "waterfill"]

# A soul at this share of its total or more is near its limit (Soul.near_limit).
NEAR_LIMIT: Final = 0.85
# Bytes per unit when planning what to read: 4 bounds a character in UTF-8;
# for other counts it is a first guess that is checked, and grown, after reading.
_BYTES_PER_CHAR: Final = 4
_BYTES_PER_UNIT_GUESS: Final = 8
_SLACK: Final = 16  # a BOM, a backed-off character, a newline to cut at
_MIN_WINDOW: Final = 4096
_GROW: Final = 4
_MAX_PASSES: Final = 8  # of reading, and of sharing again; each one only grows or shrinks


class Cut(NamedTuple):
    """What a budget did to one present file."""

    cut: bool  # shortened, or left out entirely
    kept: int  # of its body, in the budget's unit (markers excluded)
    left_out: int | None  # of its body, in the budget's unit; None when it was not all read
    kept_bytes: int
    left_out_bytes: int


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


@dataclass
class _File:
    """One present file, as read within its windows."""

    index: int  # its place among the names
    excerpt: Excerpt
    measure: int  # of all of its body (whole) or of what was read (head and tail)
    head_measure: int
    tail_measure: int
    limit: int | None = None  # set when its windows cannot grow: it keeps at most this

    @property
    def whole(self) -> bool:
        return self.excerpt.tail is None

    def demand(self, budget: Budget) -> int:
        """The most it could keep: all of it, up to per_file; for a partial read, what was read."""
        most = self.measure if self.whole or self.limit is not None else _UNLIMITED
        if budget.per_file is not None:
            most = min(most, budget.per_file)
        return most


_UNLIMITED: Final = 2**62


class _Plan(NamedTuple):
    """Which files go in (a prefix of those present), each one's share, which are cut."""

    files: list[_File]
    shares: list[int]
    cut: set[int]  # indexes (into files) of files shortened by the budget


def _windows(lengths: Sequence[int | None], budget: Budget, cap: int) -> list[tuple[int, int]]:
    """How many bytes of each file's start and end to read, from the files' lengths."""
    per_unit = _BYTES_PER_CHAR if budget.count is None else _BYTES_PER_UNIT_GUESS
    present = [length for length in lengths if length is not None]
    # The most one file could keep: water-filling the total over the least
    # the others need (a quarter of their bytes in characters) bounds it.
    most = budget.per_file or budget.total or cap
    if budget.total is not None and present:
        least = [length // per_unit for length in present]
        most = min(most, max(waterfill(least, budget.total), default=budget.total) + 1)
    windows = []
    for length in lengths:
        if length is None:
            windows.append((0, 0))
            continue
        head_units, tail_units = _split(most, budget)
        head = head_units * per_unit + _SLACK
        tail = tail_units * per_unit + _SLACK if tail_units else 0
        windows.append(_fit_window(head, tail, cap))
    return windows


def _fit_window(head: int, tail: int, cap: int) -> tuple[int, int]:
    """``(head, tail)`` shrunk, in proportion, so that reading them takes no more than ``cap + 1`` bytes.

    The reader reads ``head + tail + 1`` bytes from the start (to learn
    whether the file is longer) and then the last ``tail``.
    """
    if head + 2 * tail <= cap:
        return head, tail
    tail = tail * cap // (head + 2 * tail)
    return cap - 2 * tail, tail


def _split(share: int, budget: Budget) -> tuple[int, int]:
    """A cut file's share as (head, tail): three quarters for the head, or all of it."""
    if budget.keep == "head":
        return share, 0
    tail = share // 4
    return share - tail, tail


def _read(path: bytes, options: Options, windows: Sequence[tuple[int, int]]) -> tuple[Excerpt, ...]:
    return _reader.read_excerpts(path, options.names, options.cap, options.policy, windows)


def _files(excerpts: Sequence[Excerpt], budget: Budget) -> list[_File]:
    files = []
    for index, excerpt in enumerate(excerpts):
        if excerpt.read.status != Status.PRESENT:
            continue
        head = budget.measure(excerpt.head or "")
        tail = budget.measure(excerpt.tail or "")
        files.append(_File(index, excerpt, head + tail, head, tail))
    return files


class _Costs:
    """Headings and markers in the budget's unit, each measured once."""

    def __init__(self, budget: Budget, options: Options) -> None:
        self._budget = budget
        self._layout = options.layout
        self._seen: dict[str, int] = {}

    def _measure(self, text: str) -> int:
        units = self._seen.get(text)
        if units is None:
            units = self._seen[text] = self._budget.measure(text)
        return units

    def heading(self, index: int, first: bool) -> int:
        return self._measure((self._layout.firsts if first else self._layout.nexts)[index])

    def marker(self, file: _File) -> int:
        # The most the marker could say: every byte of the file left out.
        name = self._layout.files[file.index]
        return self._measure("\n" + marker(name, file.excerpt.length) + "\n")


def _share(files: list[_File], budget: Budget, costs: _Costs, reserve: int) -> _Plan:
    """Fair shares within the total (less ``reserve``); files that do not fit at all are left out."""
    demands = [file.demand(budget) for file in files]
    must_cut = {i for i, file in enumerate(files) if not file.whole or file.measure > demands[i]}
    if budget.total is None:
        return _Plan(files, demands, must_cut)
    for count in range(len(files), 0, -1):
        chosen = files[:count]
        cut = {i for i in must_cut if i < count}
        while True:
            fixed = sum(costs.heading(file.index, first=i == 0) for i, file in enumerate(chosen))
            fixed += sum(costs.marker(chosen[i]) for i in cut)
            available = budget.total - reserve - fixed
            if available < 0:
                break
            shares = waterfill(demands[:count], available)
            more = cut | {i for i, file in enumerate(chosen) if shares[i] < file.measure}
            if more == cut:
                return _Plan(chosen, shares, cut)
            cut = more
    return _Plan([], [], set())


def _prefix(text: str, units: int, budget: Budget) -> str:
    """The longest start of ``text`` within ``units``, ending at a line end when one is near."""
    if units <= 0 or not text:
        return ""
    if budget.count is None:
        stop = min(units, len(text))
    else:
        low, high = 0, len(text)  # the longest start that fits, by bisection
        while low < high:
            middle = (low + high + 1) // 2
            if budget.measure(text[:middle]) <= units:
                low = middle
            else:
                high = middle - 1
        stop = low
    if stop < len(text):
        line = text.rfind("\n", stop - max(1, stop // 5), stop + 1)
        if line > 0:
            stop = line  # the newline itself goes with what is left out
        if stop > 0 and text[stop - 1] == "\r" and text[stop] == "\n":
            stop -= 1  # never keep half of a \r\n
    return text[:stop]


def _suffix(text: str, units: int, budget: Budget) -> str:
    """The longest end of ``text`` within ``units``, starting at a line start when one is near."""
    if units <= 0 or not text:
        return ""
    if budget.count is None:
        start = max(len(text) - units, 0)
    else:
        low, high = 0, len(text)  # the earliest start that fits, by bisection
        while low < high:
            middle = (low + high) // 2
            if budget.measure(text[middle:]) <= units:
                high = middle
            else:
                low = middle + 1
        start = low
    if 0 < start < len(text):
        line = text.find("\n", start - 1, start + max(1, (len(text) - start) // 5))
        if line >= 0 and line + 1 < len(text):
            start = line + 1
        if text[start - 1] == "\r" and text[start] == "\n":
            start += 1  # never keep half of a \r\n
    return text[start:]


def _utf8(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def _cut_body(name: str, file: _File, share: int, budget: Budget) -> tuple[str, Cut]:
    """A cut file's kept body: its start, the marker line, and its end."""
    excerpt = file.excerpt
    head_units, tail_units = _split(share, budget)
    if file.whole:
        body = excerpt.head or ""
        prefix = _prefix(body, head_units, budget)
        suffix = _suffix(body[len(prefix) :], tail_units, budget)
        left_out_bytes = _utf8(body) - _utf8(prefix) - _utf8(suffix)
    else:
        head, tail = excerpt.head or "", excerpt.tail or ""
        prefix = _prefix(head, head_units, budget)
        suffix = _suffix(tail, tail_units, budget)
        left_out_bytes = _utf8(head) - _utf8(prefix) + excerpt.gap + _utf8(tail) - _utf8(suffix)
    kept = budget.measure(prefix) + budget.measure(suffix)
    line = marker(name, left_out_bytes)
    body = "\n".join(part for part in (prefix, line, suffix) if part)
    left_out = file.measure - kept if file.whole else None
    return body, Cut(True, kept, left_out, _utf8(prefix) + _utf8(suffix), left_out_bytes)


def _render(plan: _Plan, options: Options, budget: Budget) -> tuple[str, tuple[str, ...], dict[int, Cut]]:
    """The soul of a plan, the names in it, and a Cut per file included."""
    firsts, nexts = options.layout.firsts, options.layout.nexts
    pieces: list[str] = []
    found: list[str] = []
    cuts: dict[int, Cut] = {}
    for position, file in enumerate(plan.files):
        name = options.files[file.index]
        pieces.append(nexts[file.index] if pieces else firsts[file.index])
        if position in plan.cut:
            body, cuts[file.index] = _cut_body(name, file, plan.shares[position], budget)
        else:
            body = file.excerpt.head or ""
            size = _utf8(body)
            cuts[file.index] = Cut(False, file.measure, 0, size, 0)
        pieces.append(body)
        found.append(name)
    return "".join(pieces), tuple(found), cuts


def _short(plan: _Plan, budget: Budget) -> list[_File]:
    """Files read in part whose windows hold less than their share needs."""
    short = []
    for position in plan.cut:
        file = plan.files[position]
        if file.whole or file.limit is not None:
            continue
        head_units, tail_units = _split(plan.shares[position], budget)
        if file.head_measure < head_units or file.tail_measure < tail_units:
            short.append(file)
    return short


def compose_budgeted(
    path: bytes, options: Options
) -> tuple[str, tuple[str, ...], tuple[FileRead, ...], tuple[Cut | None, ...], int]:
    """One home's soul under ``options.budget``: ``(text, found, reads, cuts, used)``.

    ``cuts`` has one entry per name: a ``Cut`` for each present file (also
    those left out entirely), None for the others; ``used`` is the soul in
    the budget's unit.
    """
    budget = options.budget
    assert budget is not None
    costs = _Costs(budget, options)
    sizes = _read(path, options, [(0, 0)] * len(options.names))
    lengths = [e.length if e.read.status == Status.PRESENT else None for e in sizes]
    windows = _windows(lengths, budget, options.cap)
    limits: dict[int, int] = {}
    for _ in range(_MAX_PASSES):
        excerpts = _read(path, options, windows)
        files = _files(excerpts, budget)
        for file in files:
            file.limit = limits.get(file.index)
        plan = _share(files, budget, costs, 0)
        short = _short(plan, budget)
        if not short:
            break
        for file in short:
            head, tail = windows[file.index]
            grown = _fit_window(
                max(head * _GROW, _MIN_WINDOW), max(tail * _GROW, _MIN_WINDOW) if tail else 0, options.cap
            )
            if grown == (head, tail) or head + tail >= file.excerpt.length:
                limits[file.index] = file.measure  # it cannot show more than it read
            windows[file.index] = grown
    else:
        for file in _short(plan, budget):  # still short after every pass: keep what was read
            file.limit = file.measure
        plan = _share(files, budget, costs, 0)
    text, found, cuts = _render(plan, options, budget)
    used = budget.measure(text)
    reserve = 0
    for _ in range(_MAX_PASSES):  # a count that does not add up may go over: share less
        if budget.total is None or used <= budget.total:
            break
        reserve += used - budget.total
        plan = _share(files, budget, costs, reserve)
        text, found, cuts = _render(plan, options, budget)
        used = budget.measure(text)
    else:
        while budget.total is not None and used > budget.total and plan.files:  # drop from the end
            plan = _Plan(plan.files[:-1], plan.shares[:-1], {i for i in plan.cut if i < len(plan.files) - 1})
            text, found, cuts = _render(plan, options, budget)
            used = budget.measure(text)
    return text, found, tuple(e.read for e in excerpts), _all_cuts(excerpts, files, cuts), used


def _all_cuts(
    excerpts: Sequence[Excerpt], files: list[_File], cuts: dict[int, Cut]
) -> tuple[Cut | None, ...]:
    """One entry per name: what the budget did, a file left out entirely among them."""
    result: list[Cut | None] = [None] * len(excerpts)
    for file in files:
        cut = cuts.get(file.index)
        if cut is None:  # present, but no room even for its heading
            body = file.excerpt.head or ""
            whole = file.whole
            size = _utf8(body) + _utf8(file.excerpt.tail or "") + file.excerpt.gap
            cut = Cut(True, 0, file.measure if whole else None, 0, size)
        result[file.index] = cut
    return tuple(result)
