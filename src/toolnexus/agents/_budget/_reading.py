"""What a budget reads of each file: all of it, or its start and end, as the budget needs.

A ``Reading`` starts from a first, plain read of the home with a small cap
(``compose_budgeted`` makes it): the files it read whole are bodies already,
and it says which files are there and how long. The longer ones it reads
whole when they are short for what the budget could keep (a file no longer
than the cap is read whole once its windows would cover half of it), and
otherwise only a window at its start and one at its end. Each file becomes
a ``Body``: its trimmed, decoded text, or the start and end of it that were
read. The budget says which bodies it cannot settle from what was read
(``Reading.more``); their windows grow fourfold, up to the cap, and they
are read again.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final

from .. import _native
from .._format import BOM, decode
from .._options import Budget, Options
from .._vocabulary import Composed, Excerpt, FileRead, FileStatus
from ._bodies import body_bounds, boundary, char_start, trim_end, trim_start, utf8_length
from ._tally import Tally

__all__ = ["UNLIMITED", "Body", "Reading", "bytes_per_unit", "whole_body"]

UNLIMITED: Final = 2**62  # units: no limit
# Bytes per unit when sizing what to read: 4 bounds a character in UTF-8;
# for other counts it is a first guess, grown when it held too little.
_BYTES_PER_CHAR: Final = 4
_BYTES_PER_UNIT_GUESS: Final = 8
_SLACK: Final = 16  # a BOM, a backed-off character, a newline to cut at
_MIN_WINDOW: Final = 4096
_GROW: Final = 4
_END_PROBE: Final = 1024  # keep="head": enough of the end to find where the body ends
_MAX_PASSES: Final = 16  # each grows a window fourfold, or reads a file whole: far more than needed


@dataclass
class Body:
    """One present file's body, as much of it as was read.

    A body read whole (``whole``) is its text, trimmed and decoded as the
    format says. A body read in part is ``text``, its start as read (from
    its first character), and ``tail``, its end as read (to its last); either
    is "" while that end lies beyond what was read (``start_known``,
    ``end_known``). Each is measured when first asked for: a budget that
    holds the soul measures the soul alone.
    """

    index: int  # the file's place among the names
    name: str
    read: FileRead  # its invalid_utf8 says whether the bytes of the body that were read are well-formed
    whole: bool
    over_cap: bool  # longer than the cap, with a body: always cut
    text: str
    tail: str
    nbytes: int  # the body's UTF-8 bytes; bytes not read count as the file holds them
    start_known: bool
    end_known: bool
    tally: Tally
    text_units: int = -1  # the measure of text, once taken
    tail_units: int = -1  # the measure of tail, once taken
    maxed: bool = False  # read in part as far as the cap allows: it keeps at most what was read
    marker: int = -1  # the measure of its whole marker, once ``Measures`` has taken it
    # With per_file: the characters of the start and end once measured within
    # it; a smaller share (a lowered total) keeps no more of either.
    verified: tuple[int, int] | None = None

    @property
    def head_measure(self) -> int:
        """The measure of ``text``: of the whole body, or of its start as read."""
        if self.text_units < 0:
            self.text_units = self.tally.measure(self.text) if self.text else 0
        return self.text_units

    @property
    def tail_measure(self) -> int:
        """The measure of ``tail``: its end as read (0 for a body read whole)."""
        if self.tail_units < 0:
            self.tail_units = self.tally.measure(self.tail) if self.tail else 0
        return self.tail_units

    @property
    def measure(self) -> int:
        """Of the whole body; of one read in part, a lower bound of the body's."""
        if self.whole:
            return self.head_measure
        # Two pieces of a text may measure one unit more than it (a word or a
        # line cut by the gap counts twice): a lower bound, but for characters.
        return max(self.head_measure + self.tail_measure - self.tally.counted, 0)


def _decode(data: bytes, start: int, end: int) -> tuple[str, int, bool]:
    """``data[start:end]`` decoded as the format says, the UTF-8 bytes of the text, and whether they were
    well-formed.
    """
    part = memoryview(data)[start:end]
    text = _native.reader.decode_utf8(part)
    if "\ufffd" not in text:  # ill-formed bytes become U+FFFD: without one, the bytes are the text's own
        return text, end - start, True
    return text, utf8_length(text), decode(part)[1]  # a U+FFFD the file holds is well-formed


def whole_body(index: int, name: str, read: FileRead, text: str, *, tally: Tally, measure: int = -1) -> Body:
    """The ``Body`` of a file the reader composed whole: ``text``, measuring ``measure`` (-1: not yet)."""
    return Body(
        index=index, name=name, read=read, whole=True, over_cap=False, text=text, tail="",
        nbytes=read.body_bytes, start_known=True, end_known=True, tally=tally, text_units=measure,
        tail_units=0,
    )  # fmt: skip


