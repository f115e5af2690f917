"""What another writer did to a file, applied to the file as it is now: a three-way merge of lines.

A file the tool replaced may still be written by whoever held it open: a
shell's late append, an editor's save in place, a truncation. ``merge3``
takes the text the tool built on (``base``), the replaced file as it is now
(``theirs``) and the memory file as it is now (``ours``), and applies to
``ours`` what ``theirs`` changed since ``base``: its lines added, at the
place they were added, in their order; its lines removed. What ``ours``
changed since ``base`` stays; where both changed one line, both changes
stay (theirs first): a diff of lines cannot tell an edit of a line from a
removal beside an addition, and either side's lines may be the only copy.
A line both added at one place is there once.

Lines end at ``\n`` only (a lone ``\r`` is text, as in an entry) and are
compared with their line end, so that a change of line ends is a change;
a last line without one compares as if it had its text's, so that a line
the tool ended and a writer finished later is one line. Lines that start
with a space or a tab continue the line before them (an entry's further
lines): those added after a line that the other side removed would
continue someone else's entry, so a blank line goes before them, and
they continue none.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from difflib import SequenceMatcher
from typing import NamedTuple

__all__ = ["merge3"]


class _Changes(NamedTuple):
    """One side's changes to the base: per base line, whether it went, and what came before it."""

    gone: list[bool]  # per base line
    before: list[list[bytes]]  # per base line, and one more for the end: the lines inserted before it


def _lines(data: bytes) -> list[bytes]:
    lines = data.split(b"\n")
    ended = [line + b"\n" for line in lines[:-1]]
    return [*ended, lines[-1]] if lines[-1] else ended


def _keys(lines: Sequence[bytes]) -> list[bytes]:
    """The lines as compared: with their line end, a last line without one given its text's."""
    end = _newline(lines)
    return [line if line.endswith(b"\n") else line + end for line in lines]


def _changes(base: Sequence[bytes], side: Sequence[bytes]) -> tuple[_Changes, dict[int, bytes]]:
    """``side``'s changes to ``base``, and, per base line it kept, its own bytes of that line."""
    matcher = SequenceMatcher(None, _keys(base), _keys(side), autojunk=False)
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


def _not_in(lines: Sequence[bytes], emitted: Sequence[bytes]) -> list[bytes]:
    """``lines`` less those ``emitted`` already, each once: both sides added them at one place."""
    left = Counter(_keys(emitted))
    kept = []
    for line, key in zip(lines, _keys(lines), strict=True):
        if left[key] > 0:
            left[key] -= 1
        else:
            kept.append(line)
    return kept


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
    base_lines, their_lines, our_lines = _lines(base), _lines(theirs), _lines(ours)
    their_changes, _ = _changes(base_lines, their_lines)
    our_changes, ours_kept = _changes(base_lines, our_lines)
    newline = _newline(our_lines or their_lines)
    merged: list[bytes] = []
    for index in range(len(base_lines) + 1):
        their_head, their_rest = _head(their_changes.before[index])
        our_head, our_rest = _head(_not_in(our_changes.before[index], their_changes.before[index]))
        # Lines that continue the base line before them: right after it, theirs first, then the
        # lines that start entries or other text (theirs first: where they wrote them).
        after_line = index > 0 and not their_changes.gone[index - 1] and not our_changes.gone[index - 1]
        if (their_head or our_head) and not after_line and merged and merged[-1] not in (b"\n", b"\r\n"):
            merged.append(newline)  # the line they continued is gone: they continue no other entry
        merged += their_head + our_head + their_rest + our_rest
        if index < len(base_lines) and not their_changes.gone[index] and not our_changes.gone[index]:
            merged.append(ours_kept[index])
    # A line that ended its text, and now has lines after it, gets a line end.
    ended = [line if line.endswith(b"\n") else line + newline for line in merged[:-1]]
    return b"".join(ended + merged[-1:])
