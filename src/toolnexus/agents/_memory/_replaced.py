"""Files the tool replaced, kept while another writer may still write into them, and merged.

A swap puts the tool's new file at the name; the file that stood there may
still be open in another process (a shell's ``exec 3>>``, an editor paused
between its truncate and its write, an appender that opened it just before
the swap). Its bytes must not be lost, so such a file is kept, beside the
memory file, as ``.NAME.tmp-T``, with a record ``.NAME.was-T`` of what it
held when the tool built on it: its identity and its bytes. ``T`` is the
token of the swap: 16 hex digits.

At each change, ``find`` gathers the files kept so far (and clears what a
killed tool left that holds nobody's bytes); each ``Replaced`` merges what
was written into its file since its record (``_merge3``) into the text the
change is built on. After the change is in place, ``settle`` deletes the
ones no process can still write into (a read lease on them is granted:
``_system.read_lease``), and brings the record of the others up to what
was merged. Where leases cannot tell (another system, a file of another
owner), a kept file goes once it has been unchanged for ``KEEP_UNSEEN``
seconds, or when more than ``MAX_KEPT`` are kept, the oldest unchanged
first.
"""

from __future__ import annotations

import hashlib
import os
import re
import secrets
import time
from contextlib import suppress
from typing import Final, NamedTuple

from ._merge3 import merge3
from ._system import Folder, Lease, lease_broken, read_lease, release_lease

__all__ = [
    "KEEP_UNSEEN",
    "MAX_KEPT",
    "WAIT_FOR_WRITERS",
    "Replaced",
    "Seen",
    "find",
    "fold",
    "names",
    "new_token",
    "record",
    "settle",
    "write_all",
]

WAIT_FOR_WRITERS: Final = 0.25  # seconds a change waits for a writer that has a file open
KEEP_UNSEEN: Final = 60.0  # seconds a kept file that leases cannot vouch for stays unchanged before it goes
MAX_KEPT: Final = 32  # kept files that leases cannot vouch for, at most
TOKEN_BYTES: Final = 8
_TOKEN: Final = re.compile(rb"[0-9a-f]{%d}" % (2 * TOKEN_BYTES))
_MAGIC: Final = b"toolnexus-soul: what a replaced memory file held\n"
_READ_FLAGS: Final = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)


class Replaced(NamedTuple):
    """One kept file: its token, the inode it is, when its record was written, and what it held then."""

    token: bytes
    ident: tuple[int, int]  # st_dev, st_ino
    since: int  # time.time_ns() of the record: the order of the swaps, and how long it is unchanged
    base: bytes


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def names(file: bytes, token: bytes) -> tuple[bytes, bytes]:
    """The kept file's name and its record's."""
    return b"." + file + b".tmp-" + token, b"." + file + b".was-" + token


def new_token() -> bytes:
    return secrets.token_hex(TOKEN_BYTES).encode()


def record(folder: Folder, file: bytes, token: bytes, ident: tuple[int, int], base: bytes) -> None:
    """Write the record of the file ``ident``, kept (or to be) as ``.FILE.tmp-TOKEN``: it held ``base``.

    A record cut short (the tool killed while writing it) fails its checksum
    and counts as none: it is written before the swap, when ``.tmp-TOKEN``
    is still the tool's own new text. A kept file's record is brought up to
    date by ``renew``, which never cuts one.
    """
    header = b"%d %d %d %s\n" % (*ident, time.time_ns(), hashlib.sha256(base).hexdigest().encode())
    fd = folder.open(names(file, token)[1], os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        write_all(fd, _MAGIC + header + base)
    finally:
        os.close(fd)


def renew(folder: Folder, file: bytes, replaced: Replaced, base: bytes) -> None:
    """Bring a kept file's record up to ``base``, under a new token: one whole record names it throughout."""
    token = new_token()
    record(folder, file, token, replaced.ident, base)
    old_temp, old_was = names(file, replaced.token)
    folder.rename(old_temp, names(file, token)[0])
    _remove(folder, old_was)


def _load(folder: Folder, name: bytes) -> tuple[tuple[int, int], int, bytes] | None:
    """A record's ident, time and base; None when it is not a whole record of ours."""
    try:
        fd = folder.open(name, _READ_FLAGS)
    except OSError:
        return None
    try:
        data = b"".join(iter(lambda: os.read(fd, 1 << 20), b""))
    finally:
        os.close(fd)
    if not data.startswith(_MAGIC):
        return None
    header, _, base = data[len(_MAGIC) :].partition(b"\n")
    fields = header.split()
    if len(fields) != 4 or hashlib.sha256(base).hexdigest().encode() != fields[3]:
        return None  # cut short: no base to merge against
    dev, ino, since = (int(field) for field in fields[:3])
    return (dev, ino), since, base


def _remove(folder: Folder, *found: bytes) -> None:
    for name in found:
        with suppress(FileNotFoundError, IsADirectoryError, PermissionError):  # a directory: not ours
            folder.unlink(name)


def find(folder: Folder, file: bytes) -> list[Replaced]:
    """The kept files of ``file``, oldest first; what a killed tool left that holds nobody's bytes goes.

    That is a new text never swapped in (a ``.tmp-T`` that is not the file its
    record names), a record whose file is gone, and an extra name of the
    memory file itself (a tool killed between the two steps of a swap where
    renames cannot exchange). Only names made exactly as the tool makes them
    are looked at: another memory file's (``MEMORY.md.tmp-notes``) never.
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
    kept = []
    for token in sorted(temps | records):
        temp, was = names(file, token)
        loaded = _load(folder, was) if token in records else None
        try:
            ident = _ident(folder.stat(temp)) if token in temps else None
        except OSError:
            ident = None
        if loaded is None or ident != loaded[0] or ident == current:
            _remove(folder, temp, was)  # nobody's bytes: a text never swapped in, or the file itself again
        else:
            kept.append(Replaced(token, ident, loaded[1], loaded[2]))
    return sorted(kept, key=lambda replaced: replaced.since)


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


def settle(folder: Folder, file: bytes, kept: list[Replaced], seen: list[Seen]) -> None:
    """After a change that merged what ``seen`` says of each kept file: let go of those nobody can write into.

    The others stay, their record brought up to what was merged.
    """
    unvouched: list[Replaced] = []
    for replaced, look in zip(kept, seen, strict=True):
        temp, was = names(file, replaced.token)
        if look.data is None:
            _remove(folder, temp, was)
            continue
        if not look.merged:
            continue  # a writer is rewriting it: a later change merges it
        writers = _let_go_unless_written(folder, temp, was, look.data)
        if writers is Lease.HELD:
            continue  # gone: no process had it open for writing, and none can open it now
        if look.data != replaced.base:  # merged up to here: later writes are what comes after
            renew(folder, file, replaced, look.data)
        elif writers is Lease.UNAVAILABLE:
            unvouched.append(replaced)
    now = time.time_ns()
    stale = [replaced for replaced in unvouched if now - replaced.since > KEEP_UNSEEN * 1e9]
    overflow = unvouched[: max(0, len(unvouched) - MAX_KEPT)]
    stale += [replaced for replaced in overflow if replaced not in stale]
    for replaced in stale:
        _remove(folder, *names(file, replaced.token))


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
            _remove(folder, temp, was)
            return Lease.HELD
        return Lease.WRITERS  # written since it was merged, or about to be: the next change merges it
    finally:
        os.close(fd)  # lets the lease go
