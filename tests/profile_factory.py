"""Small in-memory GPU profiles for tests (every required hardware field sourced)."""

from __future__ import annotations

from typing import Any

from nvperf_bridge.gpu import SOURCED_FIELDS, GpuProfile, profile_from_mapping

BASE: dict[str, Any] = {
    "schema_version": 1, "id": "test-gpu", "name": "Test GPU", "match": ["Test GPU"],
    "compute_capability": "7.0", "sm_count": 80, "cores_per_sm": 64, "max_warps_per_sm": 64,
    "max_blocks_per_sm": 32, "registers_per_sm": 65536, "shared_mem_per_sm_bytes": 98304,
    "sm_clock_mhz": 1530, "memory_bandwidth_gb_per_s": 900,
}


def make_profile(**overrides: Any) -> GpuProfile:
    data = {**BASE, **overrides}
    data.setdefault("sources", {name: "test value" for name in SOURCED_FIELDS})
    return profile_from_mapping(data, "<test profile>")
