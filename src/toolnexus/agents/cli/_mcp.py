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
- **resources**: the soul (``soul://soul``), and each bootstrap file present
  (``soul://file/NAME``: its body as the soul holds it).

Every read composes afresh, so a change made through a tool shows in the
next read of the prompt or of the soul.
"""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final, cast

from .. import BOOTSTRAP_ORDER, Budget, MemoryTool, Soul, SymlinkPolicy, __version__, compose, memory_tool
from ._output import say, shown
from ._parser import usage_error

if TYPE_CHECKING:
    import mcp_types as types
    from mcp.server.context import ServerRequestContext

__all__ = ["EXIT_NO_SDK", "add_arguments", "run"]

EXIT_NO_SDK: Final = 1
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

    def soul(self, total: int | None = None) -> Soul:
        total = self.budget if total is None else total
        budget = None if total is None else Budget(total=total)
        return compose(self.home, symlinks=self.symlinks, budget=budget)

    def file(self, name: str) -> str | None:
        """A bootstrap file's body as the soul holds it; None when it is not present."""
        soul = compose(self.home, symlinks=self.symlinks, files=[name])
        return soul.text.removeprefix(f"## {name}\n\n") if soul.found else None


def run(args: argparse.Namespace) -> int:
    """Serve DIR until the client closes stdin; 1 without the SDK, or when DIR cannot be served."""
    if args.budget is not None and args.budget < 1:
        usage_error(args, f"argument --budget: must be 1 or more, not {args.budget}")
    files = args.file or ["MEMORY.md"]
    try:
        tools = [memory_tool(args.dir, file=name) for name in files]
    except ValueError as exc:
        usage_error(args, f"argument --file: {exc}")
    except OSError as exc:
        say(f"{shown(args.dir)}: {exc.strerror or exc}")
        return 1
    names = [tool.name for tool in tools]
    if len(set(names)) != len(names):
        usage_error(args, f"argument --file: two files would be tools of one name: {', '.join(names)}")
    try:
        import anyio  # noqa: PLC0415 - the SDK is an extra: looked for only when it is asked for
        from mcp.server.stdio import stdio_server  # noqa: PLC0415
    except ImportError:
        say(_INSTALL)
        return EXIT_NO_SDK
    server = _server(Home(args.dir, tools, args.budget, args.symlinks))

    async def serve() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    try:
        anyio.run(serve)
    finally:
        for tool in tools:
            tool.close()
    return 0


def _server(home: Home) -> Any:
    """The MCP server of ``home``: its handlers, on the SDK's low-level server."""
    import anyio.to_thread  # noqa: PLC0415 - the SDK is an extra
    import mcp_types as types  # noqa: PLC0415
    from mcp.server import Server  # noqa: PLC0415

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
            text = f"there is no tool {params.name!r} here: the tools are {known}"
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
            raise ValueError(f"there is no prompt {params.name!r} here: the prompt is 'soul'")
        total = _budget((params.arguments or {}).get("budget"))
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
        elif uri.startswith(FILE_URI) and uri[len(FILE_URI) :] in BOOTSTRAP_ORDER:
            text = await anyio.to_thread.run_sync(home.file, uri[len(FILE_URI) :])
        else:
            text = None
        if text is None:
            raise ValueError(f"there is no resource {uri!r} here")
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


def _budget(value: object) -> int | None:
    """A prompt's ``budget`` argument (MCP sends text): a whole number of characters, or None."""
    if value is None or value == "":
        return None
    with contextlib.suppress(TypeError, ValueError):
        total = int(str(value))
        if total >= 1:
            return total
    raise ValueError(f"budget must be a whole number of characters, 1 or more, not {value!r}")
