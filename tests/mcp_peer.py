"""The official MCP client, either SDK generation, as the tests drive the server: requests as JSON.

``connected(server)`` connects to the server's low-level ``Server`` in this
process, through the SDK's own in-memory transport (so that a test runs on
the reader twin under test, with no process to start), or starts the
server as a host does, on stdio, given its ``command``; ``talk`` runs a
test against the server of a home, in this process. ``modern=True`` speaks
2026-07-28 (mcp 2.x only) instead of the handshake's protocol (2025-06-18
and the like). A ``Peer`` sends any request and returns its result as the
wire has it (camelCase keys), or raises ``Refused`` with the error's code
and message; it keeps, as JSON, the notifications that came.
"""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any, Final

import anyio
import pytest
from pydantic import BaseModel, ConfigDict, TypeAdapter

from toolnexus.agents.cli._mcp_home import Home
from toolnexus.agents.cli._mcp_sdk import generation, server
from twins import ReaderName

exceptions: Any = pytest.importorskip("mcp.shared.exceptions")
types: Any = pytest.importorskip("mcp.types")
stdio: Any = pytest.importorskip("mcp.client.stdio")

__all__ = [
    "GENERATION",
    "TIMEOUT",
    "Peer",
    "Refused",
    "command",
    "connected",
    "put",
    "served",
    "talk",
    "wire",
]

GENERATION: Final = generation()
TIMEOUT: Final = 30.0  # seconds any one answer or notification may take on a busy machine
_ERROR: Final = exceptions.MCPError if GENERATION == 2 else exceptions.McpError


class Refused(Exception):
    """An error answered: ``code`` and ``message``."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(code, message)
        self.code = code
        self.message = message


class _Raw(BaseModel):
    """Any result, kept as it came."""

    model_config = ConfigDict(extra="allow")


def wire(model: Any) -> dict[str, Any]:
    """A model of the SDK's as JSON, as the wire has it."""
    dumped: dict[str, Any] = model.model_dump(by_alias=True, mode="json", exclude_none=True)
    return dumped


class Peer:
    """One connection to the server: requests as JSON, and the notifications it was sent."""

    def __init__(self) -> None:
        self.session: Any = None
        self.client: Any = None  # mcp 2.x's Client, which listens on 2026-07-28
        self.notifications: list[dict[str, Any]] = []
        self._arrived = anyio.Event()

    async def handle(self, message: Any) -> None:
        """The SDK's message handler: a notification is kept as JSON."""
        if isinstance(message, BaseModel):
            data = wire(message)
            data.pop("jsonrpc", None)  # 1.x keeps it in the notification's model
            if "method" in data:
                self.notifications.append(data)
                self._arrived.set()
        await anyio.lowlevel.checkpoint()

    async def request(self, method: str, params: Mapping[str, object] | None = None) -> dict[str, Any]:
        """Send one request; its result as JSON, or ``Refused``."""
        data: dict[str, object] = {"method": method}
        if params is not None:
            data["params"] = dict(params)
        if GENERATION == 2:
            request = TypeAdapter(types.ClientRequest).validate_python(data)
        else:
            request = types.ClientRequest.model_validate(data)
        try:
            result = await self.session.send_request(request, _Raw)
        except _ERROR as exc:
            raise Refused(exc.error.code, exc.error.message) from None
        return wire(result)

    async def refusal(self, method: str, params: Mapping[str, object] | None = None) -> tuple[int, str]:
        """The ``(code, message)`` of a request that must be refused."""
        try:
            result = await self.request(method, params)
        except Refused as exc:
            return exc.code, exc.message
        raise AssertionError(f"{method} was answered: {result}")

    async def until(self, expected: Sequence[Mapping[str, object]]) -> list[dict[str, Any]]:
        """Wait until the notifications came are ``expected`` (in any order); take them."""
        with anyio.fail_after(TIMEOUT):
            while len(self.notifications) < len(expected):
                self._arrived = anyio.Event()
                await self._arrived.wait()
        came, self.notifications = self.notifications, []
        return sorted(came, key=repr)

    async def until_each(self, expected: Sequence[Mapping[str, object]]) -> list[dict[str, Any]]:
        """Wait until each of ``expected`` came, once or more (a look may tell a change again); take them.

        The distinct notifications that came, sorted as ``until`` sorts them.
        """
        wanted = {repr(each) for each in expected}
        with anyio.fail_after(TIMEOUT):
            while not wanted <= {repr(each) for each in self.notifications}:
                self._arrived = anyio.Event()
                await self._arrived.wait()
        came, self.notifications = self.notifications, []
        return sorted({repr(each): each for each in came}.values(), key=repr)


@asynccontextmanager
async def connected(server: Any, *, modern: bool = False) -> AsyncIterator[Peer]:
    """A peer of ``server``: the SDK's low-level ``Server`` (in this process), or a command to start.

    A command (``StdioServerParameters``, from ``command``) is started as a
    host starts it, on stdio.
    """
    peer = Peer()
    if GENERATION == 2:
        client_module: Any = pytest.importorskip("mcp.client.client")
        mode = "auto" if modern else "legacy"  # auto: discover, and so 2026-07-28 with this server
        async with client_module.Client(server, mode=mode, message_handler=peer.handle) as client:
            peer.client, peer.session = client, client.session
            yield peer
        return
    if modern:
        pytest.skip("2026-07-28 needs mcp 2.x")
    if isinstance(server, stdio.StdioServerParameters):
        session_module: Any = pytest.importorskip("mcp.client.session")
        async with stdio.stdio_client(server) as (read, write):  # noqa: SIM117
            async with session_module.ClientSession(read, write, message_handler=peer.handle) as session:
                peer.session = session
                await session.initialize()
                yield peer
        return
    memory: Any = pytest.importorskip("mcp.shared.memory")
    async with memory.create_connected_server_and_client_session(
        server, message_handler=peer.handle, read_timeout_seconds=timedelta(seconds=TIMEOUT)
    ) as session:
        peer.session = session
        yield peer


def command(home: Path, reader: ReaderName | None, *extra: str) -> Any:
    """How a host starts ``toolnexus-soul mcp HOME`` (on the reader ``reader``, or the default)."""
    env = {"TOOLNEXUS_SOUL_NO_EXTENSIONS": "1" if reader == "pure" else ""}
    return stdio.StdioServerParameters(
        command=sys.executable, args=["-m", "toolnexus.agents", "mcp", str(home), *extra], env=env
    )


def served(
    dir: Path,
    files: Sequence[str] = ("MEMORY.md",),
    *,
    limit: int | None = None,
    budget: int | None = None,
    symlinks: str = "follow",
) -> tuple[Any, Home]:
    """The server ``toolnexus-soul mcp DIR`` runs (the SDK's ``Server``), and its ``Home``, to close."""
    home = Home(str(dir), files, limit, budget, symlinks)
    made, _ = server(home, "test")
    return made, home


def talk(
    dir: Path, test: Callable[[Peer], Awaitable[None]], *files: str, modern: bool = False, **options: Any
) -> None:
    """Run ``test`` against the server of ``dir`` (serving ``files``; MEMORY.md when none), in process."""
    made, home = served(dir, files or ("MEMORY.md",), **options)

    async def session() -> None:
        async with connected(made, modern=modern) as peer:
            await test(peer)

    try:
        anyio.run(session)
    finally:
        home.close()


def put(path: Path, text: str) -> None:
    """Replace a file whole, as an editor saves it: one change, one state."""
    spare = path.with_name(f".{path.name}.saving")
    spare.write_text(text)
    os.replace(spare, path)
