"""``toolnexus-soul memory DIR ACTION``: a persona's memory file, from the command line.

``list`` prints the entries as the file holds them; ``add TEXT``,
``replace OLD NEW`` and ``remove OLD`` change it, through the same tool a
model uses, and say what the file holds afterwards. With ``--json`` each
prints one JSON object instead: ``call()``'s result, as a model gets it,
and for ``list`` the entries with the usage. The options may stand before
or after the action. Exit statuses: the ``MEMORY_EXIT_STATUSES`` of
``_parser``.
"""

from __future__ import annotations

import argparse
import json
from typing import Final

from .. import MemoryTool, MemoryToolError, memory_tool
from ._commands import said
from ._output import Output, from_bytes_not_utf8, say, shown, shown_text
from ._parser import usage_error

__all__ = ["add_arguments", "run"]

EXIT_OK: Final = 0
EXIT_PROBLEM: Final = 1
_TEXTS: Final = (("text", "TEXT"), ("old", "OLD"), ("new", "NEW"))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments of ``memory``: DIR, an action and its texts; --file, --limit and --json before or
    after the action."""
    parser.add_argument(
        "dir", metavar="DIR", help="a persona's directory: its memory file is the one file written"
    )
    _add_options(parser, argparse.SUPPRESS)
    parser.set_defaults(file="MEMORY.md", limit=None, json=False)
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    listing = actions.add_parser(
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
    for action in (listing, add, replace, remove):
        _add_options(action, argparse.SUPPRESS)


def _add_options(parser: argparse.ArgumentParser, default: object) -> None:
    # SUPPRESS: an option not given leaves what the other place set (before or after the action).
    parser.add_argument(
        "--file", default=default, metavar="NAME", help="the memory file in DIR (default: MEMORY.md)"
    )
    parser.add_argument(
        "--limit",
        type=int,
        default=default,
        metavar="N",
        help="the most characters the file may hold (default: 2,200; 1,375 for USER.md)",
    )
    parser.add_argument(
        "--json",
        action="store_true",
        default=default,
        help="print one JSON object: what the tool's call() gives a model (for list: the entries and usage)",
    )


def run(args: argparse.Namespace) -> int:
    """Do what ``args`` ask: usage errors (status 2) first, then DIR, then the action."""
    for option, value in (("--file", args.file), *_texts(args)):
        if from_bytes_not_utf8(value):
            usage_error(args, f"argument {option}: must be UTF-8 text, not {shown(value)}")
    if args.limit is not None and args.limit < 1:
        usage_error(args, f"argument --limit: must be 1 or more, not {args.limit}")
    try:
        tool = memory_tool(args.dir, file=args.file, limit=args.limit)
    except ValueError as exc:  # checked before DIR is looked at
        usage_error(args, f"argument --file: {exc}")
    except OSError as exc:
        say(f"{shown(args.dir)}: {said(exc)}")
        return EXIT_PROBLEM
    except MemoryToolError as exc:  # refused on a system where the memory laws are untested
        say(f"{shown(args.dir)}: {shown_text(exc.message)}")
        return EXIT_PROBLEM
    with tool:
        return _act(args, tool)


def _act(args: argparse.Namespace, tool: MemoryTool) -> int:
    out = Output.stdout()
    if args.action != "list" and out.reader_gone():
        raise BrokenPipeError  # before the change: a confirmation nobody can read changes nothing
    if args.json:
        return _act_json(args, tool, out)
    added = True
    try:
        if args.action == "list":
            listed = "".join(_listed(entry) for entry in tool.entries())
        elif args.action == "add":
            usage, added = tool.added(args.text)
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
        done = _DONE[args.action] if added else "already there, nothing added"
        out.write(f"{done}: {shown_text(tool.holds(usage))}\n".encode())
    return EXIT_OK


_DONE: Final = {"add": "added", "replace": "replaced", "remove": "removed"}


def _act_json(args: argparse.Namespace, tool: MemoryTool, out: Output) -> int:
    """``--json``: the action's record on standard output, its message on standard error when it failed."""
    record: dict[str, object]
    if args.action == "list":
        try:
            listed, usage = tool.entries(), tool.usage()
        except (MemoryToolError, OSError) as exc:
            message = exc.message if isinstance(exc, MemoryToolError) else exc.strerror or str(exc)
            say(f"{shown(args.dir)}/{shown(tool.file)}: {shown_text(message)}")
            return EXIT_PROBLEM
        record = {"ok": True, "action": "list", "entries": list(listed), **usage._asdict()}
    else:
        arguments = {
            "action": args.action,
            "content": getattr(args, "text", None) or getattr(args, "new", None),
        }
        if args.action != "add":
            arguments["old_text"] = args.old
        record = dict(tool.call(arguments))
        if not record["ok"]:
            say(f"{shown(args.dir)}/{shown(tool.file)}: {shown_text(str(record['message']))}")
    out.write((json.dumps(record, ensure_ascii=False) + "\n").encode())
    return EXIT_OK if record["ok"] else EXIT_PROBLEM


def _texts(args: argparse.Namespace) -> list[tuple[str, str]]:
    return [(metavar, getattr(args, name)) for name, metavar in _TEXTS if hasattr(args, name)]


def _listed(entry: str) -> str:
    """An entry as ``list`` prints it, as ``add`` writes it: ``- `` and its first line, then each further
    line after two spaces; each line escaped (a backslash too), so that no other line break shows and an
    escape and the characters of one never show alike."""
    first, *rest = entry.split("\n")
    lines = ["- " + first, *("  " + line for line in rest)]
    return "".join(shown(line) + "\n" for line in lines)
