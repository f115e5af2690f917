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

from ._memory import MemoryToolError, memory_tool
from ._memory_format import render
from ._output import Output, say, shown

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
    if trouble is not None:
        say(f"{shown(args.dir)}: {trouble}")
        return EXIT_PROBLEM
    if args.limit is not None and args.limit < 1:
        args.parser.error(f"argument --limit: must be 1 or more, not {args.limit}")
    try:
        tool = memory_tool(args.dir, file=args.file, limit=args.limit)
    except ValueError as exc:
        args.parser.error(f"argument --file: {exc}")
    except OSError as exc:  # the home went away since it was looked at, or cannot be opened
        say(f"{shown(args.dir)}: {exc.strerror or exc}")
        return EXIT_PROBLEM
    out = Output.stdout()
    try:
        if args.action == "list":
            out.write("".join(_listed(entry) for entry in tool.entries()).encode())
            return EXIT_OK
        if args.action == "add":
            usage = tool.add(args.text)
        elif args.action == "replace":
            usage = tool.replace(args.old, args.new)
        else:
            usage = tool.remove(args.old)
    except MemoryToolError as exc:
        say(f"{shown(args.dir)}/{shown(tool.file)}: {shown(exc.message)}")
        return EXIT_PROBLEM
    except OSError as exc:
        say(f"{shown(args.dir)}/{shown(tool.file)}: {exc.strerror or exc}")
        return EXIT_PROBLEM
    done = {"add": "added", "replace": "replaced", "remove": "removed"}[args.action]
    out.write(f"{done}: {shown(tool.holds(usage))}\n".encode())
    return EXIT_OK


def _listed(entry: str) -> str:
    """An entry as ``list`` prints it: rendered, each line with what could drive a terminal escaped."""
    return "".join(shown(line) + "\n" for line in render(entry).splitlines())
