"""The notified SoulCache: never stale with no pause after a write, and never leaking.

Every test writes and composes straight after, with no sleep: the kernel
queues an inotify event before the write returns, so the next compose must
see it. Linux only, on both readers (each has its own notifier twin).
"""

from __future__ import annotations

import asyncio
import errno
import gc
import os
import select
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import Writer, fork, make_homes
from toolnexus.agents import (
    CacheStats,
    NotificationError,
    SoulCache,
    SymlinkPolicy,
    _native,
    acompose,
    compose_many,
)

if not sys.platform.startswith("linux"):
    pytest.skip("inotify is Linux's", allow_module_level=True)


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.fixture
def cache() -> Iterator[SoulCache]:
    with SoulCache(validate="notify") as notified:
        yield notified


def test_two_thousand_edits_none_stale(home: Path, write: Writer, cache: SoulCache) -> None:
    path = write("MEMORY.md", "start")
    for index in range(2000):
        text = f"memory {index}"
        how = index % 4
        if how == 0:  # rewrite in place
            path.write_text(text)
        elif how == 1:  # replace by rename
            write("MEMORY.md.tmp", text)
            os.replace(home / "MEMORY.md.tmp", path)
        elif how == 2:  # same size, same mtime
            before = path.stat()
            path.write_text(text)
            os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
        else:  # append, then cut back
            with path.open("a") as handle:
                handle.write(" more")
            os.truncate(path, 0)
            path.write_text(text)
        assert cache.compose(home).text == f"## MEMORY.md\n\n{text}"
    assert cache.stats.misses + cache.stats.stale == 2000


def test_in_place_writes_through_one_descriptor(home: Path, write: Writer, cache: SoulCache) -> None:
    path = write("SOUL.md", "aaaa")
    fd = os.open(path, os.O_RDWR)
    try:
        for letter in "bcdefg":
            os.pwrite(fd, letter.encode() * 4, 0)  # no close, no rename: only IN_MODIFY
            assert cache.compose(home).text == f"## SOUL.md\n\n{letter * 4}"
        os.ftruncate(fd, 2)
        assert cache.compose(home).text == "## SOUL.md\n\ngg"
    finally:
        os.close(fd)


def kernel_watches(cache: SoulCache) -> int:
    """The inotify watches the kernel holds for ``cache``'s queue."""
    watcher = cache._notifications.watcher
    assert watcher is not None
    info = Path(f"/proc/self/fdinfo/{watcher.fd}").read_text()
    return sum(line.startswith("inotify wd:") for line in info.splitlines())


def test_one_watch_a_home(tmp_path: Path, cache: SoulCache) -> None:
    # A directory's watch reports its entries' changes: plain homes need one
    # watch each, and their parents' watches are shared by all of them.
    homes = make_homes(tmp_path, 50)
    for home in homes:
        cache.compose(home)
    above = len(tmp_path.parts)  # "/" and every directory down to tmp_path, shared
    assert kernel_watches(cache) == 50 + above
    (homes[7] / "SOUL.md").write_text("written, with no watch of its own")
    assert cache.compose(homes[7]).text == "## SOUL.md\n\nwritten, with no watch of its own"


def test_a_hard_link_written_through_its_other_name(tmp_path: Path, home: Path, cache: SoulCache) -> None:
    shared = tmp_path / "shared-tools.md"
    shared.write_text("tools 1")
    os.link(shared, home / "TOOLS.md")
    (home / "SOUL.md").write_text("soul")
    assert cache.compose(home).text == "## SOUL.md\n\nsoul\n\n## TOOLS.md\n\ntools 1"
    with shared.open("r+") as handle:  # the home's directory sees nothing of this
        handle.write("tools 2")
    assert cache.compose(home).text == "## SOUL.md\n\nsoul\n\n## TOOLS.md\n\ntools 2"
    assert cache.stats.stale == 1


