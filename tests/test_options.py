"""The options of a composition: declared once, in one order, checked once, strict mode in one place.

Every entry point (``compose``, ``compose_soul``, ``SoulCache.compose``,
``compose_many``, ``acompose``, ``acompose_soul``) takes the same keyword
options, shows them to ``inspect.signature`` and ``help()`` as keyword-only
parameters with their types and defaults, refuses a bad one with the same
words, and raises in strict mode as ``compose`` does.
"""

from __future__ import annotations

import asyncio
import inspect
import os
import pydoc
import subprocess
import sys
import textwrap
import typing
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Final, Literal

import pytest

from conftest import Writer
from toolnexus.agents import (
    MAX_BOOTSTRAP_FILE_BYTES,
    BootstrapFileError,
    Budget,
    ComposeOptions,
    Soul,
    SoulCache,
    acompose,
    acompose_soul,
    compose,
    compose_many,
    compose_soul,
)

OPTIONS: Final = ("max_file_bytes", "symlinks", "strict", "files", "budget")
HINTS: Final = {
    "max_file_bytes": int,
    "symlinks": Literal["follow", "within", "refuse"],
    "strict": bool,
    "files": Sequence[str] | None,
    "budget": Budget | None,
}
DEFAULTS: Final = {
    "max_file_bytes": MAX_BOOTSTRAP_FILE_BYTES,
    "symlinks": "follow",
    "strict": False,
    "files": None,
    "budget": None,
}
SHOWN: Final = (
    "max_file_bytes: int = 2097152, symlinks: Literal['follow', 'within', 'refuse'] = 'follow',"
    " strict: bool = False, files: collections.abc.Sequence[str] | None = None,"
    " budget: toolnexus.agents._options.Budget | None = None"
)
ENTRY_POINTS: Final[dict[str, tuple[Callable[..., object], str]]] = {
    "compose": (compose, "(dir: 'PathArg', *, {}) -> 'Soul'"),
    "compose_soul": (compose_soul, "(dir: 'PathArg', *, {}) -> 'tuple[str, list[str]]'"),
    "SoulCache.compose": (SoulCache.compose, "(self, dir: 'PathArg', *, {}) -> 'Soul'"),
    "compose_many": (
        compose_many,
        "(dirs: 'Iterable[PathArg]', *, workers: 'int | None' = None, executor: 'Executor | None' = None,"
        " cache: 'SoulCache | None' = None, {}) -> 'list[Soul]'",
    ),
    "acompose": (acompose, "(dir: 'PathArg', *, cache: 'SoulCache | None' = None, {}) -> 'Soul'"),
    "acompose_soul": (acompose_soul, "(dir: 'PathArg', *, {}) -> 'tuple[str, list[str]]'"),
}


@pytest.mark.reader_independent
@pytest.mark.parametrize("name", sorted(ENTRY_POINTS))
def test_every_entry_point_shows_every_option(name: str) -> None:
    function, shown = ENTRY_POINTS[name]
    signature = inspect.signature(function)
    assert str(signature) == shown.format(SHOWN)
    options = [p for p in signature.parameters.values() if p.name in OPTIONS]
    assert [(p.name, p.kind, p.default, p.annotation) for p in options] == [
        (option, inspect.Parameter.KEYWORD_ONLY, DEFAULTS[option], HINTS[option]) for option in OPTIONS
    ]
    hints = typing.get_type_hints(function)
    assert {option: hints[option] for option in OPTIONS} == HINTS
    assert "options" not in hints
    # help() draws the same signature (on one line, or from 3.13 one parameter a line).
    shown_by_help = "".join(pydoc.plain(pydoc.render_doc(function)).split())
    assert "".join(f"{function.__name__}{signature}".split()) in shown_by_help


@pytest.mark.reader_independent
def test_a_bound_method_shows_them_too() -> None:
    with SoulCache() as cache:
        assert str(inspect.signature(cache.compose)) == f"(dir: 'PathArg', *, {SHOWN}) -> 'Soul'"


@pytest.mark.reader_independent
def test_the_declaration_is_the_one_order() -> None:
    assert tuple(typing.get_type_hints(ComposeOptions)) == OPTIONS
    assert ComposeOptions.__optional_keys__ == frozenset(OPTIONS)


