"""The options of a composition: declared once, checked once for every entry point, and the values they make.

``ComposeOptions`` declares the options that every entry point (``compose``,
``compose_soul``, ``SoulCache.compose``, ``compose_many``, ``acompose``,
``acompose_soul``) takes as keywords, in their one order, and ``DEFAULTS``
their defaults; each entry point takes them as ``**options`` and is marked
``@takes_options``, so that ``inspect.signature`` and ``help()`` show them.
``check_options`` checks them: each check raises ``TypeError`` or
``ValueError`` whose message starts with the argument's name, before any
I/O. ``Budget`` is the ``budget`` argument, a value that checks itself;
``Options`` is what the checks hand on: the validated options of one
composition, in the reader's terms; ``home_path`` turns the public ``dir``
argument into the home's path.
"""

from __future__ import annotations

import inspect
import os
import re
import sys
import typing
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Final, Literal, NamedTuple, TypeAlias, TypedDict, TypeVar, cast

from ._format import BOOTSTRAP_ORDER, MAX_BOOTSTRAP_FILE_BYTES, layout
from ._vocabulary import POLICIES, Layout, Policy, SymlinkPolicy

__all__ = [
    "DEFAULTS",
    "MAX_CAP",
    "Budget",
    "ComposeOptions",
    "Keep",
    "Options",
    "PathArg",
    "check_bool",
    "check_files",
    "check_int",
    "check_options",
    "home_path",
    "takes_options",
]

PathArg: TypeAlias = str | bytes | os.PathLike[str] | os.PathLike[bytes]
Keep = Literal["head+tail", "head"]
"""What a cut file keeps (``Budget.keep``): its start and its end around the marker, or its start."""

# The compiled reader holds the cap in a Py_ssize_t and asks for cap + 1 bytes.
MAX_CAP: Final = 2**63 - 2

_PUBLIC_POLICIES: Final = tuple(word for word, policy in POLICIES.items() if policy.public)
_BOOTSTRAP_NAMES: Final = tuple(os.fsencode(name) for name in BOOTSTRAP_ORDER)
_FS_ENCODING: Final = sys.getfilesystemencoding()
_FS_ERRORS: Final = sys.getfilesystemencodeerrors()
# What a file name may not hold: a character that would break or forge the
# soul's section heading (C0 and C1 controls, DEL, line and paragraph
# separators), and a lone surrogate (a byte that is not UTF-8, which the
# soul, a UTF-8 text, cannot hold).
_NOT_IN_A_NAME: Final = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")


@dataclass(frozen=True)
class Budget:
    """How big a soul may be, and how it is measured (see docs/reference/budgets.md).

    ``total`` limits the whole soul, section headings and cut markers
    included; ``per_file`` limits each file's kept body, markers excluded.
    Each is a positive int, or None for no limit. ``keep`` says what a cut
    file keeps: ``"head+tail"`` (its start, a marker line, its end) or
    ``"head"`` (its start and the marker). ``count`` measures text: ``len``
    (characters) when None; ``lambda s: len(s.encode())`` for bytes; a
    tokenizer's ``lambda s: len(enc.encode(s))`` for tokens. It is called
    about once per file and once for the soul (docs/reference/budgets.md,
    "What a budget costs"), never once per character. A frozen, hashable
    value: caches key on it (``count`` by identity).
    """

    total: int | None = None
    per_file: int | None = None
    keep: Keep = "head+tail"
    count: Callable[[str], int] | None = None

    def __post_init__(self) -> None:
        for field in ("total", "per_file"):
            value = getattr(self, field)
            if value is not None:
                object.__setattr__(self, field, check_int(value, f"Budget.{field}", 1))
        if not isinstance(self.keep, str):
            raise TypeError(f"Budget.keep must be a str, not {type(self.keep).__name__}")
        if self.keep not in ("head+tail", "head"):
            raise ValueError(f"Budget.keep must be 'head+tail' or 'head', got {self.keep!r}")
        if self.count is not None:
            if not callable(self.count):
                raise TypeError(f"Budget.count must be callable, not {type(self.count).__name__}")
            if (empty := self.measure("")) != 0:  # the laws take a length: nothing measures 0
                raise ValueError(f"Budget.count must measure the empty text as 0, got {empty}")

    def measure(self, text: str) -> int:
        """``text`` in the budget's unit."""
        if self.count is None:
            return len(text)
        units = self.count(text)
        if type(units) is not int:
            raise TypeError(f"Budget.count must return an int, not {type(units).__name__}")
        if units < 0:
            raise ValueError(f"Budget.count must return a count >= 0, got {units}")
        return units


