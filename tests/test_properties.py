"""Hypothesis: both readers agree with each other and with docs/format.md on anything.

The profile is chosen with ``TOOLNEXUS_SOUL_FUZZ`` (see conftest.py).
"""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from budget_laws import well_formed
from conftest import TWINS, compose_files
from spec_reference import BOOTSTRAP_ORDER, WHITE_SPACE, body_text, capped_body, compose_layout, notice
from toolnexus.agents import _format, compose_soul
from toolnexus.agents._budget import _bodies
from toolnexus.agents._vocabulary import FileRead, FileStatus
from twins import load, using

# Each example runs on both twins side by side, so each test runs once.
pytestmark = pytest.mark.reader_independent
MODULES = [load(name) for name in TWINS]

# Bytes that stress the rules: UTF-8 lead and continuation bytes, BOM pieces,
# white space in one and several bytes, and the odd invalid byte.
INTERESTING = [
    b"a",
    b" ",
    b"\n",
    b"\t",
    b"\x1c",
    b"\xef\xbb\xbf",
    b"\xc2\x85",
    b"\xc2\xa0",
    b"\xe2\x80\x80",
    b"\xe3\x80\x80",
    b"\xe2\x80\xa8",
    b"\xc3\xa9",
    b"\xe2\x82\xac",
    b"\xf0\x9f\x98\x80",
    b"\x80",
    b"\xbf",
    b"\xc3",
    b"\xe2\x82",
    b"\xf0\x9f\x98",
    b"\xff",
    b"\xed\xa0\x80",
    b"\xe1\x9a\x80",
]
chunky = st.lists(st.sampled_from(INTERESTING) | st.binary(max_size=4), max_size=40).map(b"".join)
contents = st.binary(max_size=300) | chunky
caps = st.integers(min_value=1, max_value=64) | st.integers(min_value=1, max_value=64 * 1024)
layouts = st.dictionaries(st.sampled_from(BOOTSTRAP_ORDER), contents, max_size=7)


def _materialise(directory: Path, layout: dict[str, bytes]) -> None:
    for name, data in layout.items():
        (directory / name).write_bytes(data)


def compose_both(files: dict[str, bytes], cap: int) -> tuple[str, tuple[str, ...], tuple[FileRead, ...]]:
    """Write ``files`` into a home; every twin must compose it alike. Returns what they said."""
    with tempfile.TemporaryDirectory() as home:
        _materialise(Path(home), files)
        names = tuple(sorted(files, key=BOOTSTRAP_ORDER.index))
        first, *others = [compose_files(twin, Path(home), names, cap) for twin in TWINS]
        assert all(other == first for other in others)
    return first


def body_of(files: dict[str, bytes], cap: int) -> str:
    """The one file's section body, as both twins compose it."""
    ((name, _),) = files.items()
    text, _, _ = compose_both(files, cap)
    return text.removeprefix(f"## {name}\n\n")


@given(data=contents, cap=caps)
def test_readers_agree_on_one_file(data: bytes, cap: int) -> None:
    text, found, (read,) = compose_both({"SOUL.md": data}, cap)
    assert found == ("SOUL.md",)
    body = body_text(data, cap).removesuffix("\n" + notice(cap))  # the body, without any notice
    assert read == (
        FileStatus.PRESENT,
        0,
        stat.S_IFREG,
        min(len(data), cap + 1),
        len(data) > cap,
        True,
        len(data),
        False,
        len(body),
        len(body.encode()),
        False,
        not well_formed(capped_body(data, cap)[0]),  # invalid_utf8: of the body's bytes, BOM and trim aside
    )
    assert text == "## SOUL.md\n\n" + body_text(data, cap)


@given(layout=layouts, cap=caps)
def test_both_readers_compose_exactly_as_the_spec_says(layout: dict[str, bytes], cap: int) -> None:
    expected = compose_layout(layout, cap)
    with tempfile.TemporaryDirectory() as name:
        _materialise(Path(name), layout)
        for reader in TWINS:
            with using(reader):
                assert compose_soul(name, max_file_bytes=cap) == expected


@given(prefix=st.binary(min_size=0, max_size=8), tail=contents, shift=st.integers(0, 6))
def test_readers_agree_around_a_page_and_a_large_cap(prefix: bytes, tail: bytes, shift: int) -> None:
    # Bodies that straddle one page (the stability check) and caps near it.
    data = prefix + b"x" * (4096 - len(prefix) - shift) + tail
    cap = 4096 - shift + len(tail) // 2 + 1
    assert body_of({"MEMORY.md": data}, cap) == body_text(data, cap)


@given(text=st.text(max_size=200), cap=caps)
def test_well_formed_text_decodes_like_cpython(text: str, cap: int) -> None:
    # The compiled reader decodes well-formed UTF-8 itself (scan, then fill):
    # every width of str, every plane, must come out as CPython's decoder says.
    data = text.encode("utf-8", "surrogatepass")
    assert body_of({"USER.md": data}, cap) == body_text(data, cap)


