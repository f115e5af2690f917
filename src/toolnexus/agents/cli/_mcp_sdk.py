"""The home on the official MCP SDK's low-level server, whichever generation is installed.

mcp 2.x speaks the handshake's protocols (2025-06-18 and the like) and
2026-07-28's, where a client listens for changes with
``subscriptions/listen``; mcp 1.x speaks the handshake's only. Each hands a
request to a handler its own way and takes an error back its own way:
``server`` registers, for each, handlers that give ``Home`` the params as
JSON and give back its JSON, and turn a ``RequestError`` into the SDK's
error. The server's lifespan runs ``Live``, which tells the client of
changes. Nothing here imports the SDK until ``server`` is called.
"""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any, Final

import anyio
import anyio.to_thread

from ._mcp_home import INTERNAL_ERROR, Home, RequestError
from ._mcp_live import Live

__all__ = ["generation", "server"]

# Each request served: its method, its params' type in mcp 2.x, its request's and result's types in 1.x.
_REQUESTS: Final = (
    ("tools/list", "PaginatedRequestParams", "ListToolsRequest", "ListToolsResult"),
    ("tools/call", "CallToolRequestParams", "CallToolRequest", "CallToolResult"),
    ("prompts/list", "PaginatedRequestParams", "ListPromptsRequest", "ListPromptsResult"),
    ("prompts/get", "GetPromptRequestParams", "GetPromptRequest", "GetPromptResult"),
    ("resources/list", "PaginatedRequestParams", "ListResourcesRequest", "ListResourcesResult"),
    (
        "resources/templates/list",
        "PaginatedRequestParams",
        "ListResourceTemplatesRequest",
        "ListResourceTemplatesResult",
    ),
    ("resources/read", "ReadResourceRequestParams", "ReadResourceRequest", "ReadResourceResult"),
    ("resources/subscribe", "SubscribeRequestParams", "SubscribeRequest", "EmptyResult"),
    ("resources/unsubscribe", "UnsubscribeRequestParams", "UnsubscribeRequest", "EmptyResult"),
    ("completion/complete", "CompleteRequestParams", "CompleteRequest", "CompleteResult"),
)


def generation() -> int:
    """The major version of the MCP SDK installed: 2, or 1."""
    import mcp.shared.exceptions  # noqa: PLC0415 - the SDK is an extra

    return 2 if hasattr(mcp.shared.exceptions, "MCPError") else 1


def server(home: Home, version: str) -> tuple[Any, Live]:
    """The SDK's low-level server of ``home`` (run it on any transport), and its ``Live``.

    Its ``create_initialization_options()`` says that its resources can be
    subscribed to and that their list changes.
    """
    live = Live(home)
    made = _server_2(home, live, version) if generation() == 2 else _server_1(home, live, version)
    return made, live


async def _answered(home: Home, live: Live, method: str, params: Mapping[str, object]) -> dict[str, object]:
    """``Home``'s answer to a request (a subscription, ``Live``'s); RequestError for an error."""
    try:
        if method in ("resources/subscribe", "resources/unsubscribe"):
            # Not the home: a client may wait for a home that is gone to come back.
            uri = home.check_uri(params.get("uri"))
            if method == "resources/subscribe":
                live.subscribed.add(uri)
            else:
                live.subscribed.discard(uri)
            return {}
        return await anyio.to_thread.run_sync(home.answer, method, params)
    except RequestError:
        raise
    except Exception as exc:  # a fault of the server's own: said in the error, with no traceback
        raise RequestError(INTERNAL_ERROR, f"the server failed: {type(exc).__name__}: {exc}") from None


def _lifespan(live: Live) -> Callable[[Any], contextlib.AbstractAsyncContextManager[dict[str, Any]]]:
    """The server's lifespan: what the resources read is taken before the first request, then watched."""

    @contextlib.asynccontextmanager
    async def lifespan(server: Any) -> AsyncIterator[dict[str, Any]]:
        await live.start()
        try:
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(live.run)
                try:
                    yield {}
                finally:
                    tasks.cancel_scope.cancel()
        finally:
            live.close()

    return lifespan


