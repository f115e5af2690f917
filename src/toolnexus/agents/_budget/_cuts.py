"""How a budget cuts one file: its start and its end around one marker line (law 4).

``cut_body`` keeps a start and an end that fit a file's share, moved to line
boundaries when one is near, never splitting a character or a ``\r\n``;
``render`` makes the soul of a ``Plan``. In characters, each part is the
longest that fits its share. For another count, each part is its share's
worth at the rate of the text it is cut from (characters per unit, as that
text measured): ``count`` is not called to find it. The soul, measured once,
says whether the cuts fit the total (the driver lowers it if not); with
``per_file``, the parts kept are measured, and the longer one shortened once
if together they go over it.
"""

from __future__ import annotations

from collections.abc import Sequence

from .._format import WHITESPACE
from .._vocabulary import Cut
from ._bodies import utf8_length
from ._reading import UNLIMITED, Body
from ._shares import Measures, Plan, marker

__all__ = ["ceiling", "cut_body", "render"]

_new = tuple.__new__  # skips a NamedTuple's own __new__: a third of the cost
# Under a total, of a part's share worth at its text's rate, what a cut keeps:
# a little less than all, so that a text whose rate varies seldom makes the
# soul go over and be measured again; and a unit less, for the one a cut
# through a word (a token, a line) adds to the part it ends. With per_file
# alone, the parts are measured: a cut aims at the share itself.
_RATE_KEEPS = 0.97