ascii_runs = st.text(alphabet=st.characters(min_codepoint=0x20, max_codepoint=0x7E), min_size=24, max_size=80)
sparse_texts = st.lists(st.tuples(ascii_runs, st.text(max_size=1)), min_size=1, max_size=120).map(
    lambda parts: "".join(run + char for run, char in parts)
)


@given(text=sparse_texts, cap=st.integers(min_value=1, max_value=16 * 1024))
def test_sparse_multibyte_text_agrees(text: str, cap: int) -> None:
    # Mostly ASCII with the odd character of any width and plane: the text the
    # compiled reader decodes without CPython, past the dense-text probe too.
    data = text.encode("utf-8", "surrogatepass")
    assert body_of({"TOOLS.md": data}, cap) == body_text(data, cap)


spaces = st.lists(st.sampled_from(sorted(WHITE_SPACE)).map(chr), max_size=6).map("".join)


@given(lead=spaces, middle=contents, trail=spaces, cap=caps)
def test_trimming_bytes_equals_trimming_text(lead: str, middle: bytes, trail: str, cap: int) -> None:
    # Both readers trim White_Space off the bytes, before decoding; the spec
    # trims the decoded text. Any bytes between runs of White_Space, any cap.
    data = lead.encode() + middle + trail.encode()
    assert body_of({"IDENTITY.md": data}, cap) == body_text(data, cap)


@example(lead="", middle=b"\xef\xbb\xbf \xef\xbb\xbf\xc2\xa0", trail="\u3000", cap=64)
@given(lead=spaces, middle=contents, trail=spaces, cap=caps)
def test_pure_reader_trims_bytes_as_the_format_trims_text(
    lead: str, middle: bytes, trail: str, cap: int
) -> None:
    # The readers' whole body (the pure twin's, and the memory tool's measure),
    # on its own, against the format's reference.
    data = lead.encode() + middle + trail.encode()
    cut = "\n" + notice(cap) if len(data) > cap else ""
    assert _format.body_text(data, cap) + cut == body_text(data, cap)


@pytest.mark.reader_independent
@given(lead=spaces, bom=st.booleans(), middle=contents, trail=spaces, cap=caps)
@example(lead="\u3000 ", bom=True, middle="\ufeff\u2028é".encode(), trail="\x85\u2029", cap=64)
def test_a_bodys_bytes_are_counted_as_encoding_it_would(
    lead: str, bom: bool, middle: bytes, trail: str, cap: int
) -> None:
    # What the pure twin reports as FileRead.body_bytes, counted off the bytes read.
    data = (b"\xef\xbb\xbf" if bom else b"") + lead.encode() + middle + trail.encode()
    body = _format.body_text(data, cap)
    assert _format.body_and_bytes(data, cap) == (
        body,
        len(body.encode()),
        well_formed(capped_body(data, cap)[0]),
    )


windows = st.tuples(st.integers(0, 80), st.integers(0, 40))


@given(data=contents, window=windows, extra=st.integers(0, 64))
def test_readers_agree_on_excerpts(data: bytes, window: tuple[int, int], extra: int) -> None:
    # A budget reads each file's start and end: both readers must return
    # exactly the file's bytes there, never the same byte twice.
    head, tail = window
    cap = head + 2 * tail + extra
    if cap < 1:
        return
    with tempfile.TemporaryDirectory() as home:
        (Path(home) / "MEMORY.md").write_bytes(data)
        path, names = os.fsencode(home), [b"MEMORY.md", b"SOUL.md"]
        first, *others = [
            module.read_excerpts(path, names, cap, "follow", [window, (0, 0)]) for module in MODULES
        ]
        assert all(other == first for other in others)
    excerpt, missing = first
    assert (missing.read.status, missing.head, missing.tail) == (FileStatus.MISSING, None, None)
    assert excerpt.length == len(data)
    if len(data) <= head + tail:
        assert (excerpt.head, excerpt.tail, excerpt.read.bytes_read) == (data, None, len(data))
    else:
        last = data[max(len(data) - tail, head + tail + 1) :]
        assert (excerpt.head, excerpt.tail) == (data[: head + tail + 1], last)
        assert excerpt.read.bytes_read == head + tail + 1 + len(last) <= min(len(data), cap + 1)


@example(data=b" " + b"\x80\xe2\x82\xac\x80" * 4, at=16)  # a stray continuation after a character
@given(data=contents, at=st.integers(0, 400))
def test_a_budget_window_splits_text_where_it_decodes_alike(data: bytes, at: int) -> None:
    # A window's start is cut before a byte that is not a continuation byte,
    # and its end begins after at most three: each part then decodes to a
    # prefix (a suffix) of what the whole decodes to, U+FFFD included.
    whole = data.decode("utf-8", "replace")
    cut = _bodies.boundary(data, min(at, len(data) - 1)) if data else 0
    assert whole.startswith(data[:cut].decode("utf-8", "replace"))
    begin = _bodies.char_start(data, min(at, len(data)))
    assert whole.endswith(data[begin:].decode("utf-8", "replace"))
