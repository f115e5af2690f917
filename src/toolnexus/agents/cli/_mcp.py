"""``toolnexus-soul mcp DIR``: one persona home served over the Model Context Protocol, on stdio.

Built on the official MCP SDK (``pip install 'toolnexus-soul[mcp]'``), with
its low-level server, so that what a host sees is exactly what the library
gives:

- **tools**: the memory tool of each ``--file`` (``MEMORY.md`` when none
  is given), with ``MemoryTool.definition``'s name, description and schema;
  a call is ``MemoryTool.call``: its message is the result's text, the whole
  answer its structured content, and a refusal a result with ``isError``;
  the server lives on;
- **a prompt**, ``soul``: the soul as composed at that moment, with an
  optional ``budget`` (characters; ``--budget`` when not given);
- **resources**: the soul (``soul://soul``), and each of its files present
  (``soul://file/NAME``: its whole body, as the soul holds it unbudgeted).

The soul served is the bootstrap files and then each ``--file`` that is not
one of them, so that a memory a tool says is in the prompt is. Every read
composes afresh: a change made through a tool shows in the next read of the
prompt or of the soul. Errors a client causes are MCP errors, never a
traceback; the command itself ends as every command does (one line, status
1, 130 at Ctrl-C, 141 when its reader goes away).
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import os
import re
import signal
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final, cast

from .. import (
    BOOTSTRAP_ORDER,
    Budget,
    MemoryTool,
    MemoryToolError,
    Soul,
    SymlinkPolicy,
    __version__,
    compose,
    memory_tool,
)
from ._output import from_bytes_not_utf8, quiet_stdout, say, shown
from ._parser import usage_error

if TYPE_CHECKING:
    import mcp_types as types
    from mcp.server.context import ServerRequestContext

__all__ = ["EXIT_NO_SDK", "add_arguments", "run"]

EXIT_NO_SDK: Final = 1
_EXIT_INTERRUPTED: Final = 130
_EXIT_PIPE: Final = 141
_BUDGET: Final = re.compile(r"[1-9][0-9]*")  # ASCII digits, as JSON writes a whole number
_ECHO: Final = 40  # characters of a client's text echoed in an error
SOUL_URI: Final = "soul://soul"
FILE_URI: Final = "soul://file/"
_INSTALL: Final = "the mcp command needs the MCP SDK: pip install 'toolnexus-soul[mcp]'"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments of ``mcp``: DIR, the memory files to serve, a budget, the symlink policy."""
    parser.add_argument("dir", metavar="DIR", help="a persona's directory: its home, served over stdio")
    parser.add_argument(
        "--file",
        action="append",
        metavar="NAME",
        help="a memory file of DIR to serve as a tool (default: MEMORY.md; the option may be given again)",
    )
    parser.add_argument(
        "--budget", type=int, metavar="N", help="fit the soul to N characters, unless the prompt says"
    )
    parser.add_argument(
        "--symlinks",
        choices=("follow", "within", "refuse"),
        default="follow",
        help="which symlinks a bootstrap file may be reached through (default: %(default)s)",
    )


class Home:
    """What the server serves of one home: its soul, its files, its memory tools."""

    def __init__(self, home: str, tools: Sequence[MemoryTool], budget: int | None, symlinks: str) -> None:
        self.home = home
        self.tools = {tool.name: tool for tool in tools}
        self.budget = budget
        self.symlinks = cast(SymlinkPolicy, symlinks)  # one of argparse's choices
        # The bootstrap files, then the memory files that are not one of them:
        # a memory whose tool says it is in the prompt is in the prompt.
        self.files = (*BOOTSTRAP_ORDER, *(t.file for t in tools if t.file not in BOOTSTRAP_ORDER))

    def soul(self, total: int | None = None) -> Soul:
        total = self.budget if total is None else total
        budget = None if total is None else Budget(total=total)
        return compose(self.home, symlinks=self.symlinks, files=self.files, budget=budget)

    def file(self, name: str) -> str | None:
        """A file's whole body as the soul holds it (no budget); None when it is not present."""
        if name not in self.files:
            return None
        soul = compose(self.home, symlinks=self.symlinks, files=[name])
        return soul.text.removeprefix(f"## {name}\n\n") if soul.found else None