def _chars(units: int, measured: int, length: int, *, spare: bool = True, scale: float = 1.0) -> int:
    """The characters that ``units`` take at the rate of a text of ``length`` that measures ``measured``.

    ``spare``: a little less, as the soul is measured only once it is made;
    ``scale``: law 6's correction of the rate, when a soul missed the total.
    """
    if measured <= max(units, 0):  # a unit less (-1) of a text that measures nothing keeps nothing
        return length if units > 0 else 0
    if not spare:
        return max(units, 0) * length // measured
    units -= 1
    if units <= 0:
        return 0
    return min(int(units * length * _RATE_KEEPS * scale) // measured, length)


def _prefix(text: str, stop: int, *, whole: bool, trim: bool = False) -> str:
    """The start of ``text`` of at most ``stop`` characters, ending at a line end when one is near (law 4).

    ``text`` is a whole body (which the start never reaches the end of) or
    the start of one as read (whose next character is not known). With
    ``trim``, White_Space at its end is left out (the body's end was not
    found: it may be White_Space after the body).
    """
    if stop <= 0 or not text:
        return ""
    stop = min(stop, len(text) - 1 if whole else len(text))
    while trim and stop and text[stop - 1] in WHITESPACE:
        stop -= 1
    if stop and text[stop - 1] == "\r" and (text[stop : stop + 1] == "\n" or stop == len(text)):
        stop -= 1  # never half of a \r\n (at the end of what was read, the next byte is not known)
    line = text.rfind("\n", stop - stop // 5, stop + 1)  # a line end in its last fifth
    if line > 0:
        stop = line - (text[line - 1] == "\r")  # the line break goes with what is left out
    return text[:stop]


def _suffix(text: str, length: int, begin: int, *, whole: bool, trim: bool = False) -> str:
    """The end of ``text[begin:]``, of at most ``length`` characters, starting at a line start if one is near.

    ``text`` is a whole body, or the end of one as read (whose previous
    character is not known). With ``trim``, White_Space at its start is
    left out (the body's start was not found).
    """
    if length <= 0 or begin >= len(text):
        return ""
    start = max(len(text) - length, begin)
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


def _portions(body: Body, share: int, measures: Measures) -> tuple[int, int]:
    """What the start and the end may measure, line breaks paid: the end a quarter of the share, rounded down.

    A file read in part keeps at most what was read at each end: a part
    that cannot use all of its portion leaves the rest to the other.
    """
    newline = measures.newline
    tail = share // 4 if measures.budget.keep == "head+tail" else 0
    head_units, tail_units = share - tail - newline, tail - newline if tail else 0
    if not body.whole and tail:
        if tail_units > body.tail_measure:
            head_units, tail_units = head_units + tail_units - body.tail_measure, body.tail_measure
        elif head_units > body.head_measure:
            head_units, tail_units = body.head_measure, tail_units + head_units - body.head_measure
    return head_units, tail_units


def _lengths(body: Body, share: int, measures: Measures) -> tuple[int, int]:
    """The characters the start and the end of ``body`` may take for ``share``, before the line rules."""
    text, end = body.text, body.tail
    if share >= UNLIMITED:  # all that was read of a file over the cap (the total holds the soul)
        return len(text), len(end)
    budget = measures.budget
    head_units, tail_units = _portions(body, share, measures)
    if budget.count is None:
        return head_units, tail_units
    spare, scale = budget.total is not None, measures.scale
    head_chars = _chars(head_units, body.head_measure, len(text), spare=spare, scale=scale)
    if body.whole:
        return head_chars, _chars(tail_units, body.measure, len(text), spare=spare, scale=scale)
    return head_chars, _chars(tail_units, body.tail_measure, len(end), spare=spare, scale=scale)


def _parts(body: Body, share: int, measures: Measures) -> tuple[str, str]:
    """The start and the end ``body`` keeps for ``share``, line rules applied."""
    budget = measures.budget
    text, end = body.text, body.tail
    head_chars, tail_chars = _lengths(body, share, measures)
    if body.verified is not None:  # a lowered total: no more than was measured within per_file
        head_chars, tail_chars = min(head_chars, body.verified[0]), min(tail_chars, body.verified[1])
    prefix = _prefix(text, head_chars, whole=body.whole, trim=not body.end_known)
    if budget.keep == "head":
        suffix = ""
    elif body.whole:
        suffix = _suffix(text, tail_chars, len(prefix) + 1, whole=True)
    else:
        suffix = _suffix(end, tail_chars, 0, whole=False, trim=not body.start_known)
    return prefix, suffix


def _saturation(units: int, measured: int) -> float:
    """The scale from which a part of ``units`` cut from a text that measures ``measured`` is all of it."""
    if measured <= max(units, 0):
        return 0.0  # all of it at any scale
    if units - 1 <= 0:
        return 0.0  # nothing at any scale: no rate moves it
    return measured / ((units - 1) * _RATE_KEEPS)


def ceiling(bodies: Sequence[Body], chosen: Plan, measures: Measures) -> float:
    """The rate (a multiple of each text's) from which every part the plan cuts is all its text can give.

    Law 6 searches the rate up to it: a higher one makes the same soul.
    Only under a total, for a count other than characters.
    """
    most = 0.0
    for position, share in chosen.shares.items():
        body = bodies[position]
        head_units, tail_units = _portions(body, share, measures)
        most = max(most, _saturation(head_units, body.head_measure))
        if measures.budget.keep == "head+tail":
            most = max(most, _saturation(tail_units, body.measure if body.whole else body.tail_measure))
    return most


def _below(body: Body, limit: int) -> bool:
    """Does what ``body`` could keep measure well within ``limit``, whatever is cut?

    Its parts are pieces of the body (of what was read at each end), which
    measure no more than it (together, one unit more): a unit more spared
    for a tokenizer that counts a piece one token more.
    """
    most = body.measure if body.whole else body.head_measure + body.tail_measure
    return most + 2 <= limit


def _within(prefix: str, suffix: str, body: Body, measures: Measures) -> tuple[str, str, int]:
    """The parts shortened, if need be, so that together they measure at most ``per_file``; and that measure.

    Each part is measured (a part that is all that was read of its end has
    been: it is not measured again); if they go over, the longer is
    shortened once by the excess at its own rate and measured again, and
    left out if it still goes over (nothing measures 0 units, so the rest
    always fits).
    """
    limit, measure = measures.budget.per_file, measures.tally.measure
    assert limit is not None
    whole = body.whole
    if not prefix:
        head = 0
    else:
        head = body.head_measure if not whole and len(prefix) == len(body.text) else measure(prefix)
    if not suffix:
        tail = 0
    else:
        tail = body.tail_measure if not whole and len(suffix) == len(body.tail) else measure(suffix)
    if head + tail <= limit:
        return prefix, suffix, head + tail
    if head >= tail:
        shorter = _prefix(prefix, _chars(limit - tail, head, len(prefix)), whole=False)
        units = measure(shorter) if shorter else 0
        if units + tail <= limit:
            return shorter, suffix, units + tail
        return ("", suffix, tail) if tail <= limit else ("", "", 0)
    shorter = _suffix(suffix, _chars(limit - head, tail, len(suffix)), 0, whole=True)
    units = measure(shorter) if shorter else 0
    if head + units <= limit:
        return prefix, shorter, head + units
    return (prefix, "", head) if head <= limit else ("", "", 0)


def cut_body(body: Body, share: int, measures: Measures) -> tuple[str, Cut]:
    """A cut file's section body: its start, the marker line, its end; and what was kept.

    ``share`` pays for what is kept and for the line break that joins each
    kept part to the marker. At least one character is always left out.
    The ``Cut``'s spans are offsets into the section body.
    """
    budget = measures.budget
    prefix, suffix = _parts(body, share, measures)
    if budget.count is None:
        kept = len(prefix) + len(suffix)
    elif budget.per_file is not None and body.verified is None and not _below(body, budget.per_file):
        prefix, suffix, kept = _within(prefix, suffix, body, measures)
        body.verified = (len(prefix), len(suffix))
    else:
        kept = -1  # measured when a report asks
    if body.text.isascii() and body.tail.isascii():  # the usual case: a character is a byte
        kept_bytes = len(prefix) + len(suffix)
    else:
        kept_bytes = utf8_length(prefix) + utf8_length(suffix)
    left_out_bytes = body.nbytes - kept_bytes
    text = marker(body.name, left_out_bytes)
    if prefix:
        text = f"{prefix}\n{text}"
    if suffix:
        text = f"{text}\n{suffix}"
    spans = (0, len(prefix), len(text) - len(suffix), len(text)) if kept < 0 else ()
    return text, _new(
        Cut, (True, kept, body.measure if body.whole else -1, kept_bytes, left_out_bytes, spans)
    )


def render(
    bodies: Sequence[Body], chosen: Plan, measures: Measures
) -> tuple[str, tuple[str, ...], dict[int, Cut]]:
    """The soul of a plan, the names in it, and a ``Cut`` per present file (by its index among the names)."""
    pieces: list[str] = []
    found: list[str] = []
    cuts: dict[int, Cut] = {}
    at = 0
    for position, body in enumerate(bodies):
        if position >= chosen.holds:  # left out: no room even for its heading and marker
            cuts[body.index] = Cut(True, 0, body.measure if body.whole else -1, 0, body.nbytes)
            continue
        heading = measures.heading(body, position)
        pieces.append(heading)
        at += len(heading)
        share = chosen.shares.get(position)
        if share is None:
            pieces.append(body.text)
            cuts[body.index] = _whole(body, at)
            at += len(body.text)
        else:
            text, cut = cut_body(body, share, measures)
            if cut.spans:
                cut = cut._replace(spans=tuple(at + offset for offset in cut.spans))
            cuts[body.index] = cut
            pieces.append(text)
            at += len(text)
        found.append(body.name)
    return "".join(pieces), tuple(found), cuts


def _whole(body: Body, at: int) -> Cut:
    """The ``Cut`` of a body kept whole at offset ``at`` of the soul: measured if it was, else when asked."""
    units = body.text_units  # a body kept whole was read whole: its measure, or -1 if not taken
    spans = () if units >= 0 else (at, at + len(body.text))
    return _new(Cut, (False, units, units, body.nbytes, 0, spans))
