"""The soul's format: bootstrap order, byte cap, trim set, notice, sections.

The rules of ``docs/format.md`` that shape the text, as data: ``layout()``
gives the section heads and the notice, which both readers fill in. (The
trim set is applied by the readers, to bytes; ``WHITESPACE`` is the same
set, for code that trims text.)
"""

from __future__ import annotations

from functools import lru_cache
from typing import Final

from ._vocabulary import Layout

__all__ = [
    "BOOTSTRAP_ORDER",
    "MAX_BOOTSTRAP_FILE_BYTES",
    "WHITESPACE",
    "layout",
    "truncation_notice",
]

BOOTSTRAP_ORDER: Final = (
    "AGENTS.md",
    "SOUL.md",
    "IDENTITY.md",
    "USER.md",
    "TOOLS.md",
    "HEARTBEAT.md",
    "MEMORY.md",
)
MAX_BOOTSTRAP_FILE_BYTES: Final = 2 * 1024 * 1024

# Unicode White_Space: what Rust's str::trim and .NET's string.Trim remove.
# Python's bare str.strip() would also take U+001C..U+001F, which must stay.
WHITESPACE: Final = (
    "\t\n\x0b\x0c\r \x85\xa0\u1680"
    + "".join(map(chr, range(0x2000, 0x200B)))
    + "\u2028\u2029\u202f\u205f\u3000"
)

_MIB: Final = 1024 * 1024


@lru_cache(maxsize=16)
def truncation_notice(cap: int) -> str:
    """The line appended to a truncated body: ``[truncated: exceeds 2 MB bootstrap cap]``."""
    if cap % _MIB == 0:
        size = f"{cap // _MIB} MB"
    elif cap % 1024 == 0:
        size = f"{cap // 1024} KB"
    else:
        size = f"{cap} bytes"
    return f"[truncated: exceeds {size} bootstrap cap]"


@lru_cache(maxsize=64)
def layout(files: tuple[str, ...], cap: int) -> Layout:
    """The ``Layout`` of souls composed from ``files`` with byte cap ``cap``."""
    return Layout(
        files,
        tuple(f"## {name}\n\n" for name in files),
        tuple(f"\n\n## {name}\n\n" for name in files),
        "\n" + truncation_notice(cap),
    )
