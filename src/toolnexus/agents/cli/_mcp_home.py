"""What ``toolnexus-soul mcp`` serves of one home, as MCP's wire gives and takes it, whatever the SDK.

``Home.answer(method, params)`` takes a request's params as JSON (a dict,
camelCase keys, as on the wire) and returns its result the same way, or
raises ``RequestError`` with a JSON-RPC code: ``INVALID_PARAMS`` for what
the client sent wrong, ``INTERNAL_ERROR`` when the home cannot be served
(it is gone, or the process ran out of descriptors). ``_mcp_sdk`` hands
the requests over from either generation of the official SDK; ``_mcp_live``
tells the client of changes.

The home is looked at on every request that reads it: gone, it is the same
error for the prompt, the resources and the tools; made again (the path
leads to another directory), all three serve the new one, the tools made
anew for it.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Mapping, Sequence
from typing import Final, cast
from urllib.parse import quote, unquote

from .. import BOOTSTRAP_ORDER, Budget, MemoryTool, Soul, SymlinkPolicy, compose, memory_tool
from ._commands import trouble

__all__ = [
    "FILE_URI",
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "SOUL_URI",
    "TEMPLATE_URI",
    "Home",
    "RequestError",
    "echo",
    "file_uri",
]

INVALID_PARAMS: Final = -32602  # JSON-RPC's code for a request's bad params
INTERNAL_ERROR: Final = -32603  # JSON-RPC's code for what the server could not do
SOUL_URI: Final = "soul://soul"
FILE_URI: Final = "soul://file/"
TEMPLATE_URI: Final = "soul://file/{name}"
MARKDOWN: Final = "text/markdown"
BUDGET_LIMIT: Final = 10**18 - 1  # 18 digits: more than any soul holds, and cheap to read
_BUDGET: Final = re.compile(r"[1-9][0-9]{0,17}")  # ASCII digits, as JSON writes a whole number
_ECHO: Final = 40  # characters of a client's text echoed in an error
_TRIES: Final = 3  # makings of the tools, while the home is replaced under them
_INSTRUCTIONS: Final = "A persona's home: its soul as a prompt and as resources, its memory as tools."


class RequestError(Exception):
    """A request the server answers with a JSON-RPC error: ``code`` and ``message``."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def echo(value: object) -> str:
    """A client's text in an error: quoted, cut to 40 characters."""
    text = str(value)
    return repr(text if len(text) <= _ECHO else text[: _ECHO - 1] + "…")


def file_uri(name: str) -> str:
    """The URI of a file resource: its name percent-encoded (RFC 3986), as URI templates expand it."""
    return FILE_URI + quote(name, safe="")


def budget_of(value: object) -> int | None:
    """A prompt's ``budget`` argument (MCP sends text): a whole number of characters, or None if not given."""
    if value is None or value == "":
        return None
    if isinstance(value, str) and _BUDGET.fullmatch(value):
        return int(value)
    raise RequestError(
        INVALID_PARAMS,
        f"budget must be a whole number of characters from 1 to {BUDGET_LIMIT:,}, not {echo(value)}",
    )


