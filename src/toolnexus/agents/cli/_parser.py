"""The command line's arguments: one parser per command, usage errors in argparse's style.

Every usage error (status 2) is told in the usage of the command it
concerns, before any DIR is looked at. Option values are checked by the
library itself (``compose_many([], ...)`` checks and composes nothing), so
that the command line and the API refuse the same values in the same words.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import textwrap
from collections.abc import Sequence
from typing import TYPE_CHECKING, Final, NoReturn

from .. import MAX_BOOTSTRAP_FILE_BYTES, Budget, compose_many
from ._output import Output, from_bytes_not_utf8, shown

if TYPE_CHECKING:
    from _typeshed import SupportsWrite

__all__ = [
    "EXIT_STATUSES",
    "MCP_EPILOG",
    "MEMORY_EXIT_STATUSES",
    "MEMORY_STATUSES",
    "STATUSES",
    "Parsers",
    "budget_of",
    "usage_error",
    "utf8_bytes",
]

# The exit statuses, in the words of docs/reference/command-line.md (a test holds them to it).
STATUSES: Final = (
    ("0", "done (a batch whose --from-file list is empty: nothing composed, nothing written, not even OUT)"),
    (
        "1",
        "a DIR does not exist, is not a directory, cannot be searched or cannot be opened; a bootstrap file"
        " exists but cannot be used (check, batch, any --strict); check --budget would cut a file; the"
        " process ran out of file descriptors or memory; memory could not make its change (the text cannot"
        " be an entry, no entry or several hold OLD, the memory is full, the write is refused or fails), or"
        " made it but could not sync the directory (the message says it stands); memory or mcp is refused"
        " where the memory tool's laws are untested; or the output could not be written (standard output"
        " closed as a descriptor, >&-, included)",
    ),
    ("2", "usage: bad options or arguments, or a list or output file that cannot be opened"),
    ("130", "interrupted (Ctrl-C): 128 + SIGINT, with no traceback"),
    (
        "141",
        "the reader of standard output went away before all was written (128 + SIGPIPE, as a shell reports)",
    ),
)
MEMORY_STATUSES: Final = (
    ("0", "done"),
    (
        "1",
        "DIR does not exist or is not a directory; memory could not make its change (the text cannot be an"
        " entry, no entry or several hold OLD, the memory is full, the write is refused or fails), or made"
        " it but could not sync the directory (the message says it stands); the tool is refused where its"
        " laws are untested; or the output could not be written (standard output closed as a descriptor,"
        " >&-, included)",
    ),
    ("2", "usage: bad options or arguments, a TEXT, OLD, NEW or --file that is not UTF-8"),
    STATUSES[3],
    STATUSES[4],
)


def _table(statuses: tuple[tuple[str, str], ...]) -> str:
    """Exit statuses as a help text lists them: the code, then its words wrapped under each other."""
    lines = ["exit status:"]
    for code, words in statuses:
        wrapped = textwrap.wrap(words, 68)
        lines.append(f"  {code:<4} {wrapped[0]}")
        lines.extend(f"       {line}" for line in wrapped[1:])
    return "\n".join(lines) + "\n"


EXIT_STATUSES: Final = _table(STATUSES)
MEMORY_EXIT_STATUSES: Final = _table(MEMORY_STATUSES)
# An installed command has no docs/ beside it: say where they are, and what it has.
_WHERE: Final = """\
The format and every option are described in the project's documentation
(docs/ in its source distribution); python -m pydoc toolnexus.agents shows
the library's own.
"""
_NAMES: Final = f"""\
Names are shown with every byte kept: in text output a byte outside valid
UTF-8, and a control character, shows as \\xNN (or \\uNNNN), and a backslash
as \\\\; in JSON, "dir" holds that text and "dir_b64" the exact bytes.
{_WHERE}"""
EPILOG: Final = f"""\
symlink policies (--symlinks):
  follow   follow symlinks anywhere (the default; for a host's own files)
  within   admit a bootstrap file only if it resolves inside DIR; what a
           host that serves persona files written by its users should use
  refuse   skip a bootstrap file whose own name is a symlink

budgets (--budget, --per-file):
  the soul is fitted to N characters (or UTF-8 bytes, with --count bytes),
  headings and markers included; each file is shortened fairly, keeping its
  start and end around one line that names it and says how much was left
  out. Files are read only as far as the budget can keep.

{EXIT_STATUSES}
{_NAMES}"""
MEMORY_EPILOG: Final = f"""\
The memory file stays plain markdown: an entry is a "- " line and the
indented lines under it; everything else in the file is kept byte for byte.

{MEMORY_EXIT_STATUSES}
Names and entries are shown with every byte kept: a byte outside valid
UTF-8 shows as U+FFFD in an entry and as \\xNN in a name, a control
character as \\xNN (or \\uNNNN), and a backslash as \\\\.
{_WHERE}"""


MCP_EPILOG: Final = """\
Serves the memory tool of each --file, the soul as the prompt "soul" (with
an optional budget, in characters), and the soul and each of its files
present as resources (soul://soul, soul://file/NAME, and the template
soul://file/{name}), until the client closes standard input. The soul is
the bootstrap files, then each --file that is not one of them. Resources
are live: a client that subscribes is told of every change, whoever made
it. pip install 'toolnexus-soul[mcp]' installs the SDK (mcp 1.x or 2.x).

exit status:
  0    the client closed the connection
  1    the MCP SDK is not installed; DIR cannot be served; standard input
       or output cannot be used (closed, a full disk)
  2    usage: bad options or arguments
  130  interrupted (Ctrl-C)
  141  the reader of standard output went away (128 + SIGPIPE)
"""


def utf8_bytes(text: str) -> int:
    """A ``Budget.count`` in UTF-8 bytes (``--count bytes``)."""
    return len(text.encode("utf-8"))


def _whole_number(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None


def _positive(text: str) -> int:
    value = _whole_number(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, not {value}")
    return value


def _names(text: str) -> list[str]:
    """The value of --files: names separated by commas (the option may be given again)."""
    return text.split(",")


def _add_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--max-file-bytes",
        type=_whole_number,
        default=MAX_BOOTSTRAP_FILE_BYTES,
        metavar="N",
        help="the most bytes of one file that go into the soul (default: %(default)s, 2 MB)",
    )
    parser.add_argument(
        "--symlinks",
        choices=("follow", "within", "refuse"),
        default="follow",
        help="which symlinks a bootstrap file may be reached through (default: %(default)s; "
        "see below, and use 'within' for files written by users)",
    )
    parser.add_argument(
        "--files",
        type=_names,
        action="append",
        metavar="NAME,...",
        help="compose these files, in this order, instead of the seven bootstrap files "
        "(names separated by commas; the option may be given again)",
    )
    parser.add_argument(
        "--budget", type=_positive, metavar="N", help="fit the soul to N units, headings and markers included"
    )
    parser.add_argument(
        "--per-file", type=_positive, metavar="N", help="keep at most N units of each file's body"
    )
    parser.add_argument(
        "--keep",
        choices=("head+tail", "head"),
        default="head+tail",
        help="what a cut file keeps: its start and its end (default), or its start",
    )
    parser.add_argument(
        "--count",
        choices=("chars", "bytes"),
        default="chars",
        help="the unit of --budget and --per-file: characters (default) or UTF-8 bytes",
    )


def budget_of(args: argparse.Namespace) -> Budget | None:
    """The ``Budget`` the options ask for, or None."""
    if args.budget is None and args.per_file is None:
        return None
    count = None if args.count == "chars" else utf8_bytes
    return Budget(total=args.budget, per_file=args.per_file, keep=args.keep, count=count)


class _ArgumentParser(argparse.ArgumentParser):
    """argparse, whose help goes out through ``Output``: argparse itself ignores a failed write."""

    def _print_message(self, message: str, file: SupportsWrite[str] | None = None) -> None:
        if not message:
            return
        # argparse passes sys.stdout for help and sys.stderr for errors; None
        # when that stream was closed at start-up.
        meant_for_stdout = sys.stdout is None if file is None else file is not sys.stderr
        if meant_for_stdout:
            Output.stdout().write(message.encode())
        elif sys.stderr is not None:
            with contextlib.suppress(OSError):  # usage errors: standard error gone is no reason to fail more
                sys.stderr.write(message)
                sys.stderr.flush()


def usage_error(args: argparse.Namespace, message: str) -> NoReturn:
    """Exit 2 with ``message``, in the usage of the command ``args`` are for."""
    parser: argparse.ArgumentParser = args.parser
    parser.error(message)


class Parsers:
    """The top-level parser and one per command, so that an error is told in the command's usage."""

    def __init__(self) -> None:
        self.top = _ArgumentParser(
            prog="toolnexus-soul",
            description="Compose a persona's bootstrap files into one system prompt, the soul.",
            epilog=EPILOG,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        self.top.add_argument(
            "--version", action="store_true", help="say the version and which reader is in use"
        )
        commands = self.top.add_subparsers(dest="command", metavar="COMMAND")
        directory = "a persona's directory: its bootstrap files are read, never written"
        self.commands: dict[str, argparse.ArgumentParser] = {}

        comp = self._command(commands, "compose", "print the soul of one persona directory")
        comp.add_argument("dir", metavar="DIR", help=directory)
        comp.add_argument(
            "--json", action="store_true", help="print the soul and its report as one JSON object"
        )
        comp.add_argument(
            "--strict", action="store_true", help="fail (exit 1) when a file exists but cannot be used"
        )
        _add_options(comp)

        check = self._command(commands, "check", "print a per-file table for each persona directory")
        check.add_argument("dirs", nargs="+", metavar="DIR", help=directory)
        _add_options(check)

        batch = self._command(commands, "batch", "compose many persona directories into JSON lines")
        batch.add_argument("dirs", nargs="*", metavar="DIR", help=directory)
        batch.add_argument(
            "--from-file", metavar="LIST", help="also read directories from LIST, one per line ('-': stdin)"
        )
        batch.add_argument(
            "--jsonl", metavar="OUT", help="write the JSON lines to OUT ('-', the default: stdout)"
        )
        batch.add_argument("--workers", type=_positive, metavar="N", help="threads (default: one per CPU)")
        batch.add_argument("--no-text", action="store_true", help="leave the soul text out of each line")
        batch.add_argument(
            "--strict",
            action="store_true",
            help="also report on stderr each file that exists but cannot be used (every line is written)",
        )
        _add_options(batch)

        self.memory = self._command(
            commands, "memory", "list, add, replace or remove a persona's memory entries", MEMORY_EPILOG
        )
        self.mcp = self._command(
            commands, "mcp", "serve a persona's home over MCP, on stdio (needs the mcp extra)", MCP_EPILOG
        )

    def _command(
        self,
        commands: argparse._SubParsersAction[_ArgumentParser],
        name: str,
        summary: str,
        epilog: str = EPILOG,
    ) -> argparse.ArgumentParser:
        parser = commands.add_parser(
            name,
            help=summary,
            description=summary[0].upper() + summary[1:] + ".",
            epilog=epilog,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        self.commands[name] = parser
        return parser

    def parse(self, argv: Sequence[str]) -> argparse.Namespace:
        """The arguments, checked; usage errors exit 2 with the usage of the command they concern."""
        if "--version" in argv[:1] and len(argv) > 1:
            self.top.error("--version takes no other arguments")
        args, extra = self.top.parse_known_args(argv)
        parser = self.commands.get(args.command, self.top)
        args.parser = parser
        if args.version:
            return args
        if args.command is None:
            self.top.error(f"a command is needed: {', '.join(self.commands)}")
        if extra:
            parser.error(f"unrecognized arguments: {' '.join(map(shown, extra))}")
        if args.command not in ("memory", "mcp"):
            _check_compose_options(args)
        return args


def _check_compose_options(args: argparse.Namespace) -> None:
    """The composing options, checked by the library: a usage error names the option."""
    if args.files is not None:
        args.files = [name for group in args.files for name in group]
        for name in args.files:
            if from_bytes_not_utf8(name):
                usage_error(args, f"argument --files: names must be UTF-8 text, not {shown(name)}")
    try:
        compose_many([], max_file_bytes=args.max_file_bytes)
    except (TypeError, ValueError) as exc:
        usage_error(args, f"argument --max-file-bytes: {str(exc).removeprefix('max_file_bytes ')}")
    try:
        compose_many([], files=args.files)
    except (TypeError, ValueError) as exc:
        usage_error(args, f"argument --files: {exc}")
