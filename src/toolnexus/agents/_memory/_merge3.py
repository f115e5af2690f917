"""What another writer did to a file, applied to the file as it is now: a three-way merge of lines.

A file the tool replaced may still be written by whoever held it open: a
shell's late append, an editor's save in place, a truncation. ``merge3``
takes the text the tool built on (``base``), the replaced file as it is now
(``theirs``) and the memory file as it is now (``ours``), and applies to
``ours`` what ``theirs`` changed since ``base``: its lines added, at the
place they were added, in their order; its lines removed. What ``ours``
changed since ``base`` stays, but where both changed one line, theirs (a
person's) wins, and a line both added at one place is there once. Lines are
compared without their line end (``\\n`` or ``\\r\\n``), so a line the tool
ended and a writer finished later is one line.
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
    return data.splitlines(keepends=True) if data else []


def _key(line: bytes) -> bytes:
    return line.removesuffix(b"\n").removesuffix(b"\r")


def _changes(base: Sequence[bytes], side: Sequence[bytes]) -> tuple[_Changes, dict[int, bytes]]:
    """``side``'s changes to ``base``, and, per base line it kept, its own bytes of that line."""
    matcher = SequenceMatcher(
        None, [_key(line) for line in base], [_key(line) for line in side], autojunk=False
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


def _not_in(lines: Sequence[bytes], emitted: Sequence[bytes]) -> list[bytes]:
    """``lines`` less those ``emitted`` already, each once: both sides added them at one place."""
    left = Counter(_key(line) for line in emitted)
    kept = []
    for line in lines:
        if left[_key(line)] > 0:
            left[_key(line)] -= 1
        else:
            kept.append(line)
    return kept


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
    merged: list[bytes] = []
    for index in range(len(base_lines) + 1):
        theirs_here = their_changes.before[index]
        merged.extend(theirs_here)  # theirs first: where they wrote them
        merged.extend(_not_in(our_changes.before[index], theirs_here))
        if index < len(base_lines) and not their_changes.gone[index] and not our_changes.gone[index]:
            merged.append(ours_kept[index])
    newline = _newline(our_lines or their_lines)
    # A line that ended its text, and now has lines after it, gets a line end.
    ended = [line if line.endswith(b"\n") else line + newline for line in merged[:-1]]
    return b"".join(ended + merged[-1:])
