"""Bad arguments get a clear exception naming the argument."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from toolnexus.agents import compose, compose_soul
from toolnexus.agents._format import layout
from twins import ReaderName, load


class BadPath:
    def __fspath__(self) -> int:
        return 42


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (None, "dir must be str, bytes or os.PathLike, not NoneType"),
        (3, "dir must be str, bytes or os.PathLike, not int"),
        (bytearray(b"/tmp"), "dir must be str, bytes or os.PathLike, not bytearray"),
        (["/tmp"], "dir must be str, bytes or os.PathLike, not list"),
        (
            BadPath(),
            "dir is not a usable path: expected BadPath.__fspath__() to return str or bytes, not int",
        ),
    ],
)
def test_dir_of_wrong_type(value: object, message: str) -> None:
    with pytest.raises(TypeError) as caught:
        compose_soul(value)  # type: ignore[arg-type]
    assert str(caught.value) == message
    with pytest.raises(TypeError):
        compose(value)  # type: ignore[arg-type]


class BadFspath(os.PathLike[str]):
    def __fspath__(self) -> str:
        return 42  # type: ignore[return-value]


def test_pathlike_returning_garbage() -> None:
    with pytest.raises(TypeError) as caught:
        compose_soul(BadFspath())
    assert str(caught.value) == (
        "dir is not a usable path: expected BadFspath.__fspath__() to return str or bytes, not int"
    )


@pytest.mark.parametrize("value", ["/tmp/a\0b", b"/tmp/a\0b", Path("/tmp/a\0b")])
def test_dir_with_nul(value: str | bytes | Path) -> None:
    with pytest.raises(ValueError, match=r"^dir must not contain a NUL byte$"):
        compose_soul(value)


def test_dir_not_encodable() -> None:
    with pytest.raises(ValueError, match=r"^dir cannot be encoded as a filesystem path: "):
        compose_soul("/tmp/\ud800\udfff-is-a-pair-of-surrogates")


@pytest.mark.parametrize(
    ("value", "error", "message"),
    [
        (True, TypeError, "max_file_bytes must be an int, not bool"),
        (1.5, TypeError, "max_file_bytes must be an int, not float"),
        ("10", TypeError, "max_file_bytes must be an int, not str"),
        (None, TypeError, "max_file_bytes must be an int, not NoneType"),
        (0, ValueError, "max_file_bytes must be between 1 and 9223372036854775806, got 0"),
        (-5, ValueError, "max_file_bytes must be between 1 and 9223372036854775806, got -5"),
        (2**63, ValueError, f"max_file_bytes must be between 1 and 9223372036854775806, got {2**63}"),
    ],
)
def test_bad_cap(home: Path, value: object, error: type[Exception], message: str) -> None:
    with pytest.raises(error) as caught:
        compose_soul(home, max_file_bytes=value)  # type: ignore[arg-type]
    assert str(caught.value) == message
    with pytest.raises(error):
        compose(home, max_file_bytes=value)  # type: ignore[arg-type]


def test_int_subclass_cap_is_accepted(home: Path) -> None:
    class Size(int):
        pass

    (home / "SOUL.md").write_text("abcdef")
    assert compose_soul(home, max_file_bytes=Size(3)) == (
        "## SOUL.md\n\nabc\n[truncated: exceeds 3 bytes bootstrap cap]",
        ["SOUL.md"],
    )


def test_huge_cap_reads_whole_file(home: Path) -> None:
    (home / "SOUL.md").write_text("small")
    assert compose_soul(home, max_file_bytes=2**63 - 2) == ("## SOUL.md\n\nsmall", ["SOUL.md"])


@pytest.mark.parametrize(
    ("value", "error", "message"),
    [
        ("sometimes", ValueError, "symlinks must be 'follow', 'within' or 'refuse', got 'sometimes'"),
        ("FOLLOW", ValueError, "symlinks must be 'follow', 'within' or 'refuse', got 'FOLLOW'"),
        (1, TypeError, "symlinks must be a str, not int"),
        (None, TypeError, "symlinks must be a str, not NoneType"),
    ],
)
def test_bad_symlink_policy(home: Path, value: object, error: type[Exception], message: str) -> None:
    with pytest.raises(error) as caught:
        compose(home, symlinks=value)  # type: ignore[arg-type]
    assert str(caught.value) == message


@pytest.mark.parametrize("value", [1, "yes", None])
def test_bad_strict(home: Path, value: object) -> None:
    with pytest.raises(TypeError) as caught:
        compose(home, strict=value)  # type: ignore[arg-type]
    assert str(caught.value) == f"strict must be a bool, not {type(value).__name__}"


def test_options_are_keyword_only(home: Path) -> None:
    for function in (compose_soul, compose):
        loose: Any = function  # called as a type checker refuses, on purpose
        with pytest.raises(TypeError) as caught:
            loose(home, 10)
        assert str(caught.value) == f"{function.__name__}() takes 1 positional argument but 2 were given"


def test_reader_rejects_bad_arguments(reader: ReaderName) -> None:
    compose_homes: Any = load(reader).compose_homes  # handed what a reader cannot take, on purpose
    one = layout(("SOUL.md",), 10)
    with pytest.raises(ValueError, match=r"^cap must be >= 1$"):
        compose_homes([b"/tmp"], [b"SOUL.md"], 0, "follow", one)
    with pytest.raises(ValueError, match=r"^embedded null byte$"):
        compose_homes([b"/tmp\0"], [b"SOUL.md"], 10, "follow", one)
    with pytest.raises(TypeError, match=r"^names must be bytes, not str$"):
        compose_homes(
            [b"/tmp"], [b"AGENTS.md", "SOUL.md"], 10, "follow", layout(("AGENTS.md", "SOUL.md"), 10)
        )
    with pytest.raises(TypeError, match=r"^homes must be bytes, not str$"):
        compose_homes(["/tmp"], [b"SOUL.md"], 10, "follow", one)
    with pytest.raises(
        ValueError, match=r"^symlinks must be one of follow, within, refuse, within-portable, not 'x'$"
    ):
        compose_homes([b"/tmp"], [b"SOUL.md"], 10, "x", one)
    with pytest.raises(ValueError, match=r"^layout must have one file name and two heads per name$"):
        compose_homes([b"/tmp"], [b"AGENTS.md", b"SOUL.md"], 10, "follow", one)
    with pytest.raises(TypeError, match=r"^layout must hold str only$"):
        compose_homes(
            [b"/tmp"], [b"SOUL.md"], 10, "follow", (("SOUL.md",), (None,), ("\n\n## SOUL.md\n\n",), "")
        )
