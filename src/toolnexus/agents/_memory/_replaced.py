"""Files the tool replaced, kept while another writer may still write into them, and merged.

A swap puts the tool's new file at the name; the file that stood there may
still be open in another process (a shell's ``exec 3>>``, an editor paused
between its truncate and its write, an appender that opened it just before
the swap). Its bytes must not be lost, so such a file is kept, beside the
memory file, as ``.NAME.tmp-T``, with a record ``.NAME.was-T``. ``T`` is
the token of the swap: 16 hex digits.

A record is written and synced before its swap, so that a kill or a power
loss at any instant leaves one that can be read whole. It says what the
file replaced was and held (the *base*), what the change's new text was
(written as ``.NAME.tmp-T`` until the swap), and what each kept file it
merged held then. ``find`` reads what the tool left from that alone: a
``.tmp-T`` that is the new text, as written, was never swapped in and goes;
any other file there holds someone's bytes and is kept, whatever file it
is (an editor's save that landed just before the swap is not the file
read). What a new text merged counts as merged only once that new text is
in place: then a merge is never made twice, even when the change that made
it was killed before it could say so.

At each change, each ``Replaced`` merges what was written into its file
since its base (``_merge3``) into the text the change is built on. After
the change is in place, ``settle`` deletes the ones no process can still
write into (a read lease on them is granted: ``_system.read_lease``), and
brings the record of the others up to what was merged. Where leases cannot
tell (another system, a file of another owner), a kept file goes once it
has been unchanged for ``KEEP_UNSEEN`` seconds, or when more than
``MAX_KEPT`` are kept, the oldest unchanged first.
"""

from __future__ import annotations

import hashlib
import os
import re
import secrets
import time
from collections.abc import Sequence
from contextlib import suppress
from typing import Final, NamedTuple

from ._merge3 import merge3
from ._system import Folder, Lease, lease_broken, read_lease, release_lease

__all__ = [
    "KEEP_UNSEEN",
    "MAX_KEPT",
    "WAIT_FOR_WRITERS",
    "NewText",
    "Replaced",
    "Seen",
    "find",
    "fold",
    "forget",
    "merged",
    "names",
    "new_text",
    "new_token",
    "record",
    "rewrite",
    "settle",
    "write_all",
]

WAIT_FOR_WRITERS: Final = 0.25  # seconds a change waits for a writer that has a file open
KEEP_UNSEEN: Final = 60.0  # seconds a kept file that leases cannot vouch for stays unchanged before it goes
MAX_KEPT: Final = 32  # kept files that leases cannot vouch for, at most
TOKEN_BYTES: Final = 8
_TOKEN: Final = re.compile(rb"[0-9a-f]{%d}" % (2 * TOKEN_BYTES))
_MAGIC: Final = b"toolnexus-soul: what a replaced memory file held, 2\n"
_READ_FLAGS: Final = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)


class Replaced(NamedTuple):
    """One kept file: its token, the inode it is, when its record was written, and what it held then."""

    token: bytes
    ident: tuple[int, int]  # st_dev, st_ino
    since: int  # time.time_ns() of the record: the order of the swaps, and how long it is unchanged
    base: bytes
    advanced: bool = False  # base is what a later change merged, which its own record does not say yet


class NewText(NamedTuple):
    """A change's new text, as written to ``.NAME.tmp-T`` before its swap."""

    ident: tuple[int, int]
    size: int
    digest: bytes  # sha256, hex


def new_text(fd: int, data: bytes) -> NewText:
    return NewText(_ident(os.fstat(fd)), len(data), _digest(data))


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def names(file: bytes, token: bytes) -> tuple[bytes, bytes]:
    """The kept file's name and its record's."""
    return b"." + file + b".tmp-" + token, b"." + file + b".was-" + token


def new_token() -> bytes:
    return secrets.token_hex(TOKEN_BYTES).encode()


def _digest(data: bytes) -> bytes:
    return hashlib.sha256(data).hexdigest().encode()