def test_a_linked_file_written_before_its_own_watch(
    tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A read finds TOOLS.md linked, and the cache watches it on its own; a
    # write through the other name between that read and that watch is in
    # the soul it caches, which is read again once the watch is made.
    shared = tmp_path / "shared-tools.md"
    shared.write_text("tools 1")
    os.link(shared, home / "TOOLS.md")
    assert _native.notifier is not None
    add_watch = _native.notifier.add_watch

    def late(fd: int, path: bytes, mask: int) -> int:
        if path.endswith(b"/TOOLS.md") and shared.read_text() == "tools 1":
            shared.write_text("tools 2")  # before the file's watch: the home's sees nothing
        return add_watch(fd, path, mask)

    monkeypatch.setattr(_native.notifier, "add_watch", late)
    with SoulCache(validate="notify") as cache:
        assert cache.compose(home).text == "## TOOLS.md\n\ntools 2"
        assert cache.compose(home).text == "## TOOLS.md\n\ntools 2"
        assert cache.stats.hits == 1
        shared.write_text("tools 3")
        assert cache.compose(home).text == "## TOOLS.md\n\ntools 3"


def test_symlink_target_outside_the_home(tmp_path: Path, home: Path, cache: SoulCache) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    target = shared / "TOOLS.md"
    target.write_text("tools v1")
    (home / "TOOLS.md").symlink_to(target)
    assert cache.compose(home).text == "## TOOLS.md\n\ntools v1"
    with target.open("a") as handle:
        handle.write(" and more")
    assert cache.compose(home).text == "## TOOLS.md\n\ntools v1 and more"
    (shared / "TOOLS.md.new").write_text("tools v2")
    os.replace(shared / "TOOLS.md.new", target)
    assert cache.compose(home).text == "## TOOLS.md\n\ntools v2"
    with target.open("a") as handle:  # the new file is watched too
        handle.write("!")
    assert cache.compose(home).text == "## TOOLS.md\n\ntools v2!"
    target.unlink()
    assert cache.compose(home).text == ""


def test_symlink_chain_through_a_linked_directory(tmp_path: Path, home: Path, cache: SoulCache) -> None:
    for version in ("v1", "v2"):
        (tmp_path / version).mkdir()
        (tmp_path / version / "USER.md").write_text(f"user {version}")
    (tmp_path / "current").symlink_to("v1")
    (home / "USER.md").symlink_to("../current/USER.md")
    assert cache.compose(home).text == "## USER.md\n\nuser v1"
    (tmp_path / "next").symlink_to("v2")
    os.replace(tmp_path / "next", tmp_path / "current")  # the link in the middle, retargeted
    assert cache.compose(home).text == "## USER.md\n\nuser v2"


def test_a_symlinked_directory_on_the_way_to_the_home(tmp_path: Path, cache: SoulCache) -> None:
    # The home's path passes through a link: the way the kernel takes is watched, not the text.
    (tmp_path / "real" / "home").mkdir(parents=True)
    (tmp_path / "real" / "home" / "SOUL.md").write_text("one")
    (tmp_path / "link").symlink_to("real")
    home = tmp_path / "link" / "home"
    assert cache.compose(home).text == "## SOUL.md\n\none"
    (tmp_path / "real").rename(tmp_path / "real-before")  # the link's target replaced
    (tmp_path / "real" / "home").mkdir(parents=True)
    (tmp_path / "real" / "home" / "SOUL.md").write_text("two")
    assert cache.compose(home).text == "## SOUL.md\n\ntwo"
    (tmp_path / "real" / "home" / "SOUL.md").write_text("three")  # the new one is watched
    assert cache.compose(home).text == "## SOUL.md\n\nthree"
    (tmp_path / "next").symlink_to("real-before")
    os.replace(tmp_path / "next", tmp_path / "link")  # the link retargeted
    assert cache.compose(home).text == "## SOUL.md\n\none"
    assert cache.stats.notified == 1


def test_a_home_that_is_a_symlink(tmp_path: Path, cache: SoulCache) -> None:
    for version in ("v1", "v2"):
        (tmp_path / version).mkdir()
        (tmp_path / version / "SOUL.md").write_text(f"soul {version}")
    home = tmp_path / "aster"
    home.symlink_to("v1")
    assert cache.compose(home).text == "## SOUL.md\n\nsoul v1"
    (tmp_path / "v1" / "SOUL.md").write_text("soul v1, edited")
    assert cache.compose(home).text == "## SOUL.md\n\nsoul v1, edited"
    (tmp_path / "next").symlink_to("v2")
    os.replace(tmp_path / "next", home)
    assert cache.compose(home).text == "## SOUL.md\n\nsoul v2"
    (tmp_path / "v1" / "SOUL.md").write_text("no longer this home's")
    (tmp_path / "v2" / "SOUL.md").write_text("soul v2, edited")
    assert cache.compose(home).text == "## SOUL.md\n\nsoul v2, edited"
    assert cache.stats.notified == 1


def test_a_link_whose_target_climbs_after_a_name(tmp_path: Path, home: Path, cache: SoulCache) -> None:
    # "sub/../shared/TOOLS.md": the kernel takes ".." from where "sub" really leads.
    (tmp_path / "elsewhere" / "deep").mkdir(parents=True)
    (tmp_path / "elsewhere" / "shared").mkdir()
    (tmp_path / "elsewhere" / "shared" / "TOOLS.md").write_text("tools elsewhere")
    (home / "sub").symlink_to(tmp_path / "elsewhere" / "deep")
    (home / "TOOLS.md").symlink_to("sub/../shared/TOOLS.md")
    assert cache.compose(home).text == "## TOOLS.md\n\ntools elsewhere"
    assert cache.stats.notified == 1
    (tmp_path / "elsewhere" / "shared" / "TOOLS.md").write_text("edited")
    assert cache.compose(home).text == "## TOOLS.md\n\nedited"


def test_home_renamed_away_and_another_renamed_in(
    tmp_path: Path, home: Path, write: Writer, cache: SoulCache
) -> None:
    write("SOUL.md", "first home")
    other = tmp_path / "other"
    other.mkdir()
    (other / "SOUL.md").write_text("second home")
    assert cache.compose(home).text == "## SOUL.md\n\nfirst home"
    home.rename(tmp_path / "away")
    assert cache.compose(home).text == ""
    other.rename(home)
    assert cache.compose(home).text == "## SOUL.md\n\nsecond home"
    (tmp_path / "away" / "SOUL.md").write_text("edited after it left")  # no longer this home
    assert cache.compose(home).text == "## SOUL.md\n\nsecond home"


def test_a_directory_above_the_home_replaced(tmp_path: Path, cache: SoulCache) -> None:
    for name in ("old", "new"):
        (tmp_path / name / "home").mkdir(parents=True)
        (tmp_path / name / "home" / "SOUL.md").write_text(f"{name} tree")
    (tmp_path / "old").rename(tmp_path / "live")
    home = tmp_path / "live" / "home"
    assert cache.compose(home).text == "## SOUL.md\n\nold tree"
    (tmp_path / "live").rename(tmp_path / "retired")
    (tmp_path / "new").rename(tmp_path / "live")
    assert cache.compose(home).text == "## SOUL.md\n\nnew tree"


def test_home_removed_and_recreated(home: Path, write: Writer, cache: SoulCache) -> None:
    write("SOUL.md", "before")
    assert cache.compose(home).text == "## SOUL.md\n\nbefore"
    (home / "SOUL.md").unlink()
    home.rmdir()
    assert cache.compose(home).text == ""
    home.mkdir()
    write("SOUL.md", "after")
    assert cache.compose(home).text == "## SOUL.md\n\nafter"


def test_edits_from_another_process(home: Path, write: Writer, cache: SoulCache) -> None:
    path = write("AGENTS.md", "mine")
    assert cache.compose(home).text == "## AGENTS.md\n\nmine"
    for index in range(5):
        code = f"open({str(path)!r}, 'w').write('theirs {index}')"
        subprocess.run([sys.executable, "-c", code], check=True)
        assert cache.compose(home).text == f"## AGENTS.md\n\ntheirs {index}"


@pytest.mark.slow
def test_readers_racing_a_writer_never_go_back(home: Path, write: Writer, cache: SoulCache) -> None:
    # A write that has returned must be seen by every compose that starts after it.
    path = write("MEMORY.md", "version 0")
    done = [0]  # the last version whose write has returned
    stop = threading.Event()
    failures: list[str] = []

    def writer() -> None:
        for version in range(1, 3001):
            if version % 2:
                path.write_text(f"version {version}")
            else:
                write("MEMORY.md.tmp", f"version {version}")
                os.replace(home / "MEMORY.md.tmp", path)
            done[0] = version
        stop.set()

    def reader() -> None:
        while not stop.is_set():
            floor = done[0]
            body = cache.compose(home).text.removeprefix("## MEMORY.md\n\n")
            if body == "":  # caught between a truncation and its write: a version still to come
                continue
            seen = int(body.removeprefix("version "))
            if seen < floor:
                failures.append(f"saw version {seen} after version {floor} was written")

    threads = [threading.Thread(target=writer), *(threading.Thread(target=reader) for _ in range(3))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    assert cache.compose(home).text == "## MEMORY.md\n\nversion 3000"


def test_relative_paths_follow_the_working_directory(
    tmp_path: Path, cache: SoulCache, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("a", "b"):
        (tmp_path / name / "home").mkdir(parents=True)
        (tmp_path / name / "home" / "SOUL.md").write_text(f"in {name}")
    monkeypatch.chdir(tmp_path / "a")
    assert cache.compose("home").text == "## SOUL.md\n\nin a"
    monkeypatch.chdir(tmp_path / "b")
    assert cache.compose("home").text == "## SOUL.md\n\nin b"
    (tmp_path / "b" / "home" / "SOUL.md").write_text("in b, edited")
    assert cache.compose("home").text == "## SOUL.md\n\nin b, edited"
    assert cache.stats.notified == 2
    # Remembered per working directory: back in a, the same words lead to a.
    monkeypatch.chdir(tmp_path / "a")
    hits = cache.stats.hits
    assert cache.compose("home").text == "## SOUL.md\n\nin a"
    assert cache.compose(Path("home")).text == "## SOUL.md\n\nin a"
    assert cache.stats.hits == hits + 2


def test_unchanged_homes_stay_hits_while_others_change(tmp_path: Path, cache: SoulCache) -> None:
    homes = make_homes(tmp_path, 20)
    first = [cache.compose(home) for home in homes]
    (homes[7] / "SOUL.md").write_text("soul 7, edited")
    again = [cache.compose(home) for home in homes]
    assert [a is b for a, b in zip(first, again, strict=True)] == [i != 7 for i in range(20)]
    assert cache.stats == CacheStats(hits=19, misses=20, stale=1, size=20, maxsize=1024, notified=20)


def test_queue_overflow_drops_every_entry(tmp_path: Path) -> None:
    # The queue keeps its size (fs.inotify.max_queued_events, read when it is
    # made): a small one, set for this test, filled from the watches of the
    # homes' ancestors too (/tmp's traffic, another worker's) and overflowed
    # before the homes were cached, and it was every other cache's queue too.
    cache = SoulCache(validate="notify")
    quiet, busy = tmp_path / "quiet", tmp_path / "busy"
    for home in (quiet, busy):
        home.mkdir()
        (home / "SOUL.md").write_text(home.name)
    (busy / "AGENTS.md").write_text("agents")
    kept = cache.compose(quiet)
    cache.compose(busy)
    limit = int(Path("/proc/sys/fs/inotify/max_queued_events").read_text())
    # Each touch queues an event on the home's watch; two names in turn, as
    # the kernel folds an event into the one before it when they are alike.
    for _ in range(limit // 2 + 10):
        os.utime(busy / "SOUL.md")
        os.utime(busy / "AGENTS.md")
    (busy / "SOUL.md").write_text("busy, at last")
    assert cache.compose(busy).text == "## AGENTS.md\n\nagents\n\n## SOUL.md\n\nbusy, at last"
    # The overflow made every entry stale: the quiet home was read again (and,
    # being equal, came back as the same object).
    assert cache.compose(quiet) is kept
    assert cache.stats.stale == 2
    cache.close()


def test_watch_exhaustion_moves_the_home_to_stat(
    home: Path, write: Writer, monkeypatch: pytest.MonkeyPatch
) -> None:
    write("SOUL.md", "soul")

    def exhausted(fd: int, path: bytes, mask: int) -> int:
        raise OSError(errno.ENOSPC, "No space left on device", path)

    assert _native.notifier is not None
    monkeypatch.setattr(_native.notifier, "add_watch", exhausted)
    with SoulCache() as auto:
        assert auto.compose(home).text == "## SOUL.md\n\nsoul"
        assert auto.stats.stat_checked == 1
        assert auto.stats.notified == 0
    with SoulCache(validate="notify") as notify, pytest.raises(NotificationError) as caught:
        notify.compose(home)
    assert (
        str(caught.value)
        == f"cannot notify for {str(home)!r}: no inotify watch left (see fs.inotify.max_user_watches)"
    )


@pytest.mark.parametrize("when", ["after the home's watch", "after the way's watches"])
def test_a_home_replaced_while_it_is_watched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, when: str
) -> None:
    # Between the kernel's watch calls and the read: the events come before
    # the cache files the watches, and must still keep the read from being
    # cached on the replaced home's watch.
    home = tmp_path / "aster"
    for name in ("aster", "other"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "SOUL.md").write_text(f"{name}'s soul")
    assert _native.notifier is not None
    add_watch = _native.notifier.add_watch
    replaced = False

    def racing(fd: int, path: bytes, mask: int) -> int:
        nonlocal replaced
        wd = add_watch(fd, path, mask)
        at = path == bytes(home) if when == "after the home's watch" else path == bytes(tmp_path)
        if at and not replaced:
            replaced = True
            home.rename(tmp_path / "away")
            (tmp_path / "other").rename(home)
        return wd

    monkeypatch.setattr(_native.notifier, "add_watch", racing)
    with SoulCache(validate="notify") as cache:
        assert cache.compose(home).text == "## SOUL.md\n\nother's soul"  # read after the replacement
        assert replaced
        (home / "SOUL.md").write_text("other's soul, edited")
        assert cache.compose(home).text == "## SOUL.md\n\nother's soul, edited"
        (home / "SOUL.md").write_text("edited again")  # watched now, and cached
        assert cache.compose(home).text == "## SOUL.md\n\nedited again"
        assert cache.stats.notified == 1


@pytest.mark.parametrize("symlinks", ["follow", "within"])
def test_a_symlink_loop_is_a_file_left_out_and_watched(
    home: Path, write: Writer, cache: SoulCache, symlinks: SymlinkPolicy
) -> None:
    # A loop is unreadable (ELOOP), as compose says, not a home the cache cannot watch.
    write("AGENTS.md", "Cite sources.")
    os.symlink("SOUL.md", home / "SOUL.md")
    os.symlink("USER.md", home / "IDENTITY.md")
    os.symlink("IDENTITY.md", home / "USER.md")
    assert cache.compose(home, symlinks=symlinks).text == "## AGENTS.md\n\nCite sources."
    assert cache.stats.notified == 1
    os.unlink(home / "USER.md")  # the two-link loop undone: IDENTITY.md now dangles
    write("USER.md", "Ada.")
    assert (
        cache.compose(home, symlinks=symlinks).text
        == "## AGENTS.md\n\nCite sources.\n\n## IDENTITY.md\n\nAda.\n\n## USER.md\n\nAda."
    )
    (home / "SOUL.md").unlink()
    write("SOUL.md", "Kind.")
    assert cache.compose(home, symlinks=symlinks).text == (
        "## AGENTS.md\n\nCite sources.\n\n## SOUL.md\n\nKind.\n\n## IDENTITY.md\n\nAda.\n\n## USER.md\n\nAda."
    )


def test_a_home_that_is_a_symlink_loop_composes_empty(tmp_path: Path, cache: SoulCache) -> None:
    home = tmp_path / "loop"
    os.symlink("loop", home)
    assert cache.compose(home).text == ""
    home.unlink()
    home.mkdir()
    (home / "SOUL.md").write_text("Kind.")
    assert cache.compose(home).text == "## SOUL.md\n\nKind."


def test_no_queue_to_be_had_says_why(home: Path, write: Writer, monkeypatch: pytest.MonkeyPatch) -> None:
    write("SOUL.md", "soul")

    def none_left() -> int:
        raise OSError(errno.EMFILE, "Too many open files")

    assert _native.notifier is not None
    monkeypatch.setattr(_native.notifier, "open_queue", none_left)
    with SoulCache() as auto:
        assert auto.compose(home).text == "## SOUL.md\n\nsoul"
        assert auto.stats.stat_checked == 1
    with SoulCache(validate="notify") as notify, pytest.raises(NotificationError) as caught:
        notify.compose(home)
    assert str(caught.value) == (
        f"cannot notify for {str(home)!r}: no inotify queue to be had: this user's"
        " fs.inotify.max_user_instances (128 by default; each notifying SoulCache holds one),"
        " or the process's open-file limit, is reached"
    )


def test_unreliable_filesystems_are_validated_by_stat(
    home: Path, write: Writer, monkeypatch: pytest.MonkeyPatch
) -> None:
    write("SOUL.md", "on a network share")
    assert _native.notifier is not None
    monkeypatch.setattr(_native.notifier, "filesystem_type", lambda path: 0x6969)
    with SoulCache() as auto:
        assert auto.compose(home).text == "## SOUL.md\n\non a network share"
        assert auto.stats == CacheStats(hits=0, misses=1, stale=0, size=1, maxsize=1024, stat_checked=1)
    with SoulCache(validate="notify") as notify, pytest.raises(NotificationError) as caught:
        notify.compose(home)
    assert str(caught.value) == (
        f"cannot notify for {str(home)!r}: {str(home)!r} is on NFS, whose changes inotify does not see"
    )


def test_a_link_into_procfs_is_validated_by_stat(home: Path) -> None:
    # procfs files change without a write, so without an event.
    (home / "USER.md").symlink_to("/proc/sys/kernel/ostype")
    with SoulCache() as auto:
        assert auto.compose(home).text == "## USER.md\n\nLinux"
        assert auto.stats.stat_checked == 1


def test_fork_gives_the_child_its_own_queue(home: Path, write: Writer, cache: SoulCache) -> None:
    path = write("SOUL.md", "parent")
    assert cache.compose(home).text == "## SOUL.md\n\nparent"
    pid = fork()
    if pid == 0:  # the child: its cache is empty and has a queue of its own
        code = 1
        try:
            path.write_text("child")
            ok = cache.compose(home).text == "## SOUL.md\n\nchild" and cache.stats.size == 1
            code = 0 if ok else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    # The child's write queued an event in the parent's queue, and the child did not take it.
    assert cache.compose(home).text == "## SOUL.md\n\nchild"


def make_and_drop(home: Path, count: int) -> None:
    for _ in range(count):
        SoulCache(validate="notify").compose(home)
    gc.collect()


@pytest.mark.reader_independent  # the watcher's descriptors, whichever reader composes
def test_descriptors_are_released(home: Path, write: Writer) -> None:
    write("SOUL.md", "soul")
    gc.collect()  # what earlier tests left to the collector is not this test's
    before = open_fds()
    # A few: each close costs the kernel 5-30 ms here, to let go of the
    # watches. More than the 128 queues a user may have: the slow test below.
    make_and_drop(home, 10)
    assert open_fds() == before
    with SoulCache(validate="notify") as cache:
        cache.compose(home)
        assert open_fds() == before + 1
    assert open_fds() == before
    cache = SoulCache(validate="notify")
    cache.compose(home)
    cache.clear()
    assert open_fds() == before
    cache.compose(home)
    cache.close()
    cache.close()
    assert open_fds() == before
    with pytest.raises(ValueError, match=r"^compose on a closed SoulCache$"):
        cache.compose(home)


@pytest.mark.slow
def test_thousands_of_caches_leak_nothing(home: Path, write: Writer) -> None:
    write("SOUL.md", "soul")
    before = open_fds()
    make_and_drop(home, 2000)
    assert open_fds() == before


def test_evicted_homes_stop_being_watched(tmp_path: Path) -> None:
    cache = SoulCache(maxsize=2, validate="notify")
    for home in make_homes(tmp_path, 10):
        cache.compose(home)
    assert cache._notifications.watcher is not None
    assert cache._notifications.watcher.homes == 2
    cache.close()


def test_compose_many_and_acompose_share_the_cache(tmp_path: Path, cache: SoulCache) -> None:
    homes = make_homes(tmp_path, 70)
    first = compose_many(homes, workers=2, cache=cache)
    assert [soul.text for soul in first] == [f"## SOUL.md\n\nsoul {i}" for i in range(70)]
    (homes[3] / "SOUL.md").write_text("soul 3, edited")
    again = compose_many(homes, workers=2, cache=cache)
    assert [a is b for a, b in zip(first, again, strict=True)] == [i != 3 for i in range(70)]
    assert again[3].text == "## SOUL.md\n\nsoul 3, edited"
    assert asyncio.run(acompose(homes[5], cache=cache)) is first[5]
    (homes[5] / "SOUL.md").write_text("soul 5, edited")
    assert asyncio.run(acompose(homes[5], cache=cache)).text == "## SOUL.md\n\nsoul 5, edited"
    assert cache.stats == CacheStats(hits=70, misses=70, stale=2, size=70, maxsize=1024, notified=70)


@pytest.mark.reader_independent
def test_notify_without_inotify_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_native, "notifier", None)
    with pytest.raises(NotificationError) as caught:
        SoulCache(validate="notify")
    assert str(caught.value) == f"validate='notify' needs inotify, which {sys.platform} does not have"
    assert SoulCache().validate == "auto"


def test_its_descriptor_is_readable_exactly_while_a_change_waits(home: Path, write: Writer) -> None:
    def readable(fd: int) -> bool:
        return bool(select.select([fd], [], [], 0)[0])

    with SoulCache() as cache, SoulCache(validate="stat") as stat:
        assert cache.fileno() == stat.fileno() == -1  # no queue yet; and never one, by stat
        write("SOUL.md", "calm")
        first = cache.compose(home)
        fd = cache.fileno()
        assert fd >= 0
        assert not readable(fd)
        write("SOUL.md", "curious")
        assert readable(fd)  # queued before the write returned
        assert cache.compose(home).text == "## SOUL.md\n\ncurious" != first.text
        assert not readable(fd)  # the compose took the change in
        stat.compose(home)
        assert stat.fileno() == -1
        cache.clear()
        assert cache.fileno() == -1
