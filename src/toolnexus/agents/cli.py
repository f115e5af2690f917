"""The ``toolnexus-soul`` command line (also ``python -m toolnexus.agents``).

``compose DIR`` prints the soul; ``check DIR...`` prints a per-file table and
exits 1 when a file exists but could not be used; ``batch DIR...`` composes
many homes into JSON lines. argparse only: the library has no runtime
dependencies.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import nullcontext
from typing import TextIO

from . import ACCELERATED, __version__
from ._compose import compose
from ._format import MAX_BOOTSTRAP_FILE_BYTES
from ._many import compose_many
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

    batch = commands.add_parser("batch", help="compose many persona directories into JSON lines")
    batch.add_argument("dirs", nargs="*", metavar="DIR")
    batch.add_argument(
        "--from-file", metavar="LIST", help="also read directories from LIST, one per line ('-': stdin)"
    )
    batch.add_argument("--jsonl", metavar="OUT", help="write the JSON lines to OUT (default: stdout)")
    batch.add_argument("--workers", type=int, metavar="N", help="threads (default: one per CPU)")
    batch.add_argument("--no-text", action="store_true", help="leave the soul text out of each line")
    batch.add_argument("--strict", action="store_true", help="stop at a file that exists but cannot be used")
    _add_options(batch)
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


_BATCH = 512  # homes composed between two writes and progress updates


def _batch_dirs(args: argparse.Namespace) -> list[str]:
    dirs = list(args.dirs)
    if args.from_file:
        if args.from_file == "-":
            lines = sys.stdin.read().splitlines()
        else:
            with open(args.from_file, encoding="utf-8", errors="surrogateescape") as listing:
                lines = listing.read().splitlines()
        dirs.extend(line for line in lines if line.strip())
    return dirs


def _batch_record(directory: str, soul: Soul, with_text: bool) -> str:
    record: dict[str, object] = {
        "dir": directory,
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
    if with_text:
        record["text"] = soul.text
    return json.dumps(record, ensure_ascii=False) + "\n"


def _chunks(items: list[str], size: int) -> Iterator[list[str]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _cmd_batch(args: argparse.Namespace) -> int:
    dirs = _batch_dirs(args)
    if not dirs:
        print("toolnexus-soul: error: batch needs at least one DIR or --from-file", file=sys.stderr)
        return EXIT_USAGE
    if args.workers is not None and args.workers < 1:
        print(f"toolnexus-soul: error: --workers must be >= 1, got {args.workers}", file=sys.stderr)
        return EXIT_USAGE
    progress = sys.stderr.isatty()
    started = time.perf_counter()
    files = nbytes = done = 0
    status = EXIT_OK
    target = open(args.jsonl, "w", encoding="utf-8") if args.jsonl else nullcontext(sys.stdout)  # noqa: SIM115
    with target as out:
        for chunk in _chunks(dirs, _BATCH):
            try:
                souls = compose_many(
                    chunk,
                    workers=args.workers,
                    max_file_bytes=args.max_file_bytes,
                    symlinks=args.symlinks,
                    strict=args.strict,
                )
            except BootstrapFileError as exc:
                print(f"toolnexus-soul: {exc}", file=sys.stderr)
                return EXIT_UNUSABLE
            lines = []
            for directory, soul in zip(chunk, souls, strict=True):
                lines.append(_batch_record(directory, soul, not args.no_text))
                files += len(soul.found)
                nbytes += sum(f.size for f in soul.files)
                if any(f.status in UNUSABLE for f in soul.files):
                    status = EXIT_UNUSABLE
            _write_utf8(out, "".join(lines))
            done += len(chunk)
            if progress:
                sys.stderr.write(f"\rcomposed {done:,d}/{len(dirs):,d} homes")
                sys.stderr.flush()
    seconds = time.perf_counter() - started
    if progress:
        sys.stderr.write("\n")
    rate = done / seconds if seconds > 0 else float("inf")
    sys.stderr.write(
        f"{done:,d} homes, {files:,d} files, {nbytes / 1e6:.1f} MB, {seconds:.2f} s, {rate:,.0f} homes/s\n"
    )
    return status


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    args = _parser().parse_args(argv)
    try:
        if args.command == "compose":
            return _cmd_compose(args)
        if args.command == "batch":
            return _cmd_batch(args)
        return _cmd_check(args)
    except (TypeError, ValueError) as exc:
        print(f"toolnexus-soul: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
