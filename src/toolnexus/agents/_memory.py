"""The persona's memory: notes in one file of the home, added, replaced and removed without loss.

``memory_tool(dir)`` returns a ``MemoryTool`` for ``MEMORY.md`` (or another
file of the home). A host calls ``add``, ``replace``, ``remove`` and
``entries``; a model calls the tool through ``definition()`` (the schema
OpenAI-style function calling or Anthropic tool use takes) and ``call()``
(which never raises for a model's bad arguments and tells it what
happened). ``snapshot`` and ``apply`` let an LLM rewrite the whole memory
over minutes, without a lock, and merge the result with what others wrote
meanwhile. Every write goes through ``_memory_disk`` (a lock, a fresh read,
a compare and swap, nothing lost to another writer); what an entry is, is
``_memory_format``. The rules are in docs/format.md, "The memory file".
"""

from __future__ import annotations

import asyncio
import itertools
import json
import re
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import ClassVar, Final, Literal, NamedTuple

from ._args import PathArg, check_files, check_int, dir_bytes
from ._bodies import body_bounds
from ._format import MAX_BOOTSTRAP_FILE_BYTES, WHITESPACE
from ._memory_disk import MAX_NAME_BYTES, Changed, Disk, Raced, Refused, Session, Version
from ._memory_format import (
    Entry,
    EntryError,
    check_text,
    entries,
    with_entries,
    with_entry_added,
    with_entry_replaced,
)

__all__ = [
    "DEFAULT_LIMITS",
    "AmbiguousMatch",
    "InvalidEntry",
    "MemoryFull",
    "MemoryRefused",
    "MemorySnapshot",
    "MemoryTool",
    "MemoryToolError",
    "MemoryUsage",
    "MergeReport",
    "NoMatch",
    "check_file",
    "entries_phrase",
    "memory_tool",
]

# Characters a memory file may hold, by name (Hermes's figures): small, so
# that memory stays a small part of the prompt. Any other name: 2,200.
DEFAULT_LIMITS: Final = {"MEMORY.md": 2200, "USER.md": 1375}
_DEFAULT_LIMIT: Final = 2200
_TRIES: Final = 16  # a writer that keeps changing the file between read and swap, this many times, wins
_START: Final = 40  # characters of an entry shown as its start
_CANDIDATES: Final = 20  # entries' starts listed at the most, however many there are
_ACTIONS: Final = ("add", "replace", "remove")
_TOOL_NAME: Final = re.compile(r"[A-Za-z0-9_-]{1,64}")  # what OpenAI's and Anthropic's APIs accept
_JSON_TYPES: Final = {
    type(None): "null",
    bool: "a boolean",
    int: "a number",
    float: "a number",
    list: "an array",
    dict: "an object",
}


class MemoryToolError(Exception):
    """A memory operation that cannot be done; ``code`` says which kind, the message why and what to do."""

    code: ClassVar[str] = "error"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class InvalidEntry(MemoryToolError, ValueError):
    """The text cannot be an entry: empty, a blank line in it, a control character."""

    code = "invalid"


class NoMatch(MemoryToolError, LookupError):
    """No entry holds the text given; ``candidates`` are the starts of the entries there are."""

    code = "no_match"

    def __init__(self, message: str, candidates: Sequence[str]) -> None:
        super().__init__(message)
        self.candidates = tuple(candidates)


class AmbiguousMatch(MemoryToolError, LookupError):
    """More than one entry holds the text given; ``candidates`` are their starts."""

    code = "ambiguous"

    def __init__(self, message: str, candidates: Sequence[str]) -> None:
        super().__init__(message)
        self.candidates = tuple(candidates)


class MemoryFull(MemoryToolError):
    """A write would take the file past its limit (or the byte cap); ``longest``: its longest entries."""

    code = "full"

    def __init__(self, message: str, longest: Sequence[str]) -> None:
        super().__init__(message)
        self.longest = tuple(longest)


class MemoryRefused(MemoryToolError):
    """The file cannot be written safely: a symlink, not a regular file, the home replaced, too large."""

    code = "refused"


class MemoryUsage(NamedTuple):
    """How full a memory file is: its entries, and its characters as the soul holds them, and its limit."""

    entries: int
    used: int
    limit: int


