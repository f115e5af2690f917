"""How the memory tool speaks of entries in messages: their starts, lists of them, counts, a model's values.

Text is quoted as it is, so that a model can copy it back: only what would
break a line or the message's UTF-8 is escaped (``quoted``).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from typing import Final

from ._entries import Entry, shown

__all__ = ["brief", "entries_phrase", "listed", "quoted", "start", "starts"]

_START: Final = 40  # characters of an entry shown as its start
_CANDIDATES: Final = 20  # entries' starts listed at the most, however many there are
# Control characters but tab, line and paragraph separators, lone surrogates.
_ESCAPED: Final = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")
_JSON_TYPES: Final = {
    type(None): "null",
    bool: "a boolean",
    int: "a number",
    float: "a number",
    list: "an array",
    dict: "an object",
}


def entries_phrase(count: int) -> str:
    """``1 entry``, ``2 entries``."""
    return "1 entry" if count == 1 else f"{count:,} entries"


def start(text: str) -> str:
    """An entry's start: its text on one line (``\\n`` as a space), cut to 40 characters."""
    line = shown(text).replace("\n", " ")
    return line if len(line) <= _START else line[: _START - 1] + "…"


def starts(found: Sequence[Entry]) -> list[str]:
    """The starts of the first entries of ``found`` (copies once), as many as a message lists."""
    unique = dict.fromkeys(start(entry.text) for entry in found)
    return list(itertools.islice(unique, _CANDIDATES))


def quoted(text: str) -> str:
    """``text`` in quotes, as it is; ``\\n``, ``\\r``, ``\\xNN``, ``\\uNNNN`` for what cannot stand in one."""
    return "'" + _ESCAPED.sub(_escape, text) + "'"


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code == 0x0A:
        return "\\n"
    if code == 0x0D:
        return "\\r"
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def listed(items: list[str], of: int) -> str:
    """``items`` quoted, and how many more of ``of`` there are."""
    more = of - len(items)
    return "; ".join(map(quoted, items)) + (f" and {more:,} more" if more > 0 else "")


def brief(value: object) -> str:
    """A model's value in a message: text shortened, anything else as JSON names it (whatever its size)."""
    if isinstance(value, str):
        return quoted(value if len(value) <= _START else value[: _START - 1] + "…")
    return _JSON_TYPES.get(type(value), type(value).__name__)
