"""EXTENSION shared by the paper models: a fixed time per kernel launch.

None of the papers has it: their kernels ran for milliseconds. A launch also costs the GPU a
fixed time that no count of instructions or bytes describes: the front end fetches the launch
and distributes the blocks, and the kernel ends only after the last block has drained and
its writes are visible. nvprof / Nsight durations include it, so a kernel that does almost
nothing still lasts about a microsecond (on the GTX 1080 Ti corpus of
``shared/realdata/magus-corpus`` the shortest kernels, a few warps each, last 1.15-1.3 us).

The term is the constant ``launch_ns`` of each paper model: predicted_ns = the paper's time +
launch_ns. Its default is 0, the published form, so stock predictions are unchanged; the
calibration fits it with the model's other constants (a GPU-wide value, never per
application).
"""

from __future__ import annotations

import pandas as pd

from nvperf_bridge.model import ConstantSpec

LAUNCH_CONSTANT = ConstantSpec(
    "launch_ns", 0.0, "ns", (0.0, 20000.0),
    "fixed GPU time of one kernel launch added to the paper's time (EXTENSION, not in the paper; 0 = the "
    "published form)",
    "default 0 (the paper's form); fitted by calibrate: a GPU-wide launch and drain time (nvperf_bridge.launch_cost)",
)


def with_launch(ns: pd.Series, cycles: pd.Series, launch_ns: float, clock_hz: pd.Series | float) -> tuple[pd.Series, pd.Series]:
    """The paper's time plus the launch term, in ns and in SM cycles at ``clock_hz``."""
    if launch_ns == 0.0:
        return ns, cycles
    return ns + launch_ns, cycles + launch_ns * 1e-9 * clock_hz