def _body(index: int, name: str, excerpt: Excerpt, cap: int, tally: Tally) -> Body:
    """The ``Body`` of a present file from the bytes the reader returned."""
    data, last, length = excerpt.head or b"", excerpt.tail, excerpt.length
    if last is None or len(data) + len(last) == length:  # every byte read (one over the cap, at most)
        if last:
            data += last
        start, end = body_bounds(data, len(data))
        text, nbytes, well_formed = _decode(data, start, end)
        return Body(
            index=index, name=name, read=_marked(excerpt.read, well_formed), whole=True,
            over_cap=length > cap and bool(text), text=text, tail="", nbytes=nbytes, start_known=True,
            end_known=True, tally=tally, tail_units=0,
        )  # fmt: skip
    # Read in part. The start's last byte read is the first one left out,
    # so that a cut never splits a character whose bytes run past it. (Three
    # continuation bytes skipped at the end's start are always a boundary:
    # a fourth cannot belong to a character begun before them.)
    stop = boundary(data, len(data) - 1)
    start = trim_start(data, 3 if stop >= 3 and data.startswith(BOM) else 0, stop)
    begin = char_start(last)
    end = trim_end(last, begin, len(last))
    text, text_bytes, head_well_formed = _decode(data, start, stop) if start < stop else ("", 0, True)
    tail, tail_bytes, tail_well_formed = _decode(last, begin, end) if begin < end else ("", 0, True)
    # The body's bytes: those of the two texts, and the file's own between
    # them (counted from the end of the start read, and to the start of the
    # end read: more than the body's when one of its ends was not found).
    gap = length - len(last) + begin - stop
    return Body(
        index=index, name=name, read=_marked(excerpt.read, head_well_formed and tail_well_formed),
        whole=False, over_cap=length > cap, text=text, tail=tail,
        nbytes=text_bytes + gap + tail_bytes, start_known=start < stop, end_known=begin < end,
        tally=tally,
    )  # fmt: skip


def _marked(read: FileRead, well_formed: bool) -> FileRead:
    """``read`` (of ``read_excerpts``, which does not decode), saying if the body's bytes are well-formed."""
    return read if well_formed else read._replace(invalid_utf8=True)


# Windows are (start, end): the bytes wanted from a file's start and from
# its end. WHOLE asks for all of a file no longer than the cap.
WHOLE: Final = (-1, 0)


def _reader_window(window: tuple[int, int], cap: int) -> tuple[int, int]:
    """``window`` as ``read_excerpts`` takes it: it reads ``head + tail + 1`` bytes from the start."""
    if window == WHOLE:
        return cap, 0
    start, end = window
    return max(start - end, 0), end


