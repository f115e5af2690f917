"""What the memory tool says is true, and whose the files are (docs/reference/memory-file.md, section 14).

- An operation raises only when its change is not in place; when the
  directory's sync fails after it is, ``MemoryUnsynced`` says it stands.
- A record or a kept file the tool cannot read stops the change, named, and
  is never deleted.
- A change keeps the file's owner, group and mode where the process may;
  its lock and records take the file's, so that a group can share a home
  and an administrator's change leaves nothing the owner cannot use.
- A memory file with a second name is refused.
- Where the memory laws are untested, the tool is refused unless the host
  opts in.
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
import sys
import tempfile
from collections.abc import Iterator
from functools import partial
from pathlib import Path

import pytest

from conftest import EXAMPLE_MEMORY, in_child, is_root, tool_files
from toolnexus.agents import MemoryRefused, MemoryUnsynced, memory_tool
from toolnexus.agents._memory import _machine, _system
from toolnexus.agents.cli import main

pytestmark = pytest.mark.reader_independent
needs_root = pytest.mark.skipif(
    not hasattr(os, "fork") or not is_root(), reason="needs root, to be other users"
)
linux = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="leases and RENAME_EXCHANGE are Linux's"
)

SERVICE = 65534  # nobody: the user a home belongs to
LAST_CHANGE = [".MEMORY.md.lock", ".MEMORY.md.tmp-*", ".MEMORY.md.was-*", "MEMORY.md"]


@pytest.fixture
def reachable() -> Iterator[Path]:
    """A home other users can reach (pytest's own directories are root's alone)."""
    root = Path(tempfile.mkdtemp(prefix="tns-memory-"))
    root.chmod(0o755)
    (root / "home").mkdir()
    try:
        yield root / "home"
    finally:
        shutil.rmtree(root)


def fail_the_directory_sync(monkeypatch: pytest.MonkeyPatch) -> None:
    def hook(name: str) -> None:
        if name == "fsync" and _system.step is _machine.State.SYNCED:
            raise OSError(errno.EIO, os.strerror(errno.EIO))

    monkeypatch.setattr(_system, "hook", hook)


# ---- errors that tell the truth ------------------------------------------------------------


def test_a_failed_directory_sync_says_the_change_stands(
    home: Path, memory: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fail_the_directory_sync(monkeypatch)
    tool = memory_tool(home)
    with pytest.raises(MemoryUnsynced) as unsynced:
        tool.add("Answers in French.")
    assert (unsynced.value.errno, unsynced.value.code, str(unsynced.value)) == (
        errno.EIO,
        "unsynced",
        "The change to MEMORY.md was made, but the disk did not confirm that it is saved (Input/output"
        " error): it stands, unless the machine stops before the disk saves it. Do not make it again",
    )
    assert isinstance(unsynced.value, OSError)
    assert tool.entries()[-1] == "Answers in French."  # in place
    assert tool.call({"action": "remove", "old_text": "French"}) == {
        "ok": False,
        "action": "remove",
        "error": "unsynced",
        "message": "The change to MEMORY.md was made, but the disk did not confirm that it is saved"
        " (Input/output error): it stands, unless the machine stops before the disk saves it. Do not make"
        " it again. MEMORY.md holds 3 entries, 160 of 2,200 characters.",
        "entry_count": 3,
        "used": 160,
        "limit": 2200,
    }
    monkeypatch.undo()
    tool.add("one more")  # the next change settles what the unsynced ones could not
    assert tool.entries()[-1] == "one more"
    assert tool_files(home) == LAST_CHANGE


def test_the_command_line_says_an_unsynced_change_stands(
    home: Path, memory: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    fail_the_directory_sync(monkeypatch)
    assert main(["memory", str(home), "add", "Answers in French."]) == 1
    assert capsys.readouterr() == (
        "",
        f"toolnexus-soul: {home}/MEMORY.md: The change to MEMORY.md was made, but the disk did not confirm"
        " that it is saved (Input/output error): it stands, unless the machine stops before the disk saves"
        " it. Do not make it again\n",
    )
    assert memory_tool(home).entries()[-1] == "Answers in French."


def test_a_failing_close_after_the_change_is_no_failure(
    home: Path, memory: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Linux lets a descriptor go whatever close() says; the change was in place and synced before.
    real = os.close

    def failing(fd: int) -> None:
        real(fd)
        raise OSError(errno.EIO, os.strerror(errno.EIO))

    monkeypatch.setattr(os, "close", failing)
    assert main(["memory", str(home), "add", "Answers in French."]) == 0
    monkeypatch.undo()
    assert capsys.readouterr() == ("added: MEMORY.md holds 4 entries, 181 of 2,200 characters\n", "")
    assert memory_tool(home).entries()[-1] == "Answers in French."


@needs_root
def test_a_record_that_cannot_be_read_stops_the_change_and_stays(reachable: Path) -> None:
    home, memory = reachable, reachable / "MEMORY.md"
    memory.write_bytes(EXAMPLE_MEMORY)
    home.chmod(0o777)
    appender = os.open(memory, os.O_WRONLY | os.O_APPEND)  # a shell's `exec 3>>MEMORY.md`, held
    try:
        memory_tool(home).add("T1")  # what the shell holds is kept, with its record
        os.write(appender, b"- the shell's late line\n")
    finally:
        os.close(appender)
    record = next(home.glob(".MEMORY.md.was-*"))
    record.chmod(0o600)  # root's alone, as a change of 0.3 made it
    before = sorted(os.listdir(home)), memory.read_bytes()
    with pytest.raises(PermissionError) as refused:
        in_child(lambda: memory_tool(home).add("T2"), drop_root)
    assert str(refused.value) == (
        f"[Errno 13] {record.name} cannot be read (Permission denied): it may hold another writer's lines,"
        " so no change is made until it can be; make it readable to this user, or change MEMORY.md as its"
        f" owner: '{record.name}'"
    )
    assert (sorted(os.listdir(home)), memory.read_bytes()) == before  # nothing deleted, nothing changed
    record.chmod(0o644)
    in_child(lambda: memory_tool(home).add("T2"), drop_root)
    assert memory_tool(home).entries()[-3:] == ("the shell's late line", "T1", "T2")


def drop_root() -> None:
    os.setgroups([])
    os.setgid(SERVICE)
    os.setuid(SERVICE)


# ---- owners --------------------------------------------------------------------------------


@needs_root
@linux
def test_an_administrators_change_leaves_the_home_its_owners(reachable: Path) -> None:
    # A service user's home; a shell of theirs holds MEMORY.md; root runs `memory add` once.
    home, memory = reachable, reachable / "MEMORY.md"
    memory.write_bytes(EXAMPLE_MEMORY)
    for path in (home, memory):
        os.chown(path, SERVICE, SERVICE)
    memory.chmod(0o640)
    shell = os.open(memory, os.O_WRONLY | os.O_APPEND)
    try:
        old = os.umask(0o077)  # a strict umask, which the tool's files must not take
        try:
            assert main(["memory", str(home), "add", "Added by root."]) == 0
        finally:
            os.umask(old)
        os.write(shell, b"- a line the service's shell writes after\n")
    finally:
        os.close(shell)
    owners = {
        name: (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode))
        for name in os.listdir(home)
        if (st := os.stat(home / name))
    }
    assert owners == dict.fromkeys(owners, (SERVICE, SERVICE, 416))
    in_child(lambda: memory_tool(home).add("Added by the service."), drop_root)
    assert memory_tool(home).entries()[-3:] == (
        "a line the service's shell writes after",
        "Added by root.",
        "Added by the service.",
    )


SHARED = 4242


@pytest.fixture
def shared_home(reachable: Path) -> Path:
    """A home a group shares: setgid, group-writable; two members, users 4001 and 4002."""
    os.chown(reachable, 0, SHARED)
    reachable.chmod(0o2775)
    return reachable


def add_note(home: Path, text: str) -> object:
    return memory_tool(home).add(text)


def member(uid: int) -> None:
    os.setgroups([SHARED])
    os.setgid(uid)
    os.setuid(uid)
    os.umask(0o002)


@needs_root
def test_a_group_shares_a_home(shared_home: Path) -> None:
    in_child(partial(add_note, shared_home, "from the first member"), partial(member, 4001))
    lock = shared_home / ".MEMORY.md.lock"
    lock.chmod(0o644)  # as 0.3 made it: the second member cannot open it for writing
    for uid, text in (
        (4002, "from the second member"),
        (4001, "the first again"),
        (4002, "the second again"),
    ):
        in_child(partial(add_note, shared_home, text), partial(member, uid))
    assert memory_tool(shared_home).entries() == (
        "from the first member",
        "from the second member",
        "the first again",
        "the second again",
    )
    for name in os.listdir(shared_home):
        st = os.stat(shared_home / name)
        assert (st.st_gid, stat.S_IMODE(st.st_mode) & 0o060) == (
            SHARED,
            0o060 if name != lock.name else 0o040,
        )


# ---- hard links ------------------------------------------------------------------------------


def test_a_memory_file_with_a_second_name_is_refused(home: Path, memory: Path) -> None:
    os.link(memory, home / "notes.md")
    tool = memory_tool(home)
    for act in (lambda: tool.add("x"), tool.entries):
        with pytest.raises(MemoryRefused) as refused:
            act()
        assert str(refused.value) == (
            "MEMORY.md has 2 names (hard links): the memory tool replaces the file whole, which would leave"
            " the others with the old text; give it one name"
        )
    assert sorted(os.listdir(home)) == [".MEMORY.md.lock", "MEMORY.md", "notes.md"]
    (home / "notes.md").unlink()
    assert tool.add("x").entry_count == 4


def test_a_second_name_the_tool_made_is_its_own(home: Path, memory: Path) -> None:
    # A tool killed between the link and the rename of a change without RENAME_EXCHANGE leaves one.
    os.link(memory, home / ".MEMORY.md.tmp-0000000000000001")
    tool = memory_tool(home)
    assert len(tool.entries()) == 3
    tool.add("x")
    assert sorted(os.listdir(home)) == [
        ".MEMORY.md.lock",
        ".MEMORY.md.tmp-0000000000000002",
        ".MEMORY.md.was-0000000000000002",
        "MEMORY.md",
    ]


# ---- where the laws are untested -------------------------------------------------------------


def test_the_tool_is_refused_where_its_laws_are_untested(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("TOOLNEXUS_SOUL_MEMORY_UNTESTED", raising=False)
    monkeypatch.setattr(sys, "platform", "win32")
    message = (
        "the memory tool's laws are untested on this system (win32): set TOOLNEXUS_SOUL_MEMORY_UNTESTED=1"
        " in the environment to use it anyway (docs/reference/memory-file.md, section 14)"
    )
    with pytest.raises(MemoryRefused) as refused:
        memory_tool(home)
    assert str(refused.value) == message
    for argv in (["memory", str(home), "add", "x"], ["mcp", str(home)]):
        assert main(argv) == 1
        assert capsys.readouterr() == ("", f"toolnexus-soul: {home}: {message}\n")
    monkeypatch.setenv("TOOLNEXUS_SOUL_MEMORY_UNTESTED", "1")
    assert memory_tool(home).add("x").entry_count == 1
