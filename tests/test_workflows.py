"""CI for people who fork: the tests workflow is the gate ``.ci/run`` is, and runs the README's commands.

Read as text (the suite takes no YAML parser): the matrix names every
operating system and every CPython that ``requires-python`` and the wheels
cover, both readers, and its steps are the README's install and test
commands; the other jobs run what ``.ci/run`` runs besides: lint, the slow
runs, the sanitizers, the contents of the sdist and the wheel, a build
without a compiler, and the documentation site built strict (``.ci/docs``).
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


def jobs(text: str) -> dict[str, str]:
    """Each job's name and its text, as the workflow lists them under ``jobs:``."""
    body = text[text.index("\njobs:\n") :]
    parts = re.split(r"^  ([a-z][a-z0-9-]*):\n", body, flags=re.MULTILINE)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


def runs(job: str) -> list[str]:
    return re.findall(r"^ +(?:- )?run: (.*)$", job, re.MULTILINE)


def test_the_fork_workflow_runs_the_readme_commands_everywhere() -> None:
    text = WORKFLOW.read_text(encoding="utf-8")
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    tests = jobs(text)["tests"]
    assert matrix_list(tests, "os") == ["ubuntu-latest", "macos-latest", "windows-latest"]
    (build,) = re.findall(r'^build = "(.*)"$', pyproject, re.MULTILINE)  # cibuildwheel's CPythons
    versions = [f"3.{minor}" for minor in re.findall(r"cp3(\d+)-\*", build)]
    assert versions == ["3.10", "3.11", "3.12", "3.13", "3.14"]
    assert 'requires-python = ">=3.10"' in pyproject
    assert matrix_list(tests, "python") == versions
    assert matrix_list(tests, "reader") == ["compiled", "pure"]
    install = "pip install -e '.[test]'"
    assert f"$ {install} && python -m pytest\n" in readme
    assert runs(tests) == [
        'python -m pip install -e ".[test]"',
        "python -m pytest",
        "python -m pytest --pure-only",
    ]


def test_the_fork_workflow_is_the_gate_ci_is() -> None:
    found = {name: runs(job) for name, job in jobs(WORKFLOW.read_text(encoding="utf-8")).items()}
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert found["lint"][1:] == [
        line for line in ci.splitlines() if line.startswith(("ruff", "mypy", "cython"))
    ]
    assert found["slow"][-1] == "python -m pytest -m slow"
    assert found["sanitize"] == ["bash .ci/sanitize"]
    assert found["dist"][-1] == "bash .ci/check-dist dist/*.whl dist/*.tar.gz"
    assert found["no-compiler"][-1] == "bash .ci/check-build-fallback"
    assert found["docs"] == ["PYTHON=python bash .ci/docs"]
    assert found["mcp-generations"][-1] == "bash .ci/mcp-generations dist/*.whl"
    for script in ("sanitize", "check-dist", "check-build-fallback", "mcp-generations"):
        assert f"bash .ci/{script}" in ci


def test_the_docs_script_builds_the_site_strict_with_the_docs_extra() -> None:
    script = (ROOT / ".ci" / "docs").read_text(encoding="utf-8")
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert re.findall(r'"\$python" -m mkdocs (.*)$', script, re.MULTILINE) == [
        'build --strict --site-dir "$site"'
    ]
    (extra,) = re.findall(r"^docs = \[(.*)\]$", pyproject, re.MULTILINE)
    assert [name.split(">")[0] for name in re.findall(r'"([^"]+)"', extra)] == [
        "mkdocs",
        "mkdocs-material",
        "mkdocstrings-python",
    ]
