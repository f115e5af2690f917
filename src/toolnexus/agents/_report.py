"""The report that ``compose()`` returns: ``Soul``, one ``FileReport`` per name.

Plain immutable values, so a host can keep, compare, hash and log them; and
``file_reports``, which turns the reader's ``FileRead`` results into them.
"""

from __future__ import annotations

import errno as errnos
import gc
import hashlib
import os
import stat
import warnings
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Final, NamedTuple

from . import _native
from ._options import Budget
from ._vocabulary import POLICIES, Cut, CutRow, FileRead, FileStatus, ReadRow, whole_rows

__all__ = ["NEAR_LIMIT", "FileReport", "Soul", "file_reports"]

NEAR_LIMIT: Final = 0.85
"""A soul at this share of its budget's total or more is near its limit (``Soul.near_limit``)."""


class FileReport(NamedTuple):
    """What happened to one bootstrap file.

    ``bytes_read`` is the number of bytes the last read of it took (at most
    ``max_file_bytes + 1``, so a truncated file reports ``cap + 1``), and
    ``size`` the same, by its 0.2 name; ``size_on_disk`` is the size the
    file system gave when the file was opened (None when it was not).
    ``stable`` is False only when a file larger than one page kept changing
    under three reads; ``errno`` and ``error`` explain any status other than
    present. With a budget, ``cut`` says whether the budget shortened the
    file (or left it out), ``kept`` and ``left_out`` measure its body in the
    budget's unit (``left_out`` is None when the file was not read whole),
    ``kept_bytes`` and ``left_out_bytes`` in UTF-8 bytes; without one they
    are None. ``symlink`` is True when the name is a symbolic link that was
    followed (to a file read, or to what its status says; a link the policy
    refused says so by its status alone); a file that merely has other hard
    links is no symlink. ``invalid_utf8`` is True when the bytes of its body
    that were read are not all well-formed UTF-8: the soul holds a U+FFFD
    for each ill-formed sequence (docs/format.md, section 5). A named tuple:
    immutable, and cheap enough to make seven of per soul.
    """

    name: str
    status: FileStatus
    bytes_read: int = 0
    truncated: bool = False
    stable: bool = True
    errno: int | None = None
    error: str | None = None
    cut: bool = False
    kept: int | None = None
    left_out: int | None = None
    kept_bytes: int | None = None
    left_out_bytes: int | None = None
    size_on_disk: int | None = None
    symlink: bool = False
    invalid_utf8: bool = False

    @property
    def size(self) -> int:
        """``bytes_read``, by the name it had in 0.2."""
        return self.bytes_read

    @property
    def present(self) -> bool:
        return self.status is FileStatus.PRESENT

    def as_dict(self) -> dict[str, object]:
        """JSON-ready form: every field, the status as its text (the budget's fields None without one)."""
        return {
            "name": self.name,
            "status": self.status.value,
            "bytes_read": self.bytes_read,
            "size": self.bytes_read,
            "size_on_disk": self.size_on_disk,
            "truncated": self.truncated,
            "stable": self.stable,
            "errno": self.errno,
            "error": self.error,
            "cut": self.cut,
            "kept": self.kept,
            "left_out": self.left_out,
            "kept_bytes": self.kept_bytes,
            "left_out_bytes": self.left_out_bytes,
            "symlink": self.symlink,
            "invalid_utf8": self.invalid_utf8,
        }


