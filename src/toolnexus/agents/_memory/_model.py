"""The memory tool as a model meets it: its definition for a model's API, and the calls it makes.

The SDKs' types are named for type checkers only: the package imports no
SDK. ``call`` never raises for what a model sent: its messages tell the
model what happened, or how to do better, in words that hold no path of
the host and no advice for a Python programmer.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Final, TypedDict, cast

from ._errors import AmbiguousMatch, InvalidEntry, MemoryFull, MemoryToolError, NoMatch
from ._words import brief

if TYPE_CHECKING:
    from anthropic.types import ToolParam as AnthropicTool
    from openai.types.chat import ChatCompletionFunctionToolParam as OpenAIChatTool
    from openai.types.responses import FunctionToolParam as OpenAIResponsesTool

    from ._results import MemoryUsage
    from ._tool import MemoryTool

__all__ = [
    "STYLES",
    "MemoryCallResult",
    "call",
    "definition",
    "description",
    "parameters",
    "tool_name",
]

STYLES: Final = ("openai", "openai-responses", "anthropic")
_ACTIONS: Final = ("add", "replace", "remove")
_DONE: Final = {"add": "Added the entry", "replace": "Replaced the entry", "remove": "Removed the entry"}
_FIELDS: Final = ("action", "content", "old_text")
_USES: Final = {"add": ("content",), "replace": ("old_text", "content"), "remove": ("old_text",)}
_TOOL_NAME: Final = re.compile(r"[A-Za-z0-9_-]{1,64}")  # what OpenAI's and Anthropic's APIs accept


class _CallResultBase(TypedDict):
    ok: bool
    action: str | None  # the action called, if it is one of the three
    message: str  # what happened, or how to do better, for the model


class MemoryCallResult(_CallResultBase, total=False):
    """What ``MemoryTool.call`` returns: JSON-ready, for a model to read.

    ``ok``, ``action`` and ``message`` always; ``error`` when not ``ok``
    (``invalid``, ``no_match``, ``ambiguous``, ``full``, ``refused``,
    ``failed``); ``added`` after an ``add`` (False: the entry was there
    already); ``entry_count``, ``used`` and ``limit`` unless the file could
    not be read; ``candidates`` with ``no_match`` and ``ambiguous``;
    ``longest`` with ``full``.
    """

    error: str
    added: bool
    entry_count: int
    used: int
    limit: int
    candidates: list[str]
    longest: list[str]


def tool_name(file: str) -> str:
    """The tool's name for ``file``, as model APIs take names: ``memory``, ``user_memory``..."""
    if file == "MEMORY.md":
        return "memory"
    stem = file.rsplit(".", 1)[0] if "." in file else file
    stem = re.sub(r"[^a-z0-9_-]+", "_", stem.lower()).strip("_")[: 64 - len("_memory")]
    return f"{stem}_memory" if stem else "memory"


def description(tool: MemoryTool) -> str:
    """What the tool tells a model about itself: its own memory, or, for ``USER.md``, the user's profile."""
    if tool.file == "USER.md":
        what = f"What you know about the user: their profile, kept in {tool.label}"
        keep = "facts about the user that help you help them (their name, role, preferences, ways of working)"
        whole = "The profile"
    else:
        what = f"Your long-term memory: short notes kept in {tool.label}"
        keep = "durable facts worth remembering (the user's preferences, decisions, lessons learned)"
        whole = "The memory"
    return (
        f"{what}, which is part of your system prompt at the start of every session. A change you make now"
        f" shows in your prompt from the next session, not in this one. Keep {keep}, one short fact per"
        " entry. Actions: 'add' a new entry (content); 'replace' the one entry holding old_text, a short "
        f"piece of its text, by content; 'remove' the one entry holding old_text. {whole} holds at most "
        f"{tool.limit:,} character{'s' if tool.limit != 1 else ''}: when it is full, replace or remove"
        " entries (merge or shorten them) before adding."
    )


def parameters() -> dict[str, object]:
    """The JSON Schema of the tool's arguments, one for every host, strict or not (section 14 says why)."""
    # null as an anyOf branch, not in a list of types, which some schema walkers do not take
    text: dict[str, object] = {"anyOf": [{"type": "string"}, {"type": "null"}]}
    return {
        "type": "object",
        "properties": {
            "action": {
                "type": "string",
                "enum": list(_ACTIONS),
                "description": "add a new entry, replace an entry, or remove one",
            },
            "content": {
                **text,
                "description": "add: the new entry; replace: the entry's new text. One paragraph, short."
                " null for remove.",
            },
            "old_text": {
                **text,
                "description": "replace, remove: a short piece of text found in exactly one entry;"
                " null for add.",
            },
        },
        "required": list(_FIELDS),
        "additionalProperties": False,
    }


