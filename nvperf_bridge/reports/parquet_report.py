"""The Parquet report (``--format parquet``): kernels x models, one table, for large runs.

One row per kernel, in input order: ``kernel_id``, ``kernel``,
``kernel_name``, ``measured_ns``, then for each model that produced results
its result columns and its intermediate quantities, named ``<model>/<column>``
(``hong-kim/predicted_ns``, ``hong-kim/bottleneck``, ``hong-kim/MWP``, ...).
Times are nanoseconds; a value a model could not give is null (its reason is
in ``<model>/error``). pandas (``pd.read_parquet``), polars and DuckDB read it
as it is. The run's context (inputs, GPU, constants, accuracy, warnings) is
in the file's key-value metadata under ``nvperf_bridge`` as JSON.

Needs pyarrow (a runtime dependency); where it cannot be imported the command says
so before any work is done. The file is written a row group at a time
(``ROW_GROUP`` kernels) as the bytes are produced.
"""

from __future__ import annotations

import json
from typing import Any, Iterator

import numpy as np
import pandas as pd

from nvperf_bridge.analysis import Analysis
from nvperf_bridge.model import RESULT_COLUMNS
from nvperf_bridge.reports.common import detail_columns, display_names, full_names, kernel_ids

ROW_GROUP = 100_000


def check_available() -> None:
    """Raise a UsageError naming what to install when pyarrow is missing."""
    from nvperf_bridge.errors import UsageError

    try:
        import pyarrow  # noqa: F401
        import pyarrow.parquet  # noqa: F401
    except ImportError:
        raise UsageError("--format parquet needs pyarrow, which is not installed",
                         hint="pip install 'nvperf-bridge[parquet]' (or pip install pyarrow), "
                              "or use --format json or csv") from None


def report_table(analysis: Analysis) -> pd.DataFrame:
    """The report as one DataFrame: a row per kernel, ``<model>/<column>`` for every model's results."""
    kernels = analysis.kernels
    columns: dict[str, Any] = {
        "kernel_id": _plain(kernel_ids(kernels)),
        "kernel": _plain(display_names(kernels)),
        "kernel_name": _plain(full_names(kernels)),
        "measured_ns": pd.to_numeric(analysis.measured_ns, errors="coerce").to_numpy(dtype="float64"),
    }
    for mid, run in analysis.ok_runs().items():
        for name in (*RESULT_COLUMNS, *detail_columns(run)):
            columns[f"{mid}/{name}"] = _plain(run.result[name])
    return pd.DataFrame(columns, index=pd.RangeIndex(len(kernels)), copy=False)


def _plain(values: Any) -> Any:
    """A column Arrow can store with one type: numbers as float64 (non-finite -> null), text as text,
    and a column mixing types as the text of each value (None stays null)."""
    from pandas.api.types import infer_dtype

    array = np.asarray(values.to_numpy() if hasattr(values, "to_numpy") else values)
    kind = array.dtype.kind
    if kind == "f":
        return np.where(np.isfinite(array), array, np.nan).astype("float64")
    if kind in "iub":
        return array
    inferred = infer_dtype(array, skipna=True)
    if inferred in ("string", "empty"):
        return pd.array(array, dtype="string")
    if inferred in ("floating", "integer", "mixed-integer-float", "decimal"):
        numbers = pd.to_numeric(pd.Series(array, dtype=object), errors="coerce").to_numpy(dtype="float64")
        return np.where(np.isfinite(numbers), numbers, np.nan)
    if inferred == "boolean":
        return pd.array(array, dtype="boolean")
    return pd.array([None if _missing(v) else str(v) for v in array.tolist()], dtype="string")


def _missing(value: Any) -> bool:
    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):
        return False


def _metadata(analysis: Analysis) -> dict[str, Any]:
    """The run's context, as the JSON report gives it (everything but its columnar sections)."""
    from nvperf_bridge.reports.json_report import _document

    document = _document(analysis)
    del document["kernels"], document["predictions"], document["details"]
    return document


class _Chunks:
    """A write-only file for pyarrow that hands back what was written since the last ``take``."""

    def __init__(self) -> None:
        self._parts: list[bytes] = []
        self._position = 0
        self.closed = False

    def write(self, data: Any) -> int:
        chunk = bytes(data)
        self._parts.append(chunk)
        self._position += len(chunk)
        return len(chunk)

    def tell(self) -> int:
        return self._position

    def flush(self) -> None:
        pass

    def close(self) -> None:
        self.closed = True

    def writable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return False

    def take(self) -> bytes:
        out = b"".join(self._parts)
        self._parts.clear()
        return out


def iter_parquet(analysis: Analysis, row_group: int = ROW_GROUP) -> Iterator[bytes]:
    """The Parquet file as byte chunks, one row group at a time."""
    check_available()
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.Table.from_pandas(report_table(analysis), preserve_index=False)
    meta = dict(table.schema.metadata or {})
    meta[b"nvperf_bridge"] = json.dumps(_metadata(analysis), ensure_ascii=False, allow_nan=False).encode("utf-8")
    table = table.replace_schema_metadata(meta)
    sink = _Chunks()
    with pq.ParquetWriter(pa.PythonFile(sink, mode="w"), table.schema, compression="zstd") as writer:
        for start in range(0, max(len(table), 1), row_group):
            writer.write_table(table.slice(start, row_group), row_group_size=row_group)
            yield sink.take()
    yield sink.take()


def render_parquet(analysis: Analysis) -> bytes:
    """The whole Parquet file (``iter_parquet`` joined)."""
    return b"".join(iter_parquet(analysis))


__all__ = ["ROW_GROUP", "check_available", "iter_parquet", "render_parquet", "report_table"]
