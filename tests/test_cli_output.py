"""The command line never exits 0 with part of its output: every byte is written, or it fails loudly.

Each test runs the command in a child process, on the reader under test,
with standard output where the trouble is: a pipe closed early under
``PYTHONUNBUFFERED``, a non-blocking pipe that fills up, ``/dev/full``.
"""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from toolnexus.agents import compose
from twins import ReaderName

LINUX = sys.platform.startswith("linux")
needs_dev_full = pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full here")
FULL = f"toolnexus-soul: cannot write to standard output: {os.strerror(errno.ENOSPC)}\n".encode()


def environment(reader: ReaderName | None, **extra: str) -> dict[str, str]:
    env = {
        k: v for k, v in os.environ.items() if k not in ("TOOLNEXUS_SOUL_NO_EXTENSIONS", "PYTHONUNBUFFERED")
    }
    if reader == "pure":
        env["TOOLNEXUS_SOUL_NO_EXTENSIONS"] = "1"
    return {**env, **extra}


def command(*args: str) -> list[str]:
    return [sys.executable, "-m", "toolnexus.agents", *args]


@pytest.fixture
def big(home: Path) -> Path:
    """A home whose soul (2 MB and a notice) is far more than a pipe holds."""
    (home / "MEMORY.md").write_bytes(b"m" * (3 * 1024 * 1024))
    return home


def test_unbuffered_output_into_a_closed_pipe_exits_141(reader: ReaderName, big: Path) -> None:
    # PYTHONUNBUFFERED makes Python's stdout one unbuffered write: a short
    # count that nothing checked, then exit 0 with 64 KB of 2 MB delivered.
    env = environment(reader, PYTHONUNBUFFERED="1")
    with subprocess.Popen(
        command("compose", str(big)), stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
    ) as child:
        assert child.stdout is not None
        assert child.stderr is not None
        assert child.stdout.read(10) == b"## MEMORY."
        child.stdout.close()  # as `| head -c 10` does
        assert (child.wait(timeout=60), child.stderr.read()) == (141, b"")


def drain_slowly(read_end: int) -> bytes:
    """Everything from a pipe, read a little late, so that its writer finds it full."""
    chunks = []
    time.sleep(0.3)
    while chunk := os.read(read_end, 1 << 16):
        chunks.append(chunk)
        time.sleep(0.001)
    return b"".join(chunks)


@pytest.mark.parametrize("unbuffered", ["", "1"])
def test_a_non_blocking_pipe_gets_every_byte(
    reader: ReaderName, big: Path, tmp_path: Path, unbuffered: str
) -> None:
    expected = compose(big).text.encode()
    for args in (["compose", str(big)], ["batch", str(big), "--no-text"], ["batch", str(big)]):
        read_end, write_end = os.pipe()
        os.set_blocking(write_end, False)  # as a parent that set O_NONBLOCK on a shared pipe leaves it
        env = environment(reader, PYTHONUNBUFFERED=unbuffered)
        with subprocess.Popen(command(*args), stdout=write_end, stderr=subprocess.PIPE, env=env) as child:
            os.close(write_end)
            got = drain_slowly(read_end)
            os.close(read_end)
            assert child.stderr is not None
            err = child.stderr.read()
            assert child.wait(timeout=60) == 0, err
        if args[0] == "compose":
            assert (len(got), got) == (len(expected), expected)
            assert err == b""
        else:
            (line,) = got.decode().splitlines()
            assert json.loads(line).get("text", expected.decode()) == expected.decode()
            assert err.startswith(b"1 homes, 1 files, 2.1 MB, ")


@needs_dev_full
@pytest.mark.parametrize(
    "args", [["compose"], ["compose", "--json"], ["check"], ["batch"], ["batch", "--no-text"]]
)
def test_a_full_disk_is_one_line_and_exit_1(reader: ReaderName, home: Path, args: list[str]) -> None:
    (home / "SOUL.md").write_text("soul " * 1000)
    with open("/dev/full", "wb") as full:
        done = subprocess.run(
            command(*args, str(home)),
            stdout=full,
            stderr=subprocess.PIPE,
            env=environment(reader),
            check=False,
        )
    assert (done.returncode, done.stderr) == (1, FULL)


@needs_dev_full
def test_a_full_jsonl_file_is_one_line_and_exit_1(reader: ReaderName, home: Path) -> None:
    (home / "SOUL.md").write_text("soul")
    done = subprocess.run(
        command("batch", str(home), "--jsonl", "/dev/full"),
        capture_output=True,
        env=environment(reader),
        check=False,
    )
    message = f"toolnexus-soul: cannot write to /dev/full: {os.strerror(errno.ENOSPC)}\n".encode()
    assert (done.returncode, done.stdout, done.stderr) == (1, b"", message)


@needs_dev_full
@pytest.mark.reader_independent
@pytest.mark.parametrize("args", [["--help"], ["--version"], ["check", "--help"]])
def test_help_and_version_to_a_full_disk(args: list[str]) -> None:
    with open("/dev/full", "wb") as full:
        done = subprocess.run(command(*args), stdout=full, stderr=subprocess.PIPE, check=False)
    assert (done.returncode, done.stderr) == (1, FULL)


@pytest.mark.reader_independent
def test_help_into_a_closed_pipe_exits_141() -> None:
    with subprocess.Popen(command("--help"), stdout=subprocess.PIPE, stderr=subprocess.PIPE) as child:
        assert child.stdout is not None
        assert child.stderr is not None
        child.stdout.close()
        assert (child.wait(timeout=60), child.stderr.read()) == (141, b"")


@pytest.mark.reader_independent
@pytest.mark.parametrize(
    "args", [["--help"], ["compose", "--help"], ["memory", ".", "add", "-h"], ["--version"]]
)
def test_help_to_a_closed_standard_output_is_exit_1(args: list[str]) -> None:
    # Descriptor 1 closed at start-up: argparse would print the help on
    # standard error instead and exit 0.
    done = subprocess.run(" ".join([*command(*args), ">&-"]), shell=True, capture_output=True, check=False)
    assert (done.returncode, done.stdout, done.stderr) == (
        1,
        b"",
        b"toolnexus-soul: cannot write to standard output: it is closed\n",
    )
