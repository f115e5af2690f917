"""The memory file on disk: the moves of ``_machine``'s state machine, made through ``_system``'s calls.

``Disk.change(transform)`` takes the lock (LOCKED), sorts what earlier
changes left (``_machine.plan``), reads the file under a lease and merges
the kept files in (READ), writes the new text and its record (WRITTEN,
DRAFT), swaps it in (PLACED; RETURNED, and again, when another writer beat
it), syncs the directory (SYNCED) and lets go of what it merged (SETTLED).
"""

from __future__ import annotations

import errno
import os
import stat
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from typing import Final, NamedTuple

from . import _machine as machine
from . import _system as system
from ._entries import shown
from ._errors import MemoryRefused, MemoryUnsynced
from ._files import NO_FILE, READ, Files, Look, Opened, Version, ident
from ._machine import Kept, Record, State, names
from ._merge3 import merge3
from ._system import Lease, close

__all__ = ["MAX_NAME_BYTES", "Disk"]

# The tool's files are ".NAME.tmp-" or ".NAME.was-" and 16 hex digits; a file
# system's names hold 255 bytes at most, so NAME may hold 233.
MAX_NAME_BYTES: Final = 255 - len(".") - len(".tmp-") - 2 * machine.TOKEN_BYTES
KEEP_UNSEEN: Final = 60.0  # seconds a kept file that leases cannot vouch for stays unchanged before it goes
MAX_KEPT: Final = 32  # kept files that leases cannot vouch for, at most
_TRIES: Final = 16  # a writer that keeps changing the file between read and swap, this many times, wins
_NEW: Final = os.O_WRONLY | os.O_CREAT | os.O_EXCL


class _Done(NamedTuple):
    """A change in place: its text, the kept files as merged, its number, which it merged, ``held``."""

    data: bytes
    looks: list[Look]
    token: bytes
    merged: set[bytes]
    held: bool


class _Again(Exception):
    """The name changed under the change, or the change was returned: sort the files again and redo."""


def _token(number: int) -> bytes:
    return b"%016x" % number


