"""Live resources: a client told of every change to what a resource reads, whoever made it, on each reader.

Through the official client in this process: on the handshake's protocol,
``resources/subscribe`` and ``notifications/resources/updated``, and
``notifications/resources/list_changed`` when a file appears or goes; on
2026-07-28 (mcp 2.x), the same events on a ``subscriptions/listen``
stream. On Linux, the look the server takes where the kernel cannot tell
it is put an hour away, so that a notification can only come from the
kernel's (inotify, through ``SoulCache.fileno``); one test brings it back
to show the look where notification does not serve. Files are replaced whole
(``os.replace``), as editors save, so that each change is one state.
"""

from __future__ import annotations

import functools
import shutil
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip("mcp")

from mcp_peer import GENERATION, TIMEOUT, Peer, Refused, put, served, talk
from toolnexus.agents import SoulCache, compose
from toolnexus.agents.cli import _mcp_live

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "aster"
LISTED = {"method": "notifications/resources/list_changed"}


@pytest.fixture
def aster(tmp_path: Path) -> Path:
    return Path(shutil.copytree(EXAMPLE, tmp_path / "aster"))


@pytest.fixture(autouse=True)
def kernel_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """On Linux, no look at the home but the kernel's: what is told, the kernel told."""
    if sys.platform.startswith("linux"):  # elsewhere the cache validates by stat: the server looks
        monkeypatch.setattr(_mcp_live, "POLL", 3600.0)


def updated(*uris: str) -> list[dict[str, Any]]:
    """The notifications of ``uris`` updated, as ``Peer.until`` gives them (sorted)."""
    return sorted(
        ({"method": "notifications/resources/updated", "params": {"uri": uri}} for uri in uris), key=repr
    )


def test_a_subscriber_hears_of_every_write_whoever_made_it(aster: Path) -> None:
    seen: dict[str, Any] = {}
    soul, memory, user = "soul://soul", "soul://file/MEMORY.md", "soul://file/USER.md"

    async def session(peer: Peer) -> None:
        for uri in (soul, memory, user):
            assert await peer.request("resources/subscribe", {"uri": uri}) == {}
        put(aster / "USER.md", "Calls herself Mira.")  # a person
        seen["person"] = await peer.until(updated(soul, user))
        seen["read"] = await peer.request("resources/read", {"uri": user})
        add = {"action": "add", "content": "Likes tea.", "old_text": None}
        await peer.request("tools/call", {"name": "memory", "arguments": add})  # this server
        seen["server"] = await peer.until(updated(soul, memory))
        shell = [sys.executable, "-m", "toolnexus.agents", "memory", str(aster), "add", "From a shell."]
        await anyio.run_process(shell)  # another process
        seen["process"] = await peer.until(updated(soul, memory))
        # A save that changes nothing is told nothing; what changes next is told alone.
        put(aster / "USER.md", "Calls herself Mira.")
        await peer.request("resources/unsubscribe", {"uri": user})
        put(aster / "SOUL.md", "Curious.")
        seen["unchanged"] = await peer.until(updated(soul))

    talk(aster, session)
    assert seen["person"] == updated(soul, user)
    assert seen["read"]["contents"][0]["text"] == "Calls herself Mira."
    assert seen["server"] == seen["process"] == updated(soul, memory)
    assert compose(aster).text.endswith("- Likes tea.\n- From a shell.")
    assert seen["unchanged"] == updated(soul)


def test_the_list_changes_when_a_file_appears_or_goes(aster: Path) -> None:
    seen: dict[str, Any] = {}
    heartbeat = "soul://file/HEARTBEAT.md"

    async def session(peer: Peer) -> None:
        await peer.request("resources/subscribe", {"uri": heartbeat})
        put(aster / "HEARTBEAT.md", "Check the kiln at noon.")
        # The list and the file change together: looks that race the save may tell the file twice.
        seen["appeared"] = await peer.until_each([LISTED, *updated(heartbeat)])
        seen["listed"] = await peer.request("resources/list")
        put(aster / "HEARTBEAT.md", " \n\t")  # still a section of the soul, an empty one
        seen["emptied"] = await peer.until(updated(heartbeat))
        seen["read"] = await peer.request("resources/read", {"uri": heartbeat})
        (aster / "HEARTBEAT.md").unlink()
        seen["gone"] = await peer.until_each([LISTED, *updated(heartbeat)])
        (aster / "TOOLS.md").unlink()  # not subscribed to: the list alone
        seen["tools gone"] = await peer.until([LISTED])

    talk(aster, session)
    assert seen["appeared"] == seen["gone"] == sorted([LISTED, *updated(heartbeat)], key=repr)
    assert [each["name"] for each in seen["listed"]["resources"]][-2:] == ["HEARTBEAT.md", "MEMORY.md"]
    assert seen["emptied"] == updated(heartbeat)
    assert seen["read"]["contents"][0]["text"] == ""
    assert seen["tools gone"] == [LISTED]


def test_a_home_that_goes_and_comes_back_is_told(aster: Path, tmp_path: Path) -> None:
    seen: dict[str, Any] = {}
    aside = tmp_path / "aside"

    async def session(peer: Peer) -> None:
        await peer.request("resources/subscribe", {"uri": "soul://soul"})
        aster.rename(aside)
        seen["gone"] = await peer.until([LISTED, *updated("soul://soul")])
        seen["read"] = await peer.refusal("resources/read", {"uri": "soul://soul"})
        aside.rename(aster)
        seen["back"] = await peer.until([LISTED, *updated("soul://soul")])
        seen["again"] = await peer.request("resources/read", {"uri": "soul://soul"})

    talk(aster, session)
    assert seen["gone"] == seen["back"] == sorted([LISTED, *updated("soul://soul")], key=repr)
    assert seen["read"] == (-32603, "the persona's home cannot be served: no such directory")
    assert seen["again"]["contents"][0]["text"] == compose(aster).text


