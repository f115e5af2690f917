"""Every example table of the format's pages (docs/format.md, docs/reference/) holds, on both readers.

Tables follow an HTML comment ``<!-- format-examples: bodies -->`` (one
``MEMORY.md`` per row: its bytes, the cap, the section body),
``<!-- format-examples: homes -->`` (a whole home per row: names to bytes,
``None`` for a directory; the cap; the soul) or ``<!-- format-examples:
budgets -->`` (a home, a budget's fields, the soul; ``count`` by name)
or ``<!-- format-examples: memory -->`` (a memory file's bytes, an
operation of the memory tool, the file's bytes after it or the error's
``code``). Cells are Python literals, but for an error's code.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from budget_laws import check_laws
from toolnexus.agents import (
    BOOTSTRAP_ORDER,
    MAX_BOOTSTRAP_FILE_BYTES,
    Budget,
    MemoryToolError,
    compose,
    compose_soul,
    memory_tool,
)

DOCS = Path(__file__).resolve().parents[1] / "docs"
FORMAT = (DOCS / "format.md", *(DOCS / "reference" / f"{page}.md" for page in ("budgets", "memory-file")))
# The counts a budget row may name (its "count" field).
COUNTS: dict[str, Callable[[str], int]] = {
    "words": lambda s: len(s.split()),
    "bytes": lambda s: len(s.encode()),
}
TABLE = re.compile(r"<!-- format-examples: (\w+) -->\n\|[^\n]*\n\|[^\n]*\n((?:\|[^\n]*\n)+)")


def examples(kind: str) -> list[tuple[str, ...]]:
    rows = []
    text = "".join(page.read_text(encoding="utf-8") for page in FORMAT)
    for match in TABLE.finditer(text):
        if match.group(1) == kind:
            for line in match.group(2).splitlines():
                cells = [cell.strip().strip("`") for cell in line.strip().strip("|").split(" | ")]
                rows.append(tuple(cells))
    return rows


@pytest.mark.reader_independent
def test_the_page_has_examples() -> None:
    assert len(examples("bodies")) == 17
    assert len(examples("homes")) == 4
    assert len(examples("budgets")) == 8
    assert len(examples("memory")) == 15


@pytest.mark.parametrize(("data", "cap", "body"), examples("bodies"))
def test_body_examples(home: Path, data: str, cap: str, body: str) -> None:
    content = ast.literal_eval(data)
    assert isinstance(content, bytes)
    (home / "MEMORY.md").write_bytes(content)
    assert compose_soul(home, max_file_bytes=int(cap)) == (
        "## MEMORY.md\n\n" + str(ast.literal_eval(body)),
        ["MEMORY.md"],
    )


@pytest.mark.parametrize(("files", "cap", "soul"), examples("homes"))
def test_home_examples(home: Path, files: str, cap: str, soul: str) -> None:
    layout = ast.literal_eval(files)
    assert isinstance(layout, dict)
    for name, content in layout.items():
        if content is None:
            (home / name).mkdir()
        else:
            (home / name).write_bytes(content)
    text, found = compose_soul(home, max_file_bytes=int(cap))
    assert text == ast.literal_eval(soul)
    assert found == [line[3:] for line in text.split("\n") if line.startswith("## ")]


@pytest.mark.parametrize(("files", "budget", "soul"), examples("budgets"))
def test_budget_examples(home: Path, files: str, budget: str, soul: str) -> None:
    layout = ast.literal_eval(files)
    for name, content in layout.items():
        (home / name).write_bytes(content)
    fields = ast.literal_eval(budget)
    if "count" in fields:
        fields["count"] = COUNTS[fields["count"]]
    budget_ = Budget(**fields)
    composed = compose(home, budget=budget_)
    assert composed.text == ast.literal_eval(soul)
    order = [name for name in BOOTSTRAP_ORDER if name in layout]
    check_laws(layout, order, MAX_BOOTSTRAP_FILE_BYTES, budget_, composed, compose(home).text, additive=True)


@pytest.mark.reader_independent
@pytest.mark.parametrize(("before", "operation", "after"), examples("memory"))
def test_memory_examples(home: Path, before: str, operation: str, after: str) -> None:
    path = home / "MEMORY.md"
    content = ast.literal_eval(before)
    if content:
        path.write_bytes(content)
    action, *texts = ast.literal_eval(operation)
    tool = memory_tool(home)
    if after.startswith("b'"):
        getattr(tool, action)(*texts)
        assert path.read_bytes() == ast.literal_eval(after)
    else:
        with pytest.raises(MemoryToolError) as caught:
            getattr(tool, action)(*texts)
        assert caught.value.code == after
        assert (path.read_bytes() if path.exists() else b"") == content