def definition(
    tool: MemoryTool, style: str, name: str | None, strict: bool
) -> OpenAIChatTool | OpenAIResponsesTool | AnthropicTool:
    """The tool in the shape of ``style``'s API (see ``MemoryTool.definition``)."""
    chosen = tool.name if name is None else name
    if not isinstance(chosen, str):
        raise TypeError(f"name must be a str, not {type(chosen).__name__}")
    if not _TOOL_NAME.fullmatch(chosen):
        raise ValueError(
            f"name must be 1 to 64 letters, digits, '_' or '-' (what model APIs take), not {chosen!r}"
        )
    if not isinstance(strict, bool):
        raise TypeError(f"strict must be a bool, not {type(strict).__name__}")
    schema = parameters()
    if style == "openai":
        chat: OpenAIChatTool = {
            "type": "function",
            "function": {"name": chosen, "description": description(tool), "parameters": schema},
        }
        if strict:
            chat["function"]["strict"] = True
        return chat
    if style == "openai-responses":
        responses: OpenAIResponsesTool = {
            "type": "function",
            "name": chosen,
            "description": description(tool),
            "parameters": schema,
            "strict": strict,
        }
        return responses
    if style == "anthropic":
        anthropic: AnthropicTool = {"name": chosen, "description": description(tool), "input_schema": schema}
        if strict:
            anthropic["strict"] = True
        return anthropic
    raise ValueError(f"style must be one of {', '.join(map(repr, STYLES))}, got {style!r}")


def call(tool: MemoryTool, arguments: object) -> MemoryCallResult:
    """Run a model's call of the tool; a JSON-ready result that tells it what happened."""
    action: object = None
    try:
        parsed = _arguments(arguments)
        action = parsed.get("action")
        usage, added = _run(tool, parsed)
    except MemoryToolError as exc:
        return _failure(tool, action, exc.code, exc.message, exc)
    except OSError as exc:
        return _failure(
            tool, action, "failed", f"the memory file could not be used: {exc.strerror or exc}", exc
        )
    done = _DONE[str(action)] if added else "The entry was already there: nothing was added"
    message = f"{done}. {tool.holds(usage)}."
    if added:
        message += " The change shows in your prompt from the next session."
    result: MemoryCallResult = {"ok": True, "action": cast(str, action), "message": message}
    if action == "add":
        result["added"] = added
    result.update({"entry_count": usage.entry_count, "used": usage.used, "limit": usage.limit})
    return result


def _run(tool: MemoryTool, parsed: dict[str, object]) -> tuple[MemoryUsage, bool]:
    """The action called, done: the usage after, and False for an ``add`` whose entry was there."""
    action = parsed.get("action")
    if action == "add":
        return tool.added(_argument(parsed, "content"))
    if action == "replace":
        return tool.replace(_argument(parsed, "old_text"), _argument(parsed, "content")), True
    if action == "remove":
        return tool.remove(_argument(parsed, "old_text")), True
    raise InvalidEntry(f"action must be 'add', 'replace' or 'remove', not {brief(action)}")


def _failure(tool: MemoryTool, action: object, code: str, message: str, exc: Exception) -> MemoryCallResult:
    # The action as called, or None: a model's other text goes in the message only, cut and escaped.
    try:
        usage: MemoryUsage | None = tool.usage()
    except (OSError, MemoryToolError):  # the file cannot even be read: say so without the usage
        usage = None
    sentence = message if message.endswith(".") else message + "."
    result: MemoryCallResult = {
        "ok": False,
        "action": action if action in _ACTIONS else None,
        "message": sentence if usage is None else f"{sentence} {tool.holds(usage)}.",
        "error": code,
    }
    if isinstance(exc, (NoMatch, AmbiguousMatch)):
        result["candidates"] = list(exc.candidates)
    if isinstance(exc, MemoryFull):
        result["longest"] = list(exc.longest)
    if usage is not None:
        result.update({"entry_count": usage.entry_count, "used": usage.used, "limit": usage.limit})
    return result


def _arguments(arguments: object) -> dict[str, object]:
    """A model's arguments as a dict: given as one, or as JSON text; every name text, none unknown."""
    if isinstance(arguments, (str, bytes)):
        if isinstance(arguments, str) and arguments.startswith("\ufeff"):
            arguments = arguments[1:]  # a byte order mark, as JSON bytes may start with
        try:
            arguments = json.loads(arguments)
        except json.JSONDecodeError as exc:
            raise InvalidEntry(f"the arguments are not JSON: {exc.msg} at character {exc.pos}") from None
        except UnicodeDecodeError:
            raise InvalidEntry("the arguments are not JSON text: their bytes are not UTF-8") from None
        except ValueError:  # a number too long for Python to read
            raise InvalidEntry("the arguments hold a number with too many digits to read") from None
        except RecursionError:
            raise InvalidEntry("the arguments are not JSON this tool can take: nested too deeply") from None
    if not isinstance(arguments, Mapping):
        raise InvalidEntry(f"the arguments must be an object, not {brief(arguments)}")
    parsed = dict(arguments)
    for key in parsed:
        if not isinstance(key, str):
            raise InvalidEntry(f"an argument's name must be text, not {brief(key)}")
        if key not in _FIELDS:
            raise InvalidEntry(
                f"unknown argument {brief(key)}: the arguments are action, content and old_text"
            )
    action = parsed.get("action")
    for key in _FIELDS[1:]:
        # null stands for a field the action does not use (OpenAI's strict mode sends every field)
        if parsed.get(key, 0) is None and key not in _USES.get(action if isinstance(action, str) else "", ()):
            del parsed[key]
    return parsed


def _argument(parsed: Mapping[str, object], key: str) -> str:
    if key not in parsed:
        raise InvalidEntry(f"{parsed.get('action')} needs {key}")
    value = parsed[key]
    if not isinstance(value, str):
        raise InvalidEntry(f"{key} must be text, not {brief(value)}")
    return value
