"""The memory file's protocol as a state machine: its states, its transitions, its invariants, its recovery.

A change of ``NAME`` is numbered ``T`` (16 hex digits: one more than any
number the directory holds, counted under the lock, so that numbers order
the changes whatever the clock says). Its files are ``.NAME.tmp-T`` (its
*text*) and ``.NAME.was-T`` (its *record*). ``State`` names the states of
a change in the order it goes through them, and from WRITTEN on, what its
files show and what recovery does with them: so the next change can tell,
from the files alone, where a killed one stopped.

``TRANSITIONS`` is the one table of the moves, with the system calls each
makes and what a failure there does (``_disk`` makes them; the suite fails
and kills each call in turn). ``plan`` is the recovery: a pure function
from what the files show (``Found``) to what is kept, merged against what,
and what is removed; ``spent``, what a change that settled leaves unneeded.

The invariants:

I1. A record is whole and synced before its text can go to the name; a
    record cut short is a DRAFT's, so its text is nobody's.
I2. Only the lock's holder makes, renames or removes the tool's files, and
    only names made exactly as it makes them.
I3. A text is removed only when it holds nobody's bytes: WRITTEN, a DRAFT
    (as written, never at the name), LINKED (a name only), or, at SETTLED,
    under a lease, holding exactly what a PLACED change merged from it. A
    record goes before its text, unless it is a PLACED change's (a record
    alone is a PLACED change's, or SPENT).
I4. What a PLACED change merged from a kept file counts, once: a kept file
    is merged against what the newest PLACED record that names it says it
    held (or, if none, its own record), and that record stays while the
    file is kept. A change that is not PLACED merged nothing.
I5. Nothing the tool cannot read is removed, or merged around: a record or
    a kept file that cannot be read stops every change (``_files``).
I6. An operation returns only from SYNCED (or SETTLED), and raises only
    when its change is not PLACED, and then none of it stands; a failure
    of the directory's sync, after PLACED, says the change may stand.
"""

from __future__ import annotations

import enum
import hashlib
import re
from collections.abc import Sequence
from typing import Final, NamedTuple

__all__ = [
    "TOKEN_BYTES",
    "TRANSITIONS",
    "Found",
    "Kept",
    "Names",
    "NewText",
    "Plan",
    "Record",
    "State",
    "Text",
    "Transition",
    "digest",
    "encode",
    "going",
    "names",
    "next_token",
    "parse",
    "plan",
    "spent",
    "tokens",
]

TOKEN_BYTES: Final = 8
_TOKEN: Final = re.compile(rb"[0-9a-f]{%d}" % (2 * TOKEN_BYTES))
_MAGIC: Final = b"toolnexus-soul: a memory change, 3\n"
_OURS: Final = b"toolnexus-soul: "


class State(enum.Enum):
    """The states of a change: what it has done, what its files show, and what recovery does then."""

    LOCKED = "the lock taken, and what earlier changes left sorted (``plan``)"
    READ = "the file read under a lease, the kept files merged in, the new text made: nothing on disk yet"
    WRITTEN = "a text, the new text, synced, without a whole record: nobody's bytes; removed"
    DRAFT = "a record, synced, whose text is its new text as written, not at the name: nobody's; removed"
    HELD = "(no exchange) a record of the file read, whose second name is the text: kept, and merged"
    LINKED = "a text that is another name of the memory file: that name removed"
    PLACED = "the new text went to the name; the text, if there, is the file it replaced: kept, and merged"
    RETURNED = "swapped back: the text is the tool's with a writer's bytes, or a save over it: kept, merged"
    SPENT = "a record alone that no kept file needs: removed"
    SYNCED = "PLACED, and the directory synced: the change returns"
    SETTLED = "what it merged that nobody writes let go, and the records that say nothing removed"


class Transition(NamedTuple):
    """One move of the machine: from, to, the system calls it makes, and what a failure there does."""

    before: State | None
    after: State
    calls: frozenset[str]
    failure: str


def _t(before: State | None, after: State, calls: str, failure: str) -> Transition:
    return Transition(before, after, frozenset(calls.split()), failure)


