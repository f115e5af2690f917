"""The house: each folder one job, imports only downward, a sealed seam, a command line of public names.

Read from the source with ``ast`` (and, for the Cython twins, their import
lines), never by importing it: what a module imports is what its text says.
The rooms of ``toolnexus.agents`` and their floors are written once, below;
the contributors' page (docs/contributing.md, "Where things are") draws the
same map, and a test holds it to them.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Final, NamedTuple

import pytest

import toolnexus.agents

pytestmark = pytest.mark.reader_independent

PACKAGE: Final = Path(toolnexus.agents.__file__).parent
ROOT: Final = "toolnexus.agents"
# Each room and its floor: a module may import from rooms on lower floors
# only (and from its own room). Rooms on one floor never import each other.
FLOORS: Final = {
    "_vocabulary": 0,  # the words the seam and the Python layer share
    "_format": 1,  # the format's rules, as data
    "_native": 2,  # the seam: a selector, the twins and what they promise
    "_options": 3,  # the options of a composition, checked
    "_report": 4,  # Soul, FileReport
    "_budget": 4,  # fitting a soul to a Budget
    "_memory": 4,  # the persona's memory tool
    "_compose": 5,  # the pipeline, and strict mode
    "_cache": 6,  # SoulCache
    "_many": 7,  # compose_many, acompose
    "__init__": 8,  # the face: every public name
    "__main__": 10,  # python -m: the command line
    "cli": 9,  # the command line: public names only
}
SEAM_MAY_USE: Final = {"_format", "_vocabulary"}
MAX_FLAT: Final = 10
MAX_LINES: Final = 450
_PYX_IMPORT: Final = re.compile(r"^from (\.+[\w.]*) c?import (.+)$", re.MULTILINE)


class Import(NamedTuple):
    source: str  # the importing module, dotted
    target: str  # the module imported from, dotted and absolute
    names: tuple[str, ...]  # what it takes from there
    line: int


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE).with_suffix("").parts
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join((ROOT, *parts))


def absolute(path: Path, level: int, module: str | None) -> str:
    """The module a relative import of ``level`` dots in ``path`` names."""
    name = module_name(path)
    package = (name if path.name == "__init__.py" else name.rpartition(".")[0]).split(".")
    base = package[: len(package) - (level - 1)]
    return ".".join([*base, *([module] if module else [])])


def imports() -> Iterator[Import]:
    """Every import of a package module from the package, resolved."""
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                target = absolute(path, node.level, node.module) if node.level else node.module or ""
                if target.startswith(ROOT):
                    names = tuple(alias.name for alias in node.names)
                    yield Import(module_name(path), target, names, node.lineno)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.startswith(ROOT):
                        yield Import(module_name(path), alias.name, (), node.lineno)
    for path in sorted(PACKAGE.rglob("*.pyx")):
        text = path.read_text(encoding="utf-8")
        for match in _PYX_IMPORT.finditer(text):
            dots = len(match[1]) - len(match[1].lstrip("."))
            target = absolute(path.with_suffix(".py"), dots, match[1][dots:] or None)
            names = tuple(name.strip() for name in match[2].split(","))
            yield Import(
                module_name(path.with_suffix(".py")), target, names, text.count("\n", 0, match.start()) + 1
            )


def room(module: str) -> str:
    """The room of a dotted module: its first part under the package (``__init__`` for the face)."""
    rest = module.removeprefix(ROOT).lstrip(".")
    return rest.split(".")[0] if rest else "__init__"


def is_module(dotted: str) -> bool:
    path = PACKAGE.joinpath(*dotted.removeprefix(ROOT + ".").split("."))
    return any(
        candidate.exists()
        for candidate in (path.with_suffix(".py"), path.with_suffix(".pyx"), path / "__init__.py")
    )


def expand(found: Import) -> list[str]:
    """The modules an import takes from: ``from .. import x`` takes the module ``x`` when it is one."""
    modules = [f"{found.target}.{name}" for name in found.names if is_module(f"{found.target}.{name}")]
    return modules if found.names and len(modules) == len(found.names) else [found.target, *modules]


def test_the_contributors_map_gives_each_room_its_floor() -> None:
    page = Path(__file__).resolve().parents[1] / "docs" / "contributing.md"
    block = page.read_text(encoding="utf-8").split("<!-- layout-map -->\n```text\n", 1)[1]
    rooms = re.finditer(r"^  (\w+)(?:\.py|/) .* floor (\d+)$", block.split("```", 1)[0], re.MULTILINE)
    drawn = {match[1]: int(match[2]) for match in rooms}
    assert drawn == FLOORS


def test_every_room_has_a_floor() -> None:
    rooms = {
        path.stem if path.is_file() else path.name
        for path in PACKAGE.iterdir()
        if path.suffix in (".py", "") and path.name != "__pycache__"
    }
    assert rooms == set(FLOORS)


def test_nothing_imports_upward_or_sideways() -> None:
    wrong = [
        f"{found.source}:{found.line} imports {target} (floor {FLOORS[target]})"
        for found in imports()
        for target in map(room, expand(found))
        if target != room(found.source) and FLOORS[target] >= FLOORS[room(found.source)]
    ]
    assert wrong == []


def test_the_seam_imports_only_the_format_and_the_vocabulary() -> None:
    used = {
        room(target)
        for found in imports()
        if room(found.source) == "_native"
        for target in expand(found)
        if room(target) != "_native"
    }
    assert used <= SEAM_MAY_USE


def test_the_command_line_uses_public_names_only() -> None:
    public = set(toolnexus.agents.__all__) | {"__version__"}
    wrong = []
    for found in imports():
        if room(found.source) != "cli" or room(found.target) == "cli":
            continue
        if found.target != ROOT:
            wrong.append(f"{found.source}:{found.line} imports from {found.target}")
        wrong.extend(
            f"{found.source}:{found.line} imports {name}" for name in found.names if name not in public
        )
    assert wrong == []


def test_at_most_ten_modules_sit_flat_and_none_is_long() -> None:
    flat = [path.name for path in PACKAGE.glob("*.py")]
    assert len(flat) <= MAX_FLAT, flat
    long = {
        str(path.relative_to(PACKAGE)): lines
        for path in PACKAGE.rglob("*.py")
        if (lines := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert long == {}


def test_no_module_silences_the_type_checker() -> None:
    # A value the types cannot describe is a type to write, not a comment to add.
    silenced = [
        f"{path.relative_to(PACKAGE)}:{number}"
        for path in sorted(PACKAGE.rglob("*.py*"))
        if path.suffix in (".py", ".pyi", ".pyx")
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if "type: ignore" in line
    ]
    assert silenced == []


# Names the package binds to the readers' and the format's named tuples
# (FileRead, Excerpt, Cut, Composed, Layout, Policy) and to a report's.
_NAMED_TUPLES: Final = frozenset({"read", "excerpt", "cut", "composed", "layout", "policy", "report"})
# The environment is read by the selector (TOOLNEXUS_SOUL_NO_EXTENSIONS) and
# by the memory tool's opt-in where its laws are untested; by nothing else.
_READS_THE_ENVIRONMENT: Final = {"_native/__init__.py", "_memory/_tool.py"}


def _modules() -> Iterator[tuple[str, ast.Module]]:
    for path in sorted(PACKAGE.rglob("*.py")):
        yield str(path.relative_to(PACKAGE)), ast.parse(path.read_text(encoding="utf-8"))


def test_named_tuples_are_read_by_field_name() -> None:
    # read[0] says nothing, and means another field once a field is added.
    by_index = [
        f"{module}:{node.lineno}: {ast.unparse(node)}"
        for module, tree in _modules()
        for node in ast.walk(tree)
        if isinstance(node, ast.Subscript)
        and isinstance(node.slice, ast.Constant)
        and type(node.slice.value) is int
        and (node.value.id if isinstance(node.value, ast.Name) else getattr(node.value, "attr", None))
        in _NAMED_TUPLES
    ]
    assert by_index == []


def test_only_the_selector_and_the_memory_tools_opt_in_read_the_environment() -> None:
    readers = {
        module
        for module, tree in _modules()
        for node in ast.walk(tree)
        if (isinstance(node, ast.Attribute) and node.attr in ("environ", "environb", "getenv", "getenvb"))
        or (isinstance(node, ast.Name) and node.id in ("environ", "getenv"))
    }
    assert readers == _READS_THE_ENVIRONMENT


def test_every_module_says_what_it_is_for() -> None:
    missing = [
        str(path.relative_to(PACKAGE))
        for path in PACKAGE.rglob("*.py")
        if ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) is None
    ]
    assert missing == []


def test_the_selector_chooses_and_holds_nothing_else() -> None:
    selector = PACKAGE / "_native" / "__init__.py"
    tree = ast.parse(selector.read_text(encoding="utf-8"))
    assert len(selector.read_text(encoding="utf-8").splitlines()) <= 40
    defined = {
        target.id
        for node in tree.body
        if isinstance(node, (ast.Assign, ast.AnnAssign))
        for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
        for target in (target.elts if isinstance(target, ast.Tuple) else [target])
        if isinstance(target, ast.Name)
    }
    functions = {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}
    assert defined == {"NO_EXTENSIONS", "reader", "notifier", "ACCELERATED"}
    assert functions <= {"_twins"}


# toolnexus.agents.__all__ of 0.2.0, as released: every name still imports from the face.
PUBLIC_0_2: Final = (
    "ACCELERATED", "AmbiguousMatch", "BOOTSTRAP_ORDER", "BootstrapFileError", "Budget", "CacheStats",
    "FileReport", "FileStatus", "InvalidEntry", "Keep", "MAX_BOOTSTRAP_FILE_BYTES", "MemoryFull",
    "MemoryRefused", "MemorySnapshot", "MemoryTool", "MemoryToolError", "MemoryUsage", "MergeReport",
    "NEAR_LIMIT", "NoMatch", "NotificationError", "RACY_WINDOW_NS", "Soul", "SoulCache", "SymlinkPolicy",
    "Validate", "acompose", "acompose_soul", "compose", "compose_many", "compose_soul", "memory_tool",
    "truncation_notice",
)  # fmt: skip


def test_every_public_name_of_0_2_still_imports() -> None:
    assert set(PUBLIC_0_2) <= set(toolnexus.agents.__all__)
    for name in PUBLIC_0_2:
        assert getattr(toolnexus.agents, name) is not None, name
