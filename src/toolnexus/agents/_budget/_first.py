"""A budget's first read: the home composed plainly, with a cap no larger than the budget could keep whole.

Most homes under most budgets are short files the budget holds. For them the
first read, the reader's plain compose, is the whole answer: law 1 says a
budget that holds the soul changes nothing, and the composed soul is that
soul, at the cost of a plain compose and one measure (and one per file with
``per_file``). For the others it is where the budget starts: the files it
read whole are bodies, cut apart along the section heads the layout gives;
the longer files, which the small cap cut, are read again as the budget needs
(``_reading``). Its cap is small for a budget that keeps little, so that a
3 MB file costs the first read no more than its first 16 KB.
"""

from __future__ import annotations

from typing import Final

from .. import _native
from .._options import Options
from .._vocabulary import Composed, CutRow, FileStatus
from ._reading import UNLIMITED, Body, bytes_per_unit, whole_body
from ._tally import Tally

__all__ = ["first_read", "spans", "unchanged", "whole_bodies"]

_PRESENT: Final = FileStatus.PRESENT.value  # as a FileRead holds it
_new = tuple.__new__  # skips a NamedTuple's own __new__: a third of the cost
_MOST: Final = 16 * 1024  # bytes the first read takes of a file at most
_SLACK: Final = 16  # a BOM, and White_Space a body is trimmed of


def first_read(home: bytes, options: Options) -> Composed:
    """The home composed plainly, each file capped at what the budget could keep whole (16 KB at most)."""
    budget = options.budget
    assert budget is not None
    keeps = min(budget.total or UNLIMITED, budget.per_file or UNLIMITED)
    cap = min(options.cap, _MOST, keeps * bytes_per_unit(budget) + _SLACK)
    policy = options.policy.word
    (composed,) = _native.reader.compose_homes([home], options.names, cap, policy, options.layout)
    return composed


def spans(first: Composed, options: Options) -> dict[int, tuple[int, int]]:
    """Where the body of each file ``first`` read whole stands in its soul, by its place among the names.

    Found by their lengths, which the reader gives (``FileRead.body_chars``),
    between the section heads of the layout.
    """
    layout = options.layout
    found: dict[int, tuple[int, int]] = {}
    at = 0
    for index, read in enumerate(first.reads):
        if read.status != _PRESENT:
            continue
        at += len(layout.nexts[index] if at else layout.firsts[index])
        end = at + read.body_chars
        if read.truncated:
            end += len(layout.notice)  # cut by the first read's small cap: read again
        else:
            found[index] = (at, end)
        at = end
    return found


def unchanged(first: Composed, options: Options, tally: Tally) -> tuple[Composed | None, dict[int, int]]:
    """``first`` as the soul if it is whole and the budget holds it (law 1), and the bodies it measured.

    ``count`` is called once, for the soul (and, with ``per_file``, once per
    body first: a body over it spares the soul its measure). What each file
    keeps is measured only when a report asks for it; a budget in characters
    takes the reader's lengths.
    """
    budget, reads, text = tally.budget, first.reads, first.text
    for read in reads:
        if read.truncated:  # a file longer than the first read
            return None, {}
    if budget.count is None:  # the usual case, and the cheapest: the reader's lengths are the measures
        per_file = budget.per_file
        if (budget.total is not None and len(text) > budget.total) or (
            per_file is not None and any(read.body_chars > per_file for read in reads)
        ):
            return None, {}
        # () for cuts: each file kept whole, its measure the reader's length (the reports say so when asked).
        return _new(Composed, (text, first.found, reads, (), len(text))), {}
    where = spans(first, options)
    measured: dict[int, int] = {}
    if budget.per_file is not None:
        for index, (start, stop) in where.items():
            measured[index] = tally.measure(text[start:stop]) if stop > start else 0
        if max(measured.values(), default=0) > budget.per_file:
            return None, measured
    used = tally.measure(text)
    if budget.total is not None and used > budget.total:
        return None, measured
    per_name: list[CutRow | None] = [None] * len(reads)
    for index, (start, stop) in where.items():
        units = measured.get(index, -1)
        shown = () if units >= 0 else (start, stop)
        per_name[index] = (False, units, units, reads[index].body_bytes, 0, shown)
    return _new(Composed, (text, first.found, reads, tuple(per_name), used)), measured


def whole_bodies(
    first: Composed, options: Options, measured: dict[int, int], tally: Tally
) -> dict[int, Body]:
    """The ``Body`` of each file ``first`` read whole, with its measure if ``unchanged`` took it."""
    names, reads, text = options.files, first.reads, first.text
    return {
        index: whole_body(
            index, names[index], reads[index], text[start:stop], tally=tally, measure=measured.get(index, -1)
        )
        for index, (start, stop) in spans(first, options).items()
    }