class Soul:
    """A composed soul with the full per-file report.

    ``text`` is exactly what ``compose_soul`` returns as ``soul``; ``found``
    the names whose sections are in it, in order; ``files`` one report per
    name composed; ``digest`` the hex SHA-256 of ``text`` as UTF-8. With a
    budget, ``budget`` is it, ``used`` the soul measured by it, and
    ``near_limit`` True when that is at least ``NEAR_LIMIT`` (85%) of its
    total, or when the budget cut or left out a file. Immutable, comparable,
    hashable and picklable. ``files`` and ``digest`` are computed when first
    asked for, so a host that only wants the text does not pay for them. A
    soul holds nothing the cyclic garbage collector walks but itself (what
    it keeps of the reader's results is atomic), so that a host, or a cache,
    can keep 100,000 of them.
    """

    __slots__ = (
        "_cuts", "_digest", "_files", "_names", "_reads", "budget", "found", "max_file_bytes", "symlinks",
        "text", "used",
    )  # fmt: skip

    text: str
    found: tuple[str, ...]
    max_file_bytes: int
    symlinks: str
    budget: Budget | None
    used: int | None
    _files: tuple[FileReport, ...] | None
    # Where ``files`` comes from until it is made: each name, what the reader
    # found there and what the budget did to it, as tuples of atomic values.
    _names: Sequence[str]
    _reads: Sequence[ReadRow]
    _cuts: Sequence[CutRow | None] | None
    _digest: str | None

    def __init__(
        self,
        text: str,
        found: tuple[str, ...],
        files: tuple[FileReport, ...],
        max_file_bytes: int,
        symlinks: str,
        *,
        budget: Budget | None = None,
        used: int | None = None,
    ) -> None:
        _fill(self, text, found, max_file_bytes, symlinks, budget, used, files, ((), (), None))

    @classmethod
    def of_reads(
        cls,
        text: str,
        found: tuple[str, ...],
        reads: Sequence[FileRead],
        *,
        names: Sequence[str],
        max_file_bytes: int,
        symlinks: str,
        cuts: Sequence[CutRow | None] | None = None,
        budget: Budget | None = None,
        used: int | None = None,
    ) -> Soul:
        """The soul, with its reports still to be made from the reader's results.

        The compiled reader's results are kept as they are: nothing in them
        is on the collector's lists. Others (the pure reader's) are kept as
        plain tuples of their fields, which CPython takes off those lists
        itself at its next collection, as it does a budget's ``cuts``. The
        soul goes off them too, unless a ``count`` function (which could
        lead back to it) is in it: a full collection need not walk it.
        """
        soul = cls.__new__(cls)
        # The compiled reader's results are off the collector's lists already.
        untracked = type(reads) is tuple and not _is_tracked(reads)
        rows: Sequence[ReadRow] = reads if untracked else tuple([(*read,) for read in reads])
        _fill(soul, text, found, max_file_bytes, symlinks, budget, used, None, (names, rows, cuts))
        if cls is Soul and (budget is None or budget.count is None):
            _native.reader.untrack(soul)
        return soul

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"Soul is immutable: cannot set {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"Soul is immutable: cannot delete {name!r}")

    @property
    def files(self) -> tuple[FileReport, ...]:
        """One ``FileReport`` per name, in order."""
        files = self._files
        if files is None:
            measure = None if self.budget is None else self.budget.measure
            files = file_reports(
                self._names, self._reads, self.symlinks, self._cuts, text=self.text, measure=measure
            )
            _set(self, "_files", files)  # two threads may both make it: the same reports
        return files

    @property
    def digest(self) -> str:
        """Hex SHA-256 of ``text`` encoded as UTF-8 (computed on first use)."""
        digest = self._digest
        if digest is None:
            digest = hashlib.sha256(self.text.encode("utf-8")).hexdigest()
            _set(self, "_digest", digest)
        return digest

    @property
    def truncated_files(self) -> tuple[str, ...]:
        """Names of the files that were cut at the byte cap."""
        if self._files is None:  # from the reader's results: no reports made
            if self._cuts is not None:
                return ()  # with a budget, a file is cut by it, never truncated
            return tuple(
                name for name, read in zip(self._names, self._reads, strict=True) if read[_TRUNCATED]
            )
        return tuple(f.name for f in self.files if f.truncated)

    @property
    def cut_files(self) -> tuple[str, ...]:
        """Names of the files that the budget shortened or left out."""
        cuts = self._cuts
        if self._files is None:  # from the budget's cuts: nothing measured
            if not cuts:  # None, or () for a soul that a budget in characters holds whole
                return ()
            return tuple(name for name, cut in zip(self._names, cuts, strict=True) if cut and cut[_CUT])
        return tuple(f.name for f in self.files if f.cut)

    @property
    def truncated(self) -> tuple[str, ...]:
        """``truncated_files``, by its 0.2 name (deprecated: a ``FileReport``'s ``truncated`` is a bool)."""
        warnings.warn(
            "Soul.truncated is deprecated: use Soul.truncated_files", DeprecationWarning, stacklevel=2
        )
        return self.truncated_files

    @property
    def cut(self) -> tuple[str, ...]:
        """``cut_files``, by its 0.2 name (deprecated: a ``FileReport``'s ``cut`` is a bool)."""
        warnings.warn("Soul.cut is deprecated: use Soul.cut_files", DeprecationWarning, stacklevel=2)
        return self.cut_files

    @property
    def near_limit(self) -> bool:
        """At ``NEAR_LIMIT`` of the budget's total or more, or at its limit: it cut or left out a file.

        False without a budget.
        """
        if self.budget is None:
            return False
        total, used = self.budget.total, self.used
        if total is not None and used is not None and used >= NEAR_LIMIT * total:
            return True
        return bool(self.cut_files)  # from the budget's cuts: nothing measured

    def _key(self) -> tuple[object, ...]:
        return (self.text, self.found, self.files, self.max_file_bytes, self.symlinks, self.budget, self.used)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Soul):
            return NotImplemented
        return self is other or self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __reduce__(self) -> tuple[object, ...]:
        return (_unpickle, self._key())

    def __repr__(self) -> str:
        options = f"max_file_bytes={self.max_file_bytes!r}, symlinks={self.symlinks!r}"
        if self.budget is not None:
            options += f", budget={self.budget!r}"
        return f"Soul(found={self.found!r}, {options})"

    def __str__(self) -> str:
        return self.text

    def as_dict(self) -> dict[str, object]:
        """JSON-ready form: the same keys with or without a budget (docs/reference/command-line.md)."""
        budget = self.budget
        return {
            "text": self.text,
            "found": list(self.found),
            "truncated_files": list(self.truncated_files),
            "cut_files": list(self.cut_files),
            "used": self.used,
            "near_limit": self.near_limit,
            "budget": None if budget is None else _budget_dict(budget),
            "digest": self.digest,
            "max_file_bytes": self.max_file_bytes,
            "symlinks": self.symlinks,
            "files": [f.as_dict() for f in self.files],
        }


