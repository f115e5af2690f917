"""The ``toolnexus-soul`` command line (also ``python -m toolnexus.agents``).

``compose DIR`` prints the soul; ``check DIR...`` prints a per-file table and
exits 1 when a file exists but could not be used. argparse only: the library
has no runtime dependencies.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from typing import TextIO

from . import ACCELERATED, __version__
from ._compose import MAX_BOOTSTRAP_FILE_BYTES, compose
from ._report import UNUSABLE, BootstrapFileError, FileStatus, Soul

__all__ = ["main"]

EXIT_OK = 0
EXIT_UNUSABLE = 1  # a file exists but could not be used, or the directory is absent
EXIT_USAGE = 2


def _add_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--max-file-bytes",
        type=int,
        default=MAX_BOOTSTRAP_FILE_BYTES,
        metavar="N",
        help="byte cap per file (default: %(default)s, 2 MB)",
    )
    parser.add_argument(
        "--symlinks",
        choices=("follow", "within", "refuse"),
        default="follow",
        help="symlink policy (default: %(default)s)",
    )


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="toolnexus-soul",
        description="Compose a persona's bootstrap files into one system prompt.",
    )
    reader = "compiled" if ACCELERATED else "pure-Python"
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__} ({reader} reader)")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    comp = commands.add_parser("compose", help="print the soul of one persona directory")
    comp.add_argument("dir", metavar="DIR")
    comp.add_argument(
        "--json", action="store_true", help="print text, found, per-file report and digest as JSON"
    )
    comp.add_argument("--strict", action="store_true", help="fail when a file exists but cannot be used")
    _add_options(comp)

    check = commands.add_parser("check", help="print a per-file table for each persona directory")
    check.add_argument("dirs", nargs="+", metavar="DIR")
    _add_options(check)
    return parser


def _write_utf8(stream: TextIO, text: str) -> None:
    # The soul's bytes are UTF-8 whatever the locale says; write them as such.
    stream.flush()
    buffer = getattr(stream, "buffer", None)
    if buffer is None:
        stream.write(text)
    else:
        buffer.write(text.encode("utf-8"))
        buffer.flush()


def _cmd_compose(args: argparse.Namespace) -> int:
    try:
        soul = compose(
            args.dir, max_file_bytes=args.max_file_bytes, symlinks=args.symlinks, strict=args.strict
        )
    except BootstrapFileError as exc:
        print(f"toolnexus-soul: {exc}", file=sys.stderr)
        return EXIT_UNUSABLE
    if args.json:
        record = {"dir": os.fsdecode(args.dir), **soul.as_dict()}
        _write_utf8(sys.stdout, json.dumps(record, ensure_ascii=False, indent=2) + "\n")
    else:
        # Byte-exact: no newline is added unless a person is reading it.
        _write_utf8(sys.stdout, soul.text + ("\n" if sys.stdout.isatty() else ""))
    return EXIT_OK


def _format_check(directory: str, soul: Soul, is_dir: bool) -> str:
    lines = [directory + ("" if is_dir else "  (not a directory)")]
    for report in soul.files:
        if report.truncated:
            state = "truncated"
        elif report.status is FileStatus.PRESENT and not report.stable:
            state = "unstable"
        else:
            state = report.status.value
        size = f"{report.size:>10,d} B" if report.status is FileStatus.PRESENT else f"{'-':>12}"
        note = "" if report.status in (FileStatus.PRESENT, FileStatus.MISSING) else f"  {report.error}"
        lines.append(f"  {report.name:<13}{state:<20}{size}{note}")
    lines.append(
        f"  {len(soul.found)} of {len(soul.files)} present, {len(soul.text):,d} characters,"
        f" sha256 {soul.digest[:16]}"
    )
    return "\n".join(lines) + "\n"


def _cmd_check(args: argparse.Namespace) -> int:
    status = EXIT_OK
    for directory in args.dirs:
        soul = compose(directory, max_file_bytes=args.max_file_bytes, symlinks=args.symlinks)
        is_dir = os.path.isdir(directory)
        if not is_dir or any(report.status in UNUSABLE for report in soul.files):
            status = EXIT_UNUSABLE
        _write_utf8(sys.stdout, _format_check(directory, soul, is_dir))
    return status


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    args = _parser().parse_args(argv)
    try:
        if args.command == "compose":
            return _cmd_compose(args)
        return _cmd_check(args)
    except (TypeError, ValueError) as exc:
        print(f"toolnexus-soul: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
