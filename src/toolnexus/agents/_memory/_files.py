"""What the memory tool reads in a home: the memory file (``open``, under a lease for a change, and
``version``, refusing what it will not touch), the files earlier changes left (``find``, as
``_machine.plan`` takes them), a kept file (``look``, once its writer is done). What holds someone's
bytes and cannot be read stops the change (I5, ``blocked``)."""

from __future__ import annotations

import errno
import os
import stat
import time
from typing import Final, NamedTuple

from . import _machine as machine
from . import _system as system
from ._errors import MemoryRefused
from ._machine import Found, Kept, names
from ._system import Folder, Lease, close

__all__ = ["MAX_READ", "NO_FILE", "WAIT_FOR_WRITERS", "Files", "Look", "Opened", "Version"]

MAX_READ: Final = 64 * 1024 * 1024  # a memory file is small; one larger than this is refused, not read
WAIT_FOR_WRITERS: Final = 0.25  # seconds a change waits for a writer that has a file open
_SLACK: Final = 1 << 16  # what a kept file is read for beyond its base at first: what a writer added
READ: Final = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)


class Opened(NamedTuple):
    """The memory file, open for reading, and the lease taken on it."""

    fd: int
    lease: Lease


class Version(NamedTuple):
    """The file as a read found it."""

    data: bytes
    ident: tuple[int, int, int, int, int] | None  # dev, ino, size, mtime, ctime: unchanged? None: no file
    ino: int
    owner: tuple[int, int] | None  # uid, gid
    mode: int  # the permission bits a rewrite keeps


NO_FILE: Final = Version(b"", None, 0, None, 0o666)


class Look(NamedTuple):
    """What a kept file held when merged; ``merged`` False: a writer is rewriting it, merged later."""

    data: bytes
    merged: bool


def ident(st: os.stat_result) -> tuple[int, int, int, int, int]:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


class Files:
    """The reads of one memory file, in the home's directory ``folder``."""

    def __init__(self, folder: Folder, name: str) -> None:
        self.folder = folder
        self.name = name
        self.file = os.fsencode(name)

    def open(self, *, lease: bool) -> Opened | None:
        """The file, open for reading (None: none); with ``lease``, after its writers (at most
        ``WAIT_FOR_WRITERS`` seconds; then without a lease)."""
        try:
            fd = self.folder.open(self.file, READ)
        except FileNotFoundError:
            return None
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.EMLINK):
                raise MemoryRefused(
                    f"{self.name} is a symlink: the memory tool writes only a file of its own"
                ) from None
            if exc.errno in (errno.ENXIO, errno.EOPNOTSUPP):  # a socket, or a device without a driver
                raise MemoryRefused(f"{self.name} is not a regular file") from None
            raise
        deadline, pause = time.monotonic() + WAIT_FOR_WRITERS, 0.0005
        while lease and (got := system.read_lease(fd)) is Lease.WRITERS and time.monotonic() < deadline:
            time.sleep(pause)
            pause = min(pause * 2, 0.02)
        return Opened(fd, got if lease else Lease.UNAVAILABLE)

    def version(self, fd: int) -> Version:
        st = system.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise MemoryRefused(f"{self.name} is not a regular file")
        if st.st_size > MAX_READ:
            raise MemoryRefused(f"{self.name} is {st.st_size:,} bytes: too large for the memory tool")
        if st.st_nlink > 1 and (others := st.st_nlink - self._our_names(st.st_ino)) > 1:
            raise MemoryRefused(
                f"{self.name} has {others} names (hard links): the memory tool replaces the file whole,"
                " which would leave the others with the old text; give it one name"
            )
        data = system.read_all(fd, MAX_READ, st.st_size)
        if len(data) > MAX_READ:
            raise MemoryRefused(f"{self.name} is too large for the memory tool")
        return Version(data, ident(st), st.st_ino, (st.st_uid, st.st_gid), stat.S_IMODE(st.st_mode))

    def _our_names(self, ino: int) -> int:
        """How many of the tool's own texts are names of the inode ``ino`` (a LINKED text, left by a kill)."""
        texts, _ = machine.tokens(self.file, self.folder.names())
        return sum(
            1 for token in texts if (st := self._stat(names(self.file, token).text)) and st.st_ino == ino
        )

    def find(self) -> tuple[list[Found], int | None]:
        texts, records = machine.tokens(self.file, self.folder.names())
        at_name = self._stat(self.file)
        found = []
        for token in sorted(texts | records):
            text_name, record_name = names(self.file, token)
            record, recorded = None, 0
            if token in records and (read := self._read(record_name)) is not None:
                data, written = read
                try:
                    record, recorded = machine.parse(data), written.st_mtime_ns
                except ValueError as exc:
                    raise self.blocked(record_name, OSError(errno.EPROTO, str(exc))) from None
            text = None
            if token in texts and (info := self._stat(text_name)) is not None:
                if not stat.S_ISREG(info.st_mode):
                    continue  # not a file the tool made
                new = record.new if record is not None else None
                content = None  # read only where it may be the record's new text (a DRAFT?)
                if new is not None and new.ino == info.st_ino and (read := self._read(text_name)) is not None:
                    content, _ = read
                text = machine.Text(info.st_ino, content, info.st_mtime_ns)
            found.append(Found(token, record, text, token in records, recorded))
        return found, at_name.st_ino if at_name is not None else None

    def _stat(self, name: bytes) -> os.stat_result | None:
        try:
            return self.folder.stat(name)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise self.blocked(name, exc) from None

    def _read(self, name: bytes) -> tuple[bytes, os.stat_result] | None:
        try:
            fd = self.folder.open(name, READ)
        except FileNotFoundError:
            return None
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.EMLINK):
                return None  # a symlink: not a file the tool made
            raise self.blocked(name, exc) from None
        try:
            st = system.fstat(fd)
            return (system.read_all(fd, MAX_READ, st.st_size) if stat.S_ISREG(st.st_mode) else b""), st
        except OSError as exc:
            raise self.blocked(name, exc) from None
        finally:
            close(fd)

    def blocked(self, name: bytes, exc: OSError) -> OSError:
        shown = os.fsdecode(name)
        return OSError(
            exc.errno,
            f"{shown} cannot be read ({exc.strerror}): it may hold another writer's lines, so no change"
            f" is made until it can be; make it readable to this user, or change {self.name} as its owner",
            shown,
        )

    def look(self, kept: Kept) -> Look:
        """A kept file. What was appended to its base is merged as it stands (an appender may never close
        it); one that no longer begins with its base is being rewritten: waited for, at most
        ``WAIT_FOR_WRITERS`` seconds, and left for a later change if still open for writing then."""
        name = names(self.file, kept.token).text
        try:
            fd = self.folder.open(name, READ)
            try:
                deadline, pause = time.monotonic() + WAIT_FOR_WRITERS, 0.0005
                base = kept.base
                while not (data := system.read_all(fd, MAX_READ, len(base) + _SLACK)).startswith(base):
                    writers = system.read_lease(fd)
                    if writers is Lease.HELD:  # no writer: it is whole
                        system.release_lease(fd)
                        return Look(system.read_all(fd, MAX_READ, len(data)), merged=True)
                    if writers is Lease.UNAVAILABLE or time.monotonic() >= deadline:
                        return Look(data, merged=writers is Lease.UNAVAILABLE)
                    time.sleep(pause)
                    pause = min(pause * 2, 0.02)
                return Look(data, merged=True)
            finally:
                close(fd)
        except OSError as exc:
            raise self.blocked(name, exc) from None
