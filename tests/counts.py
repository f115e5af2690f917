"""Counts for budgets, as hosts write them: what the budget tests measure souls with."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from toolnexus.agents.cli import utf8_bytes

__all__ = [
    "lines",
    "newlines",
    "regex_tokens",
    "super_additive",
    "tiktoken_count",
    "tiktoken_encoding",
    "utf8_bytes",
    "words",
]


def words(text: str) -> int:
    return len(text.split())


def newlines(text: str) -> int:
    return text.count("\n")


def lines(text: str) -> int:
    return len(text.splitlines())


_TOKEN = re.compile(r"\w+|[^\w\s]")


def regex_tokens(text: str) -> int:
    return len(_TOKEN.findall(text))


def super_additive(text: str) -> int:
    return len(text) + len(text) ** 2 // 4096


def tiktoken_encoding() -> Any:
    """A real tiktoken BPE, built here (the named encodings download their ranks); None without tiktoken.

    It has a special token, ``<|endoftext|>``, as the named encodings do.
    """
    try:
        import tiktoken
    except ImportError:
        return None
    merges = [b"th", b"he", b"the", b" t", b"in", b"er", b"an", b"re", b"nd", b"ou"]
    ranks = {bytes([b]): b for b in range(256)} | {pair: 256 + rank for rank, pair in enumerate(merges)}
    return tiktoken.Encoding(
        name="toolnexus-test",
        pat_str=r"\s?\w+|\s+(?!\S)|\s+|[^\s\w]+",
        mergeable_ranks=ranks,
        special_tokens={"<|endoftext|>": 256 + len(merges)},
    )


def tiktoken_count() -> Callable[[str], int] | None:
    """Tokens of ``tiktoken_encoding``, special tokens' text counted as text; None without tiktoken."""
    encoding = tiktoken_encoding()
    if encoding is None:
        return None
    return lambda text: len(encoding.encode(text, disallowed_special=()))
