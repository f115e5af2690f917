"""``toolnexus-soul memory DIR ACTION``: a persona's memory file, from the command line.

``list`` prints the entries as the file holds them; ``add TEXT``,
``replace OLD NEW`` and ``remove OLD`` change it, through the same tool a
model uses, and say what the file holds afterwards. Exit status 0 done, 1
when no entry or several hold OLD, the memory is full, or the write is
refused (the text cannot be an entry, the file is a symlink...), 2 usage.
"""

from __future__ import annotations

import argparse
from typing import Final

from ._memory import MemoryToolError, check_file, memory_tool
from ._memory_format import render
from ._output import Output, from_bytes_not_utf8, say, shown, shown_text

__all__ = ["add_parser", "run"]

EXIT_OK: Final = 0
EXIT_PROBLEM: Final = 1


def add_parser(parser: argparse.ArgumentParser, directory: str) -> None:
    """The arguments of ``memory``: DIR, an action and its texts, --file and --limit."""
    parser.add_argument("dir", metavar="DIR", help=directory)
    parser.add_argument(
        "--file", default="MEMORY.md", metavar="NAME", help="the memory file in DIR (default: %(default)s)"
    )
    parser.add_argument(
        "--limit",
        type=int,
        metavar="N",
        help="the most characters the file may hold (default: 2,200; 1,375 for USER.md)",
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    actions.add_parser(
        "list", help="print the entries", description="Print the entries, as the file holds them."
    )
    add = actions.add_parser("add", help="add an entry", description="Add an entry at the end of the file.")
    add.add_argument("text", metavar="TEXT")
    replace = actions.add_parser(
        "replace", help="replace an entry", description="Replace the one entry that holds OLD by NEW."
    )
    replace.add_argument("old", metavar="OLD", help="a short piece of text found in exactly one entry")
    replace.add_argument("new", metavar="NEW")
    remove = actions.add_parser(
        "remove", help="remove an entry", description="Remove the one entry that holds OLD."
    )
    remove.add_argument("old", metavar="OLD", help="a short piece of text found in exactly one entry")


def run(args: argparse.Namespace, trouble: str | None) -> int:
    """Do what ``args`` ask; ``trouble`` is why DIR is no directory to write in, if it is not."""
    _check_usage(args)
    if trouble is not None:
        say(f"{shown(args.dir)}: {trouble}")
        return EXIT_PROBLEM
    try:
        tool = memory_tool(args.dir, file=args.file, limit=args.limit)
    except OSError as exc:  # the home went away since it was looked at, or cannot be opened
        say(f"{shown(args.dir)}: {exc.strerror or exc}")
        return EXIT_PROBLEM
    out = Output.stdout()
    if args.action != "list" and out.reader_gone():
        raise BrokenPipeError  # before the change: a confirmation nobody can read changes nothing
    try:
        if args.action == "list":
            listed = "".join(_listed(entry) for entry in tool.entries())
        elif args.action == "add":
            usage = tool.add(args.text)
        elif args.action == "replace":
            usage = tool.replace(args.old, args.new)
        else:
            usage = tool.remove(args.old)
    except MemoryToolError as exc:
        say(f"{shown(args.dir)}/{shown(tool.file)}: {shown_text(exc.message)}")
        return EXIT_PROBLEM
    except OSError as exc:
        say(f"{shown(args.dir)}/{shown(tool.file)}: {exc.strerror or exc}")
        return EXIT_PROBLEM
    if args.action == "list":
        out.write(listed.encode())
    else:
        done = {"add": "added", "replace": "replaced", "remove": "removed"}[args.action]
        out.write(f"{done}: {shown_text(tool.holds(usage))}\n".encode())
    return EXIT_OK


def _check_usage(args: argparse.Namespace) -> None:
    """Usage errors (status 2) first, before DIR is looked at, as every command does."""
    parser: argparse.ArgumentParser = args.parser
    if args.limit is not None and args.limit < 1:
        parser.error(f"argument --limit: must be 1 or more, not {args.limit}")
    for option, value in (("--file", args.file), *_texts(args)):
        if from_bytes_not_utf8(value):
            parser.error(f"argument {option}: must be UTF-8 text, not {shown(value)}")
    try:
        check_file(args.file)
    except ValueError as exc:
        parser.error(f"argument --file: {exc}")


def _texts(args: argparse.Namespace) -> list[tuple[str, str]]:
    return [(metavar, getattr(args, name)) for name, metavar in _TEXTS if hasattr(args, name)]


_TEXTS: Final = (("text", "TEXT"), ("old", "OLD"), ("new", "NEW"))


def _listed(entry: str) -> str:
    """An entry as ``list`` prints it: rendered, its lines escaped so that no other line break shows."""
    return "".join(shown_text(line) + "\n" for line in render(entry).removesuffix("\n").split("\n"))