_set = object.__setattr__  # a Soul's own writes, past its __setattr__


def _fill(  # noqa: PLR0917 - every slot of a Soul, once
    soul: Soul, text: str, found: tuple[str, ...], max_file_bytes: int, symlinks: str, budget: Budget | None,
    used: int | None, files: tuple[FileReport, ...] | None,
    source: tuple[Sequence[str], Sequence[ReadRow], Sequence[CutRow | None] | None],
) -> None:  # fmt: skip
    _set(soul, "text", text)
    _set(soul, "found", found)
    _set(soul, "max_file_bytes", max_file_bytes)
    _set(soul, "symlinks", symlinks)
    _set(soul, "budget", budget)
    _set(soul, "used", used)
    _set(soul, "_files", files)
    _set(soul, "_names", source[0])
    _set(soul, "_reads", source[1])
    _set(soul, "_cuts", source[2])
    _set(soul, "_digest", None)


def _budget_dict(budget: Budget) -> dict[str, object]:
    count = budget.count
    return {
        "total": budget.total,
        "per_file": budget.per_file,
        "keep": budget.keep,
        "count": None if count is None else getattr(count, "__qualname__", repr(count)),
    }


def _unpickle(  # noqa: PLR0917 - the fields of a Soul, as __reduce__ gives them
    text: str,
    found: tuple[str, ...],
    files: tuple[FileReport, ...],
    max_file_bytes: int,
    symlinks: str,
    budget: Budget | None,
    used: int | None,
) -> Soul:
    return Soul(text, found, files, max_file_bytes, symlinks, budget=budget, used=used)


