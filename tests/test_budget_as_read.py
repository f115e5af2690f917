"""A total that holds the soul of every file as the cap lets it be read gives that soul (budgets.md).

"The cap and the budget": each file over the cap keeps all that was read
of it, every other file is whole, when the reads took them so and that
soul has at most 8 characters a unit of the total. Caps under 4 KiB make
the first reads take every file so (a window is never less than 4 KiB), so
the promise applies to every home drawn here; the soul a budget in
characters makes under a total of 10**9 is that soul. Written from the page;
each example on both readers, with every law checked.
"""

from __future__ import annotations

from typing import Literal

import pytest
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st

from budget_laws import check_laws
from conftest import examples
from spec_reference import BOOTSTRAP_ORDER
from test_budget_properties import COUNTS, PIECES, composed_both, names
from toolnexus.agents import Budget, Soul

pytestmark = pytest.mark.reader_independent  # each example runs on both twins side by side

# Bodies of up to about 12 KB: over a cap of a few KB, and under it.
bodies = st.builds(
    lambda unit, times, end: unit * times + end,
    st.lists(st.sampled_from(PIECES), min_size=1, max_size=6).map(b"".join),
    st.integers(1, 1500),
    st.sampled_from([b"", b"\n", b" " * 40, b"end"]),
)
homes = st.dictionaries(names, bodies, min_size=1, max_size=4)
ADDITIVE = sorted(name for name, (_, additive) in COUNTS.items() if additive)


@pytest.mark.parametrize("count_name", ADDITIVE)
@settings(
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large], max_examples=examples(120)
)
@given(
    files=homes,
    cap=st.integers(64, 4000),
    more=st.integers(0, 3),
    keep=st.sampled_from(["head+tail", "head"]),
)
def test_a_total_that_holds_the_soul_as_read_gives_it(
    count_name: str, files: dict[str, bytes], cap: int, more: int, keep: Literal["head+tail", "head"]
) -> None:
    assume(any(len(data) > cap for data in files.values()))
    # One byte over the cap, a file is read whole and cut by its share (law 2): not this case.
    assume(all(len(data) != cap + 1 for data in files.values()))
    count, _ = COUNTS[count_name]
    order = sorted(files, key=lambda n: (BOOTSTRAP_ORDER.index(n) if n in BOOTSTRAP_ORDER else 7, n))
    as_read, _ = composed_both(files, order, cap, Budget(total=10**9, keep=keep))
    assert isinstance(as_read, Soul)
    measured = len(as_read.text) if count is None else count(as_read.text)
    total = max(measured + more, 1)
    budget = Budget(total=total, keep=keep, count=count)
    soul, plain = composed_both(files, order, cap, budget)
    assert isinstance(soul, Soul)
    check_laws(files, order, cap, budget, soul, plain, True)
    if len(as_read.text) <= 8 * total:
        event("at most 8 characters a unit: the soul as read")
        assert (soul.text, soul.found, soul.used) == (as_read.text, as_read.found, measured)
    else:  # beyond 8 characters a unit, the plan cuts
        event("more than 8 characters a unit: the laws alone")
