"""The ``toolnexus-soul`` command line (also ``python -m toolnexus.agents``).

``compose DIR`` prints the soul; ``check DIR...`` prints a per-file table;
``batch DIR...`` composes many homes into JSON lines (``_commands``);
``memory DIR ...`` lists and changes a persona's memory entries
(``_memory``); ``mcp DIR`` serves a home over MCP (``_mcp``). It behaves
as a Unix tool: every byte of its output is written or it fails with one
line and a non-zero status (``_output``), it stops quietly when its reader
goes away or at Ctrl-C, names are shown with every byte kept and nothing
that could forge a line, usage errors come in argparse's style with the
command's usage (``_parser``), and the exit codes are those ``--help``
lists. It uses the library's public names only, as any host does;
argparse only, as the library has no runtime dependencies.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Final

from .. import __version__
from . import _commands, _mcp, _memory
from ._output import Output, WriteFailed, quiet_stdout, say, shown
from ._parser import EPILOG, Parsers, utf8_bytes

__all__ = ["EPILOG", "main", "utf8_bytes"]

EXIT_USAGE: Final = 2
EXIT_INTERRUPTED: Final = 130  # 128 + SIGINT: what a shell reports for a tool stopped by Ctrl-C
EXIT_PIPE: Final = 141  # 128 + SIGPIPE: what a shell reports for a tool whose reader went away

_COMMANDS: Final = {
    "compose": _commands.compose_one,
    "check": _commands.check,
    "batch": _commands.batch,
    "memory": _memory.run,
    "mcp": _mcp.run,
}


def _run(argv: Sequence[str]) -> int:
    parsers = Parsers()
    _memory.add_arguments(parsers.memory)
    _mcp.add_arguments(parsers.mcp)
    args = parsers.parse(argv)
    if args.version:
        Output.stdout().write(f"toolnexus-soul {__version__} ({_commands.reader_name()})\n".encode())
        return _commands.EXIT_OK
    return _COMMANDS[args.command](args)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    try:
        try:
            status = _run(sys.argv[1:] if argv is None else argv)
        except SystemExit as exc:  # argparse: --help (0), or a usage error (2)
            status = exc.code if isinstance(exc.code, int) else EXIT_USAGE
        except (BrokenPipeError, WriteFailed, KeyboardInterrupt):
            raise
        except OSError as exc:  # what the process lacks (descriptors, memory): no soul to give
            where = f"{shown(exc.filename)}: " if isinstance(exc.filename, (str, bytes)) else ""
            say(f"{where}{exc.strerror or exc}")
            return _commands.EXIT_PROBLEM
        # None: closed at start-up (a command's Output says so); closed: by the MCP SDK 1.x, done with it.
        if sys.stdout is not None and not sys.stdout.closed:
            sys.stdout.flush()  # what argparse printed (help, usage) is written, or fails, here
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        quiet_stdout()
        return EXIT_PIPE
    except WriteFailed as exc:
        quiet_stdout()
        say(str(exc))
        return _commands.EXIT_PROBLEM
    except OSError as exc:  # Python's own stdout failed at the flush (argparse's help, to a full disk)
        quiet_stdout()
        say(f"cannot write to standard output: {exc.strerror or exc}")
        return _commands.EXIT_PROBLEM
    return status
