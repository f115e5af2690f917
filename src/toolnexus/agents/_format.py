"""The soul's format: bootstrap order, byte cap, back-off, trim set, notice, sections.

The rules of ``docs/format.md`` that shape the text, as data and small
functions: ``layout()`` gives the section heads and the notice, which both
readers fill in; ``back_off`` is where the cap cuts a file's bytes, and
``body_text`` a whole body made from bytes (the pure reader's, and the
memory tool's measure of its file). The compiled reader applies the same
rules in C.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Final

from ._vocabulary import Layout

__all__ = [
    "BOM",
    "BOOTSTRAP_ORDER",
    "MAX_BOOTSTRAP_FILE_BYTES",
    "WHITESPACE",
    "back_off",
    "body_and_bytes",
    "body_text",
    "decode",
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
"""The seven bootstrap names, in the order their sections take in the soul."""
MAX_BOOTSTRAP_FILE_BYTES: Final = 2 * 1024 * 1024
"""The cap: the most bytes of one file that go into the soul unless ``max_file_bytes`` says otherwise."""

# Unicode White_Space: what Rust's str::trim and .NET's string.Trim remove.
# Python's bare str.strip() would also take U+001C..U+001F, which must stay.
WHITESPACE: Final = (
    "\t\n\x0b\x0c\r \x85\xa0\u1680"
    + "".join(map(chr, range(0x2000, 0x200B)))
    + "\u2028\u2029\u202f\u205f\u3000"
)

BOM: Final = b"\xef\xbb\xbf"

_MIB: Final = 1024 * 1024


def back_off(data: bytes | bytearray, cut: int) -> int:
    """``cut`` moved back over UTF-8 continuation bytes before it, at most three and never below 0.

    Where a body is cut at a byte limit: ``data[cut]`` is the first byte
    left out, so a well-formed character is never split.
    """
    floor = max(cut - 3, 0)
    while cut > floor and data[cut] & 0xC0 == 0x80:
        cut -= 1
    return cut


def body_text(data: bytes | bytearray, cap: int) -> str:
    """The body of a file's bytes: cut at ``cap`` and backed off, decoded, without its BOM, trimmed.

    Decoded, then trimmed as text: the same as trimming the bytes first
    (every White_Space character has one UTF-8 encoding, which never starts
    with a continuation byte), and both run in C. A leading U+FEFF can only
    be the BOM's bytes.
    """
    return body_and_bytes(data, cap)[0]


def decode(data: bytes | bytearray | memoryview) -> tuple[str, bool]:
    """``data`` as UTF-8, each ill-formed sequence a U+FFFD; and whether it was well-formed.

    Strictly first: CPython decodes faster without an error handler, and
    almost every file is well-formed.
    """
    try:
        return str(data, "utf-8"), True
    except UnicodeDecodeError:
        return str(data, "utf-8", "replace"), False


def body_and_bytes(data: bytes | bytearray, cap: int) -> tuple[str, int, bool]:
    """``body_text``, the UTF-8 bytes of the body (counted off the bytes read, not encoded again), and
    whether its bytes were well-formed UTF-8.

    The body's bytes are well-formed exactly when the cut bytes are: the BOM
    and White_Space left out are well-formed, and a U+FFFD is neither.
    """
    end = len(data) if len(data) <= cap else back_off(data, cap)
    text, well_formed = decode(data if end == len(data) else memoryview(data)[:end])  # cut, not copied
    unmarked = text.removeprefix("\ufeff")
    body = unmarked.strip(WHITESPACE)
    if body.isascii():
        return body, len(body), well_formed
    if not well_formed:  # each ill-formed sequence is a U+FFFD of three bytes: count the text's
        return body, len(body.encode("utf-8")), False
    # The bytes read, less those of the BOM and of the White_Space trimmed
    # (short, where the body is long: encoding it again costs far more). The
    # body's first character is not White_Space: its first place is its start.
    lead = unmarked.find(body[0]) if body else len(unmarked)
    trimmed = unmarked[:lead] + unmarked[lead + len(body) :]
    return body, end - 3 * (len(text) - len(unmarked)) - len(trimmed.encode("utf-8")), True


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
