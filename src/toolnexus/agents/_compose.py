"""The pipeline from a home to a soul, the seed's functions on it, and what strict mode raises.

``compose_parts`` is the one pipeline (read and assemble): ``compose``,
``compose_soul``, ``SoulCache`` and ``compose_many`` all go through it, and
all but ``compose_soul`` turn its result into a ``Soul`` with ``soul_of``.
The rules of the text are in ``_format``, the argument checks in
``_options``, the reading and assembling in the reader twins (``_native``),
budgets in ``_budget``. A home or a file that strict mode refuses raises
here (``raise_if_unusable``); what the process lacks (a descriptor, memory)
raises in the readers, whatever ``strict`` says.
"""

from __future__ import annotations

import errno as errnos
import os
import stat
from collections.abc import Sequence
from typing import Final

from . import _native
from ._budget import compose_budgeted
from ._format import MAX_BOOTSTRAP_FILE_BYTES
from ._options import Budget, Options, PathArg, check_options, home_path
from ._report import FileReport, Soul
from ._vocabulary import Composed, FileStatus, SymlinkPolicy

__all__ = [
    "BootstrapFileError",
    "compose",
    "compose_homes",
    "compose_parts",
    "compose_soul",
    "home_problem",
    "raise_if_unusable",
    "soul_of",
]


def compose_parts(homes: Sequence[bytes], options: Options) -> list[Composed]:
    """The pipeline: read and compose each home, in one reader call for all of them.

    ``homes`` and ``options`` are already checked. Returns a ``Composed``
    per home (with a budget, with what it cut and the soul's measure):
    ``compose_soul`` takes the text and names; everything else makes a
    ``Soul`` of it with ``soul_of``.
    """
    if options.budget is not None:  # a budget reads each home as its own sizes say
        return [compose_budgeted(home, options) for home in homes]
    return _native.reader.compose_homes(homes, options.names, options.cap, options.symlinks, options.layout)


def soul_of(home: bytes, composed: Composed, options: Options) -> Soul:
    """The ``Soul`` of one composed home; with ``options.strict``, raise for an unusable file."""
    soul = Soul.of_reads(
        composed.text,
        composed.found,
        composed.reads,
        names=options.files,
        max_file_bytes=options.cap,
        symlinks=options.symlinks,
        cuts=composed.cuts,
        budget=options.budget,
        used=composed.used,
    )
    if options.strict:
        raise_if_unusable(home, soul.files)
    return soul


def compose_homes(homes: Sequence[bytes], options: Options) -> list[Soul]:
    """``compose_parts``, each home made a ``Soul``."""
    return [soul_of(h, c, options) for h, c in zip(homes, compose_parts(homes, options), strict=True)]


def compose_soul(
    dir: PathArg,
    *,
    max_file_bytes: int = MAX_BOOTSTRAP_FILE_BYTES,
    files: Sequence[str] | None = None,
    budget: Budget | None = None,
    symlinks: SymlinkPolicy = "follow",
    strict: bool = False,
) -> tuple[str, list[str]]:
    """Compose the persona in ``dir`` into ``(soul, found)`` (``docs/format.md``).

    Each name of ``BOOTSTRAP_ORDER`` (or of ``files``, in that order) that is
    a readable regular file becomes a ``## <name>`` section, its body capped
    at ``max_file_bytes`` bytes; absent or unusable files are skipped
    silently. With a ``budget``, the soul fits it, each file cut fairly and
    marked where it was cut. ``symlinks`` and ``strict`` are ``compose``'s.
    Nothing on disk is modified.
    """
    home = home_path(dir)
    options = check_options(max_file_bytes, symlinks, strict, files, budget)
    (composed,) = compose_parts([home], options)
    if strict:
        soul_of(home, composed, options)
    return composed.text, list(composed.found)


def compose(
    dir: PathArg,
    *,
    max_file_bytes: int = MAX_BOOTSTRAP_FILE_BYTES,
    symlinks: SymlinkPolicy = "follow",
    strict: bool = False,
    files: Sequence[str] | None = None,
    budget: Budget | None = None,
) -> Soul:
    """Compose like ``compose_soul`` and report on every bootstrap file.

    ``symlinks``: ``"follow"`` follows them anywhere; ``"within"`` admits a
    file only if it resolves inside ``dir``; ``"refuse"`` skips a file whose
    own name is a symlink. With ``strict=True`` a file that exists but cannot
    be used raises ``BootstrapFileError`` (an ``OSError``); missing files are
    still skipped. ``files`` composes those names, in that order, instead of
    ``BOOTSTRAP_ORDER``; ``budget`` fits the soul to a ``Budget``.
    """
    home = home_path(dir)
    options = check_options(max_file_bytes, symlinks, strict, files, budget)
    return soul_of(home, compose_parts([home], options)[0], options)


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


def home_problem(home: bytes) -> OSError | None:
    """Why ``home`` is no home to compose, as the OSError to raise; None when it is one.

    It does not exist (``FileNotFoundError``), is not a directory
    (``NotADirectoryError``), or cannot be searched, so that no file in it
    can be opened (``PermissionError``). Each names the path.
    """
    name = os.fsdecode(home)
    try:
        mode = os.stat(home).st_mode
    except OSError as exc:
        code = exc.errno or errnos.EIO
        return _ERRORS.get(code, OSError)(code, os.strerror(code), name)
    if not stat.S_ISDIR(mode):
        return NotADirectoryError(errnos.ENOTDIR, os.strerror(errnos.ENOTDIR), name)
    if not os.access(home, os.X_OK, effective_ids=os.access in os.supports_effective_ids):
        return PermissionError(errnos.EACCES, os.strerror(errnos.EACCES), name)
    return None


# The OSError subclasses that Python itself raises for these.
_ERRORS: Final[dict[int, type[OSError]]] = {
    errnos.ENOENT: FileNotFoundError,
    errnos.ENOTDIR: NotADirectoryError,
    errnos.EACCES: PermissionError,
    errnos.EPERM: PermissionError,
}


def raise_if_unusable(home: bytes, files: Sequence[FileReport]) -> None:
    """Strict mode: raise for a home that cannot be used, or for the first file that cannot be.

    The home is looked at only when no file of it is present (a stat, and a
    permission check): a home that gave a file is plainly there.
    """
    if not any(report.status is FileStatus.PRESENT for report in files):
        problem = home_problem(home)
        if problem is not None:
            raise problem
    for report in files:
        if report.status.unusable:
            raise BootstrapFileError(os.path.join(os.fsdecode(home), report.name), report)
