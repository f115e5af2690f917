"""What the memory tool's operations return: how full the file is, a snapshot, a merge's report."""

from __future__ import annotations

import warnings
from typing import NamedTuple

__all__ = ["MemorySnapshot", "MemoryUsage", "MergeReport"]


class MemoryUsage(NamedTuple):
    """How full a memory file is: how many entries, its characters as the soul holds them, and its limit."""

    entry_count: int
    used: int
    limit: int

    @property
    def entries(self) -> int:
        """``entry_count``, by its 0.2 name (deprecated: ``MemoryTool.entries()`` gives the entries)."""
        warnings.warn(
            "MemoryUsage.entries is deprecated: use MemoryUsage.entry_count", DeprecationWarning, stacklevel=2
        )
        return self.entry_count


class MemorySnapshot(NamedTuple):
    """The entries of a memory file at one moment: what a consolidation rewrites."""

    entries: tuple[str, ...]


class MergeReport(NamedTuple):
    """What ``apply`` did with a consolidation's entries.

    ``applied`` says whether the file was written; ``entries`` are its
    entries afterwards (as they were, if not). ``kept_added`` are entries
    written since the snapshot, kept after the new ones; ``dropped_removed``
    are entries of the new list that were removed since the snapshot, and
    stay removed; ``removed_unmatched`` are entries removed since that the
    new list does not hold as they were (it may hold them rewritten: a host
    may want to look). ``problems`` says, in words, why nothing was written.
    """

    applied: bool
    entries: tuple[str, ...]
    kept_added: tuple[str, ...]
    dropped_removed: tuple[str, ...]
    removed_unmatched: tuple[str, ...]
    problems: tuple[str, ...]
    usage: MemoryUsage
