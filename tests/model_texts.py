"""What the memory tool tells a model about itself, written out whole: the tests compare against it."""

from __future__ import annotations

__all__ = ["DESCRIPTION", "SCHEMA"]

DESCRIPTION = (
    "Your long-term memory: short notes kept in MEMORY.md, which is part of your system prompt at the"
    " start of every session. A change you make now shows in your prompt from the next session, not in"
    " this one. Keep durable facts worth remembering (the user's preferences, decisions, lessons"
    " learned), one short fact per entry. Actions: 'add' a new entry (content); 'replace' the one entry"
    " holding old_text, a short piece of its text, by content; 'remove' the one entry holding old_text."
    " The memory holds at most 2,200 characters: when it is full, replace or remove entries (merge or"
    " shorten them) before adding."
)
SCHEMA = {
    "type": "object",
    "properties": {
        "action": {
            "type": "string",
            "enum": ["add", "replace", "remove"],
            "description": "add a new entry, replace an entry, or remove one",
        },
        "content": {
            "anyOf": [{"type": "string"}, {"type": "null"}],
            "description": "add: the new entry; replace: the entry's new text. One paragraph, short."
            " null for remove.",
        },
        "old_text": {
            "anyOf": [{"type": "string"}, {"type": "null"}],
            "description": "replace, remove: a short piece of text found in exactly one entry; null for add.",
        },
    },
    "required": ["action", "content", "old_text"],
    "additionalProperties": False,
}
