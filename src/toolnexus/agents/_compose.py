"""The pipeline from a home to a soul, the seed's functions on it, and what strict mode raises.

``compose_parts`` is the one pipeline (read and assemble): ``compose``,
``compose_soul``, ``SoulCache`` and ``compose_many`` all go through it, and
all but ``compose_soul`` turn its result into a ``Soul`` with ``soul_of``.
Composing is never strict: ``delivered`` is the one place strict mode is
applied, to every soul any entry point hands out (a cached one included),
and raises for a home or a file that it refuses. What the process lacks (a
descriptor, memory) raises in the readers, whatever ``strict`` says. The
rules of the text are in ``_format``, the options and their checks in
``_options``, the reading and assembling in the reader twins (``_native``),
budgets in ``_budget``.
"""

from __future__ import annotations

import errno as errnos
import os
import stat
from collections.abc import Sequence
from typing import TYPE_CHECKING, Final

from . import _native
from ._budget import compose_budgeted
from ._options import ComposeOptions, Options, PathArg, check_options, home_path, takes_options
from ._report import FileReport, Soul
from ._vocabulary import Composed, FileStatus

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = [
    "BootstrapFileError",
    "compose",
    "compose_homes",
    "compose_parts",
    "compose_soul",
    "compose_text",
    "delivered",
    "home_problem",
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
    return _native.reader.compose_homes(
        homes, options.names, options.cap, options.policy.word, options.layout
    )


def soul_of(composed: Composed, options: Options) -> Soul:
    """The ``Soul`` of one composed home (as every soul is made: strict mode is ``delivered``'s)."""
    return Soul.of_reads(
        composed.text,
        composed.found,
        composed.reads,
        names=options.files,
        max_file_bytes=options.cap,
        symlinks=options.policy.word,
        cuts=composed.cuts,
        budget=options.budget,
        used=composed.used,
    )


def delivered(home: bytes, soul: Soul, options: Options) -> Soul:
    """``soul`` as an entry point hands it out: strict mode, the one place it is applied.

    With ``options.strict``, raise for a home that cannot be used, or for the
    first file that exists but cannot be (``home`` is the path as given, for
    the error to name); else, and when nothing is wrong, ``soul``.
    """
    if options.strict:
        _raise_if_unusable(home, soul.files)
    return soul


def compose_homes(homes: Sequence[bytes], options: Options) -> list[Soul]:
    """``compose_parts``, each home made a ``Soul`` and ``delivered``: what ``compose_many`` runs."""
    composed = compose_parts(homes, options)
    return [delivered(h, soul_of(c, options), options) for h, c in zip(homes, composed, strict=True)]


@takes_options
def compose_soul(dir: PathArg, **options: Unpack[ComposeOptions]) -> tuple[str, list[str]]:
    """Compose the persona in ``dir`` into ``(soul, found)`` (``docs/format.md``).

    Each name of ``BOOTSTRAP_ORDER`` (or of ``files``, in that order) that is
    a readable regular file becomes a ``## <name>`` section, its body capped
    at ``max_file_bytes`` bytes; absent or unusable files are skipped
    silently. With a ``budget``, the soul fits it, each file cut fairly and
    marked where it was cut. The options are ``compose``'s, and so is what
    ``strict`` raises. Nothing on disk is modified.
    """
    return compose_text(home_path(dir), check_options(options, "compose_soul"))


def compose_text(home: bytes, options: Options) -> tuple[str, list[str]]:
    """``compose_soul``'s ``(soul, found)`` of a checked home and options."""
    (composed,) = compose_parts([home], options)
    if options.strict:  # compose's soul, to be delivered as compose delivers it
        delivered(home, soul_of(composed, options), options)
    return composed.text, list(composed.found)


@takes_options
def compose(dir: PathArg, **options: Unpack[ComposeOptions]) -> Soul:
    """Compose like ``compose_soul`` and report on every bootstrap file.

    The options, each a keyword (``ComposeOptions``): ``max_file_bytes``
    (2 MB) caps each file's bytes. ``symlinks``: ``"follow"`` (the default)
    follows them anywhere; ``"within"`` admits a file only if it resolves
    inside ``dir``; ``"refuse"`` skips a file whose own name is a symlink.
    With ``strict=True`` a file that exists but cannot be used raises
    ``BootstrapFileError`` (an ``OSError``), and a home that does not exist,
    is not a directory or cannot be searched the ``OSError`` the system
    gives; missing files are still skipped. ``files`` composes those names,
    in that order, instead of ``BOOTSTRAP_ORDER``; ``budget`` fits the soul
    to a ``Budget``.
    """
    home = home_path(dir)
    checked = check_options(options, "compose")
    (composed,) = compose_parts([home], checked)
    soul = soul_of(composed, checked)
    return delivered(home, soul, checked) if checked.strict else soul  # a call less, on every compose


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


def _raise_if_unusable(home: bytes, files: Sequence[FileReport]) -> None:
    """Raise for a home that cannot be used, or for the first file that cannot be.

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
