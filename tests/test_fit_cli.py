"""``nvperf-bridge fit``: exit codes, stdout/stderr, the JSON it writes, and --force."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from nvperf_bridge.cli import main
from nvperf_bridge.commands import fit as fit_module
from nvperf_bridge.kernelframe import ImportResult

from test_model_kerr import additive_kernels


@pytest.fixture
def training(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """A training 'file': the importer is replaced by a KernelFrame built here (device = a shipped profile's name)."""
    kernels = additive_kernels()
    kernels["device"] = "Tesla V100-SXM2-16GB"
    seen: list[list[Path]] = []

    def fake_read(paths: list[Path]) -> ImportResult:
        seen.append(paths)
        return ImportResult(kernels=kernels, inputs=[], warnings=["a warning from the importer"])

    monkeypatch.setattr(fit_module, "_read_training", fake_read)
    path = tmp_path / "train.csv"
    path.write_text("placeholder\n")
    return path


def test_fit_kerr_writes_json_that_the_model_reads_back(training: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "kerr.json"
    rc = main(["fit", "kerr", str(training), "-o", str(out)])
    captured = capsys.readouterr()
    assert rc == 0, captured.err
    assert captured.out == ""
    assert "fitted kerr on 60 kernel row(s)" in captured.err
    assert "a warning from the importer" in captured.err
    data = json.loads(out.read_text())
    assert data["model"] == "kerr" and data["pca"]["n_components"] == 2
    assert data["provenance"]["gpu"] == "v100-sxm2"
    assert data["provenance"]["training_files"] == [str(training)]
    from nvperf_bridge.builtin_plugins.kerr import MODEL
    from nvperf_bridge.gpu import resolve_profile

    fresh = additive_kernels(n=20, seed=11)
    result = MODEL.evaluate(fresh, resolve_profile("v100-sxm2"), {"model_data": data})
    assert (result["error"] == "").all()
    assert list(tmp_path.glob(".kerr.json.*")) == []  # no temp file left behind


def test_existing_output_needs_force(training: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "kerr.json"
    out.write_text("keep me")
    rc = main(["fit", "kerr", str(training), "-o", str(out)])
    captured = capsys.readouterr()
    assert rc == 1
    assert captured.err.count("\n") == 1 and "already exists" in captured.err and "--force" in captured.err
    assert out.read_text() == "keep me"
    rc = main(["fit", "kerr", str(training), "-o", str(out), "--force", "--gpu", "a100-40gb"])
    assert rc == 0
    assert json.loads(out.read_text())["provenance"]["gpu"] == "a100-40gb"


def test_model_without_fit_is_a_usage_error(training: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "roofline.json"
    rc = main(["fit", "roofline", str(training), "-o", str(out)])
    captured = capsys.readouterr()
    assert rc == 2
    assert "has nothing to fit" in captured.err and "kerr" in captured.err
    assert not out.exists()


def test_unknown_model_is_a_usage_error(training: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["fit", "no-such-model", str(training), "-o", str(tmp_path / "x.json")])
    assert rc == 2
    assert "unknown model 'no-such-model'" in capsys.readouterr().err


def test_too_little_training_data_is_one_line_with_exit_1(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    kernels = additive_kernels().head(4)
    kernels["device"] = "Tesla V100-SXM2-16GB"
    monkeypatch.setattr(fit_module, "_read_training", lambda paths: ImportResult(kernels=kernels, inputs=[]))
    out = tmp_path / "kerr.json"
    rc = main(["fit", "kerr", str(tmp_path / "train.csv"), "-o", str(out)])
    captured = capsys.readouterr()
    assert rc == 1
    assert captured.err.startswith("nvperf-bridge: error: model kerr: needs at least 8 kernels")
    assert not out.exists()


def test_fit_reads_real_ncu_output_through_the_importer(realdata_dir: Path, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    source = realdata_dir / "optimal_unified_memory" / "optimal_unified_memory__cfd__nsight_cfd_097K.log"
    if not source.is_file():
        pytest.skip("cfd ncu log not in ../shared/realdata")
    out = tmp_path / "kerr.json"
    rc = main(["fit", "kerr", str(source), "-o", str(out)])
    captured = capsys.readouterr()
    assert rc == 0, captured.err
    data = json.loads(out.read_text())
    assert data["n_train"] == 100 and "inst_executed" in data["features"]
    assert np.isfinite(data["loo_mape"])


def test_fit_kerr_on_a_folder_reports_held_out_applications(realdata_dir: Path, tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    """fit takes a folder like analyze; its JSON carries the application-grouped CV figures."""
    import json

    folder = tmp_path / "corpus"
    folder.mkdir()
    corpus = realdata_dir / "magus-corpus"
    apps = sorted(p.name[len("metrics_"):-4] for p in corpus.glob("metrics_*.csv"))[:12]
    for app in apps:
        for kind in ("metrics", "traces"):
            (folder / f"{kind}_{app}.csv").symlink_to(corpus / f"{kind}_{app}.csv")
    out = tmp_path / "kerr.json"
    code = main(["fit", "kerr", str(folder), "-o", str(out), "--folds", "3"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "3-fold cross-validation by application (12 applications" in captured.err
    provenance = json.loads(out.read_text())["provenance"]
    cv = provenance["cross_validation"]
    assert cv["folds"] == 3 and cv["n"] > 12 and 0 <= cv["within_2x"] <= 1
    assert all(app in apps for app, _ in cv["worst_applications"])
    assert len(provenance["training_files"]) == 24
