"""What another writer did to a file, applied to the file as it is now: a three-way merge of lines.

A file the tool replaced may still be written by whoever held it open (a
late append, a save in place, a truncation). ``merge3`` applies to the
memory file as it is now (``ours``) what that file (``theirs``) changed
since the text the tool built on (``base``); section 14's "Merging a kept
file" gives the rules, and the code says each where it applies it. Where
both sides changed one line, both changes stay: a diff of lines cannot
tell an edit of a line from a removal beside an addition, and either
side's lines may be the only copy.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from difflib import SequenceMatcher
from typing import NamedTuple

from .._format import BOM

__all__ = ["merge3"]


class _Changes(NamedTuple):
    """One side's changes to the base: per base line, whether it went, and what came before it."""

    gone: list[bool]  # per base line
    before: list[list[bytes]]  # per base line, and one more for the end: the lines inserted before it


def _lines(data: bytes) -> list[bytes]:
    """Each line of ``data`` with its line end, ``\\n`` only (a lone ``\\r`` is text, as in an entry)."""
    lines = data.split(b"\n")
    ended = [line + b"\n" for line in lines[:-1]]
    return [*ended, lines[-1]] if lines[-1] else ended


def _keyer(base: Sequence[bytes]) -> Callable[[bytes], bytes]:
    """How lines are compared: with their line end; the base's unended last line as that line ended.

    A writer may finish the base's last line later (``- b`` then ``\r\n``,
    or ``- b\r`` then ``\n``), and the tool may have ended it meanwhile
    (``\n`` or ``\r\n`` after it): all of these are that one line.
    """
    last = base[-1] if base and not base[-1].endswith(b"\n") else b""
    finished = {last, last + b"\n", last + b"\r\n"} if last else set()
    canonical = b"\0" + last  # no other key starts so and is this: the others end with a line end

    def key(line: bytes) -> bytes:
        if line in finished:
            return canonical
        return line if line.endswith(b"\n") else line + b"\n"

    return key


def _changes(
    base: Sequence[bytes], side: Sequence[bytes], key: Callable[[bytes], bytes]
) -> tuple[_Changes, dict[int, bytes]]:
    """``side``'s changes to ``base``, and, per base line it kept, its own bytes of that line."""
    matcher = SequenceMatcher(
        None, [key(line) for line in base], [key(line) for line in side], autojunk=False
    )
    changes = _Changes([False] * len(base), [[] for _ in range(len(base) + 1)])
    kept: dict[int, bytes] = {}
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            kept.update(zip(range(i1, i2), side[j1:j2], strict=True))
            continue
        for index in range(i1, i2):  # replaced or deleted
            changes.gone[index] = True
        changes.before[i1].extend(side[j1:j2])  # replaced or inserted: before the first line it replaced
    return changes, kept


def _continues(line: bytes) -> bool:
    return line[:1] in (b" ", b"\t")


def _head(lines: Sequence[bytes]) -> tuple[list[bytes], list[bytes]]:
    """The lines that continue the line before them (at the start of ``lines``), and the rest."""
    count = 0
    while count < len(lines) and _continues(lines[count]):
        count += 1
    return list(lines[:count]), list(lines[count:])


def _newline(lines: Sequence[bytes]) -> bytes:
    """The line end these lines use: their first one's."""
    for line in lines:
        if line.endswith(b"\n"):
            return b"\r\n" if line.endswith(b"\r\n") else b"\n"
    return b"\n"


def merge3(base: bytes, theirs: bytes, ours: bytes) -> bytes:
    """``ours`` with what ``theirs`` changed since ``base``: see the module."""
    if theirs == base:
        return ours
    # A byte order mark is no part of the first line: the lines are merged without it, and
    # it is there after if theirs put it there or took it away, else if ours has it.
    base_mark, their_mark, our_mark = (text.startswith(BOM) for text in (base, theirs, ours))
    mark = their_mark if their_mark != base_mark else our_mark
    merged = _merge_lines(base.removeprefix(BOM), theirs.removeprefix(BOM), ours.removeprefix(BOM))
    return BOM + merged if mark else merged


def _merge_lines(base: bytes, theirs: bytes, ours: bytes) -> bytes:
    base_lines, their_lines, our_lines = _lines(base), _lines(theirs), _lines(ours)
    key = _keyer(base_lines)
    their_changes, theirs_kept = _changes(base_lines, their_lines, key)
    our_changes, ours_kept = _changes(base_lines, our_lines, key)
    newline = _newline(our_lines or their_lines)
    merged: list[bytes] = []
    for index in range(len(base_lines) + 1):
        their_head, their_rest = _head(their_changes.before[index])
        our_head, our_rest = _head(our_changes.before[index])
        # Lines that continue the base line before them: right after it, theirs first, then the
        # lines that start entries or other text (theirs first: where they wrote them). A line both
        # added here is there twice: each is someone's.
        after_line = index > 0 and not their_changes.gone[index - 1] and not our_changes.gone[index - 1]
        if (their_head or our_head) and not after_line and merged and merged[-1] not in (b"\n", b"\r\n"):
            merged.append(newline)  # the line they continued is gone: they continue no other entry
        merged += their_head + our_head + their_rest + our_rest
        if index < len(base_lines) and not their_changes.gone[index] and not our_changes.gone[index]:
            # Ours, unless theirs finished the base's last line: then its bytes, line end and all.
            finished = theirs_kept[index] != base_lines[index]
            merged.append(theirs_kept[index] if finished else ours_kept[index])
    # A line that ended its text, and now has lines after it, gets a line end.
    ended = [line if line.endswith(b"\n") else line + newline for line in merged[:-1]]
    return b"".join(ended + merged[-1:])
