"""What is not a readable regular file is not present (docs/format.md, section 1)."""

from __future__ import annotations

import errno
import os
import socket
import stat
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import Writer, unprivileged
from toolnexus.agents import Budget, FileReport, FileStatus, compose, compose_soul

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs procfs")


def report(home: Path, name: str) -> FileReport:
    (entry,) = [f for f in compose(home).files if f.name == name]
    return entry


def test_missing_directory(tmp_path: Path) -> None:
    missing = tmp_path / "nope"
    assert compose_soul(missing) == ("", [])
    soul = compose(missing)
    assert soul.files[0] == FileReport(
        "AGENTS.md", FileStatus.MISSING, errno=errno.ENOENT, error=os.strerror(errno.ENOENT)
    )
    assert {f.status for f in soul.files} == {FileStatus.MISSING}


def test_directory_that_is_a_file(tmp_path: Path) -> None:
    a_file = tmp_path / "plain"
    a_file.write_text("not a directory")
    assert compose_soul(a_file) == ("", [])
    assert compose(a_file).files[1] == FileReport(
        "SOUL.md", FileStatus.MISSING, errno=errno.ENOTDIR, error=os.strerror(errno.ENOTDIR)
    )


def test_entry_that_is_a_directory(home: Path, write: Writer) -> None:
    (home / "SOUL.md").mkdir()
    write("USER.md", "user")
    assert compose_soul(home) == ("## USER.md\n\nuser", ["USER.md"])
    assert report(home, "SOUL.md") == FileReport("SOUL.md", FileStatus.NOT_REGULAR, error="is a directory")


def test_fifo_is_skipped_without_blocking(home: Path, write: Writer) -> None:
    os.mkfifo(home / "SOUL.md")
    write("MEMORY.md", "memory")
    # A blocking open or read would hang here: nobody ever writes to the FIFO.
    assert compose_soul(home) == ("## MEMORY.md\n\nmemory", ["MEMORY.md"])
    assert report(home, "SOUL.md") == FileReport("SOUL.md", FileStatus.NOT_REGULAR, error="is a FIFO")


@pytest.fixture
def short_dir() -> Iterator[Path]:
    # AF_UNIX paths are limited to ~100 bytes; pytest's tmp_path can be longer.
    with tempfile.TemporaryDirectory(prefix="tns") as name:
        yield Path(name)


def test_socket_is_skipped(short_dir: Path) -> None:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server:
        server.bind(str(short_dir / "SOUL.md"))
        server.listen(1)
        (short_dir / "USER.md").write_text("user")
        assert compose_soul(short_dir) == ("## USER.md\n\nuser", ["USER.md"])
        # Opening a socket fails: ENXIO on Linux, EOPNOTSUPP on macOS.
        err = errno.ENXIO if sys.platform.startswith("linux") else errno.EOPNOTSUPP
        assert report(short_dir, "SOUL.md") == FileReport(
            "SOUL.md", FileStatus.NOT_REGULAR, errno=err, error="is a socket"
        )


@pytest.mark.parametrize("device", ["/dev/null", "/dev/zero"])
def test_device_is_skipped(home: Path, device: str) -> None:
    if not os.path.exists(device):
        pytest.skip(f"{device} is absent")
    (home / "TOOLS.md").symlink_to(device)
    assert compose_soul(home) == ("", [])
    assert report(home, "TOOLS.md") == FileReport(
        "TOOLS.md", FileStatus.NOT_REGULAR, error="is a character device", symlink=True
    )


@linux_only
def test_procfs_file_reporting_size_zero_is_read_whole(home: Path) -> None:
    # /proc/version has content but st_size 0: the reader must not trust it.
    source = Path("/proc/version")
    assert source.stat().st_size == 0
    (home / "IDENTITY.md").symlink_to(source)
    expected = source.read_bytes().decode().strip()
    assert compose_soul(home) == ("## IDENTITY.md\n\n" + expected, ["IDENTITY.md"])


@linux_only
def test_procfs_file_longer_than_a_page(home: Path) -> None:
    # /proc/self/maps of a Python process is many pages and is served in
    # page-sized reads; capping it at 5000 bytes must still give 5000 bytes.
    (home / "TOOLS.md").symlink_to("/proc/self/maps")
    soul = compose(home, max_file_bytes=5000)
    tools = soul.files[4]
    assert tools.status is FileStatus.PRESENT
    assert tools.size == 5001
    assert tools.truncated
    assert soul.text.endswith("\n[truncated: exceeds 5000 bytes bootstrap cap]")


def test_broken_symlink_is_missing(home: Path) -> None:
    (home / "SOUL.md").symlink_to(home / "does-not-exist")
    assert compose_soul(home) == ("", [])
    assert report(home, "SOUL.md") == FileReport(
        "SOUL.md", FileStatus.MISSING, errno=errno.ENOENT, error=os.strerror(errno.ENOENT), symlink=True
    )


def test_symlink_loop_is_unreadable(home: Path, write: Writer) -> None:
    (home / "SOUL.md").symlink_to("USER.md")
    (home / "USER.md").symlink_to("SOUL.md")
    write("AGENTS.md", "agents")
    assert compose_soul(home) == ("## AGENTS.md\n\nagents", ["AGENTS.md"])
    assert report(home, "USER.md") == FileReport(
        "USER.md", FileStatus.UNREADABLE, errno=errno.ELOOP, error=os.strerror(errno.ELOOP), symlink=True
    )


