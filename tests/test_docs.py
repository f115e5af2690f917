"""The documentation's shape: a short README, links that resolve, a nav that holds every page,
decision records of one shape, and every public name documented in the API reference.

Read as text, without mkdocs (the ``docs`` extra builds the site, strict, in
``.ci/docs``): so these run in the quick suite, wherever the tests do.
"""

from __future__ import annotations

import ast
import inspect
import re
import unicodedata
from pathlib import Path
from typing import Final

import pytest

import toolnexus.agents

pytestmark = pytest.mark.reader_independent

ROOT: Final = Path(__file__).resolve().parents[1]
DOCS: Final = ROOT / "docs"
PAGES: Final = sorted(DOCS.rglob("*.md"))
DECISIONS: Final = sorted(path for path in (DOCS / "decisions").glob("*.md") if path.name != "index.md")
_FENCED: Final = re.compile(r"^ *```.*?^ *```", re.MULTILINE | re.DOTALL)
_LINK: Final = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def prose(path: Path) -> str:
    """A page's text without its fenced blocks and inline code, where a link is no link."""
    return re.sub(r"`[^`\n]*`", "", _FENCED.sub("", path.read_text(encoding="utf-8")))


def slug(heading: str) -> str:
    """A heading's anchor, as Python-Markdown's toc makes it (what mkdocs and GitHub's links use)."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).replace("`", "").replace("*", "")
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    return re.sub(r"[-\s]+", "-", re.sub(r"[^\w\s-]", "", text).strip().lower())


def anchors(path: Path) -> set[str]:
    """The anchors of a page's headings (a ``#`` line in a fenced block is no heading)."""
    text = _FENCED.sub("", path.read_text(encoding="utf-8"))
    return {slug(heading) for heading in re.findall(r"^#+ (.+)$", text, re.MULTILINE)}


def test_the_readme_is_at_most_200_lines() -> None:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 200


def test_the_slug_is_the_one_mkdocs_makes() -> None:
    assert [
        slug("3. Cap and back-off"),
        slug("The decoder: `benchmarks/decode.py`"),
        slug("Where things are"),
        slug("13. The command line"),
    ] == ["3-cap-and-back-off", "the-decoder-benchmarksdecodepy", "where-things-are", "13-the-command-line"]


@pytest.mark.parametrize("page", [ROOT / "README.md", *PAGES], ids=lambda page: str(page.relative_to(ROOT)))
def test_every_relative_link_resolves(page: Path) -> None:
    broken = []
    for target in _LINK.findall(prose(page)):
        if re.match(r"[a-z]+:", target):  # https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        resolved = (page.parent / path).resolve() if path else page
        if not resolved.exists() or (anchor and resolved.suffix == ".md" and anchor not in anchors(resolved)):
            broken.append(target)
    assert broken == []


def nav_pages() -> list[str]:
    text = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    nav = text[text.index("\nnav:\n") :]
    return re.findall(r"^ +- (?:[^\n]*: )?([\w/.-]+\.md)$", nav, re.MULTILINE)


def test_the_nav_holds_every_page_once() -> None:
    listed = nav_pages()
    assert sorted(listed) == sorted(str(page.relative_to(DOCS)) for page in PAGES)
    assert len(listed) == len(set(listed))
    assert listed[:2] == ["index.md", "tutorial.md"]  # a newcomer starts at the start


def test_the_first_page_says_where_to_start_by_what_you_want() -> None:
    index = (DOCS / "index.md").read_text(encoding="utf-8")
    table = index[index.index("| you want to | read |") :].split("\n\n")[0]
    linked = set(_LINK.findall(table))
    assert {
        "tutorial.md",
        "how-to/budgets.md",
        "how-to/caches.md",
        "how-to/memory.md",
        "how-to/mcp.md",
    } <= linked
    assert {
        "how-to/cluster.md",
        "api/index.md",
        "format.md",
        "decisions/index.md",
        "performance.md",
    } <= linked


@pytest.mark.parametrize("record", DECISIONS, ids=lambda path: path.name)
def test_a_decision_is_a_short_record_of_context_decision_consequences(record: Path) -> None:
    lines = record.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 40
    assert lines[0].startswith("# ")
    assert lines[1] == ""
    assert re.findall(r"^## (.*)$", "\n".join(lines), re.MULTILINE) == ["Context", "Decision", "Consequences"]
    sections = re.split(r"^## .*$", "\n".join(lines), flags=re.MULTILINE)
    assert all(section.strip() for section in sections)  # none of the three is empty


def test_the_decisions_index_links_every_record() -> None:
    index = (DOCS / "decisions" / "index.md").read_text(encoding="utf-8")
    records = [target for target in _LINK.findall(index) if "/" not in target]
    assert sorted(records) == sorted(record.name for record in DECISIONS)


def api_directives() -> list[str]:
    return [
        name
        for page in sorted((DOCS / "api").glob("*.md"))
        for name in re.findall(
            r"^::: toolnexus\.agents\.(\w+)$", page.read_text(encoding="utf-8"), re.MULTILINE
        )
    ]


def attribute_docstring(module: str, name: str) -> str | None:
    """The string right after ``name``'s assignment in ``module``, following re-exports (as griffe does)."""
    spec_path = Path(toolnexus.agents.__file__).parent.joinpath(*module.split(".")[2:])
    path = spec_path / "__init__.py" if spec_path.is_dir() else spec_path.with_suffix(".py")
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for index, node in enumerate(tree.body):
        if isinstance(node, ast.ImportFrom) and name in {alias.name for alias in node.names} and node.level:
            base = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
            source = ".".join(base[: len(base) - node.level + 1] + ([node.module] if node.module else []))
            return attribute_docstring(source, name)
        targets = (
            [node.target]
            if isinstance(node, ast.AnnAssign)
            else node.targets
            if isinstance(node, ast.Assign)
            else []
        )
        if any(isinstance(target, ast.Name) and target.id == name for target in targets):
            after = tree.body[index + 1] if index + 1 < len(tree.body) else None
            if isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant):
                return str(after.value.value)
            return None
    return None


def test_every_public_name_is_in_the_api_reference_once() -> None:
    assert sorted(api_directives()) == sorted(toolnexus.agents.__all__)


@pytest.mark.parametrize("name", toolnexus.agents.__all__)
def test_every_public_name_has_a_docstring(name: str) -> None:
    value = getattr(toolnexus.agents, name)
    if inspect.isclass(value):  # its own docstring, never one it inherits
        doc = value.__dict__.get("__doc__")
    elif inspect.isroutine(value):
        doc = value.__doc__
    else:  # a constant or a type alias: documented where it is assigned
        doc = attribute_docstring("toolnexus.agents", name)
    assert doc is not None
    assert doc.strip()
