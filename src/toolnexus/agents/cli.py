"""The ``toolnexus-soul`` command line (also ``python -m toolnexus.agents``).

``compose DIR`` prints the soul; ``check DIR...`` prints a per-file table;
``batch DIR...`` composes many homes into JSON lines; ``memory DIR ...``
lists and changes a persona's memory entries (``_cli_memory``). It behaves as a Unix
tool: every byte of its output is written or it fails with one line and a
non-zero status (``_output``), it stops quietly when its reader goes away,
names are shown with every byte kept and nothing that could forge a line,
usage errors come in argparse's style with the subcommand's usage, and the
exit codes are those ``--help`` lists. argparse only: the library has no
runtime dependencies.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Final, NoReturn

from . import __version__, _cli_memory, _reader
from ._args import MAX_CAP, Budget, check_files
from ._compose import compose
from ._format import MAX_BOOTSTRAP_FILE_BYTES
from ._many import compose_many
from ._output import Output, WriteFailed, from_bytes_not_utf8, quiet_stdout, say, shown
from ._records import dir_fields, problem_line, record, table
from ._report import UNUSABLE, BootstrapFileError, Soul, home_problem

if TYPE_CHECKING:
    from _typeshed import SupportsWrite

__all__ = ["main", "utf8_bytes"]

EXIT_OK: Final = 0
EXIT_PROBLEM: Final = 1  # a DIR cannot be used, a file cannot be used, check --budget cuts, output failed
EXIT_USAGE: Final = 2
EXIT_PIPE: Final = 141  # 128 + SIGPIPE: what a shell reports for a tool whose reader went away

EPILOG = """\
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

exit status:
  0    done
  1    a DIR does not exist, is not a directory or cannot be searched; a
       bootstrap file exists but cannot be used (check, batch, and any
       --strict); (check --budget) the budget would cut a file; or the
       output could not be written (a full disk)
  2    usage: bad options or arguments, or a list or output file that
       cannot be opened
  141  standard output was closed before all was written (as after | head)

