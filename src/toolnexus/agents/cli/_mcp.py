"""``toolnexus-soul mcp DIR``: one persona home served over the Model Context Protocol, on stdio.

Built on the official MCP SDK (``pip install 'toolnexus-soul[mcp]'``),
either generation (1.x, 2.x), with its low-level server (``_mcp_sdk``), so
that what a host sees is exactly what the library gives (``_mcp_home``):

- **tools**: the memory tool of each ``--file`` (``MEMORY.md`` when none
  is given), with ``MemoryTool.definition``'s name, description and schema;
  a call is ``MemoryTool.call``: its message is the result's text, the whole
  answer its structured content, and a refusal a result with ``isError``;
  the server lives on;
- **a prompt**, ``soul``: the soul as composed at that moment, with an
  optional ``budget`` (characters; ``--budget`` when not given);
- **resources**: the soul (``soul://soul``), and each of its files present
  (``soul://file/NAME``, also as the template ``soul://file/{name}``, whose
  names complete), live: a client that subscribes (or listens, on
  2026-07-28) is told of every change (``_mcp_live``).

Every read composes afresh. Errors a client causes are MCP errors, never a
traceback; the command itself ends as every command does (one line, status
1, 130 at Ctrl-C, 141 when its reader goes away).
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import logging
import os
import signal
import sys
from typing import Final

from .. import MemoryToolError, __version__
from ._commands import said
from ._mcp_home import Home
from ._output import from_bytes_not_utf8, quiet_stdout, say, shown
from ._parser import usage_error

__all__ = ["EXIT_NO_SDK", "add_arguments", "run"]

EXIT_NO_SDK: Final = 1
_EXIT_INTERRUPTED: Final = 130
_EXIT_PIPE: Final = 141
_INSTALL: Final = "the mcp command needs the MCP SDK: pip install 'toolnexus-soul[mcp]'"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments of ``mcp``: DIR, the memory files served and their limit, a budget, the symlinks."""
    parser.add_argument("dir", metavar="DIR", help="a persona's directory: its home, served over stdio")
    parser.add_argument(
        "--file",
        action="append",
        metavar="NAME",
        help="a memory file of DIR to serve as a tool (default: MEMORY.md; the option may be given again)",
    )
    parser.add_argument(
        "--limit",
        type=int,
        metavar="N",
        help="the most characters each memory file may hold (default: 2,200; 1,375 for USER.md)",
    )
    parser.add_argument(
        "--budget", type=int, metavar="N", help="fit the soul to N characters, unless the prompt says"
    )
    parser.add_argument(
        "--symlinks",
        choices=("follow", "within", "refuse"),
        default="follow",
        help="which symlinks a bootstrap file may be reached through (default: %(default)s)",
    )


def run(args: argparse.Namespace) -> int:
    """Serve DIR until the client closes stdin; 1 without the SDK, or when DIR cannot be served."""
    for option in ("--budget", "--limit"):
        value = getattr(args, option[2:])
        if value is not None and value < 1:
            usage_error(args, f"argument {option}: must be 1 or more, not {value}")
    files = args.file or ["MEMORY.md"]
    for name in files:
        if from_bytes_not_utf8(name):
            usage_error(args, f"argument --file: must be UTF-8 text, not {shown(name)}")
    try:
        home = Home(args.dir, files, args.limit, args.budget, args.symlinks)
    except ValueError as exc:  # a name, checked before DIR is looked at
        usage_error(args, f"argument --file: {exc}")
    except OSError as exc:
        say(f"{shown(args.dir)}: {said(exc)}")
        return 1
    except MemoryToolError as exc:  # refused on a system where the memory laws are untested
        say(f"{shown(args.dir)}: {exc.message}")
        return 1
    try:
        return _serve(home)
    finally:
        home.close()


