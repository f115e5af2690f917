"""Hypothesis: the budget's contract holds on any home, any budget, on both readers alike."""

from __future__ import annotations

import re
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import WITHOUT_EXTENSION
from spec_reference import BOOTSTRAP_ORDER, body_text
from toolnexus.agents import Budget, Soul, _reader, compose
from toolnexus.agents.cli import utf8_bytes

if WITHOUT_EXTENSION:
    pytest.skip("the compiled reader is POSIX-only", allow_module_level=True)
pytestmark = pytest.mark.reader_independent  # each example runs on both twins side by side

MARKER = re.compile(r"\[\.\.\. ([\d,]+) bytes of (\S+) left out \.\.\.\]")


def words(text: str) -> int:
    return len(text.split())


COUNTS: dict[str, Callable[[str], int] | None] = {"chars": None, "bytes": utf8_bytes, "words": words}

# Pieces of bodies: multi-byte characters, CRLF and lone CR, White_Space at
# the ends, lines short and long; no '#', so sections can be told apart.
pieces = st.sampled_from(
    [
        "a",
        "bc",
        " ",
        "\n",
        "\r\n",
        "\r",
        "é",
        "€",
        "😀",
        "\t",
        "word ",
        "\u3000",
        "line\n",
        "x" * 30,
        "\ufeff",
    ]
)
bodies = st.lists(pieces, max_size=60).map("".join)
homes = st.dictionaries(st.sampled_from(BOOTSTRAP_ORDER), bodies, min_size=1, max_size=4)
limits = st.none() | st.integers(1, 40) | st.integers(1, 600)
budgets = st.tuples(
    limits, limits, st.sampled_from(["head+tail", "head"]), st.sampled_from(sorted(COUNTS))
).filter(lambda b: b[0] is not None or b[1] is not None)


def composed(files: dict[str, str], budget: Budget) -> tuple[Soul, dict[str, str]]:
    """The soul on both twins (which must agree), and each file's whole body."""
    with tempfile.TemporaryDirectory() as name:
        for file, text in files.items():
            (Path(name) / file).write_bytes(text.encode())
        souls = []
        for reader in ("compiled", "pure"):
            with _reader.using(reader):
                souls.append(compose(name, budget=budget))
                assert compose(name, budget=budget) == souls[-1]  # deterministic
    assert souls[0] == souls[1]
    return souls[0], {file: body_text(text.encode(), 2**40) for file, text in files.items()}


def sections(soul: Soul) -> dict[str, str]:
    """Each section's body, by name."""
    bodies: dict[str, str] = {}
    text = soul.text
    for position, name in enumerate(soul.found):
        heading = ("" if position == 0 else "\n\n") + f"## {name}\n\n"
        assert text.startswith(heading)
        text = text[len(heading) :]
        later = [f"\n\n## {n}\n\n" for n in soul.found[position + 1 : position + 2]]
        end = text.index(later[0]) if later else len(text)
        bodies[name], text = text[:end], text[end:]
    assert text == ""
    return bodies


def split_cut(name: str, body: str, whole: str, keep: str) -> tuple[str, str]:
    """A cut body as (prefix, suffix); checks the marker line between them."""
    (match,) = list(MARKER.finditer(body))
    assert match.group(2) == name
    before, after = body[: match.start()], body[match.end() :]
    prefix = before.removesuffix("\n")
    suffix = after.removeprefix("\n")
    assert before in ("", prefix + "\n")
    assert after in ("", "\n" + suffix)
    assert bool(prefix) == bool(before)
    assert bool(suffix) == bool(after)
    if keep == "head":
        assert suffix == ""
    assert whole.startswith(prefix)
    assert whole.endswith(suffix)
    assert len(prefix) + len(suffix) <= len(whole)
    # Never half of a \r\n: a prefix ends, and a suffix starts, between pairs.
    assert not (prefix.endswith("\r") and whole[len(prefix) : len(prefix) + 1] == "\n")
    assert not (suffix.startswith("\n") and whole[: len(whole) - len(suffix)].endswith("\r"))
    return prefix, suffix


@given(files=homes, limits=budgets)
def test_the_contract(files: dict[str, str], limits: tuple[int | None, int | None, str, str]) -> None:
    total, per_file, keep, unit = limits
    budget = Budget(total=total, per_file=per_file, keep=keep, count=COUNTS[unit])  # type: ignore[arg-type]
    soul, wholes = composed(files, budget)
    measure = budget.measure
    # 1. The total holds, always; so does the per-file limit on each kept body.
    assert soul.used == measure(soul.text)
    if total is not None:
        assert measure(soul.text) <= total
    present = [name for name in BOOTSTRAP_ORDER if name in files]
    # Files left out entirely are the last ones of the order.
    assert soul.found == tuple(present[: len(soul.found)])
    reports = {report.name: report for report in soul.files}
    for name, body in sections(soul).items():
        report = reports[name]
        whole = wholes[name]
        if not report.cut:
            assert body == whole
            assert per_file is None or measure(whole) <= per_file
            continue
        prefix, suffix = split_cut(name, body, whole, keep)
        assert report.kept == measure(prefix) + measure(suffix)
        if per_file is not None:
            assert measure(prefix) + measure(suffix) <= per_file
        assert report.kept_bytes == len(prefix.encode()) + len(suffix.encode())
        left_out = len(whole.encode()) - report.kept_bytes
        if report.left_out is not None:  # read whole: exact, in both units
            assert report.left_out_bytes == left_out
            assert report.left_out == measure(whole) - report.kept
        else:  # read in part: every byte not shown, White_Space at an unread end included
            assert report.left_out_bytes is not None
            assert left_out <= report.left_out_bytes <= len(files[name].encode()) - report.kept_bytes
        assert int(MARKER.search(body).group(1).replace(",", "")) == report.left_out_bytes  # type: ignore[union-attr]
    for name in present[len(soul.found) :]:
        assert (reports[name].cut, reports[name].kept) == (True, 0)
    # 2. Fair share, not first come: with the headings and (the most) markers
    # paid for, a file whose whole body fits its equal share is never cut.
    if total is not None and unit != "words" and soul.found:  # counts that add up
        fixed = sum(
            measure(("" if i == 0 else "\n\n") + f"## {name}\n\n") for i, name in enumerate(soul.found)
        )
        fixed += sum(
            measure("\n" + f"[... {len(files[name].encode()):,} bytes of {name} left out ...]" + "\n")
            for name in soul.found
            if reports[name].cut
        )
        share = (total - fixed) // len(soul.found)
        for name in soul.found:
            wanted = min(measure(wholes[name]), per_file or 2**62)
            if wanted <= share and measure(wholes[name]) <= (per_file or 2**62):
                assert not reports[name].cut, (name, wanted, share)


@given(files=homes)
def test_without_a_budget_nothing_changes(files: dict[str, str]) -> None:
    with tempfile.TemporaryDirectory() as name:
        for file, text in files.items():
            (Path(name) / file).write_bytes(text.encode())
        plain = compose(name)
        roomy = compose(name, budget=Budget(total=10**9))
    assert roomy.text == plain.text
    assert roomy.cut == ()