class Disk:
    """One memory file of one home, whose directory is held open until ``close`` (refused once moved)."""

    def __init__(self, home: bytes, name: str) -> None:
        self.home = home
        self.name = name
        self._file = os.fsencode(name)
        self._folder = system.Folder(home)
        self._files = Files(self._folder, name)
        self.closed = False

    def close(self) -> None:
        """Let the home's directory go: every operation from now on raises ValueError."""
        self.closed = True
        self._folder.close()

    def read(self) -> Version:
        """The file as it is now, without the lock (every change replaces it whole)."""
        system.step = State.READ
        self._check_home()
        opened = self._files.open(lease=False)
        if opened is None:
            return NO_FILE
        try:
            return self._files.version(opened.fd)
        finally:
            close(opened.fd)

    def change(self, transform: Callable[[bytes], bytes]) -> bytes:
        """Put ``transform(data)`` in place of the file's ``data`` (called again if another writer beat it;
        raising, it makes no change); what was put there."""
        system.step = State.LOCKED
        self._check_home()
        with self._locked():
            for _ in range(_TRIES):
                system.step = State.LOCKED
                found, at_name = self._files.find()
                sorted_out = machine.plan(self._file, found, at_name)
                for each in sorted_out.remove:
                    self._remove(*each)
                try:
                    done = self._try(transform, sorted_out.kept, {one.token for one in found})
                except _Again:
                    continue
                system.step = State.SETTLED
                self._settle(sorted_out.kept, done)  # nothing here raises (I6)
                return done.data
        raise MemoryRefused(f"{self.name} kept changing while it was rewritten: try again")

    # -- READ to SYNCED: one try -----------------------------------------------------------

    def _try(self, transform: Callable[[bytes], bytes], kept: list[Kept], taken: set[bytes]) -> _Done:
        system.step = State.READ
        opened = self._files.open(lease=True)
        try:
            version = self._files.version(opened.fd) if opened is not None else NO_FILE
            looks = [self._files.look(one) for one in kept]
            text, merged = version.data, {}
            for one, look in zip(kept, looks, strict=True):
                if look.merged and look.data != one.base:
                    text = merge3(one.base, look.data, text)
                    merged[one.token] = look.data
            data = transform(text)
            token = _token(machine.next_token(taken))
            system.step = State.WRITTEN
            ino = self._write(names(self._file, token).text, data, version, text=True).st_ino
            record = Record(machine.NewText(ino, len(data), machine.digest(data)), version.data, merged)
            if opened is None:
                self._create(token, record)
                held = False
            else:  # True: exchanged, so that its text holds the file read; False: its text went to the name
                held = self._swap(version, opened, token, record, data)
            system.step = State.SYNCED
            try:
                self._folder.sync()
            except OSError as exc:
                raise MemoryUnsynced(exc.errno or errno.EIO, shown(self.name)) from exc
            return _Done(data, looks, token, set(merged), held)
        finally:
            if opened is not None:
                if opened.lease is Lease.HELD:
                    system.release_lease(opened.fd)
                close(opened.fd)

    def _create(self, token: bytes, record: Record) -> None:
        """No file at the name: give the new text the name, never over a file that appeared meanwhile."""
        text_name, record_name = names(self._file, token)
        try:
            if record.merged:  # what it merged counts once it stands at the name (I4)
                system.step = State.DRAFT
                self._write(record_name, machine.encode(record), NO_FILE)
            system.step = State.PLACED
            linked = not self._folder.rename_noreplace(text_name, self._file)
            if linked:
                self._folder.link(text_name, self._file)  # never replaces either, where renameat2 is missing
        except BaseException as exc:
            self._remove(record_name, text_name)
            if isinstance(exc, FileExistsError):
                raise _Again from None  # a file appeared at the name: start again on it
            raise
        if linked:
            self._remove(text_name)  # LINKED: a name only, removed by the next change if not now

    def _swap(self, version: Version, opened: Opened, token: bytes, record: Record, data: bytes) -> bool:
        """DRAFT to PLACED (True: exchanged; False: HELD, then renamed), and RETURNED if it must be."""
        text_name, record_name = names(self._file, token)
        spare = _token(int(token, 16) + 1)
        try:
            system.step = State.DRAFT
            self._write(record_name, machine.encode(record), version)  # I1
            system.step = State.PLACED
            if ident(self._folder.stat(self._file)) != version.ident or self._writer_coming(opened):
                raise _Again  # another writer changed the name, or is opening the file: let it finish
            if not self._folder.exchange(text_name, self._file):
                self._hold(version, token, spare)
                return False
        except BaseException as exc:
            self._remove(record_name, text_name)
            if isinstance(exc, FileNotFoundError):
                raise _Again from None  # the file was removed since it was read: start again without it
            raise
        # PLACED: from here the change stands, and nothing raises but a failed sync (I6).
        try:
            displaced: int | None = self._folder.stat(text_name).st_ino
        except OSError:
            return True  # cannot tell whether an editor's save beat the swap: it is kept, and merged
        if displaced != version.ino or self._writer_coming(opened):
            back = record._replace(back=displaced, after=data)
            if self._return(version, text_name, record_name, back, spare):
                raise _Again
        return True

    def _return(
        self, version: Version, text_name: bytes, record_name: bytes, back: Record, spare: bytes
    ) -> bool:
        """PLACED to RETURNED (False: it stays PLACED). The new record is written under a text's name: left
        there by a failure, it is WRITTEN, never a record alone."""
        spare_name = names(self._file, spare).text
        system.step = State.RETURNED
        try:
            self._write(spare_name, machine.encode(back), version)
            self._folder.rename(spare_name, record_name)
            return self._folder.exchange(text_name, self._file)
        except OSError:
            self._remove(spare_name)
            return False

    def _hold(self, version: Version, token: bytes, held: bytes) -> None:
        """Without exchange (DRAFT to HELD to PLACED): a second name for the file read, then a rename."""
        held_text, held_record = names(self._file, held)
        system.step = State.HELD
        try:
            self._write(held_record, machine.encode(Record(None, version.data, {})), version)
            self._folder.link(self._file, held_text)
            if self._folder.stat(held_text).st_ino != version.ino:
                raise FileNotFoundError  # the name led elsewhere by then: start again on what it leads to
            system.step = State.PLACED
            self._folder.rename(names(self._file, token).text, self._file)
        except BaseException:
            self._remove(held_text, held_record)
            raise

    def _write(self, name: bytes, data: bytes, version: Version, text: bool = False) -> os.stat_result:
        """A new file holding ``data``, synced (I1), with the memory file's owner where the process may, and
        its mode (a record's without execute bits: never more readable than the file it copies)."""
        mode = version.mode if text else version.mode & 0o666
        fd = self._folder.open(name, _NEW, mode)
        try:
            st = system.fstat(fd)
            if version.owner is not None:
                system.adopt(fd, st, version.owner, mode)
            system.write_all(fd, data)
            system.fsync(fd)
        except BaseException:
            close(fd)
            self._remove(name)
            raise
        close(fd)
        return st

    def _writer_coming(self, opened: Opened) -> bool:
        """Has a process begun to open the file read for writing since the lease was taken?"""
        return opened.lease is Lease.HELD and system.lease_broken(opened.fd)

    # -- SETTLED: nothing here raises (I6); what it cannot do, the next change does -----------

    def _settle(self, kept: list[Kept], done: _Done) -> None:
        """Let go of the kept files merged that nobody can write into; remove the records that say nothing."""
        gone: set[bytes] = set()
        unvouched = []
        for one, look in zip(kept, done.looks, strict=True):
            writers = self._let_go(one, look.data, gone) if look.merged else Lease.WRITERS
            if writers is Lease.UNAVAILABLE and look.data == one.base:
                unvouched.append(one)
        now = time.time_ns()
        stale = [one for one in unvouched if now - one.changed > KEEP_UNSEEN * 1e9]
        for one in stale + unvouched[: max(0, len(unvouched) - MAX_KEPT)]:
            if self._remove(*machine.going(self._file, one)):
                gone.add(one.token)
        for token in machine.spent(kept, gone, done.merged, done.token, done.held):
            self._remove(names(self._file, token).record)

    def _let_go(self, one: Kept, merged: bytes, gone: set[bytes]) -> Lease:
        """Remove a kept file (into ``gone``) if no process has it open for writing, and it holds just what
        was merged: under its lease, and only if no process began to open it meanwhile (then no name leads
        to it). What cannot be told keeps it."""
        try:
            fd = self._folder.open(names(self._file, one.token).text, READ)
        except OSError:
            return Lease.WRITERS
        try:
            writers = system.read_lease(fd)
            unwritten = writers is Lease.HELD and system.read_all(fd, len(merged), len(merged)) == merged
            if unwritten and not system.lease_broken(fd) and self._remove(*machine.going(self._file, one)):
                gone.add(one.token)
            return writers
        except OSError:
            return Lease.WRITERS
        finally:
            close(fd)  # lets the lease go

    def _remove(self, *found: bytes) -> bool:
        """Remove these names in order, stopping at the first that cannot be (I3); whether all went."""
        for name in found:
            try:
                self._folder.unlink(name)
            except FileNotFoundError:
                continue
            except OSError:
                return False
        return True

    def _check_home(self) -> None:
        """Refuse if the home's path no longer leads to the directory the tool was made for."""
        if self.closed:
            raise ValueError("the memory tool is closed")
        if self._folder.moved():
            raise MemoryRefused(
                "the persona's directory is no longer the one this memory tool was made for"
                " (renamed, replaced or removed)"
            )

    @contextmanager
    def _locked(self) -> Iterator[None]:
        try:
            fd = self._open_lock(b"." + self._file + b".lock")
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.EMLINK):
                raise MemoryRefused(f".{self.name}.lock is a symlink") from None
            if exc.errno == errno.EISDIR:
                raise MemoryRefused(
                    f".{self.name}.lock is a directory: it must be the tool's lock file"
                ) from None
            raise
        try:
            system.lock_exclusive(fd)
            yield
        finally:
            close(fd)  # releases the lock

    def _open_lock(self, lock: bytes) -> int:
        """The lock, made as the memory file is (owner, group, mode); read-only where it cannot be written."""
        try:
            return self._folder.open(lock, os.O_RDWR)
        except PermissionError:  # another user's lock
            return self._folder.open(lock, READ)
        except FileNotFoundError:  # made here (by two at once: adopted twice, the same way)
            fd = self._folder.open(lock, os.O_RDWR | os.O_CREAT, 0o666)
        with suppress(OSError):  # no memory file yet, or an owner not to be had: the lock as made
            if stat.S_ISREG((st := self._folder.stat(self._file)).st_mode):
                system.adopt(fd, system.fstat(fd), (st.st_uid, st.st_gid), stat.S_IMODE(st.st_mode) & 0o666)
        return fd
