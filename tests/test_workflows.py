"""CI for people who fork: the tests workflow runs the README's commands everywhere the package runs.

Read as text (the suite takes no YAML parser): the matrix names every
operating system and every CPython that ``requires-python`` and the wheels
cover, both readers, and its steps are the README's install and test
commands; a job of its own builds the documentation site strict, as
``.ci/docs`` does.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Final

import pytest

pytestmark = pytest.mark.reader_independent

ROOT: Final = Path(__file__).resolve().parents[1]
WORKFLOW: Final = ROOT / ".github" / "workflows" / "tests.yml"


def matrix_list(text: str, key: str) -> list[str]:
    (found,) = re.findall(rf"^ +{key}: \[(.*)\]$", text, re.MULTILINE)
    return [item.strip().strip('"') for item in found.split(",")]


def test_the_fork_workflow_runs_the_readme_commands_everywhere() -> None:
    text = WORKFLOW.read_text(encoding="utf-8")
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert matrix_list(text, "os") == ["ubuntu-latest", "macos-latest", "windows-latest"]
    (build,) = re.findall(r'^build = "(.*)"$', pyproject, re.MULTILINE)  # cibuildwheel's CPythons
    versions = [f"3.{minor}" for minor in re.findall(r"cp3(\d+)-\*", build)]
    assert versions == ["3.10", "3.11", "3.12", "3.13", "3.14"]
    assert 'requires-python = ">=3.10"' in pyproject
    assert matrix_list(text, "python") == versions
    assert matrix_list(text, "reader") == ["compiled", "pure"]
    install = "pip install -e '.[test]'"
    assert f"$ {install} && python -m pytest\n" in readme
    tests, docs = text.split("\n  docs:\n")
    assert re.findall(r"^ +run: (.*)$", tests, re.MULTILINE) == [
        'python -m pip install -e ".[test]"',
        "python -m pytest",
        "python -m pytest --pure-only",
    ]
    assert re.findall(r"^ +run: (.*)$", docs, re.MULTILINE) == ["PYTHON=python bash .ci/docs"]


def test_the_docs_script_builds_the_site_strict_with_the_docs_extra() -> None:
    script = (ROOT / ".ci" / "docs").read_text(encoding="utf-8")
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert re.findall(r'"\$python" -m mkdocs (.*)$', script, re.MULTILINE) == [
        'build --strict --quiet --site-dir "$site"'
    ]
    (extra,) = re.findall(r"^docs = \[(.*)\]$", pyproject, re.MULTILINE)
    assert [name.split(">")[0] for name in re.findall(r'"([^"]+)"', extra)] == [
        "mkdocs",
        "mkdocs-material",
        "mkdocstrings-python",
    ]
