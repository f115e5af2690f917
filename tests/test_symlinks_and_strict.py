"""Symlink policies and strict mode (docs/format.md), on both readers."""

from __future__ import annotations

import asyncio
import errno
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest

from conftest import Writer, compose_files, unprivileged
from toolnexus.agents import (
    BootstrapFileError,
    FileReport,
    FileStatus,
    Soul,
    SoulCache,
    SymlinkPolicy,
    acompose,
    acompose_soul,
    compose,
    compose_many,
    compose_soul,
)
from twins import ReaderName

OUTSIDE = "outside secret"


@pytest.fixture
def layout(tmp_path: Path, home: Path, write: Writer) -> Path:
    """A home whose files reach in various ways, and a secret outside it.

    AGENTS.md  regular file
    SOUL.md    -> soul-v2.md            (plain name, same directory)
    USER.md    -> sub/user.md           (inside, in a subdirectory)
    TOOLS.md   -> ../outside.md         (escapes by ..)
    HEARTBEAT.md -> <abs>/outside.md    (absolute, outside)
    MEMORY.md  -> <abs>/home/memory.md  (absolute, but inside)
    """
    (tmp_path / "outside.md").write_text(OUTSIDE)
    (home / "sub").mkdir()
    write("AGENTS.md", "agents")
    write("soul-v2.md", "soul v2")
    write("user.md", "user", directory=home / "sub")
    write("memory.md", "memory")
    (home / "SOUL.md").symlink_to("soul-v2.md")
    (home / "USER.md").symlink_to("sub/user.md")
    (home / "TOOLS.md").symlink_to("../outside.md")
    (home / "HEARTBEAT.md").symlink_to(tmp_path / "outside.md")
    (home / "MEMORY.md").symlink_to(home / "memory.md")
    return home


def statuses(home: Path, symlinks: str) -> dict[str, FileStatus]:
    return {f.name: f.status for f in compose(home, symlinks=symlinks).files}  # type: ignore[arg-type]


def test_follow_reads_everything(layout: Path) -> None:
    soul = compose(layout)
    assert soul.found == ("AGENTS.md", "SOUL.md", "USER.md", "TOOLS.md", "HEARTBEAT.md", "MEMORY.md")
    assert soul.text == (
        "## AGENTS.md\n\nagents\n\n## SOUL.md\n\nsoul v2\n\n## USER.md\n\nuser\n\n"
        f"## TOOLS.md\n\n{OUTSIDE}\n\n## HEARTBEAT.md\n\n{OUTSIDE}\n\n## MEMORY.md\n\nmemory"
    )


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="openat2 is Linux's")
def test_within_keeps_only_what_resolves_beneath(layout: Path) -> None:
    soul = compose(layout, symlinks="within")
    assert soul.text == "## AGENTS.md\n\nagents\n\n## SOUL.md\n\nsoul v2\n\n## USER.md\n\nuser"
    assert OUTSIDE not in soul.text
    why = (
        "is a symlink that symlinks='within' refuses: an absolute one, or one that leads out of the directory"
    )
    assert soul.files[4] == FileReport("TOOLS.md", FileStatus.REFUSED, errno=errno.EXDEV, error=why)
    # RESOLVE_BENEATH refuses every absolute link, even one that points back
    # in (MEMORY.md): the message says so, not that it leads outside.
    assert soul.files[5] == FileReport("HEARTBEAT.md", FileStatus.REFUSED, errno=errno.EXDEV, error=why)
    assert soul.files[6] == FileReport("MEMORY.md", FileStatus.REFUSED, errno=errno.EXDEV, error=why)


@pytest.mark.parametrize("policy", ["follow", "within", "within-portable", "refuse"])
def test_the_reader_says_which_files_are_linked(
    reader: ReaderName, layout: Path, tmp_path: Path, policy: str
) -> None:
    # "linked": reached through a symlink, or with other hard links: a change
    # may come by another name (what a notified cache watches on its own).
    os.link(layout / "AGENTS.md", tmp_path / "agents-elsewhere.md")
    (layout / "IDENTITY.md").symlink_to("nowhere.md")  # dangling: missing, but linked
    names = [
        *("AGENTS.md", "SOUL.md", "IDENTITY.md", "USER.md"),
        *("TOOLS.md", "MEMORY.md", "soul-v2.md", "none.md"),
    ]
    _, _, reads = compose_files(reader, layout, names, 100, policy)
    links = {
        "follow": [True, True, True, True, True, True, False, False],
        "within": [True, True, True, True, True, True, False, False],
        "within-portable": [True, True, True, True, True, True, False, False],
        "refuse": [True, False, False, False, False, False, False, False],
    }[policy]
    assert [read.linked for read in reads] == links
    # "symlink": the name itself is one (the hard-linked AGENTS.md is not); refuse never looks.
    symlinks = [False] * 8 if policy == "refuse" else [False, *links[1:]]
    assert [read.symlink for read in reads] == symlinks
    assert reads[2].status == (FileStatus.REFUSED if policy == "refuse" else FileStatus.MISSING)
    assert reads[7] == (FileStatus.MISSING, errno.ENOENT, 0, 0, False, True, None, False, 0, 0, False, False)


