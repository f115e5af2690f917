"""The pipeline from a directory to a soul, and the seed's functions on it.

``compose_parts`` is the one pipeline (read and assemble): ``compose``,
``compose_soul``, ``SoulCache`` and ``compose_many`` all go through it, and
all but ``compose_soul`` turn its result into a ``Soul`` with ``soul_of``.
The rules of the text are in ``_format``, the argument checks in ``_args``,
the reading and assembling in the reader twins.
"""

from __future__ import annotations

from collections.abc import Sequence

from . import _reader
from ._args import Budget, Options, PathArg, SymlinkPolicy, check_options, dir_bytes
from ._budget import compose_budgeted
from ._format import MAX_BOOTSTRAP_FILE_BYTES
from ._report import Soul, raise_if_unusable
from ._vocabulary import Composed

__all__ = ["compose", "compose_homes", "compose_parts", "compose_soul", "soul_of"]


def compose_parts(paths: Sequence[bytes], options: Options) -> list[Composed]:
    """The pipeline: read and compose each home, in one reader call for all of them.

    ``paths`` and ``options`` are already checked. Returns a ``Composed``
    per home (with a budget, with what it cut and the soul's measure):
    ``compose_soul`` takes the text and names; everything else makes a
    ``Soul`` of it with ``soul_of``.
    """
    if options.budget is not None:  # a budget reads each home as its own sizes say
        return [compose_budgeted(path, options) for path in paths]
    return _reader.compose_homes(paths, options.names, options.cap, options.policy, options.layout)


def soul_of(path: bytes, composed: Composed, options: Options) -> Soul:
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
        raise_if_unusable(path, soul.files)
    return soul


def compose_homes(paths: Sequence[bytes], options: Options) -> list[Soul]:
    """``compose_parts``, each home made a ``Soul``."""
    return [soul_of(p, c, options) for p, c in zip(paths, compose_parts(paths, options), strict=True)]


def compose_soul(
    dir: PathArg,
    *,
    max_file_bytes: int = MAX_BOOTSTRAP_FILE_BYTES,
    files: Sequence[str] | None = None,
    budget: Budget | None = None,
) -> tuple[str, list[str]]:
    """Compose the persona in ``dir`` into ``(soul, found)`` (``docs/format.md``).

    Each name of ``BOOTSTRAP_ORDER`` (or of ``files``, in that order) that is
    a readable regular file becomes a ``## <name>`` section, its body capped
    at ``max_file_bytes`` bytes; absent or unusable files are skipped
    silently. With a ``budget``, the soul fits it, each file cut fairly and
    marked where it was cut. Nothing on disk is modified.
    """
    options = check_options(max_file_bytes, files=files, budget=budget)
    (composed,) = compose_parts([dir_bytes(dir)], options)
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
    path = dir_bytes(dir)
    options = check_options(max_file_bytes, symlinks, strict, files, budget)
    return soul_of(path, compose_parts([path], options)[0], options)