class Home:
    """One home as the server serves it: its soul, its files, its memory tools.

    ``files`` are the memory files served as tools; the soul served is the
    bootstrap files, then each of them that is not one (a memory whose tool
    says it is in the prompt is in it). Raises what ``memory_tool`` raises
    when the home cannot have its tools.
    """

    instructions = _INSTRUCTIONS

    def __init__(
        self, dir: str, files: Sequence[str], limit: int | None, budget: int | None, symlinks: str
    ) -> None:
        self.dir = dir
        self.memory_files = tuple(files)
        self.limit = limit
        self.budget = None if budget is None else Budget(total=budget)
        self.symlinks = cast(SymlinkPolicy, symlinks)  # one of argparse's choices
        self.files = (*BOOTSTRAP_ORDER, *(name for name in files if name not in BOOTSTRAP_ORDER))
        self.uris = (SOUL_URI, *map(file_uri, self.files))
        self._lock = threading.Lock()
        self.tools: dict[str, MemoryTool] = {}
        self._pinned: tuple[int, int] | None = None
        self._make_tools()

    def _make_tools(self) -> None:
        """The memory tools, for the directory the path leads to now (its identity pinned).

        A call under way on an old tool finishes (it refuses: its directory is
        gone); the old tool is closed when it is collected.
        """
        for attempt in range(_TRIES):
            pinned = _identity(self.dir)
            tools = [memory_tool(self.dir, file=name, limit=self.limit) for name in self.memory_files]
            # Replaced while they were made: made again (the last try is checked at the next request).
            if _identity(self.dir) == pinned or attempt == _TRIES - 1:
                break
            for tool in tools:
                tool.close()
        names = [tool.name for tool in tools]
        if len(set(names)) != len(names):
            for tool in tools:
                tool.close()
            raise ValueError(f"two files would be tools of one name: {', '.join(names)}")
        self.tools = {tool.name: tool for tool in tools}
        self._pinned = pinned

    def close(self) -> None:
        for tool in self.tools.values():
            tool.close()

    # -- the home: there or not --------------------------------------------------------

    def problem(self) -> str | None:
        """Why the home cannot be served now, in the command line's words; None when it can.

        A home made again at the path gets memory tools of its own.
        """
        with self._lock:
            problem = trouble(self.dir)
            if problem is None and _identity(self.dir) != self._pinned:
                try:
                    self._make_tools()
                except OSError:  # gone again meanwhile
                    problem = trouble(self.dir) or "it changed while it was opened"
            return problem

    def check(self) -> None:
        """Raise the error of a home that cannot be served (the same for every request that reads it)."""
        problem = self.problem()
        if problem is not None:
            raise RequestError(INTERNAL_ERROR, f"the persona's home cannot be served: {problem}")

    def check_uri(self, uri: object) -> str:
        """``uri`` as the server writes it, if it is a resource this server may serve (present now or not).

        A file's name may come percent-encoded or not.
        """
        if uri == SOUL_URI:
            return SOUL_URI
        if isinstance(uri, str) and uri.startswith(FILE_URI):
            name = unquote(uri[len(FILE_URI) :])
            if name in self.files:
                return file_uri(name)
        raise RequestError(INVALID_PARAMS, f"there is no resource {echo(uri)} here")

    # -- what is read -------------------------------------------------------------------

    def soul(self, budget: Budget | None = None) -> Soul:
        return compose(self.dir, symlinks=self.symlinks, files=self.files, budget=budget)

    def present(self) -> tuple[str, ...]:
        """The files of the soul served that it has a section of (no budget): its file resources."""
        return self.soul().found

    def file(self, name: str) -> str | None:
        """A file's whole body as the soul holds it (no budget); None when it is not present."""
        soul = compose(self.dir, symlinks=self.symlinks, files=[name])
        return soul.text.removeprefix(f"## {name}\n\n") if soul.found else None

    # -- the requests ----------------------------------------------------------------------

    def answer(self, method: str, params: Mapping[str, object]) -> dict[str, object]:
        """The result of one request, as JSON; ``RequestError`` for an error."""
        try:
            return _ANSWERS[method](self, params)
        except OSError as exc:  # the process itself: out of descriptors or memory
            raise RequestError(INTERNAL_ERROR, f"the soul could not be read: {exc.strerror or exc}") from None

    def _list_tools(self, params: Mapping[str, object]) -> dict[str, object]:
        tools = [
            {"name": name, "description": tool.description(), "inputSchema": tool.parameters()}
            for name, tool in self.tools.items()
        ]
        return {"tools": tools}

    def _call_tool(self, params: Mapping[str, object]) -> dict[str, object]:
        name = params.get("name")
        if name not in self.tools:
            known = ", ".join(self.tools)
            text = f"there is no tool {echo(name)} here: the tools are {known}"
            return {"content": [{"type": "text", "text": text}], "isError": True}
        self.check()
        arguments = params.get("arguments")
        result = self.tools[name].call(dict(cast(Mapping[str, object], arguments or {})))
        return {
            "content": [{"type": "text", "text": result["message"]}],
            "structuredContent": dict(result),
            "isError": not result["ok"],
        }

    def _list_prompts(self, params: Mapping[str, object]) -> dict[str, object]:
        budget = {
            "name": "budget",
            "description": "fit the soul to this many characters (a whole number)",
            "required": False,
        }
        prompt = {
            "name": "soul",
            "description": "The persona's system prompt (its soul), composed from its home now",
            "arguments": [budget],
        }
        return {"prompts": [prompt]}

    def _get_prompt(self, params: Mapping[str, object]) -> dict[str, object]:
        _check_prompt(params.get("name"))
        arguments = cast(Mapping[str, object], params.get("arguments") or {})
        total = budget_of(arguments.get("budget"))
        self.check()
        soul = self.soul(self.budget if total is None else Budget(total=total))
        return {
            "description": "The persona's system prompt: give it to the model as its system prompt",
            "messages": [{"role": "user", "content": {"type": "text", "text": soul.text}}],
        }

    def _list_resources(self, params: Mapping[str, object]) -> dict[str, object]:
        self.check()
        soul = {
            "name": "soul",
            "uri": SOUL_URI,
            "description": "the persona's soul, composed now",
            "mimeType": MARKDOWN,
        }
        files = [
            {
                "name": name,
                "uri": file_uri(name),
                "description": f"{name}, as the soul holds it",
                "mimeType": MARKDOWN,
            }
            for name in self.present()
        ]
        return {"resources": [soul, *files]}

    def _list_templates(self, params: Mapping[str, object]) -> dict[str, object]:
        template = {
            "name": "file",
            "uriTemplate": TEMPLATE_URI,
            "description": "a file of the soul served, as the soul holds it: its name completes",
            "mimeType": MARKDOWN,
        }
        return {"resourceTemplates": [template]}

    def _read(self, params: Mapping[str, object]) -> dict[str, object]:
        uri = self.check_uri(params.get("uri"))
        self.check()
        text = self.soul(self.budget).text if uri == SOUL_URI else self.file(unquote(uri[len(FILE_URI) :]))
        if text is None:
            raise RequestError(INVALID_PARAMS, f"there is no resource {echo(uri)} here")
        return {"contents": [{"uri": uri, "mimeType": MARKDOWN, "text": text}]}

    def _complete(self, params: Mapping[str, object]) -> dict[str, object]:
        ref = cast(Mapping[str, object], params.get("ref") or {})
        argument = cast(Mapping[str, object], params.get("argument") or {})
        name, value = argument.get("name"), str(argument.get("value", ""))
        if ref.get("type") == "ref/prompt":
            _check_prompt(ref.get("name"))
            if name != "budget":
                raise RequestError(
                    INVALID_PARAMS,
                    f"the prompt 'soul' has no argument {echo(name)}: its argument is 'budget'",
                )
            values: list[str] = []  # any whole number will do: nothing to choose from
        else:
            if ref.get("uri") != TEMPLATE_URI:
                raise RequestError(
                    INVALID_PARAMS,
                    f"there is no resource template {echo(ref.get('uri'))} here:"
                    f" the template is {TEMPLATE_URI!r}",
                )
            if name != "name":
                raise RequestError(
                    INVALID_PARAMS,
                    f"the template {TEMPLATE_URI!r} has no argument {echo(name)}: its argument is 'name'",
                )
            self.check()
            values = [each for each in self.present() if each.casefold().startswith(value.casefold())]
        return {"completion": {"values": values, "total": len(values), "hasMore": False}}


_ANSWERS: Final = {
    "tools/list": Home._list_tools,
    "tools/call": Home._call_tool,
    "prompts/list": Home._list_prompts,
    "prompts/get": Home._get_prompt,
    "resources/list": Home._list_resources,
    "resources/templates/list": Home._list_templates,
    "resources/read": Home._read,
    "completion/complete": Home._complete,
}


def _check_prompt(name: object) -> None:
    if name != "soul":
        raise RequestError(INVALID_PARAMS, f"there is no prompt {echo(name)} here: the prompt is 'soul'")


def _identity(dir: str) -> tuple[int, int] | None:
    """Which directory the path leads to now (device, inode); None when it leads nowhere."""
    try:
        st = os.stat(dir)
    except OSError:
        return None
    return (st.st_dev, st.st_ino)
