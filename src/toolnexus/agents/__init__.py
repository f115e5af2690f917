"""toolnexus.agents: turn a persona's bootstrap files into one system prompt.

``compose_soul(dir)`` returns ``(soul, found)`` exactly as ``docs/format.md``
defines; ``compose(dir)`` returns the same text with a per-file ``Soul``
report. Every entry point takes the same keyword options (``ComposeOptions``:
``max_file_bytes``, ``symlinks``, ``strict``, ``files``, ``budget``).
``Budget`` fits a soul to a model's window and says what was cut.
``SoulCache``, ``compose_many`` and ``acompose``/``acompose_soul`` serve
hosts with many personas. ``memory_tool(dir)`` is the persona's memory: a
tool a host or a model calls to add, replace and remove notes in
``MEMORY.md``, which the next soul holds. ``ACCELERATED`` is True when
the compiled reader is in use; ``NO_EXTENSIONS`` when the environment
variable ``TOOLNEXUS_SOUL_NO_EXTENSIONS`` switched it off.

This module is the package's face: every public name is here, and the
folders behind it hold one job each (``docs/decisions/rooms-on-floors.md``).
"""

from ._cache import RACY_WINDOW_NS, CacheStats, NotificationError, SoulCache, Validate
from ._compose import BootstrapFileError, compose, compose_soul
from ._format import BOOTSTRAP_ORDER, MAX_BOOTSTRAP_FILE_BYTES, truncation_notice
from ._many import acompose, acompose_soul, compose_many
from ._memory import (
    AmbiguousMatch,
    InvalidEntry,
    MemoryCallResult,
    MemoryFull,
    MemoryRefused,
    MemorySnapshot,
    MemoryTool,
    MemoryToolError,
    MemoryUnsynced,
    MemoryUsage,
    MergeReport,
    NoMatch,
    memory_tool,
)
from ._native import ACCELERATED, NO_EXTENSIONS
from ._options import Budget, ComposeOptions, Keep
from ._report import NEAR_LIMIT, FileReport, Soul
from ._vocabulary import FileStatus, SymlinkPolicy

__all__ = [
    "ACCELERATED",
    "BOOTSTRAP_ORDER",
    "MAX_BOOTSTRAP_FILE_BYTES",
    "NEAR_LIMIT",
    "NO_EXTENSIONS",
    "RACY_WINDOW_NS",
    "AmbiguousMatch",
    "BootstrapFileError",
    "Budget",
    "CacheStats",
    "ComposeOptions",
    "FileReport",
    "FileStatus",
    "InvalidEntry",
    "Keep",
    "MemoryCallResult",
    "MemoryFull",
    "MemoryRefused",
    "MemorySnapshot",
    "MemoryTool",
    "MemoryToolError",
    "MemoryUnsynced",
    "MemoryUsage",
    "MergeReport",
    "NoMatch",
    "NotificationError",
    "Soul",
    "SoulCache",
    "SymlinkPolicy",
    "Validate",
    "acompose",
    "acompose_soul",
    "compose",
    "compose_many",
    "compose_soul",
    "memory_tool",
    "truncation_notice",
]

__version__ = "0.4.0"