_KIND_NAMES: Final = {
    stat.S_IFDIR: "is a directory",
    stat.S_IFIFO: "is a FIFO",
    stat.S_IFCHR: "is a character device",
    stat.S_IFBLK: "is a block device",
    stat.S_IFSOCK: "is a socket",
    stat.S_IFLNK: "is a symlink",
}


def _describe(status: FileStatus, kind: int, err: int, symlinks: str) -> str:
    """The error text of a file that is not present."""
    if status is FileStatus.REFUSED:
        return POLICIES[symlinks].refusal
    if status is FileStatus.NOT_REGULAR and kind:
        return _KIND_NAMES.get(kind, f"is not a regular file (mode {kind:#o})")
    return os.strerror(err) if err else status.value


@lru_cache(maxsize=64)
def _absent(name: str) -> FileReport:
    # A missing file's report is the same every time: one per name.
    return FileReport(name, FileStatus.MISSING, errno=errnos.ENOENT, error=os.strerror(errnos.ENOENT))


_is_tracked = gc.is_tracked
_new_report = tuple.__new__  # skips FileReport's Python-level __new__: half the cost
_PRESENT: Final = FileStatus.PRESENT
_ENOENT: Final = errnos.ENOENT
# The fields a soul reads of what it keeps, without making reports: by their names' places.
_TRUNCATED: Final = FileRead._fields.index("truncated")
_CUT: Final = Cut._fields.index("cut")


def file_reports(
    names: Sequence[str],
    reads: Sequence[ReadRow],
    symlinks: str,
    cuts: Sequence[CutRow | None] | None = None,
    *,
    text: str = "",
    measure: Callable[[str], int] | None = None,
) -> tuple[FileReport, ...]:
    """One ``FileReport`` per name, from the reader's results (and a budget's cuts) for those names.

    Each a ``FileRead`` or a ``Cut``, or a plain tuple of its fields. What a
    cut left unmeasured is measured here, with ``measure``, in ``text``, the
    soul: a report asks for it.
    """
    if cuts is not None:
        if not cuts:  # a budget in characters held every file whole: the reader's lengths are the measures
            cuts = whole_rows(reads)
        return _budgeted_reports(names, reads, symlinks, cuts, text=text, measure=measure or len)
    reports = []
    for name, read in zip(names, reads, strict=True):
        status, err, kind, nread, truncated, stable, size_on_disk, _, _, _, symlink, invalid_utf8 = read
        if status == "present":
            fields = (name, _PRESENT, nread, truncated, stable, None, None, False, None, None, None, None)
            report = _new_report(FileReport, (*fields, size_on_disk, symlink, invalid_utf8))
        elif status == "missing" and err == _ENOENT and not symlink:
            report = _absent(name)
        else:
            member = FileStatus(status)
            error = _describe(member, kind, err, symlinks)
            followed = symlink and member is not FileStatus.REFUSED
            report = FileReport(
                name,
                member,
                0,
                False,
                stable,
                err or None,
                error,
                size_on_disk=size_on_disk,
                symlink=followed,
            )
        reports.append(report)
    return tuple(reports)


def _budgeted_reports(
    names: Sequence[str],
    reads: Sequence[ReadRow],
    symlinks: str,
    cuts: Sequence[CutRow | None],
    *,
    text: str,
    measure: Callable[[str], int],
) -> tuple[FileReport, ...]:
    # With a budget, a file is shortened by the budget, never truncated at the cap.
    reports = []
    for plain, row in zip(file_reports(names, reads, symlinks), cuts, strict=True):
        if row is None:
            reports.append(plain)
            continue
        cut, kept, body, kept_bytes, left_out_bytes, spans = row
        if kept < 0:  # not measured when composed: measured now, where it stands in the soul
            pairs = zip(spans[::2], spans[1::2], strict=True)
            kept = sum(measure(text[start:stop]) for start, stop in pairs if stop > start)
        left_out = 0 if not cut else None if body < 0 else body - kept
        budgeted = plain._replace(
            truncated=False,
            cut=cut,
            kept=kept,
            left_out=left_out,
            kept_bytes=kept_bytes,
            left_out_bytes=left_out_bytes,
        )
        reports.append(budgeted)
    return tuple(reports)