def test_within_portable_fallback(reader: ReaderName, layout: Path) -> None:
    # The stand-in for kernels without openat2 admits one plain-name hop only.
    text, found, reads = compose_files(
        reader, layout, ["SOUL.md", "USER.md", "TOOLS.md"], 100, "within-portable"
    )
    assert (text, found) == ("## SOUL.md\n\nsoul v2", ("SOUL.md",))
    assert [(r.status, r.errno) for r in reads] == [
        (FileStatus.PRESENT, 0),
        (FileStatus.REFUSED, errno.EXDEV),
        (FileStatus.REFUSED, errno.EXDEV),
    ]


def test_within_portable_refuses_a_chain(reader: ReaderName, home: Path, write: Writer) -> None:
    write("real.md", "real")
    (home / "hop.md").symlink_to("real.md")
    (home / "SOUL.md").symlink_to("hop.md")
    _, _, (read,) = compose_files(reader, home, ["SOUL.md"], 100, "within-portable")
    assert (read.status, read.errno) == (FileStatus.REFUSED, errno.ELOOP)


def test_refuse_skips_every_symlink(layout: Path) -> None:
    soul = compose(layout, symlinks="refuse")
    assert soul.text == "## AGENTS.md\n\nagents"
    assert soul.files[1] == FileReport(
        "SOUL.md", FileStatus.REFUSED, errno=errno.ELOOP, error="is a symlink (symlinks='refuse')"
    )
    assert statuses(layout, "refuse") == {
        "AGENTS.md": FileStatus.PRESENT,
        "SOUL.md": FileStatus.REFUSED,
        "IDENTITY.md": FileStatus.MISSING,
        "USER.md": FileStatus.REFUSED,
        "TOOLS.md": FileStatus.REFUSED,
        "HEARTBEAT.md": FileStatus.REFUSED,
        "MEMORY.md": FileStatus.REFUSED,
    }


def test_refuse_still_reads_through_a_symlinked_directory(tmp_path: Path, write: Writer) -> None:
    write("SOUL.md", "soul")
    (tmp_path / "alias").symlink_to(tmp_path / "home")
    assert compose(tmp_path / "alias", symlinks="refuse").text == "## SOUL.md\n\nsoul"
    assert compose(tmp_path / "alias", symlinks="within").text == "## SOUL.md\n\nsoul"


def test_within_refuses_dev_zero(home: Path) -> None:
    (home / "SOUL.md").symlink_to("/dev/zero")
    assert statuses(home, "within")["SOUL.md"] is FileStatus.REFUSED
    assert statuses(home, "follow")["SOUL.md"] is FileStatus.NOT_REGULAR


# ---- strict ------------------------------------------------------------------


def test_strict_is_quiet_when_files_are_only_missing(home: Path, write: Writer) -> None:
    write("SOUL.md", "soul")
    assert compose(home, strict=True).text == "## SOUL.md\n\nsoul"


def test_strict_raises_for_a_directory(home: Path) -> None:
    (home / "USER.md").mkdir()
    with pytest.raises(BootstrapFileError) as caught:
        compose(home, strict=True)
    error = caught.value
    assert isinstance(error, OSError)
    assert error.filename == os.path.join(str(home), "USER.md")
    assert str(error) == f"{home}/USER.md: not a regular file: is a directory"
    assert error.errno is None
    assert error.report == FileReport("USER.md", FileStatus.NOT_REGULAR, error="is a directory")


def test_strict_raises_for_a_loop_with_errno(home: Path) -> None:
    (home / "SOUL.md").symlink_to("SOUL.md")
    with pytest.raises(BootstrapFileError) as caught:
        compose(home, strict=True)
    assert caught.value.errno == errno.ELOOP
    assert str(caught.value) == f"{home}/SOUL.md: unreadable: {os.strerror(errno.ELOOP)}"


def test_strict_raises_for_a_refused_symlink(layout: Path) -> None:
    with pytest.raises(BootstrapFileError) as caught:
        compose(layout, symlinks="refuse", strict=True)
    assert str(caught.value) == f"{layout}/SOUL.md: refused symlink: is a symlink (symlinks='refuse')"


# ---- strict mode and the home itself -------------------------------------------


