"""Any number of threads may compose at once."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from conftest import Writer
from toolnexus.agents import compose_soul


def test_threads_compose_the_same_soul(home: Path, write: Writer) -> None:
    write("AGENTS.md", "a" * 50_000)
    write("SOUL.md", "ß" * 3000)
    write("MEMORY.md", "😀" * 700_000)  # over the 2 MB cap
    expected = compose_soul(home)
    assert expected[1] == ["AGENTS.md", "SOUL.md", "MEMORY.md"]
    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(lambda _: compose_soul(home), range(64)))
    assert all(result == expected for result in results)