class MemorySnapshot(NamedTuple):
    """The entries of a memory file at one moment: what a consolidation rewrites."""

    entries: tuple[str, ...]


class MergeReport(NamedTuple):
    """What ``apply`` did with a consolidation's entries.

    ``applied`` says whether the file was written; ``entries`` are its
    entries afterwards (as they were, if not). ``kept_added`` are entries
    written since the snapshot, kept after the new ones; ``dropped_removed``
    are entries of the new list that were removed since the snapshot, and
    stay removed; ``removed_unmatched`` are entries removed since that the
    new list does not hold as they were (it may hold them rewritten: a host
    may want to look). ``problems`` says, in words, why nothing was written.
    """

    applied: bool
    entries: tuple[str, ...]
    kept_added: tuple[str, ...]
    dropped_removed: tuple[str, ...]
    removed_unmatched: tuple[str, ...]
    problems: tuple[str, ...]
    usage: MemoryUsage


def entries_phrase(count: int) -> str:
    """``1 entry``, ``2 entries``."""
    return "1 entry" if count == 1 else f"{count:,} entries"


def _decode(data: bytes) -> str:
    # Bytes that are not UTF-8 survive a rewrite exactly (surrogateescape).
    return data.decode("utf-8", "surrogateescape")


def _encode(text: str) -> bytes:
    return text.encode("utf-8", "surrogateescape")


def _shown(text: str) -> str:
    """An entry as a person or a model reads it: bytes that are not UTF-8 as U+FFFD."""
    return _encode(text).decode("utf-8", "replace")


def _start(text: str) -> str:
    shown = _shown(text).replace("\n", " ")
    return shown if len(shown) <= _START else shown[: _START - 1] + "…"


def _same(text: str) -> str:
    """What two entries' texts are compared by in a merge: trimmed, ``\r\n`` as ``\n``."""
    return text.replace("\r\n", "\n").strip(WHITESPACE)


def _starts(found: Sequence[Entry]) -> list[str]:
    """The starts of the first entries of ``found`` (copies once), as many as a message lists."""
    starts = dict.fromkeys(_start(entry.text) for entry in found)
    return list(itertools.islice(starts, _CANDIDATES))


def _listed(starts: list[str], of: int) -> str:
    more = of - len(starts)
    return "; ".join(map(repr, starts)) + (f" and {more:,} more" if more > 0 else "")


def _tool_name(file: str) -> str:
    """The tool's name for ``file``, as model APIs take names: ``memory``, ``user_memory``..."""
    if file == "MEMORY.md":
        return "memory"
    stem = file.rsplit(".", 1)[0] if "." in file else file
    stem = re.sub(r"[^a-z0-9_-]+", "_", stem.lower()).strip("_")[: 64 - len("_memory")]
    return f"{stem}_memory" if stem else "memory"


def _brief(value: object) -> str:
    """A model's value in a message: text shortened, anything else as JSON names it (whatever its size)."""
    if isinstance(value, str):
        return repr(value if len(value) <= _START else value[: _START - 1] + "…")
    return _JSON_TYPES.get(type(value), type(value).__name__)


def _used(data: bytes) -> int:
    """Characters of the file's body as the soul holds it (trimmed, decoded)."""
    start, end = body_bounds(data, MAX_BOOTSTRAP_FILE_BYTES)
    return len(data[start:end].decode("utf-8", "replace"))


