"""The merge of what another writer did to a kept file into the memory file (docs/reference/memory-file.md).

``merge3(base, theirs, ours)``: ``base`` is what the kept file held when it
was kept, ``theirs`` what it holds now, ``ours`` the memory file now. The
examples are the rules of "Merging a kept file"; the properties are its laws
on arbitrary texts of a few distinct lines.
"""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from toolnexus.agents._memory._merge3 import merge3

pytestmark = pytest.mark.reader_independent


@pytest.mark.parametrize(
    ("base", "theirs", "ours", "merged"),
    [
        pytest.param(
            b"- a\n",
            b"- a\n- late\n",
            b"- a\n- T\n",
            b"- a\n- late\n- T\n",
            id="an append, before the tool's",
        ),
        pytest.param(
            b"- a\n- pa",
            b"- a\n- partial\n",
            b"- a\n- pa\n- T\n",
            b"- a\n- partial\n- T\n",
            id="a line finished late",
        ),
        pytest.param(
            b"- a\n- b\n",
            b"- a\n- b\n  more of b\n",
            b"- a\n- b\n- T\n",
            b"- a\n- b\n  more of b\n- T\n",
            id="a continuation",
        ),
        pytest.param(
            b"- a\n- b\n",
            b"- a\n- b\n  more of b\n",
            b"- a\n- T\n",
            b"- a\n- T\n\n  more of b\n",
            id="a continuation of a removed entry",
        ),
        pytest.param(
            b"- a\n- b\n", b"- a\n  more of a\n- b\n", b"- b\n", b"  more of a\n- b\n", id="... at the start"
        ),
        pytest.param(
            b"- a\n\n- b\n",
            b"- a\n\n  aside\n- b\n",
            b"\n- b\n",
            b"\n  aside\n- b\n",
            id="... after a blank line",
        ),
        pytest.param(
            b"- a\n  x\n",
            b"- a\n  x\n- late\n",
            b"- a\n  y\n",
            b"- a\n  y\n- late\n",
            id="the tool's continuation",
        ),
        pytest.param(b"- a\n- b\n", b"- a\n- b\n", b"- b\n", b"- b\n", id="nothing written"),
        pytest.param(b"- a\n- b\n", b"- b\n", b"- a\n- b\n- T\n", b"- b\n- T\n", id="a removal stands"),
        pytest.param(b"- a\n- b\n", b"", b"- a\n- b\n- T\n", b"- T\n", id="a truncation stands"),
        pytest.param(
            b"- a\n", b"- a2\n", b"- a3\n", b"- a2\n- a3\n", id="one line changed by both: both, theirs first"
        ),
        pytest.param(
            b"- a\n- b\n",
            b"- a\r\n- b\r\n",
            b"- a\n- b\n- T\n",
            b"- a\r\n- b\r\n- T\n",
            id="line ends changed",
        ),
        pytest.param(
            b"- a\r\n- b",
            b"- a\r\n- b\r\n- c\r\n",
            b"- a\r\n- b\r\n- T\r\n",
            b"- a\r\n- b\r\n- c\r\n- T\r\n",
            id="a last line ended by both",
        ),
        pytest.param(
            b"- a\r- b\n",
            b"- a\r- b\n- c\n",
            b"- a\r- b\n- T\n",
            b"- a\r- b\n- c\n- T\n",
            id="a lone CR is text",
        ),
        pytest.param(
            b"- a\r\n- b\r", b"- a\r\n- b\r\n", b"- b\r", b"- b\r\n", id="a CRLF finished late: once"
        ),
        pytest.param(b"- a\r\n- b", b"- a\r\n- b\r\n", b"- b", b"- b\r\n", id="... its CR kept"),
        pytest.param(
            b"- a\n- b\r",
            b"- a\n- b\r\n",
            b"- a\n- b\r\r\n- N\n",
            b"- a\n- b\r\n- N\n",
            id="... the tool's line end not in it",
        ),
        pytest.param(
            b"- a\n- b",
            b"- a\n- b\r\n",
            b"- a\n- b\n- N\n",
            b"- a\n- b\r\n- N\n",
            id="... another line end than the file's",
        ),
        pytest.param(b"- a\n", b"- a\n- x\n", b"- a\n- x\n", b"- a\n- x\n- x\n", id="added by both: each's"),
        pytest.param(
            b"\xef\xbb\xbf",
            b"\xef\xbb\xbf- W\n",
            b"\xef\xbb\xbf- X\n",
            b"\xef\xbb\xbf- W\n- X\n",
            id="a mark: once",
        ),
        pytest.param(
            b"\xef\xbb\xbf- a\n",
            b"- a\n- W\n",
            b"\xef\xbb\xbf- a\n- X\n",
            b"- a\n- W\n- X\n",
            id="a mark taken away",
        ),
        pytest.param(
            b"- a\n",
            b"\xef\xbb\xbf- a\n- W\n",
            b"- a\n- X\n",
            b"\xef\xbb\xbf- a\n- W\n- X\n",
            id="a mark put there",
        ),
    ],
)
def test_the_rules(base: bytes, theirs: bytes, ours: bytes, merged: bytes) -> None:
    assert merge3(base, theirs, ours) == merged