def run(args: argparse.Namespace) -> int:
    """Serve DIR until the client closes stdin; 1 without the SDK, or when DIR cannot be served."""
    if args.budget is not None and args.budget < 1:
        usage_error(args, f"argument --budget: must be 1 or more, not {args.budget}")
    files = args.file or ["MEMORY.md"]
    for name in files:
        if from_bytes_not_utf8(name):
            usage_error(args, f"argument --file: must be UTF-8 text, not {shown(name)}")
    try:
        tools = [memory_tool(args.dir, file=name) for name in files]
    except ValueError as exc:
        usage_error(args, f"argument --file: {exc}")
    except OSError as exc:
        say(f"{shown(args.dir)}: {exc.strerror or exc}")
        return 1
    except MemoryToolError as exc:  # refused on a system where the memory laws are untested
        say(f"{shown(args.dir)}: {exc.message}")
        return 1
    names = [tool.name for tool in tools]
    if len(set(names)) != len(names):
        usage_error(args, f"argument --file: two files would be tools of one name: {', '.join(names)}")
    try:
        return _serve(Home(args.dir, tools, args.budget, args.symlinks))
    finally:
        for tool in tools:
            tool.close()


def _serve(home: Home) -> int:
    """Serve ``home`` on stdio with the SDK; the exit status."""
    import asyncio  # noqa: PLC0415 - only the server runs a loop: other commands start without it

    try:
        import anyio  # noqa: PLC0415 - the SDK is an extra: looked for only when it is asked for
        from mcp.server.stdio import stdio_server  # noqa: PLC0415
    except ModuleNotFoundError as exc:
        if (exc.name or "").partition(".")[0] not in ("mcp", "mcp_types", "anyio"):
            raise
        say(_INSTALL)
        return EXIT_NO_SDK
    except ImportError as exc:  # installed, but broken
        say(f"the MCP SDK could not be imported: {exc}")
        return EXIT_NO_SDK
    for stream, what in ((sys.stdin, "read standard input"), (sys.stdout, "write to standard output")):
        if stream is None:  # closed before the command started (<&-, >&-)
            say(f"cannot {what}: {os.strerror(errno.EBADF)}")
            return 1
    server = _server(home)
    # Ctrl-C ends the server at once: the stdin reader is a thread that no
    # cancellation reaches, and the memory tool's writes are safe to stop.
    signal.signal(signal.SIGINT, _interrupted)

    async def serve() -> None:
        # A signal may land on any thread, and the loop waits in its selector: only the loop's
        # own handler, which writes to the loop's wake-up descriptor, is sure to wake it.
        with contextlib.suppress(NotImplementedError):  # Windows: the plain handler above
            asyncio.get_running_loop().add_signal_handler(signal.SIGINT, _interrupted, signal.SIGINT, None)
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    try:
        st = os.fstat(sys.stdout.fileno())
        wire: tuple[int, int] | None = (st.st_dev, st.st_ino)
    except (AttributeError, ValueError, OSError):  # a stream without a descriptor
        wire = None
    try:
        anyio.run(serve)
    except BaseException as exc:  # each kind is told in one line, or is a status
        status = _ended(exc)
        if status == _EXIT_PIPE and wire is not None:
            _quiet_copies(wire)
        return status
    return 0


def _quiet_copies(wire: tuple[int, int]) -> None:
    """Point every descriptor on the gone reader's pipe at /dev/null.

    The SDK serves from a copy of standard output's descriptor, whose last
    flush, when the interpreter ends, would fail on the broken pipe and say
    so on standard error.
    """
    try:
        descriptors = [int(name) for name in os.listdir("/proc/self/fd")]
    except OSError:  # no /proc: the descriptors a process usually has
        descriptors = list(range(256))
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        for fd in descriptors:
            try:
                st = os.fstat(fd)
            except OSError:
                continue
            if fd != devnull and (st.st_dev, st.st_ino) == wire:
                os.dup2(devnull, fd)
    finally:
        os.close(devnull)


def _interrupted(signum: int, frame: object) -> None:
    with contextlib.suppress(Exception):
        sys.stdout.flush()
    os._exit(_EXIT_INTERRUPTED)


def _ended(exc: BaseException) -> int:
    """The status of a server that stopped on ``exc`` (an exception group, from the SDK's tasks)."""
    # An exception group (the built-in one, or 3.10's backport): its first.
    while inner := getattr(exc, "exceptions", None):
        exc = inner[0]
    if isinstance(exc, KeyboardInterrupt):
        return _EXIT_INTERRUPTED
    if isinstance(exc, BrokenPipeError) or (isinstance(exc, OSError) and exc.errno == errno.EPIPE):
        quiet_stdout()
        return _EXIT_PIPE
    quiet_stdout()
    if isinstance(exc, OSError):
        say(f"cannot serve on standard input and output: {exc.strerror or exc}")
    else:
        say(f"the MCP server stopped: {type(exc).__name__}: {exc}")
    return 1


