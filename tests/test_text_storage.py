"""The command line's pandas text storage: Python objects (as without pyarrow) unless the user chose one,
put back afterwards, and followed by the worker processes that read large inputs."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from nvperf_bridge.text_storage import OPTION, python_text

pytestmark = pytest.mark.skipif(pd.get_option(OPTION) != "auto",
                                reason="this pandas has no automatic text storage (pandas < 3)")

RAW = "roofline-analysis/roofline-analysis__torch_sdpa_flash__gqa_bf16_b64_ctx4k_p64.ncu.csv"
RAW_64 = "roofline-analysis/roofline-analysis__flashinfer_paged_decode__gqa_bf16_b64_ctx4k_p64.ncu.csv"


def _text_storages(frame: pd.DataFrame) -> set[str]:
    return {frame[name].dtype.storage for name in frame.columns if isinstance(frame[name].dtype, pd.StringDtype)}


def test_python_text_within_the_block_and_the_option_put_back() -> None:
    with python_text():
        assert pd.Series(["a", None]).dtype.storage == "python"
    assert pd.get_option(OPTION) == "auto"


def test_a_storage_the_user_chose_is_kept() -> None:
    pyarrow = pytest.importorskip("pyarrow")
    assert pyarrow is not None
    with pd.option_context(OPTION, "pyarrow"):
        with python_text():
            assert pd.Series(["a"]).dtype.storage == "pyarrow"
        assert pd.get_option(OPTION) == "pyarrow"


def test_the_command_line_reads_python_text(realdata_dir: Path, tmp_path: Path) -> None:
    """``analyze`` (in this process) runs with Python-backed text and leaves the option as it was."""
    from nvperf_bridge import analysis
    from nvperf_bridge.cli import main

    seen = []
    original = analysis.analyze

    def spy(imported, **kwargs):
        seen.append(_text_storages(imported.kernels))
        return original(imported, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(analysis, "analyze", spy)
        code = main(["analyze", str(realdata_dir / RAW), "--format", "json", "-o", str(tmp_path / "r.json"), "-q"])
    assert code == 0 and seen == [{"python"}]
    assert pd.get_option(OPTION) == "auto"


def test_workers_read_with_the_parents_text_storage(realdata_dir: Path) -> None:
    """Files read in worker processes come back with the text storage the parent reads them with."""
    from nvperf_bridge.discovery import _parse_all

    paths = [realdata_dir / RAW, realdata_dir / RAW_64]
    for storage in ("python", "pyarrow"):
        if storage == "pyarrow":
            pytest.importorskip("pyarrow")
        with pd.option_context(OPTION, storage):
            here = _parse_all(paths, 1, None)
            there = _parse_all(paths, 2, None)
        assert len(here) == len(there) == 2
        for mine, theirs in zip(here, there):
            assert _text_storages(mine.frame) == _text_storages(theirs.frame) == {storage}
            pd.testing.assert_frame_equal(mine.frame, theirs.frame, check_exact=True)
