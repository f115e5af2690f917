"""The floors the readers are measured against.

- ``SyscallFloor``: ``floor.c`` (open the directory, then per name openat,
  fstat, one bounded read into a reused buffer, close), compiled here with
  the system C compiler into a shared library and called through ctypes, so
  it runs in the same process and rounds as the readers.
- ``TranscodeFloor``: ``transcode_floor.c``, the same syscalls plus one
  validated transcode of each capped body into a reused buffer of the
  text's width, with the compiled reader's decoder: the floor for large
  homes, which no reader returning ``str`` can beat.
- ``DecodeFloor``: the same bounded reads plus CPython's own UTF-8 decoder
  on each capped body, and nothing else: the floor for large files.
- ``decode_all``: only the decoding, of bodies already in memory; added to
  the syscall floor it is what no reader that returns ``str`` can beat.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
import sysconfig
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
HEADERS = HERE.parent / "src" / "toolnexus" / "agents" / "_native" / "include"
NAMES = ("AGENTS.md", "SOUL.md", "IDENTITY.md", "USER.md", "TOOLS.md", "HEARTBEAT.md", "MEMORY.md")
FILE_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY
DIR_FLAGS = getattr(os, "O_PATH", os.O_RDONLY) | os.O_DIRECTORY | os.O_CLOEXEC


def build_floor_library(name: str = "floor") -> Path:
    """Compile ``name``.c (once per change to it or the decoder) into benchmarks/.floor/."""
    out_dir = HERE / ".floor"
    out_dir.mkdir(exist_ok=True)
    source = HERE / f"{name}.c"
    library = out_dir / f"lib{name}.so"
    newest = max(path.stat().st_mtime_ns for path in (source, HERE / "floor.c", HEADERS / "capread_utf8.h"))
    if library.exists() and library.stat().st_mtime_ns >= newest:
        return library
    compiler = os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc"
    command = [*compiler.split(), "-O2", "-shared", "-fPIC", f"-I{HEADERS}", "-o", str(library), str(source)]
    if shutil.which(command[0]) is None:
        raise RuntimeError(f"no C compiler ({command[0]}) to build the syscall floor")
    subprocess.run(command, check=True)
    return library


class SyscallFloor:
    """``floor_pass`` over a fixed list of directories, ready to be timed."""

    _library = "floor"

    def __init__(self, dirs: list[str], cap: int) -> None:
        self._lib = ctypes.CDLL(str(build_floor_library(self._library)))
        self._dirs = (ctypes.c_char_p * len(dirs))(*(os.fsencode(d) for d in dirs))
        self._count = len(dirs)
        self._buffer = ctypes.create_string_buffer(cap + 1)
        self._cap = cap
        self._pass = self._lib.floor_pass
        self._pass.restype = ctypes.c_longlong
        self._pass.argtypes = [
            ctypes.POINTER(ctypes.c_char_p),
            ctypes.c_int,
            ctypes.c_char_p,
            ctypes.c_longlong,
        ]

    def __call__(self) -> int:
        """One pass over every directory; returns the bytes read."""
        return int(self._pass(self._dirs, self._count, self._buffer, self._cap))


class TranscodeFloor(SyscallFloor):
    """``transcode_pass`` over a fixed list of directories, ready to be timed."""

    _library = "transcode_floor"

    def __init__(self, dirs: list[str], cap: int) -> None:
        super().__init__(dirs, cap)
        self._lib.transcode_init()
        self._out = ctypes.create_string_buffer(4 * (cap + 16))
        self._transcode = self._lib.transcode_pass
        self._transcode.restype = ctypes.c_longlong
        self._transcode.argtypes = [*self._pass.argtypes, ctypes.c_void_p]

    def __call__(self) -> int:
        """One pass over every directory; returns the characters written."""
        chars = int(self._transcode(self._dirs, self._count, self._buffer, self._cap, self._out))
        if chars < 0:
            raise ValueError("the transcode floor met text that is not UTF-8")
        return chars


class DecodeFloor:
    """Bounded reads into one reused buffer plus ``utf-8`` decoding, per file."""

    def __init__(self, cap: int) -> None:
        self._buffer = bytearray(cap + 1)
        self._cap = cap

    def __call__(self, directory: str) -> int:
        chars = 0
        dirfd = os.open(directory, DIR_FLAGS)
        try:
            with memoryview(self._buffer) as view:
                for name in NAMES:
                    try:
                        fd = os.open(name, FILE_FLAGS, dir_fd=dirfd)
                    except OSError:
                        continue
                    try:
                        os.fstat(fd)
                        got = os.preadv(fd, [view], 0)
                        chars += len(str(view[: min(got, self._cap)], "utf-8", "replace"))
                    finally:
                        os.close(fd)
        finally:
            os.close(dirfd)
        return chars


def capped_bodies(dirs: list[str], cap: int) -> list[bytes]:
    """Every bootstrap file's first ``cap`` bytes, read once, kept in memory."""
    bodies = []
    for directory in dirs:
        for name in NAMES:
            try:
                with open(os.path.join(directory, name), "rb") as handle:
                    bodies.append(handle.read(cap))
            except OSError:
                continue
    return bodies


def decode_all(bodies: list[bytes]) -> float:
    """Microseconds to decode every body as the readers do."""
    start = time.perf_counter_ns()
    for body in bodies:
        body.decode("utf-8", "replace")
    return (time.perf_counter_ns() - start) / 1000
