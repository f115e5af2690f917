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
from .._options import Budget, Options
from .._vocabulary import Composed, Cut, FileStatus
from ._reading import UNLIMITED, Body, bytes_per_unit, whole_body

__all__ = ["first_read", "texts", "unchanged", "whole_bodies"]

_PRESENT: Final = FileStatus.PRESENT
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


def texts(first: Composed, options: Options) -> dict[int, str]:
    """The bodies of the files ``first`` read whole, by their place among the names.

    Cut out of the soul by their lengths, which the reader gives
    (``FileRead.body_chars``), between the section heads of the layout.
    """
    text, layout = first.text, options.layout
    found: dict[int, str] = {}
    at = 0
    for index, read in enumerate(first.reads):
        if read[0] is not _PRESENT:
            continue
        at += len(layout.nexts[index] if at else layout.firsts[index])
        end = at + read.body_chars
        if read.truncated:
            end += len(layout.notice)  # cut by the first read's small cap: read again
        else:
            found[index] = text[at:end]
        at = end
    return found


def unchanged(first: Composed, options: Options, budget: Budget) -> tuple[Composed | None, dict[int, int]]:
    """``first`` as the soul if it is whole and the budget holds it (law 1), and the bodies' measures.

    ``count`` is called once for the soul and once per body, no more (a
    budget in characters takes the reader's lengths); a budget that does not
    hold the soul keeps the measures for the bodies.
    """
    reads = first.reads
    for read in reads:
        if read[4]:  # truncated: a file longer than the first read
            return None, {}
    used = budget.measure(first.text)
    if budget.total is not None and used > budget.total:
        return None, {}
    if budget.count is None:
        measured = {index: read.body_chars for index, read in enumerate(reads) if read[0] is _PRESENT}
    else:
        measured = {index: budget.measure(body) for index, body in texts(first, options).items()}
    if budget.per_file is not None and max(measured.values(), default=0) > budget.per_file:
        return None, measured
    cuts: list[Cut | None] = [None] * len(reads)
    for index, units in measured.items():
        cuts[index] = _new(Cut, (False, units, 0, reads[index].body_bytes, 0))
    return _new(Composed, (first.text, first.found, reads, tuple(cuts), used)), measured


def whole_bodies(
    first: Composed, options: Options, bodies: dict[int, str], measured: dict[int, int], budget: Budget
) -> dict[int, Body]:
    """The ``Body`` of each file ``first`` read whole: measured once, here or by ``unchanged``."""
    names, reads = options.files, first.reads
    return {
        index: whole_body(
            index,
            names[index],
            reads[index],
            text,
            measured[index] if index in measured else budget.measure(text),
        )
        for index, text in bodies.items()
    }
