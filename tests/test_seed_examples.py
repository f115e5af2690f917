"""The Python seed page's three examples, run unchanged on both readers.

The copies in ``seed_examples/`` must stay verbatim: the seed page is what
users paste. Their SHA-256 digests were taken from the page's own text, so
that this is checked from the repository alone, wherever the suite runs.
"""

from __future__ import annotations

import hashlib
import runpy
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).parent / "seed_examples"

EXPECTED_OUTPUT = {
    "example_1.py": "ok: ['SOUL.md'] | 65 chars\n",
    "example_2.py": "ok: ['AGENTS.md', 'SOUL.md', 'MEMORY.md']\n",
    "example_3.py": "ok: truncated at 2097152 bytes; found ['AGENTS.md', 'SOUL.md']\n",
}
# Each example exactly as the Python page of compose_soul prints it.
SEED_SHA256 = {
    "example_1.py": "0afd602a3d5cd363a3832508fdef25e79c6ed1e2e3453fdde30af62a784f01ec",
    "example_2.py": "49710f28fbac368124ad19234df4bd13c79ff56a659b3d6910b51d132e511dd6",
    "example_3.py": "271ae007d76a714d2030550718766fd15286e96ee771229c6c9473cdda59086e",
}


@pytest.mark.parametrize("example", sorted(EXPECTED_OUTPUT))
def test_seed_example_runs_unchanged(example: str, capsys: pytest.CaptureFixture[str]) -> None:
    runpy.run_path(str(EXAMPLES / example), run_name="__main__")
    assert capsys.readouterr().out == EXPECTED_OUTPUT[example]


@pytest.mark.reader_independent
@pytest.mark.parametrize("example", sorted(SEED_SHA256))
def test_copies_are_the_seed_pages_own(example: str) -> None:
    assert hashlib.sha256((EXAMPLES / example).read_bytes()).hexdigest() == SEED_SHA256[example]
