"""Hypothesis: both readers agree with each other and with SPEC §3 on anything.

The profile is chosen with ``TOOLNEXUS_SOUL_FUZZ`` (``ci``: the default,
quick; ``long``: many more examples for a fuzzing session).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import WITHOUT_EXTENSION, load_reader
from spec_reference import BOOTSTRAP_ORDER, compose_layout
from toolnexus.agents import _reader, compose_soul

settings.register_profile("ci", max_examples=300, deadline=None)
settings.register_profile(
    "long", max_examples=20_000, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(os.environ.get("TOOLNEXUS_SOUL_FUZZ", "ci"))

if WITHOUT_EXTENSION:
    pytest.skip("the compiled reader is POSIX-only", allow_module_level=True)
COMPILED = load_reader("compiled")
PURE = load_reader("pure")

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


def read_both(name: str, data: bytes, cap: int) -> tuple[int, int, int, int, bool, bool, str | None]:
    """Write ``data`` as bootstrap file ``name``; both readers must agree on it."""
    with tempfile.TemporaryDirectory() as home:
        (Path(home) / name).write_bytes(data)
        path, names = os.fsencode(home), [os.fsencode(name)]
        compiled = COMPILED.read_home(path, names, cap, 0)
        assert compiled == PURE.read_home(path, names, cap, 0)
    entry: tuple[int, int, int, int, bool, bool, str | None] = compiled[0]
    return entry


@given(data=contents, cap=caps)
def test_readers_agree_on_one_file(data: bytes, cap: int) -> None:
    (status, err, _, size, truncated, stable, _) = read_both("SOUL.md", data, cap)
    assert (status, err, size, truncated, stable) == (0, 0, min(len(data), cap + 1), len(data) > cap, True)


@given(layout=layouts, cap=caps)
def test_both_readers_compose_exactly_as_the_spec_says(layout: dict[str, bytes], cap: int) -> None:
    expected = compose_layout(layout, cap)
    with tempfile.TemporaryDirectory() as name:
        _materialise(Path(name), layout)
        for module in (COMPILED, PURE):
            with pytest.MonkeyPatch.context() as patch:
                patch.setattr(_reader, "read_home", module.read_home)
                assert compose_soul(name, max_file_bytes=cap) == expected


@given(prefix=st.binary(min_size=0, max_size=8), tail=contents, shift=st.integers(0, 6))
def test_readers_agree_around_a_page_and_a_large_cap(prefix: bytes, tail: bytes, shift: int) -> None:
    # Bodies that straddle one page (the stability check) and caps near it.
    data = prefix + b"x" * (4096 - len(prefix) - shift) + tail
    cap = 4096 - shift + len(tail) // 2 + 1
    with tempfile.TemporaryDirectory() as name:
        (Path(name) / "MEMORY.md").write_bytes(data)
        path = os.fsencode(name)
        names = [b"MEMORY.md"]
        assert COMPILED.read_home(path, names, cap, 0) == PURE.read_home(path, names, cap, 0)
        assert compose_layout({"MEMORY.md": data}, cap)[0] == compose_soul(name, max_file_bytes=cap)[0]


@given(text=st.text(max_size=200), cap=caps)
def test_well_formed_text_decodes_like_cpython(text: str, cap: int) -> None:
    # The compiled reader decodes well-formed UTF-8 itself (scan, then fill):
    # every width of str, every plane, must come out as CPython's decoder says.
    data = text.encode("utf-8", "surrogatepass")
    entry = read_both("USER.md", data, cap)
    if len(data) <= cap and not data.startswith(b"\xef\xbb\xbf"):
        assert entry[6] == data.decode("utf-8", "replace")


ascii_runs = st.text(alphabet=st.characters(min_codepoint=0x20, max_codepoint=0x7E), min_size=24, max_size=80)
sparse_texts = st.lists(st.tuples(ascii_runs, st.text(max_size=1)), min_size=1, max_size=120).map(
    lambda parts: "".join(run + char for run, char in parts)
)


@given(text=sparse_texts, cap=st.integers(min_value=1, max_value=16 * 1024))
def test_sparse_multibyte_text_agrees(text: str, cap: int) -> None:
    # Mostly ASCII with the odd character of any width and plane: the text the
    # compiled reader decodes without CPython, past the dense-text probe too.
    data = text.encode("utf-8", "surrogatepass")
    entry = read_both("TOOLS.md", data, cap)
    if len(data) <= cap and not data.startswith(b"\xef\xbb\xbf"):
        assert entry[6] == data.decode("utf-8", "replace")
