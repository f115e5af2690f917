"""The persona's memory: notes in one file of the home, added, replaced and removed without loss.

``memory_tool(dir)`` returns a ``MemoryTool``, the host's API: each
operation makes the file's new text here (``_find``, ``_check_room``) and
puts it in place as one change of ``_disk``; a model's calls go through
``_model``, a consolidation's merge through ``_consolidate``. The rules
are in docs/reference/memory-file.md.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Final, Literal, overload

from .._format import MAX_BOOTSTRAP_FILE_BYTES, WHITESPACE, body_text
from .._options import PathArg, check_files, check_int, home_path
from . import _model
from ._consolidate import Merged, consolidated
from ._disk import MAX_NAME_BYTES, Disk
from ._entries import (
    BULLET,
    Entry,
    check_text,
    decode,
    encode,
    entries,
    same,
    shown,
    with_entry_added,
    with_entry_replaced,
)
from ._errors import AmbiguousMatch, InvalidEntry, MemoryFull, MemoryRefused, NoMatch
from ._model import MemoryCallResult
from ._results import MemorySnapshot, MemoryUsage, MergeReport
from ._words import brief, entries_phrase, listed, quoted, start, starts

if TYPE_CHECKING:
    from anthropic.types import ToolParam
    from openai.types.chat import ChatCompletionFunctionToolParam
    from openai.types.responses import FunctionToolParam

__all__ = ["DEFAULT_LIMITS", "UNTESTED", "MemoryTool", "check_file", "memory_tool"]

# Characters a memory file may hold, by name (Hermes's figures): small, so
# that memory stays a small part of the prompt. Any other name: 2,200.
DEFAULT_LIMITS: Final = {"MEMORY.md": 2200, "USER.md": 1375}
_DEFAULT_LIMIT: Final = 2200
UNTESTED: Final = "TOOLNEXUS_SOUL_MEMORY_UNTESTED"  # set to 1: the tool where its laws are untested


def used_characters(data: bytes) -> int:
    """Characters of the file's body as the soul holds it (trimmed, decoded; at most the cap's)."""
    return len(body_text(data, MAX_BOOTSTRAP_FILE_BYTES))


def _find(text: str, needle: str) -> Entry:
    """The one entry of ``text`` that holds ``needle``, chosen as section 14 says (NoMatch, AmbiguousMatch).

    A ``needle`` that no entry holds and that starts with ``- `` is looked
    for again without it: quoted as the prompt shows the entry's line.
    """
    try:
        return _find_as_given(text, needle)
    except NoMatch as exc:
        item = needle.lstrip(WHITESPACE)
        if not item.startswith(BULLET) or not item[len(BULLET) :].strip(WHITESPACE):
            raise
        not_as_given = exc
    try:
        return _find_as_given(text, item[len(BULLET) :])
    except NoMatch:
        raise not_as_given from None  # said of the text as it was given


def _find_as_given(text: str, needle: str) -> Entry:
    found = entries(text)
    exact = [entry for entry in found if same(shown(entry.text)) == same(needle)]
    if exact:
        return exact[0]
    matches = [entry for entry in found if needle in shown(entry.text)]
    # Copies are compared as old is matched: as entries() shows them, and
    # trimmed as a merge compares (no piece of text tells such entries apart).
    texts = dict.fromkeys(same(shown(entry.text)) for entry in matches)
    if len(texts) == 1:
        return matches[0]  # one entry, or copies of one: the first
    if not matches:
        listed_starts = starts(found)
        there = f"The entries start: {listed(listed_starts, len(found))}" if found else "There are no entries"
        raise NoMatch(
            f"No entry holds {brief(needle)}. {there}. Give a short piece of one entry's text, exactly as it"
            " is written.",
            listed_starts,
        )
    listed_starts = starts(matches)
    raise AmbiguousMatch(
        f"{len(texts):,} entries hold {brief(needle)}: {listed(listed_starts, len(texts))}. "
        "Give a longer piece of text, found in one of them only.",
        listed_starts,
    )


class MemoryTool:
    """The memory of one persona: one file of its home (see ``memory_tool``).

    ``file`` is the file's name, ``limit`` the most characters it may hold,
    ``name`` the tool's name for a model, ``label`` the file's name as
    messages show it.
    """

    def __init__(self, home: bytes, file: str, limit: int) -> None:
        self._disk = Disk(home, file)
        self.file = file
        self.limit = limit
        self.name = _model.tool_name(file)
        self.label = shown(file)  # the name in messages: a name that is not UTF-8 with U+FFFD

    def __repr__(self) -> str:
        closed = ", closed" if self._disk.closed else ""
        return f"MemoryTool({self._disk.home!r}, file={self.file!r}, limit={self.limit}{closed})"

    def close(self) -> None:
        """Let go of the home's directory (the one descriptor the tool holds); closing twice is allowed.

        Every operation of a closed tool raises ValueError. A tool that is
        never closed lets go when it is collected.
        """
        self._disk.close()

    @property
    def closed(self) -> bool:
        return self._disk.closed

    def __enter__(self) -> MemoryTool:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # ---- for hosts ---------------------------------------------------------------------

    def entries(self) -> tuple[str, ...]:
        """The file's entries, in order (bytes that are not UTF-8 shown as U+FFFD)."""
        return tuple(shown(entry.text) for entry in entries(decode(self._disk.read().data)))

    def usage(self) -> MemoryUsage:
        """How full the file is now."""
        return self._usage_of(self._disk.read().data)

    def add(self, text: str) -> MemoryUsage:
        """Add an entry holding ``text`` at the end of the file; the usage after.

        An entry of that very text already there is kept as it is, and none
        added: a call repeated (a confirmation lost) never makes two.
        """
        return self.added(text)[0]

    def added(self, text: str) -> tuple[MemoryUsage, bool]:
        """``add``, and whether an entry was added (False: that very text was there already)."""
        entry = check_text(text)
        fresh = True

        def change(current: str) -> str:
            nonlocal fresh
            fresh = not any(same(shown(old.text)) == entry for old in entries(current))
            return with_entry_added(current, entry) if fresh else current

        return self._usage_of(self._write(change)), fresh

    def replace(self, old: str, new: str) -> MemoryUsage:
        """Replace the one entry that holds ``old`` by one holding ``new``; the usage after."""
        needle = self._needle(old)
        entry = check_text(new)
        return self._usage_of(self._write(lambda text: with_entry_replaced(text, _find(text, needle), entry)))

    def remove(self, old: str) -> MemoryUsage:
        """Remove the one entry that holds ``old``; the usage after."""
        needle = self._needle(old)
        return self._usage_of(self._write(lambda text: with_entry_replaced(text, _find(text, needle), None)))

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
            except InvalidEntry as exc:
                problems.append(exc.message)
        outcome = Merged((), (), ())

        def merge(text: str) -> str:
            nonlocal outcome
            merged, outcome = consolidated(text, snapshot.entries, checked)
            return merged

        if problems:
            return self._report(False, problems, outcome, self._disk.read().data)
        try:
            written = self._write(merge)
        except (MemoryFull, MemoryRefused) as exc:
            return self._report(False, [exc.message], outcome, self._disk.read().data)
        return self._report(True, [], outcome, written)

    def _report(self, applied: bool, problems: list[str], outcome: Merged, data: bytes) -> MergeReport:
        found = tuple(shown(entry.text) for entry in entries(decode(data)))
        return MergeReport(applied, found, *outcome, tuple(problems), self._usage_of(data))

    # ---- for models ----------------------------------------------------------------------

    def description(self) -> str:
        """What the tool tells a model about itself."""
        return _model.description(self)

    def parameters(self, strict: bool = False) -> dict[str, object]:
        """The JSON Schema of the tool's arguments: as OpenAI's strict mode wants it, whatever ``strict``."""
        return _model.parameters()

    @overload
    def definition(
        self, style: Literal["openai"] = "openai", *, name: str | None = None, strict: bool = False
    ) -> ChatCompletionFunctionToolParam: ...

    @overload
    def definition(
        self, style: Literal["openai-responses"], *, name: str | None = None, strict: bool = False
    ) -> FunctionToolParam: ...

    @overload
    def definition(
        self, style: Literal["anthropic"], *, name: str | None = None, strict: bool = False
    ) -> ToolParam: ...

    def definition(
        self, style: str = "openai", *, name: str | None = None, strict: bool = False
    ) -> ChatCompletionFunctionToolParam | FunctionToolParam | ToolParam:
        """The tool as a model's API takes it, typed as that API's SDK types it.

        ``"openai"``: chat completions' function calling (``{"type":
        "function", "function": {...}}``); ``"openai-responses"``: the
        Responses API (``{"type": "function", "name", ...}``);
        ``"anthropic"``: tool use (``{"name", "description",
        "input_schema"}``). ``strict=True`` meets OpenAI's strict mode (every
        property required, unused ones null, no other property).
        """
        return _model.definition(self, style, name, strict)

    def call(self, arguments: Mapping[str, object] | str | bytes) -> MemoryCallResult:
        """Run a model's call of the tool; a JSON-ready result that tells it what happened.

        ``arguments`` is the call's arguments, as a mapping or as the JSON text
        an API hands over. Never raises for what the model sent: a bad call, a
        missing entry or a full memory is ``{"ok": false, ...}`` with a
        message saying how to do better. An I/O error is such a result too.
        """
        return _model.call(self, arguments)

    def holds(self, usage: MemoryUsage) -> str:
        """What the file holds, in words: ``MEMORY.md holds 4 entries, 171 of 2,200 characters``."""
        size = f"{usage.used:,} of {usage.limit:,} characters"
        return f"{self.label} holds {entries_phrase(usage.entry_count)}, {size}"

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

    async def acall(self, arguments: Mapping[str, object] | str | bytes) -> MemoryCallResult:
        return await asyncio.to_thread(self.call, arguments)

    async def asnapshot(self) -> MemorySnapshot:
        return await asyncio.to_thread(self.snapshot)

    async def aapply(self, snapshot: MemorySnapshot, new: Sequence[str]) -> MergeReport:
        return await asyncio.to_thread(self.apply, snapshot, new)

    # ---- inside ------------------------------------------------------------------------

    @staticmethod
    def _needle(old: object) -> str:
        if not isinstance(old, str):
            raise InvalidEntry(f"old_text must be text, not {type(old).__name__}")
        needle = old.replace("\r\n", "\n")
        if not needle:
            raise InvalidEntry("old_text is empty: give a short piece of the entry's text")
        return needle

    def _check_room(self, before: str, after: str) -> None:
        """Refuse a write that takes the file past its limit, or past the soul's byte cap, and grows it."""
        old, new = encode(before), encode(after)
        used_before, used_after = used_characters(old), used_characters(new)
        if used_after > self.limit and used_after > used_before:
            whole = len(body_text(new, len(new)))  # all of it, not only what the soul would keep
            past = f"to {whole:,} of its {self.limit:,} characters"
        elif len(new) > MAX_BOOTSTRAP_FILE_BYTES and len(new) > len(old):
            past = f"past {MAX_BOOTSTRAP_FILE_BYTES:,} bytes, where the soul would cut it"
        else:
            return
        longest = sorted((e.text for e in entries(before)), key=len, reverse=True)[:3]
        if longest:
            begins = "; ".join(quoted(start(text)) for text in longest)
            advice = f"Replace or remove entries first (merge or shorten them); the longest start: {begins}"
        else:  # all of it is a person's text, which the tool never changes
            advice = "It holds no entries: its other text, which this tool never changes, takes the room"
        raise MemoryFull(
            f"This change would take {self.label} {past}. {advice}.", [shown(text) for text in longest]
        )

    def _write(self, change: Callable[[str], str]) -> bytes:
        """Apply ``change`` to the file's text and put it in place, never over another writer's bytes; what
        was put there, which the operation reports on (no read after the change can make it raise)."""

        def transform(data: bytes) -> bytes:
            before = decode(data)
            after = change(before)
            self._check_room(before, after)
            return encode(after)

        return self._disk.change(transform)

    def _usage_of(self, data: bytes) -> MemoryUsage:
        return MemoryUsage(len(entries(decode(data))), used_characters(data), self.limit)


