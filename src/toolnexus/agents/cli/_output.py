"""What the command line writes: every byte, or one line saying why not.

``Output`` writes to a file descriptor with ``os.write`` in a loop: a short
write is continued, a full non-blocking pipe (``EAGAIN``) is waited on, a
reader that went away is ``BrokenPipeError`` (the caller exits 141), and any
other error (a full disk, ``/dev/full``, an I/O error) is ``WriteFailed``,
one line for standard error and exit status 1. Python's own file objects
are not used for the bytes: an unbuffered stream (``PYTHONUNBUFFERED``)
returns a short count that a caller can ignore, and a buffered one reports
errors at a flush, or at exit, as a traceback.

``shown`` is how a path or name appears in text meant for people: every
byte kept, nothing that can forge a line or drive a terminal;
``shown_text`` the same for a message or a memory entry.
"""

from __future__ import annotations

import contextlib
import os
import select
import sys
from typing import IO, Final, TextIO, cast

__all__ = ["Output", "WriteFailed", "from_bytes_not_utf8", "quiet_stdout", "say", "shown", "shown_text"]


class WriteFailed(Exception):
    """Output that could not be written; the message names it and says why."""


def _wait_writable(fd: int) -> None:
    """Block until ``fd`` (a full non-blocking pipe or socket) takes bytes again."""
    if hasattr(select, "poll"):
        poller = select.poll()
        poller.register(fd, select.POLLOUT)
        poller.poll()
    else:  # pragma: no cover - Windows has no poll; its pipes do not return EAGAIN here
        select.select([], [fd], [])


class Output:
    """A byte sink that takes everything written to it, or raises.

    ``fd`` None writes to ``stream`` instead (an in-memory stream, as a
    test's captured standard output), whose ``write`` takes all it is given.
    """

    def __init__(
        self, name: str, fd: int | None, stream: IO[bytes] | None = None, *, owned: bool = False
    ) -> None:
        self.name = name
        self._fd = fd
        self._stream = stream
        self._owned = owned

    @classmethod
    def stdout(cls) -> Output:
        """Standard output, after whatever Python's own stream still holds; WriteFailed if it is closed."""
        if sys.stdout is None:  # descriptor 1 was closed at start-up: it may be any file's now
            raise WriteFailed("cannot write to standard output: it is closed")
        sys.stdout.flush()
        try:
            fd = sys.stdout.fileno()
        except (AttributeError, ValueError, OSError):  # replaced by a stream without one
            return cls("standard output", None, cast("IO[bytes]", getattr(sys.stdout, "buffer", sys.stdout)))
        return cls("standard output", fd)

    @classmethod
    def create(cls, path: str) -> Output:
        """A file opened for writing (created, or emptied); OSError if it cannot be."""
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_CLOEXEC", 0)
        return cls(shown(path), os.open(path, flags | getattr(os, "O_BINARY", 0), 0o666), owned=True)

    def write(self, data: bytes) -> None:
        """Write all of ``data``; BrokenPipeError if the reader went away, WriteFailed for other errors."""
        if self._fd is None:
            assert self._stream is not None  # given whenever fd is not
            self._stream.write(data)
            self._stream.flush()
            return
        view = memoryview(data)
        while view:
            try:
                written = os.write(self._fd, view)
            except BlockingIOError:  # a non-blocking pipe that is full: wait, then go on
                _wait_writable(self._fd)
                continue
            except BrokenPipeError:
                raise
            except OSError as exc:
                raise WriteFailed(f"cannot write to {self.name}: {exc.strerror or exc}") from None
            view = view[written:]

    def reader_gone(self) -> bool:
        """True when this is a pipe or socket whose reader has gone away, so that a write would fail."""
        if self._fd is None or not hasattr(select, "poll"):
            return False
        poller = select.poll()
        poller.register(self._fd, select.POLLOUT)
        return any(events & (select.POLLERR | select.POLLHUP) for _, events in poller.poll(0))

    def close(self) -> None:
        """Close a file this Output opened (a deferred write error shows here); standard output stays open."""
        if self._owned and self._fd is not None:
            fd, self._fd = self._fd, None
            try:
                os.close(fd)
            except OSError as exc:
                raise WriteFailed(f"cannot write to {self.name}: {exc.strerror or exc}") from None


def quiet_stdout() -> None:
    """Point standard output at /dev/null, so that the interpreter's last flush fails no more."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, ValueError, OSError):  # a stream without a descriptor (tests)
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, fd)
    finally:
        os.close(devnull)


# Characters that could forge a line or drive a terminal: C0 and C1
# controls, DEL, line and paragraph separators, and the bidirectional
# formatting characters that reorder what a terminal shows; the lone
# surrogates are surrogateescape's form of the bytes that are not UTF-8.
_CONTROLS: Final = (*range(0x00, 0x20), *range(0x7F, 0xA0))
_LINE_BREAKS: Final = (0x2028, 0x2029)
_BIDI: Final = (0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A))
_NOT_UTF8: Final = range(0xDC80, 0xDD00)
_UNSAFE: Final = frozenset((*_CONTROLS, *_LINE_BREAKS, *_BIDI, *_NOT_UTF8))
# In a name, a backslash too: else a name could pass for another one's escapes.
_UNSAFE_IN_NAMES: Final = _UNSAFE | {ord("\\")}


def shown(path: str | bytes) -> str:
    """``path`` for people: every byte kept, none that can forge a line or drive a terminal.

    A byte that is not part of valid UTF-8 shows as ``\\xNN``; a control
    character as ``\\xNN`` (below U+0100) or ``\\uNNNN``; a backslash as
    ``\\\\``, so that two names never show alike.
    """
    text = (path if isinstance(path, bytes) else os.fsencode(path)).decode("utf-8", "surrogateescape")
    return _escaped(text, _UNSAFE_IN_NAMES)


def from_bytes_not_utf8(text: str) -> bool:
    """True when ``text`` (an argument, decoded with surrogateescape) holds a byte that is not UTF-8."""
    return any(ord(char) in _NOT_UTF8 for char in text)


def shown_text(text: str) -> str:
    """A message or an entry for people: as ``shown``, but a backslash stays one."""
    return _escaped(text, _UNSAFE)


def _escaped(text: str, unsafe: frozenset[int]) -> str:
    if not any(ord(char) in unsafe for char in text):
        return text
    return "".join(_escape(char) if ord(char) in unsafe else char for char in text)


def _escape(char: str) -> str:
    code = ord(char)
    if char == "\\":
        return "\\\\"
    if code in _NOT_UTF8:
        return f"\\x{code - 0xDC00:02x}"
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def say(message: str, stream: TextIO | None = None) -> None:
    """One line on standard error, after the command's name; lost quietly if standard error is gone."""
    with contextlib.suppress(OSError):
        print(f"toolnexus-soul: {message}", file=stream or sys.stderr, flush=True)
