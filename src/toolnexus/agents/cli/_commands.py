"""The commands that compose: ``compose DIR``, ``check DIR...`` and ``batch DIR...``.

Each takes the library's public functions as any host would: ``compose``
for one home, ``compose_many`` for a batch. A DIR that is no home to compose
is told by the library's strict mode (``compose(dir, files=(), strict=True)``
looks at the home alone), in the words of ``trouble``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Iterator
from typing import Final

from .. import ACCELERATED, NO_EXTENSIONS, BootstrapFileError, Soul, compose, compose_many
from ._output import Output, say, shown
from ._parser import budget_of, usage_error
from ._records import dir_fields, problem_line, record, table

__all__ = ["EXIT_OK", "EXIT_PROBLEM", "batch", "check", "compose_one", "reader_name", "trouble"]

EXIT_OK: Final = 0
EXIT_PROBLEM: Final = 1  # a DIR cannot be used, a file cannot be used, check --budget cuts, output failed
_BATCH: Final = 512  # homes composed between two writes and progress updates


def reader_name() -> str:
    """Which reader is in use, and why when it is not the compiled one."""
    if ACCELERATED:
        return "compiled reader"
    if NO_EXTENSIONS:
        return "pure-Python reader, as TOOLNEXUS_SOUL_NO_EXTENSIONS asks"
    return "pure-Python reader: the compiled one is not built here"


def trouble(dir: str) -> str | None:
    """Why ``dir`` is no home to compose, in words; None when it is one."""
    try:
        compose(dir, files=(), strict=True)
    except OSError as exc:
        return said(exc)
    return None


def said(exc: OSError) -> str:
    """An OSError of a home, as the command line words it."""
    if isinstance(exc, FileNotFoundError):
        return "no such directory"
    if isinstance(exc, NotADirectoryError):
        return "not a directory"
    if isinstance(exc, PermissionError):
        return "permission denied: it cannot be searched"
    return (exc.strerror or str(exc)).lower()


def _compose(dir: str, args: argparse.Namespace, *, strict: bool = False) -> Soul:
    return compose(
        dir,
        max_file_bytes=args.max_file_bytes,
        symlinks=args.symlinks,
        strict=strict,
        files=args.files,
        budget=budget_of(args),
    )


def compose_one(args: argparse.Namespace) -> int:
    """``compose DIR``: the soul's bytes, or its JSON record."""
    problem = trouble(args.dir)
    if problem is not None:
        say(f"{shown(args.dir)}: {problem}")
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


def check(args: argparse.Namespace) -> int:
    """``check DIR...``: a table per home; 1 when a file cannot be used or a budget cuts one."""
    status = EXIT_OK
    out = Output.stdout()
    for home in args.dirs:
        problem = trouble(home)
        if problem is not None:
            status = EXIT_PROBLEM
            out.write(f"{shown(home)}  ({problem})\n".encode())
            continue
        soul = _compose(home, args)
        if soul.cut_files or any(report.status.unusable for report in soul.files):
            status = EXIT_PROBLEM
        out.write(table(home, soul).encode())
    if not ACCELERATED and not NO_EXTENSIONS:
        say(f"note: {reader_name()}; composing is several times slower")
    return status


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
        usage_error(args, f"argument --from-file: cannot read {shown(path)}: {exc.strerror or exc}")
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
        usage_error(args, f"argument --jsonl: cannot write {shown(args.jsonl)}: {exc.strerror or exc}")


def _chunks(items: list[str], size: int) -> Iterator[list[str]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


class _Tally:
    """What the summary line counts, and whether any home had a problem."""

    def __init__(self) -> None:
        self.homes = self.files = self.nbytes = 0
        self.problem = False


def _error_line(home: str, problem: str) -> str:
    return json.dumps({**dir_fields(home), "error": problem}, ensure_ascii=False) + "\n"


def _batch_lines(chunk: list[str], args: argparse.Namespace, tally: _Tally) -> str:
    """One JSON line per home of ``chunk``, in order; with --strict, each unusable file on stderr."""
    # A name with a NUL byte is no path at all: its line says so, and the others are composed.
    paths = [home for home in chunk if "\0" not in home]
    souls = iter(
        compose_many(
            paths,
            workers=args.workers,
            max_file_bytes=args.max_file_bytes,
            symlinks=args.symlinks,
            files=args.files,
            budget=budget_of(args),
        )
    )
    lines = []
    for home in chunk:
        tally.homes += 1
        if "\0" in home:
            tally.problem = True
            lines.append(_error_line(home, "not a path: it holds a NUL byte"))
            continue
        soul = next(souls)
        # Only a home where nothing was found may be no directory at all.
        problem = None if soul.found else trouble(home)
        if problem is not None:
            tally.problem = True
            lines.append(_error_line(home, problem))
            continue
        unusable = [f for f in soul.files if f.status.unusable]
        tally.problem = tally.problem or bool(unusable)
        if args.strict:
            for report in unusable:
                say(problem_line(home, report))
        lines.append(json.dumps(record(home, soul, text=not args.no_text), ensure_ascii=False) + "\n")
        tally.files += len(soul.found)
        tally.nbytes += sum(f.bytes_read for f in soul.files)
    return "".join(lines)


def batch(args: argparse.Namespace) -> int:
    """``batch DIR...``: a JSON line per home, a summary on standard error."""
    homes = list(args.dirs)
    if args.from_file:
        homes.extend(_listed(args))
    elif not homes:
        usage_error(args, "batch needs at least one DIR or --from-file")
    if not homes:  # an empty list: nothing to compose, nothing to say, OUT left as it was
        return EXIT_OK
    out = _output(args)
    progress = sys.stderr.isatty()
    started = time.perf_counter()
    tally = _Tally()
    try:
        for chunk in _chunks(homes, _BATCH):
            out.write(_batch_lines(chunk, args, tally).encode())
            if progress:
                sys.stderr.write(f"\rcomposed {tally.homes:,d}/{len(homes):,d} homes")
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