def test_strict_names_a_home_that_does_not_exist(tmp_path: Path) -> None:
    missing = tmp_path / "missing"
    for dir in (missing, str(missing), os.fsencode(missing)):
        with pytest.raises(FileNotFoundError) as caught:
            compose(dir, strict=True)
        assert (caught.value.errno, caught.value.filename) == (errno.ENOENT, str(missing))
    with pytest.raises(FileNotFoundError) as caught:
        compose("", strict=True)
    assert (caught.value.errno, caught.value.filename) == (errno.ENOENT, "")
    assert compose(missing).text == ""  # without strict, the seeds' empty soul


def test_strict_names_a_home_that_is_a_file(tmp_path: Path) -> None:
    (tmp_path / "plain").write_text("not a persona")
    with pytest.raises(NotADirectoryError) as caught:
        compose(tmp_path / "plain", strict=True)
    assert (caught.value.errno, caught.value.filename) == (errno.ENOTDIR, str(tmp_path / "plain"))
    assert str(caught.value) == f"[Errno {errno.ENOTDIR}] Not a directory: '{tmp_path / 'plain'}'"


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_strict_names_a_home_it_cannot_search() -> None:
    # A home of root's, closed to others (0o700): nobody can open a file in it.
    home = Path(tempfile.mkdtemp(prefix="tns-closed-"))
    try:
        (home / "SOUL.md").write_text("soul")
        home.chmod(0o700)
        if os.geteuid() != 0:
            pytest.skip("needs root, to make a directory another user cannot search")
        with pytest.raises(PermissionError) as caught:
            unprivileged(lambda: compose(home, strict=True))
        assert (caught.value.errno, caught.value.filename) == (errno.EACCES, str(home))
        soul = unprivileged(lambda: compose(home))
        assert isinstance(soul, Soul)
        assert (soul.text, soul.found) == ("", ())
    finally:
        (home / "SOUL.md").unlink()
        home.rmdir()


def test_every_strict_entry_point_names_the_home(tmp_path: Path) -> None:
    missing = tmp_path / "missing"
    with pytest.raises(FileNotFoundError):
        compose_many([tmp_path, missing], strict=True)
    with SoulCache() as cache, pytest.raises(FileNotFoundError):
        cache.compose(missing, strict=True)
    with pytest.raises(FileNotFoundError):
        asyncio.run(acompose(missing, strict=True))
    assert compose(tmp_path, strict=True).text == ""  # an empty home is no error


def test_every_strict_entry_point_names_the_path_as_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "home" / "AGENTS.md").mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    with SoulCache() as cache:
        entry_points: list[Callable[[str], object]] = [
            lambda path: compose(path, strict=True),
            lambda path: cache.compose(path, strict=True),
            lambda path: compose_many([path], strict=True, cache=cache),
            lambda path: asyncio.run(acompose(path, strict=True, cache=cache)),
        ]
        for call in entry_points * 2:  # the second time from the cache
            with pytest.raises(FileNotFoundError) as missing:
                call("missing")
            assert missing.value.filename == "missing"
            with pytest.raises(BootstrapFileError) as unusable:
                call("home")
            assert unusable.value.filename == os.path.join("home", "AGENTS.md")


def test_a_home_that_cannot_be_opened_otherwise_is_the_systems_error(tmp_path: Path) -> None:
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    with pytest.raises(OSError, match=os.strerror(errno.ELOOP)) as caught:
        compose(loop, strict=True)
    assert (type(caught.value), caught.value.errno, caught.value.filename) == (
        OSError,
        errno.ELOOP,
        str(loop),
    )
    soul = compose(loop)
    assert (soul.text, [(report.status.value, report.errno) for report in soul.files]) == (
        "",
        [("unreadable", errno.ELOOP)] * 7,
    )


def test_the_seeds_function_takes_the_policy_and_strict_too(layout: Path) -> None:
    # A host that keeps compose_soul can refuse IDENTITY.md -> /etc/passwd and its kind.
    assert compose_soul(layout) == (compose(layout).text, list(compose(layout).found))
    assert OUTSIDE in compose_soul(layout)[0]
    policies: tuple[SymlinkPolicy, ...] = ("within", "refuse")
    for policy in policies:
        soul, found = compose_soul(layout, symlinks=policy)
        reported = compose(layout, symlinks=policy)
        assert (soul, found) == (reported.text, list(reported.found))
        assert OUTSIDE not in soul
    with pytest.raises(BootstrapFileError) as raised:
        compose_soul(layout, symlinks="within", strict=True)
    assert raised.value.report.status is FileStatus.REFUSED


def test_the_async_seeds_function_takes_them_too(layout: Path) -> None:
    async def both() -> tuple[str, list[str]]:
        return await acompose_soul(layout, symlinks="within")

    assert asyncio.run(both()) == compose_soul(layout, symlinks="within")