class MemoryTool:
    """The memory of one persona: one file of its home (see ``memory_tool``)."""

    def __init__(self, home: bytes, file: str, limit: int) -> None:
        self._disk = Disk(home, file)
        self.file = file
        self.limit = limit
        self.name = _tool_name(file)
        self._label = _shown(file)  # the name in messages: a name that is not UTF-8 with U+FFFD

    def __repr__(self) -> str:
        return f"MemoryTool({self._disk.home!r}, file={self.file!r}, limit={self.limit})"

    # ---- for hosts ---------------------------------------------------------------------

    def entries(self) -> tuple[str, ...]:
        """The file's entries, in order (bytes that are not UTF-8 shown as U+FFFD)."""
        return tuple(_shown(entry.text) for entry in entries(_decode(self._read().data)))

    def usage(self) -> MemoryUsage:
        """How full the file is now."""
        data = self._read().data
        return MemoryUsage(len(entries(_decode(data))), _used(data), self.limit)

    def add(self, text: str) -> MemoryUsage:
        """Add an entry holding ``text`` at the end of the file; the usage after."""
        entry = self._text(text, "content")
        return self._rewrite(lambda current: with_entry_added(current, entry))

    def replace(self, old: str, new: str) -> MemoryUsage:
        """Replace the one entry that holds ``old`` by one holding ``new``; the usage after."""
        needle = self._needle(old)
        entry = self._text(new, "content")
        return self._rewrite(lambda text: with_entry_replaced(text, self._find(text, needle), entry))

    def remove(self, old: str) -> MemoryUsage:
        """Remove the one entry that holds ``old``; the usage after."""
        needle = self._needle(old)
        return self._rewrite(lambda text: with_entry_replaced(text, self._find(text, needle), None))

    # ---- consolidation -----------------------------------------------------------------

    def snapshot(self) -> MemorySnapshot:
        """The entries now, for a consolidation to rewrite (no lock is held meanwhile)."""
        return MemorySnapshot(self.entries())

    def apply(self, snapshot: MemorySnapshot, new: Sequence[str]) -> MergeReport:
        """Replace the entries of ``snapshot`` by ``new``, keeping what others wrote since.

        Entries added since the snapshot are kept (after ``new``); entries
        removed since stay removed (left out of ``new``); other text of the
        file stays as it is. Nothing is written, and ``problems`` says why,
        when an entry of ``new`` cannot be one or the result would not fit
        the limit: nothing is dropped.
        """
        if not isinstance(snapshot, MemorySnapshot):
            raise TypeError(f"snapshot must be a MemorySnapshot, not {type(snapshot).__name__}")
        if isinstance(new, (str, bytes)) or not isinstance(new, Sequence):
            raise TypeError(f"new must be a sequence of entries, not {type(new).__name__}")
        problems: list[str] = []
        checked: list[str] = []
        as_held = set(snapshot.entries)
        for index, text in enumerate(new):
            if isinstance(text, str) and text in as_held:  # an entry as the file held it: kept as it is
                checked.append(text)
                continue
            try:
                checked.append(check_text(text, f"new[{index}]"))
            except EntryError as exc:
                problems.append(str(exc))
        outcome: dict[str, tuple[str, ...]] = {}

        def merge(text: str) -> str:
            now = entries(text)
            shown = [_shown(entry.text) for entry in now]
            before = Counter(map(_same, snapshot.entries))
            added = Counter(map(_same, shown)) - before
            removed = before - Counter(map(_same, shown))
            in_file: dict[str, list[Entry]] = {}
            for entry, seen in zip(now, shown, strict=True):
                in_file.setdefault(_same(seen), []).append(entry)
            merged: list[Entry | str] = []
            dropped = []
            for entry_text in checked:
                same = _same(entry_text)
                if removed[same] > 0:
                    removed[same] -= 1
                    dropped.append(entry_text)
                elif in_file.get(same):  # unchanged: the file's own lines, byte for byte
                    merged.append(in_file[same].pop(0))
                else:
                    merged.append(entry_text)
            kept = []
            for entry, seen in zip(now, shown, strict=True):
                if added[_same(seen)] > 0:
                    added[_same(seen)] -= 1
                    kept.append(entry)
            unmatched = []
            for entry_text in snapshot.entries:
                if removed[_same(entry_text)] > 0:
                    removed[_same(entry_text)] -= 1
                    unmatched.append(entry_text)
            outcome.update(
                kept=tuple(_shown(entry.text) for entry in kept),
                dropped=tuple(dropped),
                unmatched=tuple(unmatched),
            )
            return with_entries(text, [*merged, *kept])

        if problems:
            return self._report(False, problems, outcome)
        try:
            self._rewrite(merge)
        except (MemoryFull, MemoryRefused) as exc:
            return self._report(False, [exc.message], outcome)
        return self._report(True, [], outcome)

    def _report(
        self, applied: bool, problems: list[str], outcome: Mapping[str, tuple[str, ...]]
    ) -> MergeReport:
        return MergeReport(
            applied,
            self.entries(),
            outcome.get("kept", ()),
            outcome.get("dropped", ()),
            outcome.get("unmatched", ()),
            tuple(problems),
            self.usage(),
        )

    # ---- for models ----------------------------------------------------------------------

    def description(self) -> str:
        """What the tool tells a model about itself."""
        return (
            f"Your long-term memory: short notes kept in {self._label}, which is part of your system "
            "prompt at the start of every session. A change you make now shows in your prompt from the "
            "next session, not in this one. Keep durable facts worth remembering (the user's "
            "preferences, decisions, lessons learned), one short fact per entry. Actions: 'add' a new "
            "entry (content); 'replace' the one entry holding old_text, a short piece of its text, by "
            f"content; 'remove' the one entry holding old_text. The memory holds at most {self.limit:,} "
            "characters: when it is full, replace or remove entries (merge or shorten them) before "
            "adding."
        )

    def parameters(self) -> dict[str, object]:
        """The JSON Schema of the tool's arguments."""
        return {
            "type": "object",
            "properties": {
                "action": {
                    "type": "string",
                    "enum": ["add", "replace", "remove"],
                    "description": "add a new entry, replace an entry, or remove one",
                },
                "content": {
                    "type": "string",
                    "description": "add: the new entry; replace: the entry's new text. One paragraph, short.",
                },
                "old_text": {
                    "type": "string",
                    "description": "replace, remove: a short piece of text found in exactly one entry",
                },
            },
            "required": ["action"],
            "additionalProperties": False,
        }

    def definition(
        self, style: Literal["openai", "anthropic"] = "openai", *, name: str | None = None
    ) -> dict[str, object]:
        """The tool as a model's API takes it: ``"openai"`` (function calling), ``"anthropic"`` (tool use)."""
        tool_name = self.name if name is None else name
        if not isinstance(tool_name, str):
            raise TypeError(f"name must be a str, not {type(tool_name).__name__}")
        if not _TOOL_NAME.fullmatch(tool_name):
            raise ValueError(
                f"name must be 1 to 64 letters, digits, '_' or '-' (what model APIs take), not {tool_name!r}"
            )
        if style == "openai":
            function = {"name": tool_name, "description": self.description(), "parameters": self.parameters()}
            return {"type": "function", "function": function}
        if style == "anthropic":
            return {"name": tool_name, "description": self.description(), "input_schema": self.parameters()}
        raise ValueError(f"style must be 'openai' or 'anthropic', got {style!r}")

    def call(self, arguments: Mapping[str, object] | str | bytes) -> dict[str, object]:
        """Run a model's call of the tool; a JSON-ready result that tells it what happened.

        ``arguments`` is the call's arguments, as a mapping or as the JSON text
        an API hands over. Never raises for what the model sent: a bad call, a
        missing entry or a full memory is ``{"ok": false, ...}`` with a
        message saying how to do better. An I/O error is such a result too.
        """
        action: object = None
        try:
            parsed = _arguments(arguments)
            action = parsed.get("action")
            usage = self._run(parsed)
        except MemoryToolError as exc:
            return self._failure(action, exc.code, exc.message, exc)
        except OSError as exc:
            return self._failure(
                action, "failed", f"the memory file could not be used: {exc.strerror or exc}", exc
            )
        verb = {"add": "Added the entry", "replace": "Replaced the entry", "remove": "Removed the entry"}[
            str(action)
        ]
        return {
            "ok": True,
            "action": action,
            "message": f"{verb}. {self.holds(usage)}. The change shows in your prompt from the next session.",
            **usage._asdict(),
        }

    def _run(self, parsed: dict[str, object]) -> MemoryUsage:
        action = parsed.get("action")
        unknown = [key for key in parsed if key not in ("action", "content", "old_text")]
        if unknown:
            raise InvalidEntry(
                f"unknown argument {_brief(unknown[0])}: the arguments are action, content and old_text"
            )
        if action == "add":
            return self.add(_argument(parsed, "content"))
        if action == "replace":
            return self.replace(_argument(parsed, "old_text"), _argument(parsed, "content"))
        if action == "remove":
            return self.remove(_argument(parsed, "old_text"))
        raise InvalidEntry(f"action must be 'add', 'replace' or 'remove', not {_brief(action)}")

    def _failure(self, action: object, code: str, message: str, exc: Exception) -> dict[str, object]:
        # The action as called, or None: a model's other text goes in the message only, cut and escaped.
        result: dict[str, object] = {"ok": False, "action": action if action in _ACTIONS else None}
        result["error"] = code
        try:
            usage: MemoryUsage | None = self.usage()
        except (OSError, MemoryToolError):  # the file cannot even be read: say so without the usage
            usage = None
        if isinstance(exc, (NoMatch, AmbiguousMatch)):
            result["candidates"] = list(exc.candidates)
        if isinstance(exc, MemoryFull):
            result["longest"] = list(exc.longest)
        sentence = message if message.endswith(".") else message + "."
        result["message"] = sentence if usage is None else f"{sentence} {self.holds(usage)}."
        if usage is not None:
            result.update(usage._asdict())
        return result

    def holds(self, usage: MemoryUsage) -> str:
        """What the file holds, in words: ``MEMORY.md holds 4 entries, 171 of 2,200 characters``."""
        size = f"{usage.used:,} of {usage.limit:,} characters"
        return f"{self._label} holds {entries_phrase(usage.entries)}, {size}"

    # ---- async, for asyncio hosts: the work runs in a thread ----------------------------

    async def aentries(self) -> tuple[str, ...]:
        return await asyncio.to_thread(self.entries)

    async def ausage(self) -> MemoryUsage:
        return await asyncio.to_thread(self.usage)

    async def aadd(self, text: str) -> MemoryUsage:
        return await asyncio.to_thread(self.add, text)

    async def areplace(self, old: str, new: str) -> MemoryUsage:
        return await asyncio.to_thread(self.replace, old, new)

    async def aremove(self, old: str) -> MemoryUsage:
        return await asyncio.to_thread(self.remove, old)

    async def acall(self, arguments: Mapping[str, object] | str | bytes) -> dict[str, object]:
        return await asyncio.to_thread(self.call, arguments)

    async def asnapshot(self) -> MemorySnapshot:
        return await asyncio.to_thread(self.snapshot)

    async def aapply(self, snapshot: MemorySnapshot, new: Sequence[str]) -> MergeReport:
        return await asyncio.to_thread(self.apply, snapshot, new)

    # ---- inside ------------------------------------------------------------------------

    def _read(self) -> Version:
        try:
            return self._disk.read()
        except Refused as exc:
            raise MemoryRefused(str(exc.strerror or exc)) from None

    @contextmanager
    def _locked(self) -> Iterator[Session]:
        """The file, locked for one operation; a refusal from the disk is the tool's own error."""
        try:
            with self._disk.session() as session:
                yield session
        except Refused as exc:
            raise MemoryRefused(str(exc.strerror or exc)) from None

    @staticmethod
    def _text(text: object, what: str) -> str:
        try:
            return check_text(text, what)
        except EntryError as exc:
            raise InvalidEntry(str(exc)) from None

    @staticmethod
    def _needle(old: object) -> str:
        if not isinstance(old, str):
            raise InvalidEntry(f"old_text must be text, not {type(old).__name__}")
        needle = old.replace("\r\n", "\n")
        if not needle:
            raise InvalidEntry("old_text is empty: give a short piece of the entry's text")
        return needle

    @staticmethod
    def _find(text: str, needle: str) -> Entry:
        found = entries(text)
        matches = [entry for entry in found if needle in _shown(entry.text)]
        # Copies are compared as old is matched: as entries() shows them, and
        # trimmed as a merge compares (no piece of text tells such entries apart).
        texts = dict.fromkeys(_same(_shown(entry.text)) for entry in matches)
        if len(texts) == 1:
            return matches[0]  # one entry, or copies of one: the first
        if not matches:
            starts = _starts(found)
            raise NoMatch(
                f"No entry holds {_brief(needle)}. "
                + (f"The entries start: {_listed(starts, len(found))}." if found else "There are no entries.")
                + " Give a short piece of one entry's text, exactly as it is written.",
                starts,
            )
        starts = _starts(matches)
        raise AmbiguousMatch(
            f"{len(texts):,} entries hold {_brief(needle)}: {_listed(starts, len(texts))}. "
            "Give a longer piece of text, found in one of them only.",
            starts,
        )

    def _check_room(self, before: str, after: str) -> None:
        """Refuse a write that takes the file past its limit, or past the soul's byte cap, and grows it."""
        old, new = _encode(before), _encode(after)
        used_before, used_after = _used(old), _used(new)
        if used_after > self.limit and used_after > used_before:
            past = f"to {used_after:,} of its {self.limit:,} characters"
        elif len(new) > MAX_BOOTSTRAP_FILE_BYTES and len(new) > len(old):
            past = f"past {MAX_BOOTSTRAP_FILE_BYTES:,} bytes, where the soul would cut it"
        else:
            return
        longest = sorted((e.text for e in entries(before)), key=len, reverse=True)[:3]
        if longest:
            advice = (
                "Replace or remove entries first (merge or shorten them); the longest start: "
                + "; ".join(repr(_start(text)) for text in longest)
            )
        else:  # all of it is a person's text, which the tool never changes
            advice = "It holds no entries: its other text, which this tool never changes, takes the room"
        raise MemoryFull(
            f"This change would take {self._label} {past}. {advice}.", [_shown(text) for text in longest]
        )

    def _rewrite(self, change: Callable[[str], str]) -> MemoryUsage:
        """Apply ``change`` to the file's text and put it in place, never over another writer's."""
        with self._locked() as session:
            for _ in range(_TRIES):
                version = session.read()
                before = _decode(version.data)
                after = change(before)
                self._check_room(before, after)
                try:
                    session.publish(version, _encode(after))
                except (Changed, Raced):
                    continue  # another writer's save came first: redo the change on it
                return self._usage_of(session.read().data)
            raise MemoryRefused(f"{self._label} kept changing while it was rewritten: try again")

    def _usage_of(self, data: bytes) -> MemoryUsage:
        return MemoryUsage(len(entries(_decode(data))), _used(data), self.limit)


