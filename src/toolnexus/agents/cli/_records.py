"""What the command line says of a soul: one JSON record (the same keys everywhere), and the check table.

``record`` is the JSON object of ``compose --json`` and of every ``batch``
line: the home (``dir``, and ``dir_b64`` when its name is not UTF-8)
and ``Soul.as_dict()``. ``table`` is ``check``'s table of one home, which
says what each number is, and what else a host should know of a file: that
it was reached through a symlink, or holds bytes that are not UTF-8.
"""

from __future__ import annotations

import base64
import os

from .. import NEAR_LIMIT, Budget, FileReport, FileStatus, Soul
from ._output import shown

__all__ = ["dir_fields", "problem_line", "record", "table", "unit"]


def dir_fields(home: str) -> dict[str, str]:
    """The ``dir`` of a JSON record, and ``dir_b64`` with its exact bytes when it is not UTF-8."""
    raw = os.fsencode(home)
    try:
        return {"dir": raw.decode("utf-8")}
    except UnicodeDecodeError:
        return {"dir": raw.decode("utf-8", "backslashreplace"), "dir_b64": base64.b64encode(raw).decode()}


def record(home: str, soul: Soul, *, text: bool = True) -> dict[str, object]:
    """The JSON record of one home's soul; without ``text`` when not wanted."""
    fields: dict[str, object] = {**dir_fields(home), **soul.as_dict()}
    if not text:
        del fields["text"]
    return fields


def unit(budget: Budget) -> str:
    """The budget's unit, as the table names it."""
    return "characters" if budget.count is None else "bytes"


def problem_line(home: str, report: FileReport) -> str:
    """A file that exists but cannot be used, as one line for standard error."""
    return f"{shown(os.path.join(home, report.name))}: {report.status.value}: {report.error}"


def _on_disk(report: FileReport) -> str:
    """The size the file system gave a present file when it was read."""
    return "?" if report.size_on_disk is None else f"{report.size_on_disk:,d} B"


def _kept(report: FileReport) -> str:
    """What the budget kept of a present file, in its unit."""
    if report.kept is None:
        return ""
    if not report.cut:
        return f"all {report.kept:,}"
    if report.left_out is not None:
        return f"{report.kept:,} of {report.kept + report.left_out:,}"
    return f"{report.kept:,} ({report.left_out_bytes or 0:,} B left out)"


def _state(report: FileReport, soul: Soul) -> str:
    present = report.status is FileStatus.PRESENT
    if report.cut:
        return "left out" if present and report.name not in soul.found else "cut"
    if report.truncated:
        return "truncated"
    if present and not report.stable:
        return "unstable"
    return report.status.value


def _notes(report: FileReport, kept: bool) -> str:
    """A row's last column: why a file is not present; or what a budget kept (with ``kept``), and more."""
    if report.status is FileStatus.MISSING:
        return ""
    if report.status is not FileStatus.PRESENT:
        return f"  {report.error}"
    notes = [_kept(report)] if kept else []
    if report.symlink:
        notes.append("through a symlink")
    if report.invalid_utf8:
        notes.append("not valid UTF-8")
    return "  " + "; ".join(notes) if notes else ""


def table(home: str, soul: Soul) -> str:
    """One home's table: each file's status, size on disk, bytes read, what a budget kept, and notes."""
    budget_unit = "" if soul.budget is None else unit(soul.budget)
    head = f"  {'file':<12} {'status':<20}{'on disk':>12}{'read':>12}"
    lines = [shown(home), head + (f"  kept ({budget_unit})" if budget_unit else "")]
    for report in soul.files:
        if report.status is FileStatus.PRESENT:
            sizes = f"{_on_disk(report):>12}{report.bytes_read:>10,d} B"
        else:
            sizes = f"{'-':>12}{'-':>12}"
        note = _notes(report, bool(budget_unit))
        lines.append(f"  {shown(report.name):<12} {_state(report, soul):<20}{sizes}{note}".rstrip())
    there = sum(report.status is FileStatus.PRESENT for report in soul.files)
    if soul.budget is not None and there and not soul.found:
        kept = ", none fits the budget"
    elif len(soul.found) < there:
        kept = f", {len(soul.found)} in the soul ({there - len(soul.found)} left out)"
    else:
        kept = ""
    summary = f"{len(soul.text):,d} characters, sha256 {soul.digest[:16]}"
    lines.append(f"  {there} of {len(soul.files)} present{kept}, {summary}")
    if soul.budget is not None and soul.used is not None:
        total = soul.budget.total
        limit = "no total" if total is None else f"{soul.used / total:.0%} of {total:,}"
        cut = (
            f"{len(soul.cut_files)} cut: {', '.join(map(shown, soul.cut_files))}"
            if soul.cut_files
            else "nothing cut"
        )
        # The line says what was cut; "near" is the share of the total, as the percentage beside it.
        near = ", near its limit" if total is not None and soul.used >= NEAR_LIMIT * total else ""
        lines.append(f"  budget: {soul.used:,} {budget_unit} ({limit}{near}); {cut}")
    return "\n".join(lines) + "\n"
