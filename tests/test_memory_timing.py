"""Law 2 whatever the timing: every other writer's bytes kept, in whole lines, and a person's removal stands.

Each test is one of the ways an independent tester lost another writer's
text, made deterministic: a writer that takes no lock stops itself (SIGSTOP)
at the instant that matters (``paused_writer.py``), or a call of the tool's is
wrapped to act at the instant between two of its steps. Each runs where the
file system exchanges names (``RENAME_EXCHANGE``) and where it cannot (the
tool links and renames instead). The rates under load are ``slow`` tests,
which print their counts.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from conftest import tool_files, waiting_on_a_lease
from toolnexus.agents import memory_tool
from toolnexus.agents._memory import _disk, _system

pytestmark = [
    pytest.mark.reader_independent,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="leases and RENAME_EXCHANGE are Linux's"),
]

WRITER = Path(__file__).with_name("paused_writer.py")
BEFORE = "# Notes\n\n- pre1\n- pre2\n"


@pytest.fixture(params=["exchange", "link and rename"])
def swaps(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """How the tool puts a new file in place: as this file system can."""
    if request.param == "link and rename":
        monkeypatch.setattr(_system.Folder, "exchange", lambda self, first, second: False)
    return str(request.param)


@pytest.fixture
def memory(home: Path) -> Path:
    path = home / "MEMORY.md"
    path.write_text(BEFORE)
    return path


@contextmanager
def paused(mode: str, path: Path, first: str, second: str) -> Iterator[Callable[[], None]]:
    """A writer stopped after its first write (or its open); the context gives the call that resumes it."""
    child = subprocess.Popen([sys.executable, str(WRITER), mode, str(path), first, second])
    _, status = os.waitpid(child.pid, os.WUNTRACED)
    assert os.WIFSTOPPED(status), "the writer did not stop"

    def resume() -> None:
        os.kill(child.pid, signal.SIGCONT)
        assert child.wait(timeout=60) == 0

    try:
        yield resume
    finally:
        if child.poll() is None:
            os.kill(child.pid, signal.SIGCONT)
            child.wait(timeout=60)


def kept_files(home: Path) -> list[str]:
    return sorted(name for name in os.listdir(home) if ".tmp-" in name or ".was-" in name)


# The file the last change replaced, and its record: kept until the next change.
LAST_CHANGES = [".MEMORY.md.tmp-*", ".MEMORY.md.was-*"]


# ---- 1. saves written in two parts, across a swap ---------------------------------------


def test_an_append_in_two_writes_is_one_line(home: Path, memory: Path, swaps: str) -> None:
    tool = memory_tool(home)
    with paused("append", memory, "- external n", "ote written in two parts\n") as resume:
        tool.add("tool note")  # waits for the writer a while, then goes on, keeping the file it replaces
        assert memory.read_text() == BEFORE + "- external n\n- tool note\n"
        resume()
    tool.add("one more")  # the next change merges what the writer wrote since
    assert memory.read_text() == BEFORE + "- external note written in two parts\n- tool note\n- one more\n"
    assert tool.entries() == ("pre1", "pre2", "external note written in two parts", "tool note", "one more")
    assert [name for name in tool_files(home) if "-" in name] == LAST_CHANGES


def test_a_continuation_written_after_the_swap_is_the_writers(home: Path, memory: Path, swaps: str) -> None:
    # { echo "- a"; echo "  b"; } >> MEMORY.md, the second echo after the swap.
    tool = memory_tool(home)
    with paused("append", memory, "- a\n", "  b\n") as resume:
        tool.add("tool-note")
        resume()
    tool.add("one more")
    assert memory.read_text() == BEFORE + "- a\n  b\n- tool-note\n- one more\n"
    assert tool.entries() == ("pre1", "pre2", "a\nb", "tool-note", "one more")


@pytest.mark.parametrize(
    ("before", "first", "change", "late", "after"),
    [
        (b"- a\r\n", b"- b\r", ("remove", "a"), b"\n", b"- b\r\n- Z\r\n"),
        (b"- a\n", b"- b\r", ("add", "N"), b"\n", b"- a\n- b\r\n- N\n- Z\n"),
        (b"- a\n", b"- b\r", ("remove", "a"), b"\n", b"- b\r\n- Z\r\n"),  # as the first line ends now
        (b"- a\r\n", b"- b", ("remove", "a"), b"\r\n", b"- b\r\n- Z\r\n"),
    ],
    ids=[
        "CR, a removal, LF",
        "CR, an add, LF",
        "CR, a removal, LF, in an LF file",
        "the line, a removal, CRLF",
    ],
)
def test_a_line_end_written_late_ends_the_writers_line(
    home: Path, swaps: str, before: bytes, first: bytes, change: tuple[str, str], late: bytes, after: bytes
) -> None:
    memory = home / "MEMORY.md"
    memory.write_bytes(before)
    appender = os.open(memory, os.O_WRONLY | os.O_APPEND)  # a shell's `exec 3>>MEMORY.md`
    try:
        os.write(appender, first)
        tool = memory_tool(home)
        getattr(tool, change[0])(change[1])
        os.write(appender, late)
    finally:
        os.close(appender)
    tool.add("Z")
    assert memory.read_bytes() == after


def test_an_in_place_save_in_two_writes_keeps_its_lines_whole(home: Path, memory: Path, swaps: str) -> None:
    saved = "# Notes\n\n- pre1\n- pre2\n- edited by hand\n"
    tool = memory_tool(home)
    with paused("inplace", memory, saved[:12], saved[12:]) as resume:  # stopped after "# Notes\n\n- pr"
        tool.add("tool note")
        resume()
    tool.add("one more")
    assert memory.read_text() == saved + "- tool note\n- one more\n"


# ---- 2. writers paused for long, between open, truncate and write ---------------------------


@pytest.mark.parametrize("first", ["", "- half"])
def test_an_appender_paused_for_long_loses_nothing(home: Path, memory: Path, swaps: str, first: str) -> None:
    tool = memory_tool(home)
    with paused("append", memory, first, " - late\n" if first else "- late\n") as resume:
        tool.add("tool note")
        tool.remove("pre1")  # two changes meanwhile: the file it holds is kept through both
        resume()
    tool.add("one more")
    late = "- half - late\n" if first else "- late\n"
    assert memory.read_text() == "# Notes\n\n- pre2\n" + late + "- tool note\n- one more\n"


def test_an_editor_paused_between_truncate_and_write_loses_nothing(
    home: Path, memory: Path, swaps: str
) -> None:
    saved = "# Notes\n\n- pre1\n- pre2\n- the editor's line\n"
    tool = memory_tool(home)
    with paused("inplace", memory, "", saved) as resume:  # emptied, not yet written
        tool.add("tool note")  # built on the emptied file, which is kept
        assert memory.read_text() == "- tool note\n"
        resume()
    tool.add("one more")
    assert memory.read_text() == saved + "- tool note\n- one more\n"


@pytest.mark.parametrize("pause", [0.01, 0.1])
def test_an_editor_that_pauses_briefly_is_waited_for(home: Path, memory: Path, pause: float) -> None:
    saved = "# Notes\n\n- pre1\n- pre2\n- the editor's line\n"
    code = (
        "import os, sys, time\n"
        "fd = os.open(sys.argv[1], os.O_WRONLY | os.O_TRUNC)\n"
        f"print('emptied', flush=True); time.sleep({pause}); os.write(fd, {saved.encode()!r}); os.close(fd)\n"
    )
    editor = subprocess.Popen([sys.executable, "-c", code, str(memory)], stdout=subprocess.PIPE, text=True)
    assert editor.stdout is not None
    assert editor.stdout.readline() == "emptied\n"
    tool = memory_tool(home)
    tool.add("tool note")  # it waits for the editor, which has the file open for writing
    editor.communicate(timeout=60)
    assert editor.returncode == 0
    assert memory.read_text() == saved + "- tool note\n"


# ---- 3. a person's removal stands ---------------------------------------------------------


@contextmanager
def at_the_swap(monkeypatch: pytest.MonkeyPatch, act: Callable[[], None]) -> Iterator[list[int]]:
    """``act()`` between the tool's check and its swap: its exchange, or where there is none, its link."""
    calls: list[int] = []
    real = _system.Folder.exchange

    def exchange(self: _system.Folder, first: bytes, second: bytes) -> bool:
        if not calls:
            act()
        calls.append(1)
        return real(self, first, second)

    monkeypatch.setattr(_system.Folder, "exchange", exchange)
    yield calls


