"""The six laws of budgets (docs/reference/budgets.md), checked on a composed soul.

Written from the page, not from the code: ``check_laws`` takes the files of
a home as bytes, the cap, the budget and the ``Soul`` that ``compose`` made
of them, works out each file's body with the slow reference of
``spec_reference``, and asserts every law the page states. It returns
nothing; a broken law is an AssertionError saying which.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from spec_reference import WHITE_SPACE, body_text
from toolnexus.agents import Budget, FileStatus, Soul

MARKER = re.compile(r"\[\.\.\. ([\d,]+) bytes of (.+?) left out \.\.\.\]")
NEAR_LIMIT = 0.85
KEEP_HEAD_END_WINDOW = 1024  # keep="head": the bytes read at a file's end, when less than a fifth of the cap


def marker(name: str, left_out: int) -> str:
    return f"[... {left_out:,} bytes of {name} left out ...]"


@dataclass
class File:
    name: str
    data: bytes
    body: str  # the body of the whole file, as the format makes it without a cap
    over_cap: bool

    @property
    def nbytes(self) -> int:
        return len(self.body.encode())


def heading(name: str, position: int) -> str:
    return ("\n\n" if position else "") + f"## {name}\n\n"


def well_formed(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def ends_out_of_sight(data: bytes, cap: int, keep: str) -> bool:
    """An over-cap file whose marker may count bytes not read as they are, not as the body's.

    The page's exception to exact markers: bytes that are not UTF-8 (counted
    as the file holds them where they were not read), or as much White_Space at its end as
    the bytes read there (a fifth of the cap; with keep="head" 1 KB when
    that is less; less three, for a character cut at their start), or at
    its start as three fifths of the cap.
    """
    if len(data) <= cap:
        return False
    if not well_formed(data):
        return True  # its unread bytes count as the file holds them, not as U+FFFD
    seen_end = (cap // 5 if keep == "head+tail" else min(KEEP_HEAD_END_WINDOW, cap // 5)) - 3
    text = data.decode("utf-8", "replace")
    trailing = len(text.encode()) - len(text.rstrip("".join(map(chr, WHITE_SPACE))).encode())
    leading = len(text.encode()) - len(text.lstrip("".join(map(chr, WHITE_SPACE)) + "\ufeff").encode())
    return trailing >= seen_end or leading >= 3 * cap // 5


def split_sections(soul: Soul) -> dict[str, str]:
    """Each section's body by name, found from ``soul.found`` and the headings."""
    bodies: dict[str, str] = {}
    text = soul.text
    for position, name in enumerate(soul.found):
        head = heading(name, position)
        assert text.startswith(head), (name, text[:80])
        text = text[len(head) :]
        if position + 1 < len(soul.found):
            end = text.index(heading(soul.found[position + 1], position + 1))
        else:
            end = len(text)
        bodies[name], text = text[:end], text[end:]
    assert text == ""
    return bodies


def ends_at_line_end(body: str, prefix: str) -> bool:
    """Is ``prefix`` followed in ``body`` by a line break, or by nothing?"""
    rest = body[len(prefix) :]
    return rest == "" or rest.startswith(("\n", "\r\n"))