_S = State
_READS: Final = "open fstat pread close fcntl"
_WRITES: Final = "open fstat fchown fchmod write fsync close fcntl"  # fcntl, close: a try that ends lets go
TRANSITIONS: Final = (
    _t(None, _S.LOCKED, f"stat {_WRITES} flock listdir pread unlink", "raise: nothing done"),
    _t(_S.LOCKED, _S.READ, f"{_READS} stat listdir", "raise: nothing done"),
    _t(_S.READ, _S.WRITTEN, _WRITES, "remove the text; raise"),
    _t(_S.WRITTEN, _S.DRAFT, _WRITES, "remove record, text; raise"),
    _t(_S.DRAFT, _S.PLACED, "stat fcntl renameat2 link unlink close", "remove record, text; raise, or again"),
    _t(_S.DRAFT, _S.HELD, f"{_WRITES} link stat unlink", "remove both changes' files; raise, or again"),
    _t(_S.HELD, _S.PLACED, "rename unlink", "remove both changes' files; raise"),
    _t(_S.PLACED, _S.RETURNED, f"stat {_WRITES} rename renameat2 unlink", "stays PLACED"),
    _t(_S.RETURNED, _S.LOCKED, "", "try again, from the files"),
    _t(_S.PLACED, _S.SYNCED, "fsync fcntl close", "raise: the change may stand"),
    _t(_S.SYNCED, _S.SETTLED, f"{_READS} unlink", "ignored: the next change settles"),
)


class Names(NamedTuple):
    """A change's files: its text ``.FILE.tmp-T`` and its record ``.FILE.was-T``."""

    text: bytes
    record: bytes


def names(file: bytes, token: bytes) -> Names:
    return Names(b"." + file + b".tmp-" + token, b"." + file + b".was-" + token)


def tokens(file: bytes, listed: Sequence[bytes]) -> tuple[set[bytes], set[bytes]]:
    """The tokens of the texts and of the records among ``listed``: only names made exactly so (I2)."""
    prefix = b"." + file + b"."
    texts: set[bytes] = set()
    records: set[bytes] = set()
    for name in listed:
        kind, _, token = name.removeprefix(prefix).partition(b"-")
        if name.startswith(prefix) and _TOKEN.fullmatch(token) and kind in (b"tmp", b"was"):
            (texts if kind == b"tmp" else records).add(token)
    return texts, records


def next_token(taken: set[bytes]) -> int:
    """The next change's number: one more than any in the directory (counted under the lock)."""
    return max((int(token, 16) for token in taken), default=0) + 1


def digest(data: bytes) -> bytes:
    return hashlib.sha256(data).hexdigest().encode()


class NewText(NamedTuple):
    """A change's new text as written to its text file: which file, how long, its SHA-256."""

    ino: int
    size: int
    digest: bytes


class Record(NamedTuple):
    """What a record says: the change's new text (None: HELD, a kept file's plain record), what the file
    it replaced held (``base``), what the files it merged held (``merged``, by token), and, once a return
    is recorded, the file to put back (``back``) and the new text itself (``after``)."""

    new: NewText | None
    base: bytes
    merged: dict[bytes, bytes]
    back: int | None = None
    after: bytes = b""


def encode(record: Record) -> bytes:
    new, back = record.new, record.back
    fields = [b"%d %d %s" % new if new is not None else b"- - -", b"-" if back is None else b"%d" % back]
    fields.append(b"%d %d %d" % (len(record.base), len(record.after), len(record.merged)))
    fields += [b"%s %d" % (token, len(data)) for token, data in record.merged.items()]
    body = record.base + record.after + b"".join(record.merged.values())
    return _MAGIC + b" ".join([*fields, digest(body)]) + b"\n" + body


def parse(data: bytes) -> Record | None:
    """What ``encode`` wrote; None when it is cut short (I1). ValueError: a record of another version."""
    if _MAGIC.startswith(data):
        return None  # cut short at its first line: a change killed before its text went anywhere
    if not data.startswith(_MAGIC):
        if data.startswith(_OURS):
            raise ValueError("a record of another version of toolnexus-soul")
        return None  # not a record: a change's text written before its record is nobody's either
    header, ended, body = data.removeprefix(_MAGIC).partition(b"\n")
    fields = header.split() if ended else []  # a header without its line end is cut short
    try:  # new ino, size, sha | back | base, after, count | (token, size) of each merged | sha of the body
        sizes = [int(size) for size in fields[8:-1:2]]
        if len(fields) != 8 + 2 * int(fields[6]):
            return None
        new = None if fields[0] == b"-" else NewText(int(fields[0]), int(fields[1]), fields[2])
        back, base, after = None if fields[3] == b"-" else int(fields[3]), int(fields[4]), int(fields[5])
    except (ValueError, IndexError):
        return None
    if min(base, after, *sizes) < 0 or base + after + sum(sizes) != len(body) or digest(body) != fields[-1]:
        return None
    at = base + after
    merged = {}
    for kept, size in zip(fields[7:-1:2], sizes, strict=True):
        merged[kept] = body[at : at + size]
        at += size
    return Record(new, body[:base], merged, back, body[base : base + after])


class Text(NamedTuple):
    """A text as found: its inode, what it holds (read when ``ino`` is its record's new text's), its mtime."""

    ino: int
    data: bytes | None
    written: int