def test_where_the_kernel_cannot_tell_it_looks_twice_a_second(
    aster: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A home the cache validates by stat (a network file system, or no inotify) is looked at.
    monkeypatch.setattr(_mcp_live, "POLL", 0.05)
    monkeypatch.setattr(_mcp_live, "SoulCache", functools.partial(SoulCache, validate="stat"))
    seen: dict[str, Any] = {}

    async def session(peer: Peer) -> None:
        await peer.request("resources/subscribe", {"uri": "soul://file/SOUL.md"})
        put(aster / "SOUL.md", "Curious, and patient.")
        seen["told"] = await peer.until(updated("soul://file/SOUL.md"))

    talk(aster, session)
    assert seen["told"] == updated("soul://file/SOUL.md")


def test_a_listener_hears_on_2026_07_28(aster: Path) -> None:
    if GENERATION == 1:
        pytest.skip("subscriptions/listen is 2026-07-28's, which mcp 1.x does not speak")
    subscriptions: Any = pytest.importorskip("mcp.client.subscriptions")
    seen: dict[str, Any] = {}

    async def events(subscription: Any, expected: set[Any]) -> set[Any]:
        came: set[Any] = set()
        with anyio.fail_after(TIMEOUT):
            async for event in subscription:
                came.add(event)
                if came >= expected:
                    return came
        raise AssertionError(f"the stream ended with {came}")

    async def session(peer: Peer) -> None:
        asked = ["soul://soul", "soul://file/HEARTBEAT.md"]
        async with peer.client.listen(resources_list_changed=True, resource_subscriptions=asked) as stream:
            seen["honored"] = stream.honored.resource_subscriptions
            put(aster / "HEARTBEAT.md", "Check the kiln at noon.")
            seen["appeared"] = await events(
                stream,
                {
                    subscriptions.ResourcesListChanged(),
                    subscriptions.ResourceUpdated(uri="soul://soul"),
                    subscriptions.ResourceUpdated(uri="soul://file/HEARTBEAT.md"),
                },
            )
            add = {"action": "add", "content": "Likes tea.", "old_text": None}
            await peer.request("tools/call", {"name": "memory", "arguments": add})
            seen["added"] = await events(stream, {subscriptions.ResourceUpdated(uri="soul://soul")})
        try:
            async with peer.client.listen(resource_subscriptions=["soul://nope"]):
                pass
        except Exception as exc:  # the SDK's MCPError, as the listen stream raises it
            seen["unknown"] = (exc.code, exc.message)  # type: ignore[attr-defined]

    talk(aster, session, modern=True)
    assert seen["honored"] == ["soul://soul", "soul://file/HEARTBEAT.md"]
    assert len(seen["appeared"]) == 3
    assert seen["added"] == {subscriptions.ResourceUpdated(uri="soul://soul")}
    assert seen["unknown"] == (-32602, "there is no resource 'soul://nope' here")


def test_subscribing_takes_a_uri_as_it_is_written_or_percent_encoded(aster: Path) -> None:
    seen: dict[str, Any] = {}

    async def session(peer: Peer) -> None:
        await peer.request("resources/subscribe", {"uri": "soul://file/%53OUL.md"})
        put(aster / "SOUL.md", "Curious.")
        seen["told"] = await peer.until(updated("soul://file/SOUL.md"))
        try:
            await peer.request("resources/subscribe", {"uri": "soul://file/%ZZ"})
        except Refused as exc:
            seen["bad"] = (exc.code, exc.message)

    talk(aster, session)
    assert seen["told"] == updated("soul://file/SOUL.md")
    assert seen["bad"] == (-32602, "there is no resource 'soul://file/%ZZ' here")


def test_a_look_that_raced_a_write_is_not_quiet_and_the_next_one_reads_it(
    aster: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A change whose event a read takes in while it reads must not end the looking:
    # only a look the cache answered whole says that nothing changed since.
    from toolnexus.agents import _native

    real = _native.reader
    saves: list[str] = []  # saved once, just after the next read of SOUL.md alone, before the cache looks

    class Racing:
        def __getattr__(self, name: str) -> Any:
            return getattr(real, name)

        def compose_homes(self, homes: Any, names: Any, *rest: Any) -> Any:
            composed = real.compose_homes(homes, names, *rest)
            if saves and list(names) == [b"SOUL.md"]:
                put(aster / "SOUL.md", saves.pop())
            return composed

    _, home = served(aster)
    live = _mcp_live.Live(home)
    try:
        first, quiet = live.look()
        assert not quiet  # the cache read everything: nothing to show yet
        assert live.look() == (first, True)  # nothing changed: all from the cache
        monkeypatch.setattr(_native, "reader", Racing())
        put(aster / "SOUL.md", "First.")
        saves.append("Second.")
        raced, quiet = live.look()
        assert not quiet
        settled, quiet = live.look()
        while not quiet:  # the home was read again: until a look the cache answers whole
            settled, quiet = live.look()
        soul = compose(aster, files=["SOUL.md"])
        assert (soul.text, settled["soul://file/SOUL.md"]) == ("## SOUL.md\n\nSecond.", soul.digest)
        assert raced["soul://file/SOUL.md"] != settled["soul://file/SOUL.md"]
    finally:
        live.close()
        home.close()