def _arguments(arguments: object) -> dict[str, object]:
    """A model's arguments as a dict: given as one, or as JSON text."""
    if isinstance(arguments, (str, bytes)):
        try:
            arguments = json.loads(arguments)
        except ValueError as exc:
            raise InvalidEntry(f"the arguments are not JSON: {exc}") from None
        except RecursionError:
            raise InvalidEntry("the arguments are not JSON this tool can take: nested too deeply") from None
    if not isinstance(arguments, Mapping):
        raise InvalidEntry(f"the arguments must be an object, not {_brief(arguments)}")
    return dict(arguments)


def _argument(parsed: Mapping[str, object], key: str) -> str:
    if key not in parsed:
        raise InvalidEntry(f"{parsed.get('action')} needs {key}")
    value = parsed[key]
    if not isinstance(value, str):
        raise InvalidEntry(f"{key} must be text, not {_brief(value)}")
    return value


def memory_tool(dir: PathArg, *, file: str = "MEMORY.md", limit: int | None = None) -> MemoryTool:
    """The memory tool of the persona in ``dir``: notes in ``file`` (``USER.md`` is the other usual one).

    ``limit`` is the most characters the file may hold, as the soul holds it
    (trimmed): 2,200 for ``MEMORY.md`` and 1,375 for ``USER.md`` when None,
    2,200 for any other name. ``file`` is a plain name, checked as
    ``files=`` is, that does not start with ``.``. The home must exist;
    the tool writes only inside it, and refuses to once its path leads to
    another directory.
    """
    path = dir_bytes(dir)
    name = check_file(file)
    size = DEFAULT_LIMITS.get(name, _DEFAULT_LIMIT) if limit is None else check_int(limit, "limit", 1)
    return MemoryTool(path, name, size)


def check_file(file: object) -> str:
    """``memory_tool``'s ``file``: a plain name, checked as ``files=`` is, not starting with ``.``."""
    if not isinstance(file, str):
        raise TypeError(f"file must be a str, not {type(file).__name__}")
    try:
        (name,) = check_files([file])
    except ValueError:
        raise ValueError(f"file must be a plain file name, not {file!r}") from None
    if name.startswith("."):  # the tool's own lock and temporary files are named so
        raise ValueError(f"file must not start with '.', as {file!r} does: the tool's own files do")
    if len(name.encode()) > MAX_NAME_BYTES:  # its temporary files' names would be too long to make
        raise ValueError(f"file must be a name of at most {MAX_NAME_BYTES} bytes, not {len(name.encode()):,}")
    return name