def check_laws(  # noqa: PLR0912, PLR0915 - one law after another, as the page lists them
    files: dict[str, bytes],
    order: Sequence[str],
    cap: int,
    budget: Budget,
    soul: Soul,
    plain: str,
    additive: bool,
) -> None:
    """Assert the six laws for ``soul``, composed from ``files`` (names in ``order``) under ``budget``.

    ``plain`` is the soul composed without a budget; ``additive`` says the
    count adds up over a soul's joints (law 2 is exact only then).
    """
    count: Callable[[str], int] = budget.measure
    total, per_file, keep = budget.total, budget.per_file, budget.keep
    present = [
        File(n, files[n], body_text(files[n], 2**62), len(files[n]) > cap) for n in order if n in files
    ]
    reports = {r.name: r for r in soul.files}

    def inexact(f: File) -> bool:
        """Does the page let this file's marker count bytes not read as they are?"""
        not_read_whole = reports[f.name].left_out is None
        return ends_out_of_sight(f.data, cap, keep) or (not_read_whole and not well_formed(f.data))

    hidden = any(inexact(f) for f in present)

    def must_cut(f: File) -> bool:
        return f.over_cap or (per_file is not None and count(f.body) > per_file)

    def least(f: File) -> str:
        whole_marker = marker(f.name, f.nbytes)
        if must_cut(f) or count(f.body) > count(whole_marker):
            return whole_marker
        return f.body

    # 6. The total always holds.
    assert soul.used == count(soul.text), "law 5: used is the soul's measure"
    if total is not None:
        assert count(soul.text) <= total, "law 6: the total holds"
    # 5. Near the limit: 85% of the total or more, or at it: something was cut.
    near = (total is not None and soul.used >= NEAR_LIMIT * total) or any(r.cut for r in soul.files)
    assert soul.near_limit is near, "law 5: near_limit"
    # 3. Files left out are the last, and only as many as must be.
    names = [f.name for f in present]
    assert list(soul.found) == names[: len(soul.found)], "law 3: left out from the end of the order"
    k = len(soul.found)
    if total is not None and not hidden:
        least_soul = "".join(heading(f.name, p) + least(f) for p, f in enumerate(present[:k]))
        assert count(least_soul) <= total, "law 3: the least of the files kept fits"
        if k < len(present):
            more = least_soul + heading(present[k].name, k) + least(present[k])
            assert count(more) > total, f"law 3: {present[k].name} left out although its least fits"
    # 1. A budget that holds the soul changes nothing.
    if (
        all(not f.over_cap for f in present)
        and (total is None or count(plain) <= total)
        and (per_file is None or all(count(f.body) <= per_file for f in present))
    ):
        assert soul.text == plain, "law 1: a budget that holds the soul changes nothing"
        assert soul.cut_files == (), "law 1: nothing is reported cut"
    # 4 and 5. Every section, whole or cut, and its report.
    sections = split_sections(soul)
    cut_names = []
    for f in present:
        report = reports[f.name]
        assert report.status is FileStatus.PRESENT
        assert report.truncated is False, "law 5: with a budget nothing is truncated"
        assert report.size <= min(len(f.data), cap + 1), "law 5: size is bytes read"
        # The report's other flags (format sections 1 and 5): these files are plain files, and a
        # file read whole has its whole body's bytes looked at; one read in part, those read.
        assert report.symlink is False
        if report.left_out is not None:
            assert report.invalid_utf8 is not well_formed(f.data), "invalid_utf8 of a body read whole"
        elif report.invalid_utf8:
            assert not well_formed(f.data), "invalid_utf8 only for bytes that are not UTF-8"
        if f.name not in sections:  # left out
            assert (report.cut, report.kept, report.kept_bytes) == (True, 0, 0), "law 5: left out"
            if not inexact(f):
                assert report.left_out_bytes == f.nbytes, "law 5: a file left out leaves out all its body"
            assert report.left_out in (None, count(f.body))
            cut_names.append(f.name)
            continue
        section = sections[f.name]
        markers = list(MARKER.finditer(section))
        if not report.cut:
            assert section == f.body, f"law 5: {f.name} is not cut, so it is whole"
            assert not f.over_cap or f.body == "", "a file over the cap is cut, unless its body is empty"
            assert (report.kept, report.left_out) == (count(f.body), 0)
            assert (report.kept_bytes, report.left_out_bytes) == (f.nbytes, 0)
            if per_file is not None:
                assert count(f.body) <= per_file, "a body kept whole is within per_file"
            continue
        cut_names.append(f.name)
        # 4. start, marker, end; each a whole part of the body, by the line rules.
        assert markers, f"law 4: {f.name} is cut but has no marker"
        found = markers[-1] if keep == "head" else _the_marker(section, f, markers)
        assert found.group(2) == f.name, "law 4: the marker names its file"
        before, after = section[: found.start()], section[found.end() :]
        prefix, suffix = before.removesuffix("\n"), after.removeprefix("\n")
        assert before in ("", prefix + "\n"), "law 4: joined by one \\n"
        assert bool(prefix) == bool(before), "law 4: an empty start goes with its line break"
        assert after in ("", "\n" + suffix), "law 4: joined by one \\n"
        assert bool(suffix) == bool(after), "law 4: an empty end goes with its line break"
        if keep == "head":
            assert suffix == "", "law 4: keep='head' keeps no end"
        assert f.body.startswith(prefix), "law 4: the start is a start of the body"
        assert f.body.endswith(suffix), "law 4: the end is an end of the body"
        left_out = int(found.group(1).replace(",", ""))
        kept_bytes = len(prefix.encode()) + len(suffix.encode())
        if not inexact(f):
            assert len(prefix) + len(suffix) < len(f.body), "law 4: at least one character is left out"
            assert left_out == f.nbytes - kept_bytes, "law 4: the marker counts the bytes not shown"
        assert left_out >= 1, "law 4: a marker is written only when something is left out"
        if prefix and not ends_at_line_end(f.body, prefix):
            fifth = f.body[len(prefix) - len(prefix) // 5 : len(prefix)]
            assert "\n" not in fifth, "law 4: the start ends at a line end in its last fifth"
        assert not (prefix.endswith("\r") and f.body[len(prefix) :].startswith("\n")), "law 4: \\r\\n split"
        if suffix:
            at = len(f.body) - len(suffix)
            if at and f.body[at - 1] != "\n":
                assert "\n" not in f.body[at - 1 : at + len(suffix) // 5], (
                    "law 4: the end starts at a line start"
                )
            assert not (suffix.startswith("\n") and f.body[at - 1 : at] == "\r"), "law 4: \\r\\n split"
        # 5. The report says what the text shows.
        assert report.kept == count(prefix) + count(suffix), "law 5: kept"
        assert report.kept_bytes == kept_bytes, "law 5: kept_bytes"
        assert report.left_out_bytes == left_out, "law 5: left_out_bytes is the marker's N"
        assert report.left_out in (None, count(f.body) - report.kept), "law 5: left_out"
        if per_file is not None:
            assert report.kept <= per_file, "law 5: per_file holds"
    assert list(soul.cut_files) == cut_names, "law 5: Soul.cut"
    # 2. Fair share after the trim (exact for counts that add up).
    if total is not None and additive and soul.found and not hidden:
        in_soul = present[:k]
        cut = [f for f in in_soul if reports[f.name].cut]
        small = [
            f
            for f in in_soul
            if not reports[f.name].cut
            and not must_cut(f)
            and count(f.body) <= count(marker(f.name, f.nbytes))
        ]
        left = total - sum(count(heading(f.name, p)) for p, f in enumerate(in_soul))
        left -= sum(count(marker(f.name, f.nbytes)) for f in cut)
        left -= sum(count(f.body) for f in small)
        if len(in_soul) > len(small):
            equal = left // (len(in_soul) - len(small))
            for f in cut:
                fits = count(f.body) <= equal and (per_file is None or count(f.body) <= per_file)
                assert not (fits and not f.over_cap), (
                    f"law 2: {f.name} fits its equal share {equal}, yet is cut"
                )


def _the_marker(section: str, f: File, markers: list[re.Match[str]]) -> re.Match[str]:
    """The marker line among lines that look like one: the one whose text the body does not hold."""
    for match in markers:
        before = section[: match.start()].removesuffix("\n")
        if f.body.startswith(before) and match.group(2) == f.name:
            after = section[match.end() :].removeprefix("\n")
            if f.body.endswith(after):
                return match
    raise AssertionError(f"law 4: no marker of {f.name} splits its section into a start and an end")
