"""The memory tool as a model meets it: its definition for a model's API, and the calls it makes.

``definition`` gives the tool in the shape OpenAI-style function calling or
Anthropic tool use takes; ``call`` runs a call as the model sent it (a
mapping, or the JSON text of one) and never raises for what the model sent:
it returns a JSON-ready result whose message tells the model what happened,
or how to do better.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Final, Literal

from ._errors import AmbiguousMatch, InvalidEntry, MemoryFull, MemoryToolError, NoMatch
from ._words import brief

if TYPE_CHECKING:
    from ._tool import MemoryTool, MemoryUsage

__all__ = ["call", "definition", "description", "parameters", "tool_name"]

_ACTIONS: Final = ("add", "replace", "remove")
_TOOL_NAME: Final = re.compile(r"[A-Za-z0-9_-]{1,64}")  # what OpenAI's and Anthropic's APIs accept


def tool_name(file: str) -> str:
    """The tool's name for ``file``, as model APIs take names: ``memory``, ``user_memory``..."""
    if file == "MEMORY.md":
        return "memory"
    stem = file.rsplit(".", 1)[0] if "." in file else file
    stem = re.sub(r"[^a-z0-9_-]+", "_", stem.lower()).strip("_")[: 64 - len("_memory")]
    return f"{stem}_memory" if stem else "memory"


def description(tool: MemoryTool) -> str:
    """What the tool tells a model about itself."""
    return (
        f"Your long-term memory: short notes kept in {tool.label}, which is part of your system "
        "prompt at the start of every session. A change you make now shows in your prompt from the "
        "next session, not in this one. Keep durable facts worth remembering (the user's "
        "preferences, decisions, lessons learned), one short fact per entry. Actions: 'add' a new "
        "entry (content); 'replace' the one entry holding old_text, a short piece of its text, by "
        f"content; 'remove' the one entry holding old_text. The memory holds at most {tool.limit:,} "
        "characters: when it is full, replace or remove entries (merge or shorten them) before "
        "adding."
    )


def parameters() -> dict[str, object]:
    """The JSON Schema of the tool's arguments."""
    return {
        "type": "object",
        "properties": {
            "action": {
                "type": "string",
                "enum": ["add", "replace", "remove"],
                "description": "add a new entry, replace an entry, or remove one",
            },
            "content": {
                "type": "string",
                "description": "add: the new entry; replace: the entry's new text. One paragraph, short.",
            },
            "old_text": {
                "type": "string",
                "description": "replace, remove: a short piece of text found in exactly one entry",
            },
        },
        "required": ["action"],
        "additionalProperties": False,
    }


def definition(
    tool: MemoryTool, style: Literal["openai", "anthropic"], name: str | None
) -> dict[str, object]:
    """The tool as a model's API takes it: ``"openai"`` (function calling), ``"anthropic"`` (tool use)."""
    chosen = tool.name if name is None else name
    if not isinstance(chosen, str):
        raise TypeError(f"name must be a str, not {type(chosen).__name__}")
    if not _TOOL_NAME.fullmatch(chosen):
        raise ValueError(
            f"name must be 1 to 64 letters, digits, '_' or '-' (what model APIs take), not {chosen!r}"
        )
    if style == "openai":
        function = {"name": chosen, "description": description(tool), "parameters": parameters()}
        return {"type": "function", "function": function}
    if style == "anthropic":
        return {"name": chosen, "description": description(tool), "input_schema": parameters()}
    raise ValueError(f"style must be 'openai' or 'anthropic', got {style!r}")


def call(tool: MemoryTool, arguments: Mapping[str, object] | str | bytes) -> dict[str, object]:
    """Run a model's call of the tool; a JSON-ready result that tells it what happened."""
    action: object = None
    try:
        parsed = _arguments(arguments)
        action = parsed.get("action")
        usage = _run(tool, parsed)
    except MemoryToolError as exc:
        return _failure(tool, action, exc.code, exc.message, exc)
    except OSError as exc:
        return _failure(
            tool, action, "failed", f"the memory file could not be used: {exc.strerror or exc}", exc
        )
    verb = {"add": "Added the entry", "replace": "Replaced the entry", "remove": "Removed the entry"}[
        str(action)
    ]
    return {
        "ok": True,
        "action": action,
        "message": f"{verb}. {tool.holds(usage)}. The change shows in your prompt from the next session.",
        **usage._asdict(),
    }


def _run(tool: MemoryTool, parsed: dict[str, object]) -> MemoryUsage:
    action = parsed.get("action")
    unknown = [key for key in parsed if key not in ("action", "content", "old_text")]
    if unknown:
        raise InvalidEntry(
            f"unknown argument {brief(unknown[0])}: the arguments are action, content and old_text"
        )
    if action == "add":
        return tool.add(_argument(parsed, "content"))
    if action == "replace":
        return tool.replace(_argument(parsed, "old_text"), _argument(parsed, "content"))
    if action == "remove":
        return tool.remove(_argument(parsed, "old_text"))
    raise InvalidEntry(f"action must be 'add', 'replace' or 'remove', not {brief(action)}")


def _failure(tool: MemoryTool, action: object, code: str, message: str, exc: Exception) -> dict[str, object]:
    # The action as called, or None: a model's other text goes in the message only, cut and escaped.
    result: dict[str, object] = {"ok": False, "action": action if action in _ACTIONS else None}
    result["error"] = code
    try:
        usage: MemoryUsage | None = tool.usage()
    except (OSError, MemoryToolError):  # the file cannot even be read: say so without the usage
        usage = None
    if isinstance(exc, (NoMatch, AmbiguousMatch)):
        result["candidates"] = list(exc.candidates)
    if isinstance(exc, MemoryFull):
        result["longest"] = list(exc.longest)
    sentence = message if message.endswith(".") else message + "."
    result["message"] = sentence if usage is None else f"{sentence} {tool.holds(usage)}."
    if usage is not None:
        result.update(usage._asdict())
    return result


def _arguments(arguments: object) -> dict[str, object]:
    """A model's arguments as a dict: given as one, or as JSON text."""
    if isinstance(arguments, (str, bytes)):
        try:
            arguments = json.loads(arguments)
        except ValueError as exc:
            raise InvalidEntry(f"the arguments are not JSON: {exc}") from None
        except RecursionError:
            raise InvalidEntry("the arguments are not JSON this tool can take: nested too deeply") from None
    if not isinstance(arguments, Mapping):
        raise InvalidEntry(f"the arguments must be an object, not {brief(arguments)}")
    return dict(arguments)


def _argument(parsed: Mapping[str, object], key: str) -> str:
    if key not in parsed:
        raise InvalidEntry(f"{parsed.get('action')} needs {key}")
    value = parsed[key]
    if not isinstance(value, str):
        raise InvalidEntry(f"{key} must be text, not {brief(value)}")
    return value