def calls(cache: SoulCache) -> dict[str, Callable[..., object]]:
    """Each entry point, called with one home and the options given."""
    return {
        "compose": compose,
        "compose_soul": compose_soul,
        "SoulCache.compose": cache.compose,
        "compose_many": lambda dir, **options: compose_many([dir], **options),
        "acompose": lambda dir, **options: asyncio.run(acompose(dir, **options)),
        "acompose_soul": lambda dir, **options: asyncio.run(acompose_soul(dir, **options)),
    }


@pytest.mark.parametrize("name", sorted(ENTRY_POINTS))
def test_an_unknown_option_is_pythons_typeerror(home: Path, name: str) -> None:
    with SoulCache() as cache:
        call = calls(cache)[name]
        with pytest.raises(TypeError) as caught:
            call(home, symlink="within")
        assert str(caught.value) == f"{name}() got an unexpected keyword argument 'symlink'"
        with pytest.raises(TypeError) as caught:
            call(home, max_file_bytes=10, options={})
        assert str(caught.value) == f"{name}() got an unexpected keyword argument 'options'"


# A bad option, a good one equal to it (called first: a call the cache has
# seen must not let an equal bad one pass), the error and its words.
BAD: Final[list[tuple[dict[str, Any], dict[str, Any], type[Exception], str]]] = [
    ({"max_file_bytes": True}, {"max_file_bytes": 1}, TypeError, "max_file_bytes must be an int, not bool"),
    ({"max_file_bytes": 1.0}, {"max_file_bytes": 1}, TypeError, "max_file_bytes must be an int, not float"),
    (
        {"max_file_bytes": 0},
        {},
        ValueError,
        "max_file_bytes must be between 1 and 9223372036854775806, got 0",
    ),
    (
        {"symlinks": "FOLLOW"},
        {"symlinks": "follow"},
        ValueError,
        "symlinks must be 'follow', 'within' or 'refuse', got 'FOLLOW'",
    ),
    (
        {"symlinks": "within-portable"},
        {},
        ValueError,
        "symlinks must be 'follow', 'within' or 'refuse', got 'within-portable'",
    ),
    ({"symlinks": None}, {}, TypeError, "symlinks must be a str, not NoneType"),
    ({"strict": 1}, {"strict": True}, TypeError, "strict must be a bool, not int"),
    ({"files": {"SOUL.md"}}, {}, TypeError, "files must be an ordered sequence of names, not set"),
    ({"files": ["a/b"]}, {}, ValueError, "files must hold plain file names, not 'a/b'"),
    ({"budget": 3}, {}, TypeError, "budget must be a Budget or None, not int"),
]


@pytest.mark.parametrize(("options", "good", "error", "message"), BAD, ids=[str(bad[0]) for bad in BAD])
def test_every_entry_point_refuses_a_bad_option_in_the_same_words(
    home: Path, options: dict[str, Any], good: dict[str, Any], error: type[Exception], message: str
) -> None:
    with SoulCache() as cache:
        for name, call in calls(cache).items():
            call(home, **good)
            with pytest.raises(error) as caught:
                call(home, **options)
            assert (name, str(caught.value)) == (name, message)


def test_the_cache_takes_no_other_path_for_a_call_it_has_seen(home: Path, write: Writer) -> None:
    write("SOUL.md", "soul")
    with SoulCache() as cache:
        assert cache.compose(str(home), strict=True).text == "## SOUL.md\n\nsoul"
        # A tuple that holds what the cache may remember that call by is no path.
        loose: Any = cache.compose  # called with what a type checker refuses, on purpose
        for dir in ((str(home), "strict", True), (str(home), ("strict", True)), (str(home),)):
            with pytest.raises(TypeError) as caught:
                loose(dir)
            assert str(caught.value) == "dir must be str, bytes or os.PathLike, not tuple"


