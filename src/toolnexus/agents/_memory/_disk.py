"""The memory file on disk: read fresh under a lock, written whole, never losing another writer's bytes.

One ``Disk`` per memory file; ``Disk.change(transform)`` makes one change:

1. an exclusive ``flock`` on ``.NAME.lock`` (released by the kernel when a
   process dies, so never stale) keeps the tool's own changes in turn;
2. the files earlier changes replaced and kept (``_replaced``) are found,
   and what a killed tool left that holds nobody's bytes is cleared;
3. the file is opened and, while a process holds it open for writing (at
   most ``WAIT_FOR_WRITERS`` seconds), waited for; then a read lease is
   taken on it, so that a writer that starts to open it now waits until the
   change is in place, and the change knows that it waits;
4. it is read, what was written into the kept files since their records
   is merged into it (``_merge3``), and ``transform`` makes the new text;
5. that is written to ``.NAME.tmp-T`` and synced, with a record
   ``.NAME.was-T``, synced too, of what the file held, of the new text,
   and of what was merged from each kept file (``_replaced.record``);
6. if the name still leads to the file read (inode, size, times) and no
   writer began to open it, the two names are swapped at once
   (``RENAME_EXCHANGE``): ``.NAME.tmp-T`` now holds what stood at the name;
7. if that is another file (an editor's save by rename beat the swap), or
   a writer began to open the file meanwhile (the lease broke), it is
   swapped back, the tool's new file is kept for what was written into it
   meanwhile, and the change starts again, once that writer is done, on
   the file at the name: so what any writer writes lands at the name;
8. the file replaced is kept, with its record, until the next change: a
   writer that found it by name just before the swap may open it later
   than any check made at once could see;
9. the directory is synced, and the kept files merged in step 4 are settled:
   removed once no process has them open for writing and they hold no
   more than was merged.

Where ``RENAME_EXCHANGE`` is missing, step 6 gives the file read a second
name, ``.NAME.tmp-T``, and renames the new text over the name: a save by
rename or a removal that lands between those two calls is lost.
"""

from __future__ import annotations

import errno
import os
import stat
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from typing import Final, NamedTuple

from . import _replaced
from ._replaced import (
    WAIT_FOR_WRITERS,
    NewText,
    Replaced,
    Seen,
    names,
    new_text,
    new_token,
    record,
    write_all,
)
from ._system import Folder, Lease, lease_broken, lock_exclusive, read_lease, release_lease

__all__ = ["MAX_NAME_BYTES", "MAX_READ", "WAIT_FOR_WRITERS", "Disk", "Refused", "Version"]

MAX_READ: Final = 64 * 1024 * 1024  # a memory file is small; one larger than this is refused, not read
# The tool's files are ".NAME.tmp-" or ".NAME.was-" and 16 hex digits; a file
# system's names hold 255 bytes at most, so NAME may hold 233.
MAX_NAME_BYTES: Final = 255 - len(".") - len(".tmp-") - 2 * _replaced.TOKEN_BYTES
_TRIES: Final = 16  # a writer that keeps changing the file between read and swap, this many times, wins
_READ_FLAGS: Final = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)


class Refused(OSError):
    """The tool will not touch this file: a symlink, not a regular file, a home replaced..."""


class Version(NamedTuple):
    """The file as a read found it."""

    data: bytes
    ident: tuple[int, int, int, int, int] | None  # dev, ino, size, mtime_ns, ctime_ns; None: no file
    mode: int  # the permission bits a rewrite keeps


class _Change(NamedTuple):
    """A change's new text, as written, and what it merged from kept files (token, what it held)."""

    data: bytes
    new: NewText
    merged: list[tuple[bytes, bytes]]


class _Again(Exception):
    """The name changed under the change: read it again and redo."""


class _Raced(_Again):
    """An editor's save beat the swap: it is back at the name, and the tool's new file is kept as replaced."""