def test_regular_file_through_symlinked_directory(tmp_path: Path, write: Writer) -> None:
    write("SOUL.md", "soul")
    link = tmp_path / "link-to-home"
    link.symlink_to(tmp_path / "home", target_is_directory=True)
    assert compose_soul(link) == ("## SOUL.md\n\nsoul", ["SOUL.md"])


def test_directory_given_as_bytes_and_pathlike(home: Path, write: Writer) -> None:
    write("SOUL.md", "soul")
    expected = ("## SOUL.md\n\nsoul", ["SOUL.md"])
    assert compose_soul(str(home)) == expected
    assert compose_soul(os.fsencode(home)) == expected
    assert compose_soul(home) == expected


def test_non_utf8_directory_name(tmp_path: Path) -> None:
    odd = os.path.join(os.fsencode(tmp_path), b"caf\xe9")
    os.mkdir(odd)
    with open(os.path.join(odd, b"SOUL.md"), "wb") as handle:
        handle.write(b"soul")
    assert compose_soul(odd) == ("## SOUL.md\n\nsoul", ["SOUL.md"])
    assert compose_soul(os.fsdecode(odd)) == ("## SOUL.md\n\nsoul", ["SOUL.md"])


def _compose_unprivileged(home: Path) -> list[FileReport]:
    """compose(home).files in a forked child that can no longer read what root can."""
    files = unprivileged(lambda: compose(home).files)
    assert isinstance(files, tuple)
    return list(files)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_unreadable_file_reports_the_error() -> None:
    # mkdtemp, not tmp_path: pytest's base directory is closed to other users.
    home = Path(tempfile.mkdtemp(prefix="tns-perm-"))
    try:
        home.chmod(0o755)
        (home / "USER.md").write_text("user")
        (home / "USER.md").chmod(0o644)
        (home / "SOUL.md").write_text("secret")
        (home / "SOUL.md").chmod(0)
        files = _compose_unprivileged(home)
        assert files[1] == FileReport(
            "SOUL.md", FileStatus.UNREADABLE, errno=errno.EACCES, error=os.strerror(errno.EACCES)
        )
        assert files[3] == FileReport("USER.md", FileStatus.PRESENT, bytes_read=4, size_on_disk=4)
    finally:
        (home / "SOUL.md").chmod(stat.S_IRUSR | stat.S_IWUSR)
        for child in home.iterdir():
            child.unlink()
        home.rmdir()


@linux_only  # O_PATH: elsewhere the directory must be readable to be opened
def test_searchable_but_unlistable_directory() -> None:
    # Execute-only (0o111): names inside can be opened although the directory
    # cannot be listed; the reader opens the directory for search only.
    home = Path(tempfile.mkdtemp(prefix="tns-xonly-"))
    try:
        (home / "SOUL.md").write_text("soul")
        (home / "SOUL.md").chmod(0o644)
        home.chmod(0o111)
        files = _compose_unprivileged(home)
        assert files[1] == FileReport("SOUL.md", FileStatus.PRESENT, bytes_read=4, size_on_disk=4)
    finally:
        home.chmod(0o755)
        (home / "SOUL.md").unlink()
        home.rmdir()


@linux_only
def test_a_budget_reads_the_end_of_a_file_whose_size_lies(home: Path) -> None:
    # /proc/self/maps says 0 bytes and holds many pages: its end cannot be
    # found with pread at fstat's size, so it is read on, keeping the tail.
    (home / "MEMORY.md").symlink_to("/proc/self/maps")
    soul = compose(home, budget=Budget(total=300))
    memory = soul.files[6]
    assert memory.status is FileStatus.PRESENT
    assert memory.cut
    assert len(soul.text) <= 300
    assert soul.text.endswith("[vsyscall]")  # the last mapping of every Linux process


def test_errno_and_error_say_why_a_name_is_not_present(home: Path) -> None:
    (home / "SOUL.md").mkdir()
    os.mkfifo(home / "USER.md")
    (home / "TOOLS.md").symlink_to("TOOLS.md")
    (home / "MEMORY.md").symlink_to("elsewhere.md")
    (home / "AGENTS.md").write_text("present")
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(home / "IDENTITY.md"))
        files = compose(home).files
    assert [(r.name, r.status, r.errno, r.error) for r in files] == [
        ("AGENTS.md", FileStatus.PRESENT, None, None),
        ("SOUL.md", FileStatus.NOT_REGULAR, None, "is a directory"),
        ("IDENTITY.md", FileStatus.NOT_REGULAR, errno.ENXIO, "is a socket"),
        ("USER.md", FileStatus.NOT_REGULAR, None, "is a FIFO"),
        ("TOOLS.md", FileStatus.UNREADABLE, errno.ELOOP, os.strerror(errno.ELOOP)),
        ("HEARTBEAT.md", FileStatus.MISSING, errno.ENOENT, os.strerror(errno.ENOENT)),
        ("MEMORY.md", FileStatus.MISSING, errno.ENOENT, os.strerror(errno.ENOENT)),
    ]