def record(
    folder: Folder,
    file: bytes,
    token: bytes,
    ident: tuple[int, int],
    base: bytes,
    *,
    new: NewText | None = None,
    merged: Sequence[tuple[bytes, bytes]] = (),
) -> None:
    """Write, and sync, the record of the file ``ident``, kept (or to be) as ``.FILE.tmp-TOKEN``.

    It held ``base``; ``new`` is the change's new text, which ``.tmp-TOKEN``
    holds until the swap; ``merged`` says, per kept file's token, what the
    new text merged from it. Synced, so that no crash leaves a swap done and
    its record empty; a record cut short (the tool killed while writing it,
    before its swap) fails its checksum and counts as none.
    """
    body = base + b"".join(data for _, data in merged)
    fields = [b"%d %d %d" % (*ident, time.time_ns())]
    fields.append(b"%d %d %d %s" % (*new.ident, new.size, new.digest) if new is not None else b"- - - -")
    fields.append(b"%d %d" % (len(base), len(merged)))
    fields += [b"%s %d" % (kept, len(data)) for kept, data in merged]
    fields.append(_digest(body))
    fd = folder.open(names(file, token)[1], os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        write_all(fd, _MAGIC + b" ".join(fields) + b"\n" + body)
        os.fsync(fd)
    finally:
        os.close(fd)


def rewrite(folder: Folder, file: bytes, token: bytes, ident: tuple[int, int], base: bytes) -> None:
    """Make the record of ``.FILE.tmp-TOKEN`` say only that it is ``ident`` and held ``base``.

    Written under a token of its own, then renamed over the old record: one
    whole record names the kept file at every instant (a record alone is
    cleared by ``find``).
    """
    scratch = new_token()
    record(folder, file, scratch, ident, base)
    folder.rename(names(file, scratch)[1], names(file, token)[1])


class _Record(NamedTuple):
    ident: tuple[int, int]
    since: int
    base: bytes
    new: NewText | None
    merged: dict[bytes, bytes]


def _load(folder: Folder, name: bytes) -> _Record | None:
    """A record; None when it is not a whole record of ours."""
    try:
        fd = folder.open(name, _READ_FLAGS)
    except OSError:
        return None
    try:
        data = b"".join(iter(lambda: os.read(fd, 1 << 20), b""))
    finally:
        os.close(fd)
    return _parse(data)


def _parse(data: bytes) -> _Record | None:
    """What ``record`` wrote; None when it is cut short, or not ours."""
    header, _, body = data.removeprefix(_MAGIC).partition(b"\n")
    fields = header.split()
    try:
        if not data.startswith(_MAGIC) or len(fields) < 10 or _digest(body) != fields[-1]:
            raise ValueError("cut short, or not ours")
        dev, ino, since, base_size, count = (int(fields[index]) for index in (0, 1, 2, 7, 8))
        new = (
            None
            if fields[3] == b"-"
            else NewText((int(fields[3]), int(fields[4])), int(fields[5]), fields[6])
        )
        sizes = [int(size) for size in fields[10:-1:2]]
        whole = len(fields) == 10 + 2 * count and base_size + sum(sizes) == len(body)
        if not whole or min([base_size, *sizes]) < 0:
            raise ValueError("not a whole record")
    except ValueError:
        return None
    merged = {}
    at = base_size
    for kept, size in zip(fields[9:-1:2], sizes, strict=True):
        merged[kept] = body[at : at + size]
        at += size
    return _Record((dev, ino), since, body[:base_size], new, merged)


def _remove(folder: Folder, *found: bytes) -> None:
    """Remove these names, in order: a record before its kept file.

    So a record of a new text never outlives that text's ``.tmp-T`` unless
    the text went in place (``_in_place``).
    """
    for name in found:
        with suppress(FileNotFoundError, IsADirectoryError, PermissionError):  # a directory: not ours
            folder.unlink(name)


def find(folder: Folder, file: bytes) -> list[Replaced]:
    """The kept files of ``file``, oldest first; what a killed tool left that holds nobody's bytes goes.

    That is a new text never swapped in, or swapped back, that nobody wrote
    into (``.tmp-T`` as its record says it was written), a file without a
    whole record (records are synced before any swap: only a new text
    written before its record lacks one), a record whose file is gone, and
    an extra name of the memory file itself (a tool killed between the two
    steps of a swap where renames cannot exchange). Any other ``.tmp-T`` is
    someone's: the file the change read, or a save that stood at the name
    when the tool swapped, or the new text with what a writer wrote into it
    while it stood there. Only names made exactly as the tool makes them are
    looked at: another memory file's (``MEMORY.md.tmp-notes``) never.
    """
    try:
        listed = folder.names()
    except OSError:
        return []
    prefix = b"." + file + b"."
    temps: set[bytes] = set()
    records: set[bytes] = set()
    for name in listed:
        if not name.startswith(prefix):
            continue
        kind, _, token = name[len(prefix) :].partition(b"-")
        if _TOKEN.fullmatch(token):
            (temps if kind == b"tmp" else records if kind == b"was" else set()).add(token)
    try:
        current: tuple[int, int] | None = _ident(folder.stat(file))
    except OSError:
        current = None
    kept: list[Replaced] = []
    swapped: list[_Record] = []  # records whose new text went in place: what they merged is merged
    for token in sorted(temps | records):
        temp, was = names(file, token)
        loaded = _load(folder, was) if token in records else None
        try:
            ident = _ident(folder.stat(temp)) if token in temps else None
        except OSError:
            ident = None
        merged = False  # does this record say what is merged, of kept files still kept?
        if loaded is not None and _in_place(loaded, ident, current) and not temps.isdisjoint(loaded.merged):
            swapped.append(loaded)
            merged = True
        if ident is None or ident == current:  # a record alone, or an extra name of the memory file
            # The record of a new text in place stays while the files it merged are kept.
            _remove(folder, *(() if merged else (was,)), *(() if ident is None else (temp,)))
            continue
        if loaded is None or (base := _base(folder, temp, loaded, ident)) is None:
            _remove(folder, was, temp)
            continue
        kept.append(Replaced(token, ident, loaded.since, base))
    advanced: dict[bytes, tuple[int, bytes]] = {}
    for loaded in sorted(swapped, key=lambda loaded: loaded.since):  # a later merge goes further
        advanced.update((token, (loaded.since, data)) for token, data in loaded.merged.items())
    kept = [
        replaced._replace(base=advanced[replaced.token][1], advanced=True)
        if advanced.get(replaced.token, (0, b""))[0] > replaced.since  # else its own record is newer
        else replaced
        for replaced in kept
    ]
    return sorted(kept, key=lambda replaced: replaced.since)


def _in_place(loaded: _Record, ident: tuple[int, int] | None, current: tuple[int, int] | None) -> bool:
    """Was the record's new text put in place? Not while ``.tmp-T`` is that text, apart from the name.

    ``.tmp-T`` is renamed over the name (then it is gone), exchanged with the
    file at the name (then it is another file), or linked to the name (then
    it is the file at the name); the record goes before it whenever the new
    text is thrown away, and is made plain when it is swapped back.
    """
    return loaded.new is not None and (ident is None or ident != loaded.new.ident or ident == current)


def _base(folder: Folder, temp: bytes, loaded: _Record, ident: tuple[int, int]) -> bytes | None:
    """What ``temp`` is to be merged against, or None when it holds nobody's bytes."""
    if loaded.new is None or ident != loaded.new.ident:
        return loaded.base  # the file read, or another writer's file that stood at the name then
    try:
        fd = folder.open(temp, _READ_FLAGS)
    except OSError:
        return None
    try:
        data = _read_all(fd)
    finally:
        os.close(fd)
    written = data[: loaded.new.size]
    if len(written) == loaded.new.size and _digest(written) == loaded.new.digest:
        return None if len(data) == loaded.new.size else written  # as written, or appended to
    return loaded.base  # rewritten: what the tool built on is what it is measured against


def _ident(st: os.stat_result) -> tuple[int, int]:
    return st.st_dev, st.st_ino


class Seen(NamedTuple):
    """What a change made of one kept file: what it held, and whether that was merged."""

    data: bytes | None  # None: gone, or another file now
    merged: bool  # False: a writer was rewriting it in place; merged once that writer is done


def _look(folder: Folder, file: bytes, replaced: Replaced) -> Seen:
    """Read a kept file, once no writer is rewriting it in place.

    Bytes appended to what it held are merged as they stand (a long-lived
    appender may never close it); a file that no longer begins with what it
    held is being rewritten (an editor emptied it and writes): it is waited
    for (at most ``WAIT_FOR_WRITERS`` seconds), and left for a later change
    if it is still open for writing then, rather than merged half written.
    """
    temp = names(file, replaced.token)[0]
    try:
        fd = folder.open(temp, _READ_FLAGS)
    except OSError:
        return Seen(None, merged=True)
    try:
        if _ident(os.fstat(fd)) != replaced.ident:
            return Seen(None, merged=True)
        deadline = time.monotonic() + WAIT_FOR_WRITERS
        pause = 0.0005
        while True:
            data = _read_all(fd)
            if data.startswith(replaced.base):
                return Seen(data, merged=True)
            writers = read_lease(fd)
            if writers is Lease.HELD:
                release_lease(fd)
                return Seen(_read_all(fd), merged=True)  # no writer: what it holds is whole
            if writers is Lease.UNAVAILABLE or time.monotonic() >= deadline:
                return Seen(data, merged=writers is Lease.UNAVAILABLE)
            time.sleep(pause)
            pause = min(pause * 2, 0.02)
    finally:
        os.close(fd)


def _read_all(fd: int) -> bytes:
    chunks = []
    at = 0
    while chunk := os.pread(fd, 1 << 20, at):
        chunks.append(chunk)
        at += len(chunk)
    return b"".join(chunks)


def fold(folder: Folder, file: bytes, kept: list[Replaced], text: bytes) -> tuple[bytes, list[Seen]]:
    """``text`` with what was written into each kept file since its record; and what each held then."""
    seen = [_look(folder, file, replaced) for replaced in kept]
    for replaced, look in zip(kept, seen, strict=True):
        if look.data is not None and look.merged:
            text = merge3(replaced.base, look.data, text)
    return text, seen


def forget(folder: Folder, file: bytes, token: bytes) -> None:
    """Once a change is settled, the record of its new text goes if it names no kept file."""
    temp, was = names(file, token)
    try:
        folder.stat(temp)
    except FileNotFoundError:
        _remove(folder, was)


def merged(kept: list[Replaced], seen: list[Seen]) -> list[tuple[bytes, bytes]]:
    """What ``fold`` merged, for the record of the change: per kept file, its token and what it held."""
    return [
        (replaced.token, look.data)
        for replaced, look in zip(kept, seen, strict=True)
        if look.data is not None and look.merged and (look.data != replaced.base or replaced.advanced)
    ]


def settle(folder: Folder, file: bytes, kept: list[Replaced], seen: list[Seen]) -> None:
    """After a change that merged what ``seen`` says of each kept file: let go of those nobody can write into.

    The others stay, their record brought up to what was merged.
    """
    unvouched: list[Replaced] = []
    for replaced, look in zip(kept, seen, strict=True):
        temp, was = names(file, replaced.token)
        if look.data is None:
            _remove(folder, was, temp)
            continue
        if not look.merged:
            continue  # a writer is rewriting it: a later change merges it
        writers = _let_go_unless_written(folder, temp, was, look.data)
        if writers is Lease.HELD:
            continue  # gone: no process had it open for writing, and none can open it now
        if look.data != replaced.base or replaced.advanced:  # merged up to here: later writes come after
            rewrite(folder, file, replaced.token, replaced.ident, look.data)
        elif writers is Lease.UNAVAILABLE:
            unvouched.append(replaced)
    now = time.time_ns()
    stale = [replaced for replaced in unvouched if now - replaced.since > KEEP_UNSEEN * 1e9]
    overflow = unvouched[: max(0, len(unvouched) - MAX_KEPT)]
    stale += [replaced for replaced in overflow if replaced not in stale]
    for replaced in stale:
        _remove(folder, *reversed(names(file, replaced.token)))


def _let_go_unless_written(folder: Folder, temp: bytes, was: bytes, merged: bytes) -> Lease:
    """Remove the kept file and its record if no process has it open for writing (``Lease.HELD``).

    Removed under the lease, only if it holds just what was merged, and
    only if no process began to open it meanwhile: after that, no name
    leads to it.
    """
    try:
        fd = folder.open(temp, _READ_FLAGS)
    except OSError:
        return Lease.HELD  # gone
    try:
        writers = read_lease(fd)
        if writers is not Lease.HELD:
            return writers
        if _read_all(fd) == merged and not lease_broken(fd):
            _remove(folder, was, temp)
            return Lease.HELD
        return Lease.WRITERS  # written since it was merged, or about to be: the next change merges it
    finally:
        os.close(fd)  # lets the lease go