def test_options_kept_as_a_typed_dict_are_options(home: Path, write: Writer) -> None:
    write("SOUL.md", "s" * 40)
    kept: ComposeOptions = {"max_file_bytes": 8, "files": ["SOUL.md"], "budget": Budget(per_file=4)}
    soul = compose(home, **kept)
    assert soul == compose(home, max_file_bytes=8, files=["SOUL.md"], budget=Budget(per_file=4))
    assert soul.text == "## SOUL.md\n\nss\n[... 38 bytes of SOUL.md left out ...]"
    assert compose_soul(home, **kept) == (soul.text, ["SOUL.md"])
    with SoulCache() as cache:
        assert cache.compose(home, **kept) == soul
        assert compose_many([home], cache=cache, **kept) == [soul]


def text_of(result: object) -> str:
    """The soul's text, whichever entry point gave ``result``."""
    if isinstance(result, list):
        (result,) = result
    if isinstance(result, Soul):
        return result.text
    assert isinstance(result, tuple)
    return str(result[0])


@pytest.mark.parametrize("name", sorted(ENTRY_POINTS))
def test_strict_mode_is_the_same_from_every_entry_point(home: Path, write: Writer, name: str) -> None:
    write("SOUL.md", "soul")
    (home / "USER.md").mkdir()
    with SoulCache() as cache:
        call = calls(cache)[name]
        for _ in range(2):  # the second time from the cache, where there is one
            with pytest.raises(BootstrapFileError) as caught:
                call(home, strict=True)
            assert str(caught.value) == f"{home}/USER.md: not a regular file: is a directory"
        assert text_of(call(home)) == "## SOUL.md\n\nsoul"  # without strict, what can be used is
        missing = home / "missing"
        with pytest.raises(FileNotFoundError) as absent:
            call(missing, strict=True)
        assert (absent.value.filename, absent.value.errno) == (str(missing), 2)


@pytest.mark.slow
@pytest.mark.reader_independent
def test_a_hosts_strict_program_type_checks_its_options(tmp_path: Path) -> None:
    good = tmp_path / "good.py"
    good.write_text(
        textwrap.dedent(
            """\
            import asyncio

            from toolnexus.agents import (
                Budget, ComposeOptions, Soul, SoulCache, acompose, acompose_soul, compose, compose_many,
                compose_soul,
            )

            TOKENS = Budget(total=8_000, count=len)
            options: ComposeOptions = {"symlinks": "within", "budget": TOKENS}
            soul: Soul = compose("/srv/a", max_file_bytes=4096, symlinks="refuse", strict=True, files=["A"])
            text, found = compose_soul(b"/srv/a", **options)
            cached: Soul = SoulCache().compose("/srv/a", **options)
            many: list[Soul] = compose_many(["/srv/a"], workers=2, files=("SOUL.md",))
            one: Soul = asyncio.run(acompose("/srv/a", cache=SoulCache(), symlinks="within"))
            pair: tuple[str, list[str]] = asyncio.run(acompose_soul("/srv/a", max_file_bytes=10))
            """
        )
    )
    bad = tmp_path / "bad.py"
    bad.write_text(
        textwrap.dedent(
            """\
            from toolnexus.agents import SoulCache, compose, compose_many

            compose("/srv/a", symlinks="sometimes")
            compose("/srv/a", max_file_bytes="2 MB")
            SoulCache().compose("/srv/a", symlink="within")
            compose_many(["/srv/a"], strict=None)
            """
        )
    )

    def mypy(program: Path) -> list[str]:
        command = [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--python-version", "3.10"]
        done = subprocess.run(
            [*command, "--no-error-summary", str(program)],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            check=False,
            env={**os.environ, "MYPY_FORCE_COLOR": "0"},
        )
        return [line for line in done.stdout.splitlines() if ": note:" not in line]

    assert mypy(good) == []
    assert mypy(bad) == [
        'bad.py:3: error: Argument "symlinks" to "compose" has incompatible type "Literal[\'sometimes\']";'
        " expected \"Literal['follow', 'within', 'refuse']\"  [arg-type]",
        'bad.py:4: error: Argument "max_file_bytes" to "compose" has incompatible type "str"; expected "int"'
        "  [arg-type]",
        'bad.py:5: error: Unexpected keyword argument "symlink" for "compose" of "SoulCache";'
        ' did you mean "symlinks"?  [call-arg]',
        'bad.py:6: error: Argument "strict" to "compose_many" has incompatible type "None"; expected "bool"'
        "  [arg-type]",
    ]
