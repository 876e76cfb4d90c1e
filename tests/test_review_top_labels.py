"""``verdict._top_labels``: each group's label by time, one group-by for every group, as the per-group
``pd.Series(time).groupby(labels).sum().idxmax()`` it replaced gives it (ties to the first label in sorted
order, rows without a label left out)."""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import given
from hypothesis import strategies as st

from nvperf_bridge.review.verdict import _top_labels

LABELS = ["compute", "memory-bandwidth", "memory-latency", "unknown", None]


@given(st.lists(st.tuples(st.integers(0, 4), st.sampled_from(LABELS), st.sampled_from([0.5, 1.0, 1e9, 3.25])),
                min_size=1, max_size=60),
       st.lists(st.booleans(), min_size=60, max_size=60))
def test_top_labels_are_the_per_group_idxmax(rows: list, chosen: list) -> None:
    group = np.array([g for g, _, _ in rows])
    labels = np.array([np.nan if lab is None else lab for _, lab, _ in rows], dtype=object)
    time = np.array([t for _, _, t in rows], dtype="float64")
    take = np.array(chosen[:len(rows)])
    want = {}
    for g in np.unique(group):
        at = take & (group == g)
        sums = pd.Series(time[at]).groupby(labels[at]).sum()
        if len(sums):
            want[g] = str(sums.idxmax())
    assert _top_labels(group, labels, time, take) == want