class Found(NamedTuple):
    """One token's files as found: its record (None: no whole one) and its text (None: none)."""

    token: bytes
    record: Record | None
    text: Text | None
    record_file: bool = True  # a record file is there (whole, or cut short)
    recorded: int = 0  # when the record was written (ns)


class Kept(NamedTuple):
    """A file kept for someone's bytes: merged against ``base`` (I4)."""

    token: bytes
    base: bytes
    placed: bool  # its record is a PLACED change's: it stays when the file goes (I3)
    changed: int  # ns: the later of its last write and the record its base comes from
    source: bytes  # the token of the record its base comes from


class Plan(NamedTuple):
    """Recovery: the kept files, oldest first, and what to remove (each tuple in order; stop at a failure)."""

    kept: list[Kept]
    remove: list[tuple[bytes, ...]]


def state(found: Found, at_name: int | None) -> State:
    """A token's state, as its files show it (the table above)."""
    record, text = found.record, found.text
    if record is None or text is None:
        alone = State.WRITTEN if text is not None else State.SPENT
        return State.PLACED if record is not None and record.new is not None else alone
    if text.ino == at_name:
        return State.LINKED
    if record.new is not None and text.ino == record.new.ino:
        data = text.data or b""
        written = len(data) == record.new.size and digest(data) == record.new.digest
        return State.DRAFT if written else State.RETURNED
    if record.back is not None and text.ino != record.back:
        return State.RETURNED  # swapped back, and a writer saved over the tool's text meanwhile
    return State.PLACED if record.new is not None else State.HELD


def _own_base(record: Record, text: Text, now: State) -> bytes:
    if now is not State.RETURNED:
        return record.base
    if record.new is not None and text.ino == record.new.ino:
        written = (text.data or b"")[: record.new.size]
        if digest(written) == record.new.digest:
            return written  # the tool's text, appended to while it stood at the name
    return record.after if record.back is not None else record.base


def plan(file: bytes, found: Sequence[Found], at_name: int | None) -> Plan:
    """What earlier changes left: which files are kept, against what each is merged, and what goes."""
    ordered = sorted(found, key=lambda one: one.token)  # by number: 16 hex digits sort as numbers do
    states = {one.token: state(one, at_name) for one in ordered}
    newest: dict[bytes, tuple[Found, Record]] = {}  # kept token -> the newest PLACED record naming it (I4)
    for one in ordered:
        if states[one.token] in (State.PLACED, State.LINKED) and one.record and one.record.new:
            newest.update(dict.fromkeys(one.record.merged, (one, one.record)))
    kept: list[Kept] = []
    for one in ordered:
        if one.record is None or one.text is None or states[one.token] not in _KEEPS:
            continue
        base, source = _own_base(one.record, one.text, states[one.token]), one
        voucher, record = newest.get(one.token, (one, one.record))
        if voucher.token > one.token:
            source, base = voucher, record.merged[one.token]
        placed = states[one.token] is State.PLACED
        changed = max(one.text.written, source.recorded)
        kept.append(Kept(one.token, base, placed, changed, source.token))
    needed = {k.source for k in kept} | {k.token for k in kept}
    remove: list[tuple[bytes, ...]] = []
    for one in ordered:
        text_name, record_name = names(file, one.token)
        texts = (text_name,) if one.text is not None else ()
        records = (record_name,) if one.record_file and one.token not in needed else ()
        now = states[one.token]
        if now in (State.WRITTEN, State.DRAFT, State.SPENT):
            remove.append(records + texts)  # a record before its text (I3)
        elif now is State.LINKED:
            remove.append(texts + records)  # a name only; its record, if a change's, as PLACED
        elif now is State.PLACED and one.text is None:
            remove.append(records)
    return Plan(kept, [each for each in remove if each])


def going(file: bytes, kept: Kept) -> tuple[bytes, ...]:
    """A kept file let go: its text, and first its record unless that is a PLACED change's (I3)."""
    text_name, record_name = names(file, kept.token)
    return (text_name,) if kept.placed else (record_name, text_name)


def spent(
    kept: Sequence[Kept], gone: set[bytes], merged: set[bytes], change: bytes, held: bool
) -> list[bytes]:
    """The records that say nothing any more once the kept files ``gone`` are let go and the PLACED change
    ``change`` merged from ``merged`` (``held``: its text holds the file it replaced); removed at SETTLED
    (I4: none that a staying kept file needs)."""
    staying = [one for one in kept if one.token not in gone]
    needed = {one.token for one in staying} | {
        change if one.token in merged else one.source for one in staying
    }
    alone = {change} | {one.token for one in kept if one.placed and one.token in gone}
    alone |= {one.source for one in kept} - {one.token for one in kept}
    return sorted(alone - needed - ({change} if held else set()))


_KEEPS: Final = (State.PLACED, State.RETURNED, State.HELD)