def _serve(home: Home) -> int:
    """Serve ``home`` on stdio with the SDK; the exit status."""
    for stream, what in ((sys.stdin, "read standard input"), (sys.stdout, "write to standard output")):
        if stream is None:  # closed before the command started (<&-, >&-)
            say(f"cannot {what}: {os.strerror(errno.EBADF)}")
            return 1
    import asyncio  # noqa: PLC0415 - only the server runs a loop: other commands start without it

    try:
        import anyio  # noqa: PLC0415 - the SDK is an extra: looked for only when it is asked for
        from mcp.server.stdio import stdio_server  # noqa: PLC0415

        from ._mcp_sdk import server  # noqa: PLC0415
    except ModuleNotFoundError as exc:
        if (exc.name or "").partition(".")[0] not in ("mcp", "mcp_types", "anyio"):
            raise
        say(_INSTALL)
        return EXIT_NO_SDK
    except ImportError as exc:  # installed, but broken
        say(f"the MCP SDK could not be imported: {exc}")
        return EXIT_NO_SDK
    # The SDK logs what it refuses (a request it cannot validate, a client gone mid-answer),
    # 1.x through the root logger: a server on stdio says nothing on standard error but the
    # one line of its end. The process is the command's: its logging is the command's to set.
    logging.getLogger().addHandler(logging.NullHandler())
    served, _ = server(home, __version__)
    # Ctrl-C ends the server at once: the stdin reader is a thread that no
    # cancellation reaches, and the memory tool's writes are safe to stop.
    signal.signal(signal.SIGINT, _interrupted)

    async def serve() -> None:
        # A signal may land on any thread, and the loop waits in its selector: only the loop's
        # own handler, which writes to the loop's wake-up descriptor, is sure to wake it.
        with contextlib.suppress(NotImplementedError):  # Windows: the plain handler above
            asyncio.get_running_loop().add_signal_handler(signal.SIGINT, _interrupted, signal.SIGINT, None)
        async with stdio_server() as (read, write):
            await served.run(read, write, served.create_initialization_options())

    try:
        st = os.fstat(sys.stdout.fileno())
        wire: tuple[int, int] | None = (st.st_dev, st.st_ino)
    except (AttributeError, ValueError, OSError):  # a stream without a descriptor
        wire = None
    try:
        anyio.run(serve)
    except BaseException as exc:  # each kind is told in one line, or is a status
        status = _ended(exc)
        if wire is not None:
            _quiet_copies(wire)
        return status
    return 0


def _quiet_copies(wire: tuple[int, int]) -> None:
    """Point every descriptor on standard output's file (a gone reader's pipe, a full disk) at /dev/null.

    The SDK serves from a copy of standard output's descriptor, whose last
    flush, when the interpreter ends, would fail as the server's writes did
    and say so on standard error, after the one line that ended it.
    """
    try:
        descriptors = [int(name) for name in os.listdir("/proc/self/fd")]
    except OSError:  # no /proc: the descriptors a process usually has
        descriptors = list(range(256))
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        for fd in descriptors:
            try:
                st = os.fstat(fd)
            except OSError:
                continue
            if fd != devnull and (st.st_dev, st.st_ino) == wire:
                os.dup2(devnull, fd)
    finally:
        os.close(devnull)


def _interrupted(signum: int, frame: object) -> None:
    with contextlib.suppress(Exception):
        sys.stdout.flush()
    os._exit(_EXIT_INTERRUPTED)


def _ended(exc: BaseException) -> int:
    """The status of a server that stopped on ``exc`` (an exception group, from the SDK's tasks)."""
    # An exception group (the built-in one, or 3.10's backport): its first.
    while inner := getattr(exc, "exceptions", None):
        exc = inner[0]
    if isinstance(exc, KeyboardInterrupt):
        return _EXIT_INTERRUPTED
    if isinstance(exc, BrokenPipeError) or (isinstance(exc, OSError) and exc.errno == errno.EPIPE):
        quiet_stdout()
        return _EXIT_PIPE
    quiet_stdout()
    if isinstance(exc, OSError):
        say(f"cannot serve on standard input and output: {exc.strerror or exc}")
    else:
        say(f"the MCP server stopped: {type(exc).__name__}: {exc}")
    return 1