_LINES = st.sampled_from([b"- a\n", b"- b\n", b"- c\n", b"  x\n", b"\ty\n", b"\n", b"# h\n", b"- d\r\n"])
_TEXTS = st.builds(
    lambda mark, lines: mark + b"".join(lines),
    st.sampled_from([b"", b"\xef\xbb\xbf"]),
    st.lists(_LINES, max_size=8),
)


def _counts(text: bytes) -> Counter[bytes]:
    return Counter(text.removeprefix(b"\xef\xbb\xbf").splitlines(keepends=True))


@given(_TEXTS, _TEXTS)
def test_nothing_written_since_leaves_ours(base: bytes, ours: bytes) -> None:
    assert merge3(base, base, ours) == ours


@given(_TEXTS, _TEXTS)
def test_ours_unchanged_gives_theirs(base: bytes, theirs: bytes) -> None:
    assert merge3(base, theirs, base) == theirs


@given(_TEXTS, _TEXTS, _TEXTS)
def test_every_line_either_side_added_is_kept(base: bytes, theirs: bytes, ours: bytes) -> None:
    # Each side's added lines, both sides' together: a line both added is there twice.
    added = (_counts(theirs) - _counts(base)) + (_counts(ours) - _counts(base))
    assert added - _counts(merge3(base, theirs, ours)) == Counter()


@given(_TEXTS, _TEXTS, _TEXTS)
def test_no_line_comes_from_nowhere(base: bytes, theirs: bytes, ours: bytes) -> None:
    # Every line is one of the three texts' (or the blank line that ends an entry before a lone continuation).
    known = set(_counts(base) | _counts(theirs) | _counts(ours)) | {b"\n", b"\r\n"}
    assert set(_counts(merge3(base, theirs, ours))) <= known


@given(_TEXTS, _TEXTS, _TEXTS)
def test_theirs_in_their_order(base: bytes, theirs: bytes, ours: bytes) -> None:
    # The lines only theirs holds, each once, are in the result in theirs' order.
    merged = merge3(base, theirs, ours).removeprefix(b"\xef\xbb\xbf").splitlines(keepends=True)
    others = _counts(base) + _counts(ours)
    once = {line for line, count in _counts(theirs).items() if count == 1 and line not in others}
    order = [line for line in theirs.removeprefix(b"\xef\xbb\xbf").splitlines(keepends=True) if line in once]
    iterator = iter(merged)
    assert all(any(line == seen for seen in iterator) for line in order)


@given(_TEXTS, _TEXTS, _TEXTS)
def test_a_byte_order_mark_only_at_the_start(base: bytes, theirs: bytes, ours: bytes) -> None:
    assert b"\xef\xbb\xbf" not in merge3(base, theirs, ours)[1:]
