"""The report that ``compose()`` returns: ``Soul``, one ``FileReport`` per name.

Plain immutable values, so a host can keep, compare, hash and log them.
"""

from __future__ import annotations

import enum
import hashlib
from dataclasses import dataclass, field
from functools import cached_property
from typing import NamedTuple

__all__ = ["BootstrapFileError", "FileReport", "FileStatus", "Soul"]


class FileStatus(str, enum.Enum):
    """Why a bootstrap file did or did not make it into the soul."""

    PRESENT = "present"
    MISSING = "missing"
    NOT_REGULAR = "not a regular file"
    UNREADABLE = "unreadable"
    REFUSED = "refused symlink"

    def __str__(self) -> str:
        return self.value


# Indexed by the readers' integer status codes (PRESENT = 0 ... REFUSED = 4).
STATUS_BY_CODE = (
    FileStatus.PRESENT,
    FileStatus.MISSING,
    FileStatus.NOT_REGULAR,
    FileStatus.UNREADABLE,
    FileStatus.REFUSED,
)

# Statuses of an entry that exists but cannot be used: strict mode raises.
UNUSABLE = frozenset({FileStatus.NOT_REGULAR, FileStatus.UNREADABLE, FileStatus.REFUSED})


class FileReport(NamedTuple):
    """What happened to one bootstrap file.

    ``size`` is the number of bytes read (at most ``max_file_bytes + 1``, so a
    truncated file reports ``cap + 1``); ``stable`` is False only when a file
    larger than one page kept changing under three reads (SPEC §4); ``errno``
    and ``error`` explain any status other than present. A named tuple:
    immutable, and cheap enough to make seven of per soul.
    """

    name: str
    status: FileStatus
    size: int = 0
    truncated: bool = False
    stable: bool = True
    errno: int | None = None
    error: str | None = None

    @property
    def present(self) -> bool:
        return self.status is FileStatus.PRESENT

    def as_dict(self) -> dict[str, object]:
        """JSON-ready form (status as its text)."""
        return {
            "name": self.name,
            "status": self.status.value,
            "size": self.size,
            "truncated": self.truncated,
            "stable": self.stable,
            "errno": self.errno,
            "error": self.error,
        }


@dataclass(frozen=True)
class Soul:
    """A composed soul with the full per-file report.

    ``text`` is exactly what ``compose_soul`` returns as ``soul``; ``found``
    the present names in order; ``files`` one report per name of
    ``BOOTSTRAP_ORDER``; ``digest`` the hex SHA-256 of ``text`` as UTF-8.
    """

    text: str = field(repr=False)
    found: tuple[str, ...]
    files: tuple[FileReport, ...] = field(repr=False)
    max_file_bytes: int
    symlinks: str

    @cached_property
    def digest(self) -> str:
        """Hex SHA-256 of ``text`` encoded as UTF-8 (computed on first use)."""
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()

    @property
    def truncated(self) -> tuple[str, ...]:
        """Names of the files that were cut at the byte cap."""
        return tuple(f.name for f in self.files if f.truncated)

    def __str__(self) -> str:
        return self.text

    def as_dict(self) -> dict[str, object]:
        """JSON-ready form: text, found, per-file report, digest, options."""
        return {
            "text": self.text,
            "found": list(self.found),
            "files": [f.as_dict() for f in self.files],
            "digest": self.digest,
            "max_file_bytes": self.max_file_bytes,
            "symlinks": self.symlinks,
        }


class BootstrapFileError(OSError):
    """A bootstrap file exists but cannot be used; raised by ``compose(strict=True)``.

    ``filename`` is the file's path, ``report`` its ``FileReport``; ``errno``
    is set when the operating system gave one.
    """

    def __init__(self, path: str, report: FileReport) -> None:
        reason = report.error or report.status.value
        if report.errno:
            super().__init__(report.errno, reason, path)
        else:
            super().__init__(reason)
            self.strerror = reason
            self.filename = path
        self.report = report

    def __str__(self) -> str:
        return f"{self.filename}: {self.report.status.value}: {self.strerror}"
