"""How a budget cuts one file: its start and its end around one marker line (law 4).

``cut_body`` keeps the longest start and end that fit a file's share,
moved to line boundaries when one is near, never splitting a character or a
``\r\n``; ``render`` makes the soul of a ``Plan``.
"""

from __future__ import annotations

from collections.abc import Sequence

from .._format import WHITESPACE
from .._options import Budget
from .._vocabulary import Cut
from ._bodies import utf8_length
from ._reading import Body
from ._shares import Measures, Plan, marker

__all__ = ["cut_body", "render"]

_new = tuple.__new__  # skips a NamedTuple's own __new__: a third of the cost


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
    if body.text.isascii() and body.tail.isascii():  # the usual case: a character is a byte
        kept_bytes = len(prefix) + len(suffix)
    else:
        kept_bytes = utf8_length(prefix) + utf8_length(suffix)
    left_out_bytes = body.nbytes - kept_bytes
    if budget.count is None:
        kept = len(prefix) + len(suffix)
    else:
        kept = budget.measure(prefix) + budget.measure(suffix)
    text = marker(body.name, left_out_bytes)
    if prefix:
        text = f"{prefix}\n{text}"
    if suffix:
        text = f"{text}\n{suffix}"
    left_out = body.measure - kept if body.whole else None
    return text, _new(Cut, (True, kept, left_out, kept_bytes, left_out_bytes))


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
