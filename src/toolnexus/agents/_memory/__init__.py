"""The persona's memory: the memory tool, and what it raises.

``_tool`` holds ``memory_tool`` and ``MemoryTool`` (the host's API), and
``_results`` what it returns; ``_model`` the tool as a model meets it (its
definition, typed as each SDK types it, and its calls);
``_entries`` what an entry is; ``_consolidate`` the merge of a
consolidation; ``_machine`` the protocol that writes the file, losing no
other writer's bytes, as a state machine: ``_disk`` its moves, ``_files``
its reads, ``_system`` its system calls; ``_errors`` and ``_words`` what
the tool raises and says.
"""

from __future__ import annotations

from ._errors import (
    AmbiguousMatch,
    InvalidEntry,
    MemoryFull,
    MemoryRefused,
    MemoryToolError,
    MemoryUnsynced,
    NoMatch,
)
from ._model import MemoryCallResult
from ._results import MemorySnapshot, MemoryUsage, MergeReport
from ._tool import MemoryTool, memory_tool

__all__ = [
    "AmbiguousMatch",
    "InvalidEntry",
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
    "memory_tool",
]
