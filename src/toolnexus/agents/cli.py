"""The ``toolnexus-soul`` command line (also ``python -m toolnexus.agents``).

``compose DIR`` prints the soul; ``check DIR...`` prints a per-file table;
``batch DIR...`` composes many homes into JSON lines. It behaves as a Unix
tool: quiet when its reader goes away, every byte of odd directory names
kept, errors as one line on standard error, exit codes as ``--help`` lists.
argparse only: the library has no runtime dependencies.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import stat
import sys
import time
from collections.abc import Iterator, Sequence
from typing import BinaryIO, Final

from . import ACCELERATED, __version__
from ._args import Budget
from ._compose import compose
from ._format import MAX_BOOTSTRAP_FILE_BYTES
from ._many import compose_many
from ._report import UNUSABLE, BootstrapFileError, FileReport, FileStatus, Soul

__all__ = ["main"]

EXIT_OK: Final = 0
EXIT_PROBLEM: Final = 1  # a DIR is absent or not a directory, a file cannot be used, or check --budget cuts
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
  1    a DIR does not exist or is not a directory, or a bootstrap file
       exists but cannot be used (check, batch, and any --strict), or
       (check --budget) the budget would cut a file
  2    usage: bad options or arguments, or a list or output file that
       cannot be used
  141  standard output was closed before all was written (as after | head)

Directory names that are not valid UTF-8 keep every byte: in text output a
byte outside valid UTF-8 shows as \\xNN; in JSON, "dir" holds that text and
"dir_b64" the exact bytes. The format is described in docs/format.md.
"""


class UsageError(Exception):
    """A command-line argument that cannot be used: one line, exit status 2."""


def _add_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--max-file-bytes",
        type=int,
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


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, not {value}")
    return value


def _add_budget(parser: argparse.ArgumentParser) -> None:
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


def utf8_bytes(text: str) -> int:
    """A ``Budget.count`` in UTF-8 bytes (``--count bytes``)."""
    return len(text.encode("utf-8"))


def _budget(args: argparse.Namespace) -> Budget | None:
    if args.budget is None and args.per_file is None:
        return None
    count = None if args.count == "chars" else utf8_bytes
    return Budget(total=args.budget, per_file=args.per_file, keep=args.keep, count=count)


def _unit(budget: Budget) -> str:
    return "characters" if budget.count is None else "bytes"


def _subparser(
    commands: argparse._SubParsersAction[argparse.ArgumentParser], name: str, summary: str
) -> argparse.ArgumentParser:
    return commands.add_parser(
        name,
        help=summary,
        description=summary[0].upper() + summary[1:] + ".",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="toolnexus-soul",
        description="Compose a persona's bootstrap files into one system prompt, the soul.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    reader = "compiled" if ACCELERATED else "pure-Python"
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__} ({reader} reader)")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    directory = "a persona's directory: its bootstrap files are read, never written"

    comp = _subparser(commands, "compose", "print the soul of one persona directory")
    comp.add_argument("dir", metavar="DIR", help=directory)
    comp.add_argument(
        "--json", action="store_true", help="print text, found, per-file report and digest as JSON"
    )
    comp.add_argument(
        "--strict", action="store_true", help="fail (exit 1) when a file exists but cannot be used"
    )
    _add_options(comp)
    _add_budget(comp)

    check = _subparser(commands, "check", "print a per-file table for each persona directory")
    check.add_argument("dirs", nargs="+", metavar="DIR", help=directory)
    _add_options(check)
    _add_budget(check)

    batch = _subparser(commands, "batch", "compose many persona directories into JSON lines")
    batch.add_argument("dirs", nargs="*", metavar="DIR", help=directory)
    batch.add_argument(
        "--from-file", metavar="LIST", help="also read directories from LIST, one per line ('-': stdin)"
    )
    batch.add_argument(
        "--jsonl", metavar="OUT", help="write the JSON lines to OUT ('-', the default: stdout)"
    )
    batch.add_argument("--workers", type=int, metavar="N", help="threads (default: one per CPU)")
    batch.add_argument("--no-text", action="store_true", help="leave the soul text out of each line")
    batch.add_argument(
        "--strict",
        action="store_true",
        help="also report each file that exists but cannot be used on stderr; every line is still written",
    )
    _add_options(batch)
    _add_budget(batch)
    return parser


# ---- names and output ------------------------------------------------------


def _shown(path: str) -> str:
    """``path`` for people: bytes that are not valid UTF-8 as ``\\xNN``."""
    return os.fsencode(path).decode("utf-8", "backslashreplace")


def _dir_fields(path: str) -> dict[str, str]:
    """The ``dir`` of a JSON record, and ``dir_b64`` with its exact bytes when it is not UTF-8."""
    raw = os.fsencode(path)
    try:
        return {"dir": raw.decode("utf-8")}
    except UnicodeDecodeError:
        return {"dir": raw.decode("utf-8", "backslashreplace"), "dir_b64": base64.b64encode(raw).decode()}


