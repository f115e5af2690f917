"""Where a body lies in a file's bytes: the cut at a byte limit, the BOM, White_Space at the ends.

The rules of ``docs/format.md`` sections 3, 4 and 6, on bytes, for budgets,
which read files in part (the readers do the same for whole files:
``_format.body_text``, and the compiled reader in C). Trimming bytes is the
same as trimming the decoded text: every White_Space character has one
UTF-8 encoding, whose first byte is never a continuation byte, and the
decoder starts afresh at any byte that is not one.
"""

from __future__ import annotations

import re
from typing import Final

from .._format import BOM, back_off

__all__ = ["body_bounds", "boundary", "char_start", "trim_end", "trim_start", "utf8_length"]

# One White_Space character in UTF-8, and the same reversed.
_SPACE: Final = (
    rb"[\t-\r ]|\xc2[\x85\xa0]|\xe1\x9a\x80|\xe2\x80[\x80-\x8a\xa8\xa9\xaf]|\xe2\x81\x9f|\xe3\x80\x80"
)
_SPACE_REVERSED: Final = (
    rb"[\t-\r ]|[\x85\xa0]\xc2|\x80\x9a\xe1|[\x80-\x8a\xa8\xa9\xaf]\x80\xe2|\x9f\x81\xe2|\x80\x80\xe3"
)
_LEADING: Final = re.compile(b"(?:" + _SPACE + b")*")
_TRAILING_REVERSED: Final = re.compile(b"(?:" + _SPACE_REVERSED + b")*")
_ASCII_SPACE: Final = b"\t\n\x0b\x0c\r "
# Bytes that can start, or end, a White_Space character.
_SPACE_STARTS: Final = frozenset([*_ASCII_SPACE, 0xC2, 0xE1, 0xE2, 0xE3])
_SPACE_ENDS: Final = frozenset([*_ASCII_SPACE, *range(0x80, 0xC0)])


def boundary(data: bytes | bytearray, cut: int) -> int:
    """The last place at or before ``cut`` where ``data`` can be split and each part decoded alone.

    That is before a byte that is not a continuation byte: the decoder
    starts afresh there, so the two parts decode, U+FFFD and all, exactly
    as the whole does. (The cap's back-off stops after three bytes, as the
    format says, and may stop inside a character after stray continuation
    bytes: a window of a budget may not.)
    """
    while cut > 0 and data[cut] & 0xC0 == 0x80:
        cut -= 1
    return cut


def char_start(data: bytes | bytearray, start: int = 0) -> int:
    """The first of ``data[start:]`` that is not a continuation byte, at most three on."""
    stop = min(start + 3, len(data))
    while start < stop and data[start] & 0xC0 == 0x80:
        start += 1
    return start


def trim_start(data: bytes | bytearray, start: int, end: int) -> int:
    """Where ``data[start:end]`` starts once the White_Space at its start is left out."""
    if start < end and data[start] in _SPACE_STARTS:
        match = _LEADING.match(data, start, end)
        if match:
            return match.end()
    return start


def trim_end(data: bytes | bytearray, start: int, end: int) -> int:
    """Where ``data[start:end]`` ends once the White_Space at its end is left out."""
    # Through a window that grows until the run of White_Space found at its
    # end stops inside it (3 bytes: the longest White_Space character).
    window = 64
    while end > start and data[end - 1] in _SPACE_ENDS:
        low = max(start, end - window)
        tail = data[low:end]
        kept = tail.rstrip(_ASCII_SPACE)  # the usual case: a newline or two, and no more
        if kept and kept[-1] >= 0x80:  # it may end in a multi-byte one
            match = _TRAILING_REVERSED.match(tail[::-1])
            run = match.end() if match else 0
        else:
            run = len(tail) - len(kept)
        if run + 3 < len(tail) or low == start:
            return end - run
        window *= 8
    return end


def body_bounds(data: bytes | bytearray, cap: int) -> tuple[int, int]:
    """Where the body lies in ``data``: cut at ``cap`` and backed off, without BOM, trimmed."""
    end = len(data)
    if end > cap:
        end = back_off(data, cap)
    start = 3 if end >= 3 and data.startswith(BOM) else 0
    start = trim_start(data, start, end)
    return start, trim_end(data, start, end)


def utf8_length(text: str) -> int:
    """The UTF-8 bytes of ``text``."""
    return len(text.encode("utf-8"))
