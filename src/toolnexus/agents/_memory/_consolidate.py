"""``apply``'s merge: a consolidation's new entries, and what others wrote since its snapshot.

An LLM rewrote the snapshot's entries as ``new``, over minutes, with no lock
held. ``consolidated`` replaces the file's entries by ``new`` and merges what
happened meanwhile: an entry added since the snapshot is kept (after
``new``); an entry removed since stays removed (dropped from ``new``).
Entries are compared as ``entries.same`` compares them, each copy counted.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import NamedTuple

from ._entries import Entry, entries, same, shown, with_entries

__all__ = ["Merged", "consolidated"]


class Merged(NamedTuple):
    """What a merge kept and dropped (see ``MergeReport``)."""

    kept_added: tuple[str, ...]
    dropped_removed: tuple[str, ...]
    removed_unmatched: tuple[str, ...]


def consolidated(text: str, snapshot: Sequence[str], new: Sequence[str]) -> tuple[str, Merged]:
    """The file's ``text`` with its entries replaced by ``new``, merged with the changes since ``snapshot``.

    An entry of ``new`` that the file holds (compared) is copied as the file
    holds it, byte for byte, and so is an entry added since; other text
    stays where it is, and the new entries stand where the first stood.
    """
    now = entries(text)
    seen = [shown(entry.text) for entry in now]
    before = Counter(map(same, snapshot))
    added = Counter(map(same, seen)) - before
    removed = before - Counter(map(same, seen))
    in_file: dict[str, list[Entry]] = {}
    for entry, view in zip(now, seen, strict=True):
        in_file.setdefault(same(view), []).append(entry)
    merged: list[Entry | str] = []
    dropped = []
    for entry_text in new:
        key = same(entry_text)
        if removed[key] > 0:
            removed[key] -= 1
            dropped.append(entry_text)
        elif in_file.get(key):  # unchanged: the file's own lines, byte for byte
            merged.append(in_file[key].pop(0))
        else:
            merged.append(entry_text)
    kept = []
    for entry, view in zip(now, seen, strict=True):
        if added[same(view)] > 0:
            added[same(view)] -= 1
            kept.append(entry)
    unmatched = []
    for entry_text in snapshot:
        if removed[same(entry_text)] > 0:
            removed[same(entry_text)] -= 1
            unmatched.append(entry_text)
    outcome = Merged(tuple(shown(entry.text) for entry in kept), tuple(dropped), tuple(unmatched))
    return with_entries(text, [*merged, *kept]), outcome
