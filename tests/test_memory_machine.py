"""The memory protocol's machine (``_machine``), as properties: its records, and its recovery.

A record reads back as written, and one cut short at any byte is none (I1).
``plan``, the recovery, over any files a change could have left: it removes
only texts that hold nobody's bytes, a record before its text (I3), never a
record a kept file needs (I4), keeps exactly the files in a keeping state,
and is stable (planning again after its removals removes nothing more and
keeps the same files against the same bases).
"""

from __future__ import annotations

from typing import Final

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolnexus.agents._memory._machine import (
    TRANSITIONS,
    Found,
    NewText,
    Record,
    State,
    Text,
    digest,
    encode,
    going,
    names,
    next_token,
    parse,
    plan,
    spent,
    state,
    tokens,
)

pytestmark = pytest.mark.reader_independent

FILE: Final = b"MEMORY.md"
AT_NAME: Final = 1000  # the inode at the name
KEEPS: Final = (State.PLACED, State.RETURNED, State.HELD)


def token(number: int) -> bytes:
    return b"%016x" % number


records = st.builds(
    Record,
    new=st.none() | st.builds(NewText, st.integers(0, 2**40), st.integers(0, 9999), st.just(digest(b"x"))),
    base=st.binary(max_size=40),
    merged=st.dictionaries(st.integers(1, 2**40).map(token), st.binary(max_size=20), max_size=3),
    back=st.none() | st.integers(0, 2**40),
    after=st.binary(max_size=20),
)


@given(records, st.floats(0, 1, exclude_max=True))
def test_a_record_reads_back_as_written_and_cut_short_is_none(record: Record, where: float) -> None:
    data = encode(record)
    assert parse(data) == record
    assert parse(data[: int(where * len(data))]) is None


def test_a_record_of_another_version_is_not_guessed_at() -> None:
    with pytest.raises(ValueError, match=r"^a record of another version of toolnexus-soul$"):
        parse(b"toolnexus-soul: a memory change, 4\n...")


def test_names_and_numbers() -> None:
    assert names(FILE, token(7)) == (b".MEMORY.md.tmp-0000000000000007", b".MEMORY.md.was-0000000000000007")
    listed = [
        b".MEMORY.md.tmp-0000000000000007",
        b".MEMORY.md.was-00000000000000a0",
        b".MEMORY.md.tmp-notes",  # not a name the tool makes
        b".MEMORY.md.lock",
        b".MEMORY.md.tmp-notes.tmp-0000000000000009",  # another memory file's
    ]
    assert tokens(FILE, listed) == ({token(7)}, {token(0xA0)})
    assert next_token({token(7), token(0xA0)}) == 0xA1
    assert next_token(set()) == 1


@st.composite
def leftovers(draw: st.DrawFn) -> list[Found]:
    """What changes 1..n could have left: for each, a record or not (or one cut short), a text or not."""
    found = []
    for number in range(1, draw(st.integers(1, 6)) + 1):
        new_ino = 100 + number
        kind = draw(st.sampled_from(["none", "cut", "held", "change"]))
        written = draw(st.binary(max_size=8))
        record = None
        if kind in ("held", "change"):
            earlier = st.sampled_from([token(n) for n in range(1, number)]) if number > 1 else st.nothing()
            merged = dict.fromkeys(draw(st.lists(earlier, unique=True)), b"m%d" % number)
            new = NewText(new_ino, len(written), digest(written)) if kind == "change" else None
            back = draw(st.none() | st.sampled_from([200 + number, 300 + number]))
            record = Record(new, b"base%d" % number, merged, back, b"after%d" % number)
        text_kind = draw(st.sampled_from(["none", "as written", "appended", "other", "name", "back"]))
        ino = {"as written": new_ino, "appended": new_ino, "other": 200 + number, "name": AT_NAME}.get(
            text_kind, 300 + number
        )
        data = written + (b"more" if text_kind == "appended" else b"")
        text = None if text_kind == "none" else Text(ino, data if ino == new_ino else None, number)
        if record is None and text is None and kind == "none":
            continue
        found.append(Found(token(number), record, text, kind != "none", number))
    return found


def removed_after(found: list[Found], removals: list[tuple[bytes, ...]]) -> list[Found]:
    gone = {name for each in removals for name in each}
    left = []
    for one in found:
        text_name, record_name = names(FILE, one.token)
        text = None if text_name in gone else one.text
        has_record = one.record_file and record_name not in gone
        if text is not None or has_record:
            left.append(
                one._replace(text=text, record=one.record if has_record else None, record_file=has_record)
            )
    return left


