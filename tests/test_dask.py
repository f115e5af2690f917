"""Past one machine: ``compose_many`` on a dask.distributed cluster gives the souls it gives at home (slow).

The recipe of docs/how-to/cluster.md, at scale: a ``LocalCluster`` of two worker processes, its
client's executor handed to ``compose_many``. Skipped where dask.distributed
is not installed (``pip install 'toolnexus-soul[dask]'``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import make_homes
from toolnexus.agents import Budget, SoulCache, compose_many

distributed = pytest.importorskip("distributed")

pytestmark = [pytest.mark.slow, pytest.mark.reader_independent]


def test_five_hundred_homes_on_two_worker_processes(tmp_path: Path) -> None:
    homes = make_homes(tmp_path, 500)
    (homes[7] / "MEMORY.md").write_text("- a note\n" * 400)
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        souls = compose_many(homes, executor=client.get_executor(), budget=Budget(total=500))
        with SoulCache() as cache, pytest.raises(ValueError, match=r"^cache needs this process's threads"):
            compose_many(homes, executor=client.get_executor(), cache=cache)  # a cache stays home
    assert souls == compose_many(homes, budget=Budget(total=500))
    assert [soul.text for soul in souls[:2]] == ["## SOUL.md\n\nsoul 0", "## SOUL.md\n\nsoul 1"]
    assert souls[7].cut_files == ("MEMORY.md",)
