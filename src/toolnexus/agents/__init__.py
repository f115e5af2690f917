"""toolnexus.agents: turn a persona's bootstrap files into one system prompt.

``compose_soul(dir)`` returns ``(soul, found)`` exactly as ``docs/format.md``
defines; ``compose(dir)`` returns the same text with a per-file ``Soul``
report. ``SoulCache``, ``compose_many`` and ``acompose``/``acompose_soul``
serve hosts with many personas. ``ACCELERATED`` is True when the compiled
reader is in use.
"""

from __future__ import annotations

from ._args import SymlinkPolicy
from ._cache import RACY_WINDOW_NS, CacheStats, SoulCache
from ._compose import compose, compose_soul
from ._format import BOOTSTRAP_ORDER, MAX_BOOTSTRAP_FILE_BYTES, truncation_notice
from ._many import acompose, acompose_soul, compose_many
from ._reader import ACCELERATED
from ._report import BootstrapFileError, FileReport, FileStatus, Soul

__all__ = [
    "ACCELERATED",
    "BOOTSTRAP_ORDER",
    "MAX_BOOTSTRAP_FILE_BYTES",
    "RACY_WINDOW_NS",
    "BootstrapFileError",
    "CacheStats",
    "FileReport",
    "FileStatus",
    "Soul",
    "SoulCache",
    "SymlinkPolicy",
    "acompose",
    "acompose_soul",
    "compose",
    "compose_many",
    "compose_soul",
    "truncation_notice",
]

__version__ = "0.1.0"
