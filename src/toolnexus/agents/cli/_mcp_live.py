"""Live resources: the client told when what a resource reads changes, or when the list of them does.

``Live`` keeps, in a ``SoulCache`` of its own, what each resource of the
home reads (its digest, or why the home cannot be served) and the list of
files present. On Linux the kernel tells the cache of every change
(inotify): ``Live`` waits in the event loop for the cache's descriptor to
be readable (``SoulCache.fileno``), then asks again, so a change is told
as soon as it is made, whoever made it, with no polling. Where the cache
validates by ``stat`` (a home on a network file system, a system without
inotify), it asks every ``POLL`` seconds instead.

It tells the client both ways MCP has: on the handshake's protocol
(2025-06-18 and the like) ``notifications/resources/updated`` for the URIs
subscribed with ``resources/subscribe``, and ``.../list_changed``, through
the SDK's session; on 2026-07-28, through ``publish`` (the SDK's
``subscriptions/listen`` streams), which sends each event to the streams
that asked for it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Any, Final

import anyio
import anyio.to_thread

from .. import Soul, SoulCache
from ._mcp_home import SOUL_URI, Home, file_uri

__all__ = ["POLL", "Live"]

POLL: Final = 0.5  # seconds between looks at a home the kernel does not tell of
_LIST: Final = ""  # the key of the list of files present, beside the URIs

State = dict[str, object]
Publish = Callable[[str | None], Awaitable[None]]  # a URI updated, or None: the list changed


class Live:
    """What the resources of ``home`` read now, and who is told when it changes."""

    def __init__(self, home: Home) -> None:
        self.home = home
        self.cache = SoulCache(maxsize=4 * len(home.uris))
        self.subscribed: set[str] = set()  # URIs subscribed by resources/subscribe
        self.session: Any = None  # the SDK's session of the handshake's protocol, once a request came
        self.publish: Publish | None = None  # the subscriptions/listen streams, where the SDK has them
        self.state: State = {}

    def snapshot(self) -> State:
        """What each resource reads now (a digest, None when absent, or why the home cannot be served)."""
        try:
            return self._snapshot()
        except OSError as exc:  # the process itself (out of descriptors): a read would fail the same
            return dict.fromkeys(
                (_LIST, *self.home.uris), f"the soul could not be read: {exc.strerror or exc}"
            )

    def _snapshot(self) -> State:
        home = self.home
        # Through the cache first, gone or not: its watches then see the home come back.
        whole = self.cache.compose(home.dir, symlinks=home.symlinks, files=home.files)
        problem = home.problem()
        if problem is not None:
            return dict.fromkeys((_LIST, *home.uris), problem)
        soul = whole if home.budget is None else self._soul()
        state: State = {_LIST: whole.found, SOUL_URI: soul.digest}
        for name in home.files:
            if name in whole.found:
                state[file_uri(name)] = self.cache.compose(
                    home.dir, symlinks=home.symlinks, files=[name]
                ).digest
            else:
                state[file_uri(name)] = None
        return state

    def _soul(self) -> Soul:
        home = self.home
        return self.cache.compose(home.dir, symlinks=home.symlinks, files=home.files, budget=home.budget)

    def look(self) -> tuple[State, bool]:
        """What the resources read now, and whether the cache gave all of it from what it held.

        A look that read the disk may have raced a change and taken in its
        event: only a look the cache answered whole (no miss, nothing stale)
        shows that nothing changed since, and a change after it leaves the
        cache's descriptor readable.
        """
        before = self.cache.stats
        state = self.snapshot()
        after = self.cache.stats
        return state, (after.misses, after.stale) == (before.misses, before.stale)

    async def start(self) -> None:
        """Take what the resources read now: what changes from here on is told."""
        await self._look(tell=False)

    async def run(self) -> None:
        """Tell every change, until cancelled."""
        while True:
            await self._wait()
            await self._look(tell=True)

    async def _look(self, *, tell: bool) -> None:
        """Look until a look shows nothing changed while it looked, telling each change on the way."""
        while True:
            state, quiet = await anyio.to_thread.run_sync(self.look)
            if tell:
                await self._tell(self.state, state)
            self.state = state
            # A home kept fresh by stat is looked at again POLL from now, whatever this look saw.
            if quiet or self.cache.stats.stat_checked:
                return

    async def _wait(self) -> None:
        fd = self.cache.fileno()
        if fd >= 0 and not self.cache.stats.stat_checked:
            await _readable(fd)
            return
        with anyio.move_on_after(POLL):
            if fd >= 0:
                await _readable(fd)
            else:
                await anyio.sleep_forever()

    async def _tell(self, before: State, after: State) -> None:
        for uri in self.home.uris:
            if before.get(uri) != after.get(uri):
                if uri in self.subscribed and self.session is not None:
                    await _sent(self.session.send_resource_updated(uri))
                if self.publish is not None:
                    await self.publish(uri)
        if before.get(_LIST) != after.get(_LIST):
            if self.session is not None:
                await _sent(self.session.send_resource_list_changed())
            if self.publish is not None:
                await self.publish(None)

    def close(self) -> None:
        self.cache.close()


async def _readable(fd: int) -> None:
    """Wait, in the event loop, until ``fd`` is readable."""
    loop = asyncio.get_running_loop()
    ready = loop.create_future()

    def wake() -> None:
        if not ready.done():  # called again if the loop looks before the reader is removed
            ready.set_result(None)

    loop.add_reader(fd, wake)
    try:
        await ready
    finally:
        loop.remove_reader(fd)


async def _sent(notification: Awaitable[None]) -> None:
    """Send a notification; a client that has gone is not told (the server ends when its input does)."""
    with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
        await notification
