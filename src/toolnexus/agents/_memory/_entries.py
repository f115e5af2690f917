"""The memory file's entries: what an entry is, how one is written, how one is found and shown.

docs/reference/memory-file.md: an *entry* is a line that starts with
``- `` and the lines right after it that start with a space or a tab; all
else in the file is *other text*, which no operation changes. Pure
functions on the file's text (``decode`` makes it of the file's bytes, every
byte kept); ``_disk`` reads and writes it.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Final, NamedTuple

from .._format import WHITESPACE
from ._errors import InvalidEntry

__all__ = [
    "Entry",
    "check_text",
    "decode",
    "encode",
    "entries",
    "newline_of",
    "render",
    "same",
    "shown",
    "with_entries",
    "with_entry_added",
    "with_entry_replaced",
]

BULLET: Final = "- "
INDENT: Final = "  "
_BOM: Final = "\ufeff"  # at the start of the file, part of no line
# Characters an entry may not hold: C0 controls but tab and newline, DEL,
# C1 controls, line and paragraph separators (which start lines too), and
# surrogates (no character: a lone one would be written as the raw bytes
# it escapes, unchecked).
_REFUSED: Final = frozenset(
    [*range(0x00, 0x09), *range(0x0B, 0x20), *range(0x7F, 0xA0), 0x2028, 0x2029, *range(0xD800, 0xE000)]
)


def decode(data: bytes) -> str:
    """The file's text: bytes that are not UTF-8 survive a rewrite exactly (surrogateescape)."""
    return data.decode("utf-8", "surrogateescape")


def encode(text: str) -> bytes:
    """The file's bytes again, from ``decode``'s text."""
    return text.encode("utf-8", "surrogateescape")


def shown(text: str) -> str:
    """An entry as a person or a model reads it: bytes that are not UTF-8 as U+FFFD."""
    return encode(text).decode("utf-8", "replace")


def same(text: str) -> str:
    """What two entries' texts are compared by: trimmed, ``\r\n`` as ``\n``."""
    return text.replace("\r\n", "\n").strip(WHITESPACE)


class Entry(NamedTuple):
    """One entry of the file: its text, and where its lines lie in the file's text."""

    text: str
    start: int  # offset of its "- "
    end: int  # offset just past its last line, line end included


def _lines(text: str) -> list[tuple[int, int, str]]:
    """Each line as (start, end past its line end, the line without its line end).

    A byte order mark at the start of the file is not part of its first line.
    """
    lines = []
    at = 1 if text.startswith(_BOM) else 0
    while at < len(text):
        newline = text.find("\n", at)
        if newline < 0:  # the last line, without a line end: a \r there is its own
            lines.append((at, len(text), text[at:]))
            break
        lines.append((at, newline + 1, text[at:newline].removesuffix("\r")))
        at = newline + 1
    return lines


def _continues(line: str) -> bool:
    return line[:1] in (" ", "\t")


def _unindent(line: str) -> str:
    """A continuation line's text: without its first two spaces, or its one space, or its tab."""
    return line[len(INDENT) :] if line.startswith(INDENT) else line[1:]


def entries(text: str) -> list[Entry]:
    """The entries of a memory file's text, in order."""
    found: list[Entry] = []
    lines = _lines(text)
    index = 0
    while index < len(lines):
        start, end, line = lines[index]
        index += 1
        if not line.startswith(BULLET):
            continue
        parts = [line[len(BULLET) :]]
        while index < len(lines) and _continues(lines[index][2]):
            parts.append(_unindent(lines[index][2]))
            end = lines[index][1]
            index += 1
        found.append(Entry("\n".join(parts), start, end))
    return found


def check_text(text: object, what: str = "content") -> str:
    """``text`` as an entry's text: a ``str``, trimmed, not empty, one paragraph, no control character.

    ``\\r\\n`` becomes ``\\n``; a text sent as a markdown item (``- fact``)
    loses its ``- `` before it is trimmed (``- `` alone is empty). An
    InvalidEntry says what is wrong.
    """
    if not isinstance(text, str):
        raise InvalidEntry(f"{what} must be text, not {type(text).__name__}")
    text = text.replace("\r\n", "\n").lstrip(WHITESPACE)
    if text.startswith(BULLET):  # sent as a markdown item: the item is the entry
        text = text[len(BULLET) :]
    text = text.strip(WHITESPACE)
    if not text:
        raise InvalidEntry(f"{what} is empty: an entry needs some text")
    bad = next((ord(char) for char in text if ord(char) in _REFUSED), None)
    if bad is not None and 0xD800 <= bad < 0xE000:
        raise InvalidEntry(f"{what} holds a lone surrogate (U+{bad:04X}), which is no character")
    if bad is not None:
        raise InvalidEntry(f"{what} holds a control character (U+{bad:04X}), which an entry may not")
    if any(not line.strip(WHITESPACE) for line in text.split("\n")):
        raise InvalidEntry(f"{what} holds a blank line: an entry is one paragraph")
    return text


def render(text: str, newline: str = "\n") -> str:
    """An entry as the file holds it: ``- `` and its first line, each further line indented by two spaces."""
    first, *rest = text.split("\n")
    return "".join([BULLET + first + newline, *(INDENT + line + newline for line in rest)])


def newline_of(text: str) -> str:
    """The line end the file uses: that of its first line (``\\n`` for a file without one)."""
    first = text.find("\n")
    return "\r\n" if first > 0 and text[first - 1] == "\r" else "\n"


def with_entry_added(text: str, entry: str) -> str:
    """The file's text with ``entry`` added at its end (after a line end, if its last line has none)."""
    newline = newline_of(text)
    return _ended(text, newline) + render(entry, newline)


def with_entry_replaced(text: str, entry: Entry, new: str | None) -> str:
    """The file's text with ``entry`` replaced by one holding ``new``, or removed (None); all else kept."""
    replacement = "" if new is None else render(new, newline_of(text))
    return text[: entry.start] + replacement + text[entry.end :]


def with_entries(text: str, new: Sequence[Entry | str]) -> str:
    """The file's text with all its entries replaced by ``new``: where the first stood, or at the end.

    An ``Entry`` of ``text`` in ``new`` is copied as the file holds it, byte
    for byte (with a line end if it was the last line and had none); a
    ``str`` is rendered. Other text stays where it is, byte for byte.
    """
    old = entries(text)
    newline = newline_of(text)
    block = "".join(
        _ended(text[item.start : item.end], newline) if isinstance(item, Entry) else render(item, newline)
        for item in new
    )
    if not old:
        return _ended(text, newline) + block if block else text
    between = (text[previous.end : entry.start] for previous, entry in itertools.pairwise(old))
    return "".join([text[: old[0].start], block, *between, text[old[-1].end :]])


def _ended(text: str, newline: str) -> str:
    """``text`` with its last line ended, if it has one without a line end (a byte order mark is none).

    After a ``\\r``, which is text, the end is ``\\r\\n``: a ``\\n`` alone
    would make that ``\\r`` part of a line end, and change the line.
    """
    if text.endswith("\n") or not text.removeprefix(_BOM):
        return text
    return text + ("\r\n" if text.endswith("\r") else newline)
