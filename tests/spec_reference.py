"""A deliberately slow composer written line by line from docs/format.md.

It works on an in-memory layout (name -> bytes, absent names omitted), so
the property tests can check both readers against the spec itself, not only
against each other.
"""

from __future__ import annotations

BOOTSTRAP_ORDER = ("AGENTS.md", "SOUL.md", "IDENTITY.md", "USER.md", "TOOLS.md", "HEARTBEAT.md", "MEMORY.md")

# Unicode White_Space, from the Unicode Character Database (PropList.txt).
WHITE_SPACE = frozenset(
    {*range(0x09, 0x0E), 0x20, 0x85, 0xA0, 0x1680, *range(0x2000, 0x200B), 0x2028, 0x2029}
    | {0x202F, 0x205F, 0x3000}
)


def capped_body(data: bytes, cap: int) -> tuple[bytes, bool]:
    """The cap and the back-off: what survives, and whether it was cut."""
    read = data[: cap + 1]
    if len(read) <= cap:
        return read, False
    cut = cap
    while cut > max(cap - 3, 0) and read[cut] & 0xC0 == 0x80:
        cut -= 1
    return read[:cut], True


def notice(cap: int) -> str:
    """The truncation notice."""
    if cap % (1024 * 1024) == 0:
        return f"[truncated: exceeds {cap // (1024 * 1024)} MB bootstrap cap]"
    if cap % 1024 == 0:
        return f"[truncated: exceeds {cap // 1024} KB bootstrap cap]"
    return f"[truncated: exceeds {cap} bytes bootstrap cap]"


def trim(text: str) -> str:
    """The trim, one character at a time."""
    start, end = 0, len(text)
    while start < end and ord(text[start]) in WHITE_SPACE:
        start += 1
    while end > start and ord(text[end - 1]) in WHITE_SPACE:
        end -= 1
    return text[start:end]


def body_text(data: bytes, cap: int) -> str:
    """One file's section body, any notice included."""
    body, truncated = capped_body(data, cap)
    if body[:3] == b"\xef\xbb\xbf":
        body = body[3:]
    text = trim(body.decode("utf-8", "replace"))
    if truncated:
        text += "\n" + notice(cap)
    return text


def compose_layout(layout: dict[str, bytes], cap: int) -> tuple[str, list[str]]:
    """A whole home given as name -> bytes."""
    sections = []
    found = []
    for name in BOOTSTRAP_ORDER:
        if name in layout:
            found.append(name)
            sections.append("## " + name + "\n\n" + body_text(layout[name], cap))
    return "\n\n".join(sections), found
