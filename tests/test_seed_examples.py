"""The Python seed page's three examples, run unchanged on both readers."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).parent / "seed_examples"
SEED_PAGE = Path(__file__).resolve().parents[2] / "shared" / "seeds" / "002_b81cd78898de7973.txt"

EXPECTED_OUTPUT = {
    "example_1.py": "ok: ['SOUL.md'] | 65 chars\n",
    "example_2.py": "ok: ['AGENTS.md', 'SOUL.md', 'MEMORY.md']\n",
    "example_3.py": "ok: truncated at 2097152 bytes; found ['AGENTS.md', 'SOUL.md']\n",
}


@pytest.mark.parametrize("example", sorted(EXPECTED_OUTPUT))
def test_seed_example_runs_unchanged(example: str, capsys: pytest.CaptureFixture[str]) -> None:
    runpy.run_path(str(EXAMPLES / example), run_name="__main__")
    assert capsys.readouterr().out == EXPECTED_OUTPUT[example]


@pytest.mark.reader_independent
@pytest.mark.skipif(not SEED_PAGE.exists(), reason="shared/seeds is not beside this checkout")
@pytest.mark.parametrize("example", sorted(EXPECTED_OUTPUT))
def test_copies_match_the_seed_page(example: str) -> None:
    # The copies must stay verbatim: the seed page is what users will paste.
    assert (EXAMPLES / example).read_text(encoding="utf-8") in SEED_PAGE.read_text(encoding="utf-8")