class ComposeOptions(TypedDict, total=False):
    """The options of a composition, as every entry point takes them: by keyword, each optional.

    ``max_file_bytes`` (default 2,097,152: 2 MB) caps each file's bytes;
    ``symlinks`` (``"follow"``) says which symlinks a file may be reached
    through; ``strict`` (False) raises for a file that exists but cannot be
    used; ``files`` (None: ``BOOTSTRAP_ORDER``) names the files to compose,
    in order; ``budget`` (None) fits the soul to a ``Budget``. The entry
    points show them to ``inspect.signature`` and ``help()`` one by one. A
    host may keep a set of options as a ``ComposeOptions`` and pass it as
    ``**options``.
    """

    max_file_bytes: int
    symlinks: SymlinkPolicy
    strict: bool
    files: Sequence[str] | None
    budget: Budget | None


DEFAULTS: Final[ComposeOptions] = {
    "max_file_bytes": MAX_BOOTSTRAP_FILE_BYTES,
    "symlinks": "follow",
    "strict": False,
    "files": None,
    "budget": None,
}


class Options(NamedTuple):
    """Checked options of one composition."""

    cap: int  # max_file_bytes
    policy: Policy  # symlinks
    strict: bool
    files: tuple[str, ...]  # the names to compose, in order
    names: tuple[bytes, ...]  # the same, as the reader takes them
    layout: Layout  # the names, section heads and notice for these names and cap
    budget: Budget | None


def home_path(dir: object, name: str = "dir") -> bytes:
    """The home's path, from the ``dir`` argument: bytes, or TypeError/ValueError naming the argument."""
    if type(dir) is str:  # the common case first: this runs once per soul
        path = _encode(dir, name)
    elif isinstance(dir, bytes):
        path = bytes(dir)
    elif isinstance(dir, (str, os.PathLike)):
        try:
            fspath = os.fspath(dir)
        except TypeError as exc:  # __fspath__ returned something else
            raise TypeError(f"{name} is not a usable path: {exc}") from None
        path = _encode(fspath, name) if isinstance(fspath, str) else fspath
    else:
        raise TypeError(f"{name} must be str, bytes or os.PathLike, not {type(dir).__name__}")
    if b"\0" in path:
        raise ValueError(f"{name} must not contain a NUL byte")
    return path


def _encode(path: str, name: str) -> bytes:
    try:
        return path.encode(_FS_ENCODING, _FS_ERRORS)
    except UnicodeError as exc:
        raise ValueError(f"{name} cannot be encoded as a filesystem path: {exc}") from None


def check_int(value: object, name: str, low: int, high: int | None = None) -> int:
    """An ``int`` (a subclass is fine, ``bool`` is not) with ``low <= value <= high``."""
    if type(value) is not int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"{name} must be an int, not {type(value).__name__}")
        value = int(value)
    if high is None:
        if value < low:
            raise ValueError(f"{name} must be >= {low}, got {value}")
    elif not low <= value <= high:
        raise ValueError(f"{name} must be between {low} and {high}, got {value}")
    return value


def check_bool(value: object, name: str) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be a bool, not {type(value).__name__}")
    return value


def _check_policy(symlinks: object) -> Policy:
    if not isinstance(symlinks, str):
        raise TypeError(f"symlinks must be a str, not {type(symlinks).__name__}")
    policy = POLICIES.get(symlinks)
    if policy is None or not policy.public:
        words = ", ".join(map(repr, _PUBLIC_POLICIES[:-1])) + f" or {_PUBLIC_POLICIES[-1]!r}"
        raise ValueError(f"symlinks must be {words}, got {symlinks!r}")
    # The policy, whose word is the plain constant (not a subclass of str
    # that equals it): the reader's comparisons and a report's value stay plain.
    return policy