def _json(params: Any) -> dict[str, object]:
    """A request's params, as on the wire."""
    if params is None:
        return {}
    dumped: dict[str, object] = params.model_dump(by_alias=True, mode="json", exclude_none=True)
    return dumped


def _server_2(home: Home, live: Live, version: str) -> Any:
    import mcp_types as types  # noqa: PLC0415 - the SDK is an extra
    from mcp.server.lowlevel.server import NotificationOptions, Server  # noqa: PLC0415
    from mcp.server.subscriptions import (  # noqa: PLC0415
        InMemorySubscriptionBus,
        ListenHandler,
        ResourcesListChanged,
        ResourceUpdated,
    )
    from mcp.shared.exceptions import MCPError  # noqa: PLC0415

    class Served(Server[Any]):
        def create_initialization_options(
            self,
            notification_options: NotificationOptions | None = None,
            experimental_capabilities: dict[str, dict[str, Any]] | None = None,
            extensions: dict[str, dict[str, Any]] | None = None,
        ) -> Any:
            changes = notification_options or NotificationOptions(resources_changed=True)
            return super().create_initialization_options(changes, experimental_capabilities, extensions)

    made = Served("toolnexus-soul", version=version, instructions=home.instructions, lifespan=_lifespan(live))

    def handler(method: str, result: Any) -> Callable[[Any, Any], Awaitable[Any]]:
        async def handle(ctx: Any, params: Any) -> Any:
            live.session = ctx.session  # tells the handshake's client of changes (2026-07-28 drops it)
            try:
                answer = await _answered(home, live, method, _json(params))
            except RequestError as exc:
                raise MCPError(exc.code, exc.message) from None
            # Typed, so that 2026-07-28's fields have their defaults (ttlMs 0: read again each time).
            return result.model_validate(answer)

        return handle

    for method, params_type, _, result in _REQUESTS:
        made.add_request_handler(method, getattr(types, params_type), handler(method, getattr(types, result)))

    bus = InMemorySubscriptionBus()
    streams = ListenHandler(bus)

    async def publish(uri: str | None) -> None:
        await bus.publish(ResourcesListChanged() if uri is None else ResourceUpdated(uri=uri))

    async def listen(ctx: Any, params: Any) -> Any:
        asked = params.notifications.resource_subscriptions
        if asked:
            try:
                uris = [home.check_uri(uri) for uri in asked]
            except RequestError as exc:
                raise MCPError(exc.code, exc.message) from None
            notifications = params.notifications.model_copy(update={"resource_subscriptions": uris})
            params = params.model_copy(update={"notifications": notifications})
        return await streams(ctx, params)

    live.publish = publish
    made.add_request_handler("subscriptions/listen", types.SubscriptionsListenRequestParams, listen)
    return made


def _server_1(home: Home, live: Live, version: str) -> Any:
    # Typed as Any: the type checker reads the 2.x SDK, whose names these are not.
    types: Any = importlib.import_module("mcp.types")
    lowlevel: Any = importlib.import_module("mcp.server.lowlevel.server")
    exceptions: Any = importlib.import_module("mcp.shared.exceptions")
    made: Any = lowlevel.Server(
        "toolnexus-soul", version=version, instructions=home.instructions, lifespan=_lifespan(live)
    )

    def handler(method: str, result: Any) -> Callable[[Any], Awaitable[Any]]:
        async def handle(request: Any) -> Any:
            live.session = made.request_context.session
            try:
                answer = await _answered(home, live, method, _json(request.params))
            except RequestError as exc:
                raise exceptions.McpError(types.ErrorData(code=exc.code, message=exc.message)) from None
            return types.ServerResult(result.model_validate(answer))

        return handle

    for method, _, request, result in _REQUESTS:
        made.request_handlers[getattr(types, request)] = handler(method, getattr(types, result))
    plain = made.create_initialization_options

    def options(notification_options: Any = None, experimental_capabilities: Any = None) -> Any:
        changes = notification_options or lowlevel.NotificationOptions(resources_changed=True)
        made_options = plain(changes, experimental_capabilities)
        made_options.capabilities.resources.subscribe = True  # 1.x says False, whatever its handlers
        return made_options

    made.create_initialization_options = options  # as every transport asks, in-process ones too
    return made