def memory_tool(dir: PathArg, *, file: str = "MEMORY.md", limit: int | None = None) -> MemoryTool:
    """The memory tool of the persona in ``dir``: notes in ``file`` (``USER.md`` is the other usual one).

    ``limit`` is the most characters the file may hold, as the soul holds it
    (trimmed): 2,200 for ``MEMORY.md`` and 1,375 for ``USER.md`` when None,
    2,200 for any other name. ``file`` is a plain name, checked as
    ``files=`` is, that does not start with ``.``. The home must exist;
    the tool writes only inside it, and refuses to once its path leads to
    another directory. On a system where the memory laws are untested (not
    Linux or macOS) it is refused (``MemoryRefused``) unless the environment
    has ``TOOLNEXUS_SOUL_MEMORY_UNTESTED=1``.
    """
    path = home_path(dir)
    name = check_file(file)
    size = DEFAULT_LIMITS.get(name, _DEFAULT_LIMIT) if limit is None else check_int(limit, "limit", 1)
    if not sys.platform.startswith(("linux", "darwin")) and os.environ.get(UNTESTED) != "1":
        raise MemoryRefused(
            f"the memory tool's laws are untested on this system ({sys.platform}): set {UNTESTED}=1 in the"
            " environment to use it anyway (docs/reference/memory-file.md, section 14)"
        )
    try:
        return MemoryTool(path, name, size)
    except OSError as exc:
        exc.filename = os.fspath(dir)  # as given: a str for a str
        raise


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