def _most(cap: int, budget: Budget) -> tuple[int, int]:
    """The largest window the cap allows: four fifths of it from the start, one from the end."""
    end = min(_END_PROBE, cap // 5) if budget.keep == "head" else cap // 5
    return cap - end, end


def _fit(start: int, end: int, length: int, cap: int, budget: Budget) -> tuple[int, int]:
    """A window of ``start`` and ``end`` bytes for a file of ``length``, as the reader may take it."""
    head, tail = _reader_window((start, end), cap)
    if length <= cap and 2 * (head + 2 * tail + 1) > length:
        return WHOLE  # it would cover half of it or more: read it all
    if head + 2 * tail > cap:
        return _most(cap, budget)
    return start, end


def _size(window: tuple[int, int], length: int, cap: int) -> int:
    """The bytes a read of ``window`` takes of a file of ``length``."""
    if window == WHOLE:
        return min(length, cap + 1)
    head, tail = _reader_window(window, cap)
    return head + 2 * tail + 1


def _grow(window: tuple[int, int], head: bool, tail: bool, cap: int) -> tuple[int, int]:
    """``window`` grown at its start, its end or both, each at least fourfold, and the read with them.

    The read as a whole grows fourfold too (one end may grow alone): so the
    reads of a file add up to less than four thirds of the last.
    """
    if not (head or tail):
        return window
    start, end = window
    least = _GROW * _size(window, 0, cap)
    start = max(start * _GROW, _MIN_WINDOW) if head else start
    end = max(end * _GROW, _MIN_WINDOW) if tail else end
    while _size((start, end), 0, cap) < least:
        if head:
            start *= 2
        if tail:
            end *= 2
    return start, end


def bytes_per_unit(budget: Budget) -> int:
    """Bytes a unit of the budget's count takes, to size what to read: exact for characters, a guess else."""
    return _BYTES_PER_CHAR if budget.count is None else _BYTES_PER_UNIT_GUESS


def _first_windows(
    lengths: Sequence[int | None], budget: Budget, cap: int, most: int
) -> list[tuple[int, int]]:
    """Windows for a first read: what the budget could keep of a file that keeps ``most`` units."""
    per_unit = bytes_per_unit(budget)
    if budget.keep == "head+tail":
        start, end = (most - most // 4) * per_unit + _SLACK, (most // 4) * per_unit + _SLACK
    else:
        start, end = most * per_unit + _SLACK, _END_PROBE
    start, end = max(start, _MIN_WINDOW), max(end, _MIN_WINDOW // 4)
    return [(0, 0) if length is None else _fit(start, end, length, cap, budget) for length in lengths]


class Reading:
    """The bodies of one home's present files, read as far as the budget asks.

    Made from ``first``, a plain read of the home with a small cap, and
    ``whole``, the bodies of the files it read whole (by their place among
    the names, with their measures). The other present files are read with
    windows sized by ``reach`` (from the present files' lengths, the most
    units one file could keep). ``more`` reads further where the budget
    could not settle the laws from what was read.
    """

    def __init__(
        self,
        home: bytes,
        options: Options,
        reach: Callable[[list[int]], int],
        first: Composed,
        whole: dict[int, Body],
        *,
        tally: Tally,
    ) -> None:
        budget = options.budget
        assert budget is not None
        self._home, self._options, self._budget, self._tally = home, options, budget, tally
        self.reads = list(first.reads)
        self._lengths: list[int | None] = [
            None if read.status != FileStatus.PRESENT
            else max(read.size_on_disk or 0, read.bytes_read) if read.truncated else read.bytes_read
            for read in first.reads
        ]  # fmt: skip
        most = reach([length for length in self._lengths if length is not None])
        self._windows = _first_windows(self._lengths, budget, options.cap, most)
        for index in whole:
            self._windows[index] = WHOLE
        self._bodies: dict[int, Body] = dict(whole)
        self._passes = 0
        self._read_again([i for i, n in enumerate(self._lengths) if n is not None and i not in whole])

    @property
    def bodies(self) -> list[Body]:
        """The present files' bodies, in the order of the names."""
        return [self._bodies[index] for index in sorted(self._bodies)]

    def at_cap(self, body: Body) -> bool:
        """Was ``body`` read as far as the cap allows a file longer than it (its start and its end)?"""
        return self._windows[body.index] == _most(self._options.cap, self._budget)

    def more(self, wanted: dict[int, tuple[bool, bool]]) -> bool:
        """Read more of the bodies at ``wanted`` positions (at their start, at their end); False if none can.

        A body whose windows cannot grow (the cap allows no more) is marked
        ``maxed``, which changes what the budget may give it: True then too.
        """
        bodies = self.bodies
        todo: list[int] = []
        changed = False
        cap = self._options.cap
        for position, (head, tail) in wanted.items():
            body = bodies[position]
            old = self._windows[body.index]
            length = self._lengths[body.index] or 0
            grown = old if old == WHOLE else _fit(*_grow(old, head, tail, cap), length, cap, self._budget)
            if _size(grown, length, cap) <= _size(old, length, cap) or self._passes >= _MAX_PASSES:
                # As far as the cap allows (or as far as it is worth going):
                # what was read is all it can keep.
                changed = changed or not body.maxed
                body.maxed = True
            else:
                self._windows[body.index] = grown
                todo.append(body.index)
        self._read_again(todo)
        return changed or bool(todo)

    def _read_again(self, indexes: list[int]) -> None:
        if not indexes:
            return
        self._passes += 1
        options = self._options
        for index, excerpt in zip(indexes, self._read(indexes, self._windows), strict=True):
            self.reads[index] = excerpt.read
            if excerpt.read.status == FileStatus.PRESENT:
                body = _body(index, options.files[index], excerpt, options.cap, self._tally)
                self._tally.saw(len(excerpt.head or b"") + len(excerpt.tail or b""))
                before = self._bodies.get(index)
                if before is not None:  # what was read again as it was is not measured again
                    if before.text_units >= 0 and before.text == body.text:
                        body.text_units = before.text_units
                    if before.tail_units >= 0 and before.tail == body.tail and not body.whole:
                        body.tail_units = before.tail_units
                self._bodies[index] = body
                self.reads[index] = body.read
                self._lengths[index] = excerpt.length
            else:  # gone since it was looked at
                self._bodies.pop(index, None)

    def _read(self, indexes: Sequence[int], windows: Sequence[tuple[int, int]]) -> tuple[Excerpt, ...]:
        options = self._options
        names = [options.names[i] for i in indexes]
        asked = [_reader_window(windows[i], options.cap) for i in indexes]
        return _native.reader.read_excerpts(self._home, names, options.cap, options.policy.word, asked)