def _ident(st: os.stat_result) -> tuple[int, int, int, int, int]:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _read_fd(fd: int, name: str) -> Version:
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        raise Refused(errno.EINVAL, f"{name} is not a regular file")
    if st.st_size > MAX_READ:
        raise Refused(errno.EFBIG, f"{name} is {st.st_size:,} bytes: too large for the memory tool")
    chunks = []
    at = 0
    while chunk := os.pread(fd, 1 << 20, at):
        chunks.append(chunk)
        at += len(chunk)
        if at > MAX_READ:
            raise Refused(errno.EFBIG, f"{name} is too large for the memory tool")
    return Version(b"".join(chunks), _ident(st), stat.S_IMODE(st.st_mode))


class _Open(NamedTuple):
    """The memory file, open for reading, and what a read lease on it gave."""

    fd: int
    lease: Lease


class Disk:
    """One memory file of one home, as the tool found the home when it was made.

    The home's directory stays open while the ``Disk`` lives (one
    descriptor, until ``close`` or collection): every operation works in
    that directory, and refuses if the home's path has come to lead
    elsewhere.
    """

    def __init__(self, home: bytes, name: str) -> None:
        self.home = home
        self.name = name
        self._file = os.fsencode(name)
        self._folder = Folder(home)
        self._closed = False

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        """Let the home's directory go; every operation from now on raises ValueError."""
        self._closed = True
        self._folder.close()

    # -- the operations -------------------------------------------------------------------

    def read(self) -> Version:
        """The file as it is now, without the lock (every change replaces it whole)."""
        self._check_home()
        opened = self._open(lease=False)
        if opened is None:
            return Version(b"", None, 0o644)
        try:
            return _read_fd(opened.fd, self.name)
        finally:
            os.close(opened.fd)

    def change(self, transform: Callable[[bytes], bytes]) -> None:
        """Put ``transform(data)`` in the place of the file's ``data``, never over another writer's bytes.

        ``transform`` may raise to make no change; it is called again when
        another writer changed the file meanwhile.
        """
        self._check_home()
        with self._locked():
            kept = _replaced.find(self._folder, self._file)
            for _ in range(_TRIES):
                try:
                    merged, token = self._try(transform, kept)
                except _Again:
                    kept = _replaced.find(self._folder, self._file)
                    continue
                _replaced.settle(self._folder, self._file, kept, merged)
                _replaced.forget(self._folder, self._file, token)
                return
        raise Refused(errno.EBUSY, f"{self.name} kept changing while it was rewritten: try again")

    # -- one try --------------------------------------------------------------------------

    def _try(self, transform: Callable[[bytes], bytes], kept: list[Replaced]) -> tuple[list[Seen], bytes]:
        """Read, fold the kept files in, transform, swap; what each kept file held when merged; its token."""
        opened = self._open(lease=True)
        try:
            version = _read_fd(opened.fd, self.name) if opened is not None else Version(b"", None, 0o644)
            text, seen = _replaced.fold(self._folder, self._file, kept, version.data)
            token = self._publish(version, opened, transform(text), _replaced.merged(kept, seen))
            return seen, token
        finally:
            if opened is not None:
                if opened.lease is Lease.HELD:
                    release_lease(opened.fd)
                os.close(opened.fd)

    def _publish(
        self, version: Version, opened: _Open | None, data: bytes, merged: list[tuple[bytes, bytes]]
    ) -> bytes:
        """Put ``data`` in place of ``version``; ``merged``: what it merged of each kept file, recorded.

        The token of its ``.tmp-`` and record.
        """
        token = new_token()
        temp, _ = names(self._file, token)
        fd = self._folder.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, version.mode)
        try:
            write_all(fd, data)
            os.fsync(fd)
            new = new_text(fd, data)
        except BaseException:
            os.close(fd)
            self._discard(token)
            raise
        os.close(fd)
        try:
            if opened is None or version.ident is None:
                self._create(token, new, merged)
            else:
                self._swap(version, opened, token, _Change(data, new, merged))
        except _Raced:
            raise  # the new file is kept, under a record of its own
        except BaseException:
            self._discard(token)
            raise
        self._folder.sync()
        return token

    def _create(self, token: bytes, new: NewText, merged: list[tuple[bytes, bytes]]) -> None:
        """Give the new file the name, which no file has: ``_Again`` if one has appeared meanwhile.

        What it merged from kept files is recorded first, as a swap's record
        does: it counts as merged while the new file stands at the name.
        """
        temp = names(self._file, token)[0]
        if merged:
            record(self._folder, self._file, token, new.ident, b"", new=new, merged=merged)
        try:
            if not self._folder.rename_noreplace(temp, self._file):
                self._folder.link(temp, self._file)  # never replaces either, where renameat2 is missing
                self._folder.unlink(temp)
        except FileExistsError:
            raise _Again from None

    def _swap(self, version: Version, opened: _Open, token: bytes, change: _Change) -> None:
        """Put the new file ``.tmp-TOKEN`` at the name in place of the file read; keep what it must."""
        assert version.ident is not None
        ident = version.ident
        data = change.data
        temp, _ = names(self._file, token)
        record(self._folder, self._file, token, ident[:2], version.data, new=change.new, merged=change.merged)
        if not self._unchanged(ident) or self._writer_coming(opened):
            raise _Again  # another writer changed the name, or is opening the file: let it finish
        try:
            exchanged = self._folder.exchange(temp, self._file)
        except FileNotFoundError:  # removed since it was read: start again without it
            raise _Again from None
        if not exchanged:
            self._replace(version, opened, token, change)
            return
        if _ident(self._folder.stat(temp))[:2] != ident[:2]:
            self._swap_back(token, data)  # an editor's save beat the swap
        if self._writer_coming(opened):
            # A writer began to open the file read, and waits for the lease: put the file back
            # at the name, so that what it writes lands there, and start again once it is done.
            self._swap_back(token, data)
        # The file replaced is kept, with its record, until the next change: a writer that found
        # it by name just before the swap may open it later than any check made now could see.

    def _replace(self, version: Version, opened: _Open, token: bytes, change: _Change) -> None:
        """No exchange here: a second name for the file read, then the new text renamed over the name."""
        assert version.ident is not None
        held = new_token()
        held_temp, _ = names(self._file, held)
        record(self._folder, self._file, held, version.ident[:2], version.data)
        try:
            self._folder.link(self._file, held_temp)
        except FileNotFoundError:
            self._discard(held)
            raise _Again from None
        if _ident(self._folder.stat(held_temp))[:2] != version.ident[:2]:
            self._discard(held)
            raise _Again  # the name led elsewhere by then: start again on what it leads to
        # Its record stays until the change is settled (``_replaced.forget``): it says that what
        # the change merged is merged.
        self._folder.rename(names(self._file, token)[0], self._file)
        if self._writer_coming(opened):
            self._put_back(held, token, change)

    def _put_back(self, held: bytes, token: bytes, change: _Change) -> None:
        """Without exchange, as ``_swap_back``: the file read back at the name, the new file kept.

        A second name for the new file, then the file read renamed over the
        name. If the name no longer leads to the new file by then (a save by
        rename landed meanwhile), nothing is put back: the writer that waits
        writes into the kept file, which the next change merges.
        """
        new = change.new.ident
        kept = new_token()
        kept_temp, _ = names(self._file, kept)
        record(self._folder, self._file, kept, new, change.data)
        try:
            self._folder.link(self._file, kept_temp)
        except FileNotFoundError:
            self._discard(kept)
            return
        if _ident(self._folder.stat(kept_temp))[:2] != new:
            self._discard(kept)
            return
        held_temp, held_was = names(self._file, held)
        # The new text leaves the name: what it merged is not merged. (A kill between these two
        # steps merges it again: twice rather than never.)
        self._folder.unlink(names(self._file, token)[1])
        self._folder.rename(held_temp, self._file)
        with suppress(FileNotFoundError):
            self._folder.unlink(held_was)
        raise _Raced

    def _swap_back(self, token: bytes, data: bytes) -> None:
        """Another writer's file should stand at the name: put it back; keep what the swap back takes.

        That is the tool's new file (which held ``data``), with anything
        appended to it in the microseconds it stood at the name; or, if a
        save by rename replaced it meanwhile (made from it, or from the file
        before it), that save: either way the next try merges what it holds
        beyond ``data``. Its record is made plain, the record of what is
        kept: the new text is not in place, so what it merged is not merged.
        """
        temp = names(self._file, token)[0]
        if not self._folder.exchange(temp, self._file):  # pragma: no cover - it just worked
            raise OSError(errno.EIO, f"{self.name}: could not swap the other writer's file back")
        _replaced.rewrite(self._folder, self._file, token, _ident(self._folder.stat(temp))[:2], data)
        raise _Raced

    def _writer_coming(self, opened: _Open) -> bool:
        """Has a process begun to open the file read for writing since the lease was taken?"""
        return opened.lease is Lease.HELD and lease_broken(opened.fd)

    # -- inside ---------------------------------------------------------------------------

    def _unchanged(self, ident: tuple[int, int, int, int, int]) -> bool:
        try:
            return _ident(self._folder.stat(self._file)) == ident
        except FileNotFoundError:
            return False

    def _discard(self, token: bytes) -> None:
        """Remove a new text never put in place: its record first (see ``_replaced._in_place``)."""
        for name in reversed(names(self._file, token)):
            with suppress(FileNotFoundError):
                self._folder.unlink(name)

    def _open(self, *, lease: bool) -> _Open | None:
        """The file, open for reading (None when there is none); with ``lease``, after its writers.

        A process that has it open for writing is waited for, at most
        ``WAIT_FOR_WRITERS`` seconds; then the change goes on without the
        lease, and keeps the file it replaces.
        """
        try:
            fd = self._folder.open(self._file, _READ_FLAGS)
        except FileNotFoundError:
            return None
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.EMLINK):
                raise Refused(
                    errno.ELOOP, f"{self.name} is a symlink: the memory tool writes only a file of its own"
                ) from None
            if exc.errno in (errno.ENXIO, errno.EOPNOTSUPP):  # a socket, or a device without a driver
                raise Refused(exc.errno, f"{self.name} is not a regular file") from None
            raise
        if not lease:
            return _Open(fd, Lease.UNAVAILABLE)
        try:
            deadline = time.monotonic() + WAIT_FOR_WRITERS
            pause = 0.0005
            while (got := read_lease(fd)) is Lease.WRITERS and time.monotonic() < deadline:
                time.sleep(pause)
                pause = min(pause * 2, 0.02)
        except BaseException:
            os.close(fd)
            raise
        return _Open(fd, got)

    def _check_home(self) -> None:
        """Refuse if the home's path no longer leads to the directory the tool was made for."""
        if self._closed:
            raise ValueError("the memory tool is closed")
        if self._folder.moved():
            raise Refused(
                errno.EXDEV,
                "the persona's directory is no longer the one this memory tool was made for"
                " (renamed, replaced or removed)",
            )

    @contextmanager
    def _locked(self) -> Iterator[None]:
        name = os.fsencode(f".{self.name}.lock")
        try:
            fd = self._folder.open(name, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.EMLINK):
                raise Refused(exc.errno, f".{self.name}.lock is a symlink") from None
            if exc.errno == errno.EISDIR:
                raise Refused(
                    exc.errno, f".{self.name}.lock is a directory: it must be the tool's lock file"
                ) from None
            raise
        try:
            lock_exclusive(fd)
            yield
        finally:
            os.close(fd)  # releases the lock