# Each example plans several directories' leftovers: half a profile's examples (the default suite is quick).
HALF: Final = settings(max_examples=max(1, settings().max_examples // 2))


@HALF
@given(leftovers())
def test_recovery_removes_only_what_holds_nobodys_bytes_and_keeps_what_is_needed(found: list[Found]) -> None:
    sorted_out = plan(FILE, found, AT_NAME)
    states = {one.token: state(one, AT_NAME) for one in found}
    kept = {one.token for one in sorted_out.kept}
    assert kept == {one.token for one in found if states[one.token] in KEEPS and one.text is not None}
    needed = kept | {one.source for one in sorted_out.kept}
    for each in sorted_out.remove:
        for name in each:
            kind, number = name.rsplit(b"-", 1)
            assert number not in needed or (kind.endswith(b".tmp") and states[number] is State.LINKED)
            if kind.endswith(b".tmp"):  # I3: a text goes only when it holds nobody's bytes
                assert states[number] in (State.WRITTEN, State.DRAFT, State.LINKED), (name, states[number])
        if len(each) == 2 and states[each[0].rsplit(b"-", 1)[1]] is not State.LINKED:
            assert b".was-" in each[0]  # a record before its text
    again = plan(FILE, removed_after(found, sorted_out.remove), AT_NAME)
    assert (again.kept, again.remove) == (sorted_out.kept, [])


@HALF
@given(leftovers())
def test_a_kept_file_is_merged_against_the_newest_placed_record_that_names_it(found: list[Found]) -> None:
    states = {one.token: state(one, AT_NAME) for one in found}
    for kept in plan(FILE, found, AT_NAME).kept:
        own = next(one for one in found if one.token == kept.token)
        mentions = [
            one
            for one in found
            if one.record is not None
            and one.record.new is not None
            and kept.token in one.record.merged
            and states[one.token] in (State.PLACED, State.LINKED)
            and one.token > kept.token
        ]
        if mentions:
            assert kept.base == max(mentions, key=lambda one: one.token).record.merged[kept.token]  # type: ignore[union-attr]
        else:
            assert own.record is not None
            assert own.text is not None
            new = own.record.new
            written = (own.text.data or b"")[: new.size] if new is not None else None
            # what the file replaced held; or the tool's text, as the record gives it or as it was written
            assert kept.base in (own.record.base, own.record.after, written)
        # Let go: its record first, unless it is a PLACED change's, which may say what was merged.
        text_name, record_name = names(FILE, kept.token)
        assert going(FILE, kept) == (
            (text_name,) if states[kept.token] is State.PLACED else (record_name, text_name)
        )


@HALF
@given(leftovers(), st.data())
def test_a_settled_change_leaves_nothing_for_the_next_to_tidy(
    found: list[Found], data: st.DataObject
) -> None:
    # A change (the next number) that merged from some kept files, and let go of some (as I3 says).
    sorted_out = plan(FILE, found, AT_NAME)
    after = removed_after(found, sorted_out.remove)
    kept = [one.token for one in sorted_out.kept]
    merged = set(data.draw(st.lists(st.sampled_from(kept) if kept else st.nothing(), unique=True)))
    gone = set(data.draw(st.lists(st.sampled_from(kept) if kept else st.nothing(), unique=True)))
    change = token(next_token({one.token for one in found}))
    held = data.draw(
        st.booleans()
    )  # exchanged (its text holds the file it replaced), or renamed over the name
    record = Record(NewText(1, 0, digest(b"")), b"read", dict.fromkeys(sorted(merged), b"merged"))
    after.append(Found(change, record, Text(999, None, 0) if held else None, True, 0))  # PLACED
    by_token = {one.token: one for one in sorted_out.kept}
    let_go = [name for one in gone for name in going(FILE, by_token[one])]
    settled = removed_after(
        after,
        [
            tuple(let_go),
            tuple(names(FILE, one)[1] for one in spent(sorted_out.kept, gone, merged, change, held)),
        ],
    )
    again = plan(FILE, settled, AT_NAME)
    assert again.remove == []
    assert {one.token: one.base for one in again.kept if one.token in merged} == dict.fromkeys(
        merged - gone, b"merged"
    )


def test_the_table_names_every_state_a_change_enters_and_only_calls_the_seam_makes() -> None:
    entered = {move.after for move in TRANSITIONS}
    assert entered == set(State) - {State.LINKED, State.SPENT}  # those two are left by a kill, not entered
    assert set().union(*(move.calls for move in TRANSITIONS)) == SEAM_CALLS


# Every name _system's seam gives a call (the fault matrix checks each call an operation makes against
# the table; this, that the table names no call the seam never makes).
SEAM_CALLS: Final = {
    "stat", "open", "fstat", "fchown", "fchmod", "flock", "listdir", "pread", "write", "fsync", "close",
    "unlink", "fcntl", "renameat2", "link", "rename",
}  # fmt: skip