def _check_files(files: object) -> tuple[tuple[str, ...], tuple[bytes, ...]]:
    """The names to compose, as given and as the reader takes them; every check linear in their number."""
    if files is None:
        return BOOTSTRAP_ORDER, _BOOTSTRAP_NAMES
    if isinstance(files, (str, bytes)):
        raise TypeError(f"files must be a sequence of names, not a single {type(files).__name__}")
    if isinstance(files, AbstractSet):  # no order: the soul's would be chance
        raise TypeError(f"files must be an ordered sequence of names, not {type(files).__name__}")
    try:
        given: tuple[object, ...] = tuple(cast("Iterable[object]", files))
    except TypeError:
        raise TypeError(f"files must be a sequence of names, not {type(files).__name__}") from None
    names: list[str] = []
    seen: set[str] = set()
    for name in given:
        if not isinstance(name, str):
            raise TypeError(f"files must hold str names, not {type(name).__name__}")
        if (
            not name
            or name in (".", "..")
            or "/" in name
            or "\0" in name
            or (os.sep != "/" and os.sep in name)
        ):
            raise ValueError(f"files must hold plain file names, not {name!r}")
        if (unsafe := _NOT_IN_A_NAME.search(name)) is not None:
            raise ValueError(
                f"files must hold names that can head a section, not {name!r}: {_why(unsafe[0])}"
            )
        if name in seen:
            raise ValueError(f"files must not name a file twice, as it does {name!r}")
        seen.add(name)
        names.append(str(name))  # a subclass of str, as the plain str it stands for
    return tuple(names), tuple(_encode(name, "files") for name in names)


def _why(char: str) -> str:
    if "\ud800" <= char <= "\udfff":
        return "it holds a byte that is not UTF-8"
    if char in "\u2028\u2029":
        return "it holds a line or paragraph separator"
    return "it holds a control character"


def check_files(files: object) -> tuple[str, ...]:
    """The ``files`` argument checked: its names, in order (TypeError or ValueError naming it)."""
    return _check_files(files)[0]


def check_options(given: Mapping[str, object], where: str) -> Options:
    """The options an entry point was given (its ``**options``), checked; ``where`` is its name.

    An option not given takes its default; a keyword that is no option is
    the TypeError Python gives for it.
    """
    if not given:  # the common case first: defaults, checked once at import
        return _DEFAULT_OPTIONS
    try:
        return _checked(**given)
    except TypeError:  # unhashable, unknown or wrong: checked again uncached, to raise the right error
        pass
    if not _OPTION_NAMES.issuperset(given):
        unknown = next(name for name in given if name not in _OPTION_NAMES)
        raise TypeError(f"{where}() got an unexpected keyword argument {unknown!r}")
    return _check_options(*_in_order(given))


def _in_order(given: Mapping[str, object]) -> Iterable[object]:
    """Every option's value, given or default, in the declared order (the defaults' keys keep their place)."""
    return {**DEFAULTS, **given}.values()


@lru_cache(maxsize=256, typed=True)  # typed: True must not pass for 1 (equal, with equal hashes)
def _checked(**given: Hashable) -> Options:
    """``check_options`` of options seen before: a host passes the same few again and again."""
    if not _OPTION_NAMES.issuperset(given):
        raise TypeError("an unknown option")  # check_options raises Python's own words
    return _check_options(*_in_order(given))


def _check_options(
    max_file_bytes: object, symlinks: object, strict: object, files: object, budget: object
) -> Options:
    cap = check_int(max_file_bytes, "max_file_bytes", 1, MAX_CAP)
    policy = _check_policy(symlinks)
    strict = check_bool(strict, "strict")
    names, encoded = _check_files(files)
    if budget is not None and not isinstance(budget, Budget):
        raise TypeError(f"budget must be a Budget or None, not {type(budget).__name__}")
    return Options(cap, policy, strict, names, encoded, layout(names, cap), budget)


_OPTION_NAMES: Final = frozenset(DEFAULTS)
_DEFAULT_OPTIONS: Final = _check_options(*DEFAULTS.values())

_F = TypeVar("_F", bound=Callable[..., Any])


def takes_options(function: _F) -> _F:
    """Mark an entry point that takes ``**options: Unpack[ComposeOptions]``: show them as they are.

    ``inspect.signature`` (and so ``help()``) and ``typing.get_type_hints``
    then see each option as a keyword-only parameter with its type and
    default, in place of ``**options``; type checkers read the ``Unpack``
    itself. The function is returned as it is: calls cost nothing more.
    """
    signature = inspect.signature(function)
    (keywords,) = (p for p in signature.parameters.values() if p.kind is inspect.Parameter.VAR_KEYWORD)
    kept = [p for p in signature.parameters.values() if p is not keywords]
    # A function's introspection attributes are writable, which Callable's type does not say.
    shown = cast("Any", function)
    shown.__signature__ = signature.replace(parameters=[*kept, *_PARAMETERS])
    hints = {name: hint for name, hint in function.__annotations__.items() if name != keywords.name}
    shown.__annotations__ = {**hints, **_HINTS}
    return function


# The options' types, evaluated here, where every name in them is defined.
_HINTS: Final = typing.get_type_hints(ComposeOptions)
_PARAMETERS: Final = tuple(
    inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=_HINTS[name])
    for name, default in DEFAULTS.items()
)