def _no_directory(path: str) -> str | None:
    """Why ``path`` is not a directory to compose, or None when it is one (or may be)."""
    try:
        mode = os.stat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return "no such directory"
    except OSError:  # permission denied, a loop...: the reader reports each file
        return None
    return None if stat.S_ISDIR(mode) else "not a directory"


def _problem(path: str, report: FileReport) -> str:
    """A file that exists but cannot be used, as one line for standard error."""
    return f"{_shown(os.path.join(path, report.name))}: {report.status.value}: {report.error}"


def _say(message: str) -> None:
    print(f"toolnexus-soul: {message}", file=sys.stderr)


def _binary(stream: object) -> BinaryIO:
    # The soul's bytes are UTF-8 whatever the locale says: write bytes.
    buffer = getattr(stream, "buffer", None)
    return buffer if buffer is not None else stream  # type: ignore[return-value]


def _write(out: BinaryIO, text: str) -> None:
    out.write(text.encode("utf-8"))
    out.flush()


def _quiet_stdout() -> None:
    """Point standard output at /dev/null, so the interpreter's last flush fails no more."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, ValueError, OSError):  # a stream without a descriptor (tests)
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, fd)
    finally:
        os.close(devnull)


# ---- compose -----------------------------------------------------------------


def _cmd_compose(args: argparse.Namespace) -> int:
    why = _no_directory(args.dir)
    if why is not None:
        _say(f"{_shown(args.dir)}: {why}")
        return EXIT_PROBLEM
    try:
        soul = compose(
            args.dir,
            max_file_bytes=args.max_file_bytes,
            symlinks=args.symlinks,
            strict=args.strict,
            budget=_budget(args),
        )
    except BootstrapFileError as exc:
        _say(_problem(args.dir, exc.report))
        return EXIT_PROBLEM
    sys.stdout.flush()
    out = _binary(sys.stdout)
    if args.json:
        record = {**_dir_fields(args.dir), **soul.as_dict()}
        _write(out, json.dumps(record, ensure_ascii=False, indent=2) + "\n")
    else:
        # Byte-exact: no newline is added unless a person is reading it.
        _write(out, soul.text + ("\n" if sys.stdout.isatty() else ""))
    return EXIT_OK


# ---- check -------------------------------------------------------------------


def _on_disk(directory: str, report: FileReport) -> str:
    """The size the filesystem gives a present file, for the table (it may have changed since)."""
    try:
        return f"{os.stat(os.path.join(directory, report.name)).st_size:,d} B"
    except OSError:
        return "?"


def _kept(report: FileReport) -> str:
    """What the budget kept of a present file, in its unit."""
    if report.kept is None:
        return ""
    if not report.cut:
        return f"all {report.kept:,}"
    if report.left_out is not None:
        return f"{report.kept:,} of {report.kept + report.left_out:,}"
    return f"{report.kept:,}, {report.left_out_bytes or 0:,} B left out"


def _format_check(directory: str, soul: Soul) -> str:
    """One home's table: each file's status, its size on disk, the bytes read, what a budget kept."""
    unit = "" if soul.budget is None else _unit(soul.budget)
    head = f"  {'file':<13}{'status':<20}{'on disk':>12}{'read':>12}"
    lines = [_shown(directory), head + (f"  kept ({unit})" if unit else "")]
    for report in soul.files:
        present = report.status is FileStatus.PRESENT
        if report.cut:
            state = "left out" if present and report.name not in soul.found else "cut"
        elif report.truncated:
            state = "truncated"
        elif present and not report.stable:
            state = "unstable"
        else:
            state = report.status.value
        if present:
            sizes = f"{_on_disk(directory, report):>12}{report.size:>10,d} B"
            note = f"  {_kept(report)}" if unit else ""
        else:
            sizes = f"{'-':>12}{'-':>12}"
            note = "" if report.status is FileStatus.MISSING else f"  {report.error}"
        lines.append(f"  {report.name:<13}{state:<20}{sizes}{note}".rstrip())
    there = sum(report.status is FileStatus.PRESENT for report in soul.files)
    if soul.budget is not None and there and not soul.found:
        kept = "none fits the budget"
    elif len(soul.found) < there:
        kept = f"{len(soul.found)} in the soul ({there - len(soul.found)} left out)"
    else:
        kept = ""
    lines.append(
        f"  {there} of {len(soul.files)} present{', ' + kept if kept else ''},"
        f" {len(soul.text):,d} characters, sha256 {soul.digest[:16]}"
    )
    if soul.budget is not None and soul.used is not None:
        limit = (
            "no total"
            if soul.budget.total is None
            else f"{soul.used / soul.budget.total:.0%} of {soul.budget.total:,}"
        )
        cut = f"{len(soul.cut)} cut: {', '.join(soul.cut)}" if soul.cut else "nothing cut"
        near = ", near its limit" if soul.near_limit else ""
        lines.append(f"  budget: {soul.used:,} {unit} ({limit}{near}); {cut}")
    return "\n".join(lines) + "\n"


def _cmd_check(args: argparse.Namespace) -> int:
    status = EXIT_OK
    sys.stdout.flush()
    out = _binary(sys.stdout)
    for directory in args.dirs:
        why = _no_directory(directory)
        if why is not None:
            status = EXIT_PROBLEM
            _write(out, f"{_shown(directory)}  ({why})\n")
            continue
        soul = compose(
            directory, max_file_bytes=args.max_file_bytes, symlinks=args.symlinks, budget=_budget(args)
        )
        if soul.cut or any(report.status in UNUSABLE for report in soul.files):
            status = EXIT_PROBLEM
        _write(out, _format_check(directory, soul))
    return status


# ---- batch -------------------------------------------------------------------

_BATCH: Final = 512  # homes composed between two writes and progress updates


def _listed(path: str) -> list[str]:
    """The directories named in ``path`` (``-``: standard input), one per line."""
    try:
        if path == "-":
            raw = sys.stdin.buffer.read()
        else:
            with open(path, "rb") as listing:
                raw = listing.read()
    except OSError as exc:
        raise UsageError(f"--from-file {_shown(path)}: {exc.strerror or exc}") from None
    # Names are bytes: keep every one (surrogateescape), split on newlines only,
    # and let a list written on Windows end its lines with \r\n.
    names = (line.removesuffix(b"\r") for line in raw.split(b"\n"))
    return [os.fsdecode(name) for name in names if name.strip()]


def _output(path: str | None) -> BinaryIO:
    if path is None or path == "-":
        sys.stdout.flush()
        return _binary(sys.stdout)
    try:
        return open(path, "wb")  # closed by _cmd_batch
    except OSError as exc:
        raise UsageError(f"--jsonl {_shown(path)}: {exc.strerror or exc}") from None


def _batch_record(directory: str, soul: Soul, with_text: bool) -> dict[str, object]:
    record: dict[str, object] = {
        **_dir_fields(directory),
        "digest": soul.digest,
        "found": list(soul.found),
        "sizes": {f.name: f.size for f in soul.files if f.status is FileStatus.PRESENT},
        "truncated": list(soul.truncated),
    }
    problems = [
        {"name": f.name, "status": f.status.value, "error": f.error}
        for f in soul.files
        if f.status in UNUSABLE
    ]
    if problems:
        record["problems"] = problems
    if soul.budget is not None:
        record["cut"] = list(soul.cut)
        record["used"] = soul.used
    if with_text:
        record["text"] = soul.text
    return record


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
        why = None if soul.found else _no_directory(directory)
        if why is not None:
            tally.problem = True
            lines.append(json.dumps({**_dir_fields(directory), "error": why}, ensure_ascii=False) + "\n")
            continue
        unusable = [f for f in soul.files if f.status in UNUSABLE]
        tally.problem = tally.problem or bool(unusable)
        if args.strict:
            for report in unusable:
                _say(_problem(directory, report))
        record = _batch_record(directory, soul, not args.no_text)
        lines.append(json.dumps(record, ensure_ascii=False) + "\n")
        tally.files += len(soul.found)
        tally.nbytes += sum(f.size for f in soul.files)
    return "".join(lines)


def _cmd_batch(args: argparse.Namespace) -> int:
    dirs = list(args.dirs)
    if args.from_file:
        dirs.extend(_listed(args.from_file))
    if not dirs:
        raise UsageError("batch needs at least one DIR or --from-file")
    if args.workers is not None and args.workers < 1:
        raise UsageError(f"--workers must be >= 1, got {args.workers}")
    out = _output(args.jsonl)
    to_file = out is not _binary(sys.stdout)
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
                budget=_budget(args),
            )
            _write(out, _batch_lines(chunk, souls, args, tally))
            if progress:
                sys.stderr.write(f"\rcomposed {tally.homes:,d}/{len(dirs):,d} homes")
                sys.stderr.flush()
    finally:
        if to_file:
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


_COMMANDS: Final = {"compose": _cmd_compose, "check": _cmd_check, "batch": _cmd_batch}


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    args = _parser().parse_args(argv)
    try:
        return _COMMANDS[args.command](args)
    except (UsageError, TypeError, ValueError) as exc:
        _say(f"error: {exc}")
        return EXIT_USAGE
    except BrokenPipeError:
        _quiet_stdout()
        return EXIT_PIPE