Names are shown with every byte kept: in text output a byte outside valid
UTF-8, and a control character, shows as \\xNN (or \\uNNNN); in JSON, "dir"
holds that text and "dir_b64" the exact bytes. The format is described in
docs/format.md.
"""


def _cap(text: str) -> int:
    value = _whole_number(text)
    if not 1 <= value <= MAX_CAP:
        raise argparse.ArgumentTypeError(f"must be between 1 and {MAX_CAP}, not {value}")
    return value


def _positive(text: str) -> int:
    value = _whole_number(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, not {value}")
    return value


def _whole_number(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None


def _names(text: str) -> list[str]:
    """The value of --files: names separated by commas (the option may be given again)."""
    return text.split(",")


def utf8_bytes(text: str) -> int:
    """A ``Budget.count`` in UTF-8 bytes (``--count bytes``)."""
    return len(text.encode("utf-8"))


def _add_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--max-file-bytes",
        type=_cap,
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


def _budget(args: argparse.Namespace) -> Budget | None:
    if args.budget is None and args.per_file is None:
        return None
    count = None if args.count == "chars" else utf8_bytes
    return Budget(total=args.budget, per_file=args.per_file, keep=args.keep, count=count)


def _reader_name() -> str:
    """Which reader is in use, and why when it is not the compiled one."""
    if _reader.ACCELERATED:
        return "compiled reader"
    if _reader.NO_EXTENSIONS:
        return "pure-Python reader, as TOOLNEXUS_SOUL_NO_EXTENSIONS asks"
    return "pure-Python reader: the compiled one is not built here"


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


class _Parsers:
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

        memory = self._command(commands, "memory", "list, add, replace or remove a persona's memory entries")
        _cli_memory.add_parser(memory, "a persona's directory: its memory file is the one file written")

    def _command(
        self, commands: argparse._SubParsersAction[_ArgumentParser], name: str, summary: str
    ) -> argparse.ArgumentParser:
        parser = commands.add_parser(
            name,
            help=summary,
            description=summary[0].upper() + summary[1:] + ".",
            epilog=EPILOG,
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
        if args.version:
            return args
        if args.command is None:
            self.top.error(f"a command is needed: {', '.join(self.commands)}")
        if extra:
            parser.error(f"unrecognized arguments: {' '.join(map(shown, extra))}")
        if getattr(args, "files", None) is not None:
            names = [name for group in args.files for name in group]
            for name in names:
                if from_bytes_not_utf8(name):
                    parser.error(f"argument --files: names must be UTF-8 text, not {shown(name)}")
            try:
                args.files = check_files(names)
            except (TypeError, ValueError) as exc:
                parser.error(f"argument --files: {exc}")
        args.parser = parser
        return args


def _usage(args: argparse.Namespace, message: str) -> NoReturn:
    parser: argparse.ArgumentParser = args.parser
    parser.error(message)


def _home_trouble(path: str) -> str | None:
    """Why ``path`` is no directory to compose, in words; None when it is one."""
    problem = home_problem(os.fsencode(path))
    if problem is None:
        return None
    if isinstance(problem, FileNotFoundError):
        return "no such directory"
    if isinstance(problem, NotADirectoryError):
        return "not a directory"
    if isinstance(problem, PermissionError):
        return "permission denied: it cannot be searched"
    return (problem.strerror or str(problem)).lower()


def _compose(path: str, args: argparse.Namespace, *, strict: bool = False) -> Soul:
    return compose(
        path,
        max_file_bytes=args.max_file_bytes,
        symlinks=args.symlinks,
        strict=strict,
        files=args.files,
        budget=_budget(args),
    )


# ---- compose ---------------------------------------------------------------------


def _cmd_compose(args: argparse.Namespace) -> int:
    trouble = _home_trouble(args.dir)
    if trouble is not None:
        say(f"{shown(args.dir)}: {trouble}")
        return EXIT_PROBLEM
    try:
        soul = _compose(args.dir, args, strict=args.strict)
    except BootstrapFileError as exc:
        say(problem_line(args.dir, exc.report))
        return EXIT_PROBLEM
    out = Output.stdout()
    if args.json:
        out.write((json.dumps(record(args.dir, soul), ensure_ascii=False, indent=2) + "\n").encode())
    else:
        # Byte-exact: no newline is added unless a person is reading it.
        out.write((soul.text + ("\n" if sys.stdout.isatty() else "")).encode())
    return EXIT_OK


# ---- check -------------------------------------------------------------------------


def _cmd_check(args: argparse.Namespace) -> int:
    status = EXIT_OK
    out = Output.stdout()
    for directory in args.dirs:
        trouble = _home_trouble(directory)
        if trouble is not None:
            status = EXIT_PROBLEM
            out.write(f"{shown(directory)}  ({trouble})\n".encode())
            continue
        soul = _compose(directory, args)
        if soul.cut or any(report.status in UNUSABLE for report in soul.files):
            status = EXIT_PROBLEM
        out.write(table(directory, soul).encode())
    if not _reader.ACCELERATED and not _reader.NO_EXTENSIONS:
        say(f"note: {_reader_name()}; composing is several times slower")
    return status


# ---- batch -------------------------------------------------------------------------

_BATCH: Final = 512  # homes composed between two writes and progress updates


def _listed(args: argparse.Namespace) -> list[str]:
    """The directories named in --from-file (``-``: standard input), one per line."""
    path = args.from_file
    try:
        if path == "-":
            raw = sys.stdin.buffer.read()
        else:
            with open(path, "rb") as listing:
                raw = listing.read()
    except OSError as exc:
        _usage(args, f"argument --from-file: cannot read {shown(path)}: {exc.strerror or exc}")
    # Names are bytes: keep every one (surrogateescape), split on newlines only,
    # and let a list written on Windows end its lines with \r\n.
    names = (line.removesuffix(b"\r") for line in raw.split(b"\n"))
    return [os.fsdecode(name) for name in names if name.strip()]


def _output(args: argparse.Namespace) -> Output:
    if args.jsonl is None or args.jsonl == "-":
        return Output.stdout()
    try:
        return Output.create(args.jsonl)
    except OSError as exc:
        _usage(args, f"argument --jsonl: cannot write {shown(args.jsonl)}: {exc.strerror or exc}")


def _chunks(items: list[str], size: int) -> Iterator[list[str]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


class _Tally:
    """What the summary line counts, and whether any home had a problem."""

    def __init__(self) -> None:
        self.homes = self.files = self.nbytes = 0
        self.problem = False


def _batch_lines(chunk: list[str], souls: list[Soul], args: argparse.Namespace, tally: _Tally) -> str:
    """One JSON line per home of ``chunk``, in order; with --strict, each unusable file on stderr."""
    lines = []
    for directory, soul in zip(chunk, souls, strict=True):
        tally.homes += 1
        # Only a home where nothing was found may be no directory at all.
        trouble = None if soul.found else _home_trouble(directory)
        if trouble is not None:
            tally.problem = True
            lines.append(json.dumps({**dir_fields(directory), "error": trouble}, ensure_ascii=False) + "\n")
            continue
        unusable = [f for f in soul.files if f.status in UNUSABLE]
        tally.problem = tally.problem or bool(unusable)
        if args.strict:
            for report in unusable:
                say(problem_line(directory, report))
        lines.append(json.dumps(record(directory, soul, text=not args.no_text), ensure_ascii=False) + "\n")
        tally.files += len(soul.found)
        tally.nbytes += sum(f.size for f in soul.files)
    return "".join(lines)


def _cmd_batch(args: argparse.Namespace) -> int:
    dirs = list(args.dirs)
    if args.from_file:
        dirs.extend(_listed(args))
    if not dirs:
        _usage(args, "batch needs at least one DIR or --from-file")
    out = _output(args)
    progress = sys.stderr.isatty()
    started = time.perf_counter()
    tally = _Tally()
    try:
        for chunk in _chunks(dirs, _BATCH):
            souls = compose_many(
                chunk,
                workers=args.workers,
                max_file_bytes=args.max_file_bytes,
                symlinks=args.symlinks,
                files=args.files,
                budget=_budget(args),
            )
            out.write(_batch_lines(chunk, souls, args, tally).encode())
            if progress:
                sys.stderr.write(f"\rcomposed {tally.homes:,d}/{len(dirs):,d} homes")
                sys.stderr.flush()
    finally:
        out.close()
    seconds = time.perf_counter() - started
    if progress:
        sys.stderr.write("\n")
    rate = tally.homes / seconds if seconds > 0 else float("inf")
    sys.stderr.write(
        f"{tally.homes:,d} homes, {tally.files:,d} files, {tally.nbytes / 1e6:.1f} MB,"
        f" {seconds:.2f} s, {rate:,.0f} homes/s\n"
    )
    return EXIT_PROBLEM if tally.problem else EXIT_OK


def _cmd_memory(args: argparse.Namespace) -> int:
    return _cli_memory.run(args, _home_trouble(args.dir))


_COMMANDS: Final = {"compose": _cmd_compose, "check": _cmd_check, "batch": _cmd_batch, "memory": _cmd_memory}


def _run(argv: Sequence[str]) -> int:
    args = _Parsers().parse(argv)
    if args.version:
        Output.stdout().write(f"toolnexus-soul {__version__} ({_reader_name()})\n".encode())
        return EXIT_OK
    return _COMMANDS[args.command](args)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    try:
        try:
            status = _run(sys.argv[1:] if argv is None else argv)
        except SystemExit as exc:  # argparse: --help (0), or a usage error (2)
            status = exc.code if isinstance(exc.code, int) else EXIT_USAGE
        if sys.stdout is not None:  # None: closed at start-up (a command's Output says so)
            sys.stdout.flush()  # what argparse printed (help, usage) is written, or fails, here
    except BrokenPipeError:
        quiet_stdout()
        return EXIT_PIPE
    except WriteFailed as exc:
        quiet_stdout()
        say(str(exc))
        return EXIT_PROBLEM
    except OSError as exc:  # Python's own stdout failed at the flush (argparse's help, to a full disk)
        quiet_stdout()
        say(f"cannot write to standard output: {exc.strerror or exc}")
        return EXIT_PROBLEM
    return status
