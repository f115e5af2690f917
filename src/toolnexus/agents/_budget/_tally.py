"""What a budget hands its ``count``: every measure goes through a ``Tally``, which keeps the cost model.

docs/reference/budgets.md ("What a budget costs") bounds the calls to
``count`` and the characters handed to it by what a composition reads and
cuts. The work a budget must do (measure what it reads, weigh the least of
each file) stays within it by construction; the search of law 6 for a
fuller soul, which a budget may stop at any time, asks ``spare`` first.
"""

from __future__ import annotations

from typing import Final

from .._options import Budget
from ._fitting import TRIES

__all__ = ["Tally"]

# The fixed texts (headings and whole markers) may be measured this many times:
# the headings together (for every file, then for those a soul holds), each
# marker, and both again in the soul.
_FIXED: Final = 4


class Tally:
    """One composition's measures: how many, of how many characters, and of what it read."""

    __slots__ = ("budget", "calls", "chars", "counted", "read", "reads")

    def __init__(self, budget: Budget) -> None:
        self.budget = budget
        self.counted = budget.count is not None  # characters are measured by len: no call
        self.calls = 0
        self.chars = 0
        self.read = 0  # what was read: the soul of the first read (characters), then the bytes of each read
        self.reads = 0  # reads of a file after the first read

    def measure(self, text: str) -> int:
        """``text`` in the budget's unit, tallied."""
        self.calls += 1
        self.chars += len(text)
        return self.budget.measure(text)

    def saw(self, nbytes: int) -> None:
        """A read after the first: one file, ``nbytes`` of it (its start and its end)."""
        self.reads += 1
        self.read += nbytes

    def spare(self, files: int, cut: int, small: int, weighed: bool, fixed: int) -> tuple[int, int]:
        """The calls and characters the cost model leaves, for ``cut`` of ``files`` present files cut.

        ``small``: files that measure no more than their whole marker;
        ``weighed``: law 3 was worked out (the least of every file, measured
        one by one, came to more than the total); ``fixed``: the characters
        of the files' headings and whole markers. Law 6 may try ``TRIES``
        more souls, each no longer than what was read and ``fixed``.
        """
        calls = files + 2 + 4 * cut + 2 * self.reads + small + TRIES
        chars = 3 * self.read + _FIXED * fixed + TRIES * (self.read + fixed)
        if weighed:
            probes = files.bit_length()  # the least of the first files as a soul, by bisection
            calls += files + 1 + probes
            chars += probes * (self.read + fixed)
        return calls - self.calls, chars - self.chars