def _server(home: Home) -> Any:
    """The MCP server of ``home``: its handlers, on the SDK's low-level server."""
    import anyio.to_thread  # noqa: PLC0415 - the SDK is an extra
    import mcp_types as types  # noqa: PLC0415
    from mcp.server import Server  # noqa: PLC0415
    from mcp.shared.exceptions import MCPError  # noqa: PLC0415
    from mcp_types import INVALID_PARAMS  # noqa: PLC0415

    async def list_tools(ctx: ServerRequestContext[Any], params: object) -> types.ListToolsResult:
        return types.ListToolsResult(
            tools=[
                types.Tool(name=name, description=tool.description(), input_schema=tool.parameters())
                for name, tool in home.tools.items()
            ]
        )

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        tool = home.tools.get(params.name)
        if tool is None:
            known = ", ".join(home.tools)
            text = f"there is no tool {_echo(params.name)} here: the tools are {known}"
            return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)
        arguments = dict(params.arguments or {})
        result = await anyio.to_thread.run_sync(tool.call, arguments)
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=result["message"])],
            structured_content=dict(result),
            is_error=not result["ok"],
        )

    async def list_prompts(ctx: ServerRequestContext[Any], params: object) -> types.ListPromptsResult:
        budget = types.PromptArgument(
            name="budget", description="fit the soul to this many characters (a whole number)", required=False
        )
        return types.ListPromptsResult(
            prompts=[
                types.Prompt(
                    name="soul",
                    description="The persona's system prompt (its soul), composed from its home now",
                    arguments=[budget],
                )
            ]
        )

    async def get_prompt(
        ctx: ServerRequestContext[Any], params: types.GetPromptRequestParams
    ) -> types.GetPromptResult:
        if params.name != "soul":
            raise MCPError(
                INVALID_PARAMS, f"there is no prompt {_echo(params.name)} here: the prompt is 'soul'"
            )
        total = _budget((params.arguments or {}).get("budget"), MCPError, INVALID_PARAMS)
        soul = await anyio.to_thread.run_sync(home.soul, total)
        return types.GetPromptResult(
            description="The persona's system prompt: give it to the model as its system prompt",
            messages=[
                types.PromptMessage(role="user", content=types.TextContent(type="text", text=soul.text))
            ],
        )

    async def list_resources(ctx: ServerRequestContext[Any], params: object) -> types.ListResourcesResult:
        soul = await anyio.to_thread.run_sync(home.soul)
        resources = [
            types.Resource(
                name="soul",
                uri=SOUL_URI,
                description="the persona's soul, composed now",
                mime_type="text/markdown",
            )
        ]
        resources += [
            types.Resource(
                name=name,
                uri=FILE_URI + name,
                description=f"{name}, as the soul holds it",
                mime_type="text/markdown",
            )
            for name in soul.found
        ]
        return types.ListResourcesResult(resources=resources)

    async def read_resource(
        ctx: ServerRequestContext[Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        uri = str(params.uri)
        if uri == SOUL_URI:
            text: str | None = (await anyio.to_thread.run_sync(home.soul)).text
        elif uri.startswith(FILE_URI):
            text = await anyio.to_thread.run_sync(home.file, uri[len(FILE_URI) :])
        else:
            text = None
        if text is None:
            raise MCPError(INVALID_PARAMS, f"there is no resource {_echo(uri)} here")
        return types.ReadResourceResult(
            contents=[types.TextResourceContents(uri=uri, mime_type="text/markdown", text=text)]
        )

    return Server(
        "toolnexus-soul",
        version=__version__,
        instructions="A persona's home: its soul as a prompt and as resources, its memory as tools.",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_prompts=list_prompts,
        on_get_prompt=get_prompt,
        on_list_resources=list_resources,
        on_read_resource=read_resource,
    )


def _budget(value: object, error: type[Exception], code: int) -> int | None:
    """A prompt's ``budget`` argument (MCP sends text): a whole number of characters, or None if not given."""
    if value is None or value == "":
        return None
    if isinstance(value, str) and _BUDGET.fullmatch(value):
        return int(value)
    raise error(code, f"budget must be a whole number of characters, 1 or more, not {_echo(value)}")


def _echo(value: object) -> str:
    """A client's text in an error: quoted, cut to 40 characters."""
    text = str(value)
    return repr(text if len(text) <= _ECHO else text[: _ECHO - 1] + "…")