def truncate_in_another_process(path: Path) -> subprocess.Popen[bytes]:
    """A person's truncate(1): it waits while the tool holds its lease, then empties the file it opened."""
    child = subprocess.Popen([sys.executable, "-c", "import os, sys; os.truncate(sys.argv[1], 0)", str(path)])
    waiting_on_a_lease(Path(f"/proc/{child.pid}"), lambda: child.poll() is None)
    return child


def test_a_truncation_at_the_swap_stands(
    home: Path, memory: Path, swaps: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    children: list[subprocess.Popen[bytes]] = []
    with at_the_swap(monkeypatch, lambda: children.append(truncate_in_another_process(memory))):
        memory_tool(home).add("tool note")
    assert children[0].wait(timeout=60) == 0
    monkeypatch.undo()
    memory_tool(home).add("one more")
    assert memory.read_text() == "- tool note\n- one more\n"  # the lines the person removed stay removed


def editor_saves(path: Path, text: str) -> None:
    temp = path.with_name("MEMORY.md.swp")
    temp.write_text(text)
    os.replace(temp, path)


def test_a_save_by_rename_without_a_line_stands(
    home: Path, memory: Path, swaps: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with at_the_swap(monkeypatch, lambda: editor_saves(memory, "# Notes\n\n- pre2\n")) as calls:
        memory_tool(home).add("tool note")
    assert memory.read_text() == "# Notes\n\n- pre2\n- tool note\n"
    # exchange: the swap, the swap back, the swap of the change redone; else a link that found the save
    assert len(calls) == (3 if swaps == "exchange" else 2)
    monkeypatch.undo()
    memory_tool(home).add("one more")
    assert memory.read_text() == "# Notes\n\n- pre2\n- tool note\n- one more\n"


def test_a_removal_of_the_file_at_the_swap_stands(
    home: Path, memory: Path, swaps: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with at_the_swap(monkeypatch, memory.unlink):
        usage = memory_tool(home).add("tool note")
    assert memory.read_text() == "- tool note\n"
    assert usage.entry_count == 1


@pytest.mark.parametrize("act", ["a save by rename", "a removal"])
def test_without_exchange_the_window_between_link_and_rename(
    home: Path, memory: Path, monkeypatch: pytest.MonkeyPatch, act: str
) -> None:
    # Where the file system cannot exchange names, what lands in the microseconds between the
    # tool's link of the file it read and its rename over the name is replaced: the memory file's
    # page (docs/reference/memory-file.md) says so, with the rate measured under load
    # (test_rates_without_exchange).
    monkeypatch.setattr(_system.Folder, "exchange", lambda self, first, second: False)
    real = _system.Folder.rename

    def rename(self: _system.Folder, old: bytes, new: bytes) -> None:
        if new == b"MEMORY.md":
            if act == "a removal":
                memory.unlink()
            else:
                editor_saves(memory, "# Notes\n\n- pre2\n")
        real(self, old, new)

    monkeypatch.setattr(_system.Folder, "rename", rename)
    memory_tool(home).add("tool note")
    assert memory.read_text() == BEFORE + "- tool note\n"


# ---- 4. a killed tool's leftovers ---------------------------------------------------------

_STOPPED_TOOL = """
import os, signal, sys
from toolnexus.agents import memory_tool
from toolnexus.agents._memory import _system
if sys.argv[3] == "link and rename":
    _system.Folder.exchange = lambda self, first, second: False
    real = _system.Folder.rename
    def rename(self, old, new):
        real(self, old, new)
        if new == b"MEMORY.md":
            os.kill(os.getpid(), signal.SIGSTOP)
    _system.Folder.rename = rename
else:
    real = _system.Folder.exchange
    def exchange(self, first, second):
        done = real(self, first, second)
        os.kill(os.getpid(), signal.SIGSTOP)
        return done
    _system.Folder.exchange = exchange
memory_tool(sys.argv[1]).add(sys.argv[2])
"""


def test_a_killed_tool_leaves_what_it_replaced_to_be_merged(home: Path, memory: Path, swaps: str) -> None:
    appender = os.open(memory, os.O_WRONLY | os.O_APPEND)  # a shell's `exec 3>>MEMORY.md`
    try:
        tool = subprocess.Popen([sys.executable, "-c", _STOPPED_TOOL, str(home), "tool note", swaps])
        _, status = os.waitpid(tool.pid, os.WUNTRACED)
        assert os.WIFSTOPPED(status), "the tool did not stop after its swap"
        os.write(appender, b"- the shell's late note\n")  # into the file the swap replaced
        tool.kill()
        tool.wait(timeout=60)
    finally:
        os.close(appender)
    assert kept_files(home) != []  # what the killed tool replaced, with its record: never deleted unread
    memory_tool(home).add("after the kill")
    assert memory.read_text() == BEFORE + "- the shell's late note\n- tool note\n- after the kill\n"
    assert [name for name in tool_files(home) if "-" in name] == LAST_CHANGES


# ---- 5. where leases cannot tell --------------------------------------------------------


def test_without_leases_the_replaced_file_is_kept_and_merged(
    home: Path, memory: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_system, "read_lease", lambda fd: _system.Lease.UNAVAILABLE)
    tool = memory_tool(home)
    with paused("append", memory, "- external n", "ote\n") as resume:
        tool.add("tool note")
        resume()
    tool.add("one more")
    assert memory.read_text() == BEFORE + "- external note\n- tool note\n- one more\n"
    assert len(kept_files(home)) == 4  # two swaps, neither vouched for: kept a while


# ---- 6. a tool killed at the instants an independent tester chose --------------------------

_KILLED_AT = """
import os, signal, sys
from toolnexus.agents import memory_tool
from toolnexus.agents._memory import _system
home, action, text, where, swaps = sys.argv[1:6]
if swaps == "link and rename":
    _system.Folder.exchange = lambda self, first, second: False
def stop():
    os.kill(os.getpid(), signal.SIGSTOP)
if where == "after a beaten exchange":  # an editor's save by rename lands between check and exchange
    real_exchange = _system.Folder.exchange
    def exchange(self, first, second):
        path = os.path.join(home, "MEMORY.md")
        with open(path + ".swp", "w") as handle:
            handle.write(sys.argv[6])
        os.replace(path + ".swp", path)
        real_exchange(self, first, second)
        stop()
    _system.Folder.exchange = exchange
elif where == "at the directory's sync":  # the new file is in place; nothing after it has run
    _system.Folder.sync = lambda self: stop()
elif where == "before the rename over the name":  # no exchange: the file read is linked; a save or rm lands
    real_rename = _system.Folder.rename
    def rename(self, old, new):
        if new == b"MEMORY.md":
            path = os.path.join(home, "MEMORY.md")
            if sys.argv[6] == "rm":
                os.unlink(path)
            else:
                with open(path + ".swp", "w") as handle:
                    handle.write(sys.argv[6])
                os.replace(path + ".swp", path)
            stop()
        real_rename(self, old, new)
    _system.Folder.rename = rename
elif where == "after the link of a first file":  # no RENAME_NOREPLACE: a hard link, then the unlink
    _system.Folder.rename_noreplace = lambda self, first, second: False
    real_link = _system.Folder.link
    def link(self, old, new):
        real_link(self, old, new)
        if new == b"MEMORY.md":
            stop()
    _system.Folder.link = link
tool = memory_tool(home)
getattr(tool, action)(text)
"""


def kill_at(home: Path, where: str, action: str, text: str, swaps: str = "exchange", *extra: str) -> None:
    """Run ``action(text)`` in a tool that stops at ``where``; kill it there."""
    tool = subprocess.Popen([sys.executable, "-c", _KILLED_AT, str(home), action, text, where, swaps, *extra])
    _, status = os.waitpid(tool.pid, os.WUNTRACED)
    assert os.WIFSTOPPED(status), f"the tool did not stop {where}"
    tool.kill()
    tool.wait(timeout=60)


@pytest.mark.parametrize(
    ("saved", "after"),
    [
        (BEFORE + "- the editor's note\n", BEFORE + "- the editor's note\n- tool note\n- after the kill\n"),
        ("# Notes\n\n- pre2\n", "# Notes\n\n- pre2\n- tool note\n- after the kill\n"),  # its removal stands
    ],
    ids=["a save with a line more", "a save without a line"],
)
def test_a_tool_killed_after_an_editor_beat_its_swap_loses_no_save(
    home: Path, memory: Path, saved: str, after: str
) -> None:
    # The editor's save went to .MEMORY.md.tmp-T in the exchange; the tool died before swapping it back.
    kill_at(home, "after a beaten exchange", "add", "tool note", "exchange", saved)
    assert memory.read_text() == BEFORE + "- tool note\n"
    memory_tool(home).add("after the kill")
    assert memory.read_text() == after
    assert [name for name in tool_files(home) if "-" in name] == LAST_CHANGES


def test_a_tool_killed_after_merging_does_not_merge_again(home: Path, memory: Path, swaps: str) -> None:
    appender = os.open(memory, os.O_WRONLY | os.O_APPEND)  # a shell's `exec 3>>MEMORY.md`, held
    try:
        memory_tool(home).add("tool note")  # the appender's file is kept
        os.write(appender, b"- the shell's late note\n")
        kill_at(home, "at the directory's sync", "remove", "pre2", swaps)  # it merged the late note
        assert memory.read_text() == "# Notes\n\n- pre1\n- the shell's late note\n- tool note\n"
        memory_tool(home).add("after the kill")
        expected = "# Notes\n\n- pre1\n- the shell's late note\n- tool note\n- after the kill\n"
        assert memory.read_text() == expected  # the late note once
        os.write(appender, b"- and one more\n")
    finally:
        os.close(appender)
    memory_tool(home).add("last")
    assert memory.read_text() == (  # where the shell wrote it: after its late note
        "# Notes\n\n- pre1\n- the shell's late note\n- and one more\n- tool note\n- after the kill\n- last\n"
    )


def test_a_continuation_of_an_entry_the_tool_removed_continues_no_other(home: Path, swaps: str) -> None:
    memory = home / "MEMORY.md"
    memory.write_text("- a\n- b\n")
    writer = os.open(memory, os.O_WRONLY | os.O_APPEND)  # opened before the tool's changes
    try:
        tool = memory_tool(home)
        tool.add("T1")
        tool.remove("b")
        os.write(writer, b"  more of b\n")
    finally:
        os.close(writer)
    tool.add("T2")
    assert memory.read_text() == "- a\n- T1\n\n  more of b\n- T2\n"
    assert list(tool.entries()) == ["a", "T1", "T2"]


def test_the_record_is_synced_before_the_swap(
    home: Path, memory: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A record that a power loss could leave empty would let the next change delete its kept file unread.
    steps: list[str] = []
    real_fsync, real_exchange = os.fsync, _system.Folder.exchange

    def fsync(fd: int) -> None:
        steps.append(
            "sync " + re.sub(r"-[0-9a-f]{16}$", "-T", os.path.basename(os.readlink(f"/proc/self/fd/{fd}")))
        )
        real_fsync(fd)

    def exchange(self: _system.Folder, first: bytes, second: bytes) -> bool:
        steps.append("exchange")
        return real_exchange(self, first, second)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(_system.Folder, "exchange", exchange)
    memory_tool(home).add("tool note")
    assert steps == ["sync .MEMORY.md.tmp-T", "sync .MEMORY.md.was-T", "exchange", "sync home"]


def test_a_tool_killed_while_writing_its_record_leaves_the_file_as_it_was(
    home: Path, memory: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A record cut short is one written before its swap: its .tmp- is the tool's new text, nobody's.
    real = _system.write_all

    def cut_short(fd: int, data: bytes) -> None:
        if data.startswith(b"toolnexus-soul"):
            real(fd, data[: len(data) // 2])
            raise KeyboardInterrupt  # as far as the files go, a kill here
        real(fd, data)

    monkeypatch.setattr(_system, "write_all", cut_short)
    monkeypatch.setattr(_disk.Disk, "_remove", lambda self, *found: True)  # a killed tool cleans nothing
    with pytest.raises(KeyboardInterrupt):
        memory_tool(home).add("tool note")
    assert len(kept_files(home)) == 2
    monkeypatch.undo()
    memory_tool(home).add("after")
    assert memory.read_text() == BEFORE + "- after\n"
    assert [name for name in tool_files(home) if "-" in name] == LAST_CHANGES


@pytest.mark.parametrize(
    ("act", "after"),
    [
        (
            BEFORE + "- tool note\n- the editor's note\n",
            BEFORE + "- W\n- tool note\n- the editor's note\n- after\n",
        ),
        ("rm", "- W\n- after\n"),
    ],
    ids=["a save by rename", "an rm"],
)
def test_without_exchange_a_tool_killed_before_its_rename_merges_later(
    home: Path, memory: Path, act: str, after: str
) -> None:
    # What the killed change merged from a kept file is not merged: its new text never went in place.
    appender = os.open(memory, os.O_WRONLY | os.O_APPEND)  # a shell's `exec 3>>MEMORY.md`, held
    try:
        memory_tool(home).add("tool note")  # the appender's file is kept
        os.write(appender, b"- W\n")
        kill_at(home, "before the rename over the name", "add", "K", "link and rename", act)
    finally:
        os.close(appender)
    memory_tool(home).add("after")
    assert memory.read_text() == after


def test_a_first_file_linked_in_place_by_a_killed_tool_merged_once(home: Path, memory: Path) -> None:
    appender = os.open(memory, os.O_WRONLY | os.O_APPEND)  # a shell's `exec 3>>MEMORY.md`, held
    try:
        memory_tool(home).add("tool note")  # the appender's file is kept
        os.write(appender, b"- W\n")
        memory.unlink()  # a person's rm: the file goes, the late line stays
        kill_at(home, "after the link of a first file", "add", "K", "link and rename")
        assert memory.read_text() == "- W\n- K\n"
        memory_tool(home).add("after")
    finally:
        os.close(appender)
    assert memory.read_text() == "- W\n- K\n- after\n"


@pytest.mark.parametrize("clock", ["the clock", "a clock set back at every look"])
def test_a_kept_files_own_record_is_newer_than_what_an_old_change_merged(
    home: Path, memory: Path, monkeypatch: pytest.MonkeyPatch, clock: str
) -> None:
    # Two appenders: one holds the first file (kept from the first change on), one the second, so
    # that the record of the second change, which says what it merged of the first, stays too.
    # Changes are numbered under the lock: no clock orders them.
    if clock != "the clock":
        back = iter(range(10**18, 0, -(10**9)))
        monkeypatch.setattr(time, "time_ns", lambda: next(back))
    first = os.open(memory, os.O_WRONLY | os.O_APPEND)
    try:
        tool = memory_tool(home)
        tool.add("T0")
        second = os.open(memory, os.O_WRONLY | os.O_APPEND)
        try:
            os.write(first, b"- W1\n")
            tool.add("T1")  # merges W1; keeps the file the second appender holds
            os.write(first, b"- W2\n")
            tool.add("T2")  # merges W2
            tool.remove("W1")  # lets go of the file T2 replaced, and its record: T1's stays
            tool.add("T4")  # W2 is merged: not again
        finally:
            os.close(second)
    finally:
        os.close(first)
    assert memory.read_text() == BEFORE + "- W2\n- T0\n- T1\n- T2\n- T4\n"
    memory_tool(home).add("T5")  # the appenders are done: what they held goes
    assert sorted(name for name in os.listdir(home) if "-" in name) == [
        ".MEMORY.md.tmp-0000000000000006",  # the sixth change's number: one more than the fifth's
        ".MEMORY.md.was-0000000000000006",
    ]
