"""``nvperf-bridge calibrate``: exit codes, stdout/stderr, the written profile and its use."""

from __future__ import annotations

from pathlib import Path

import pytest
from calibration_data import PLUGIN, plugin_module, write_inputs

from nvperf_bridge import cli
from nvperf_bridge.analysis import choose_gpu
from nvperf_bridge.gpu import load_profile_file
from nvperf_bridge.importers import read_profiles


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = cli.main(args)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture
def inputs(tmp_path: Path) -> tuple[Path, Path]:
    return write_inputs(tmp_path)


def calibrate_args(data: Path, base: Path, out: Path, *extra: str) -> list[str]:
    return ["calibrate", str(data), "--gpu", str(base), "--plugin", str(PLUGIN), "-o", str(out),
            "--folds", "4", *extra]


def test_calibrate_writes_a_profile_that_loads_and_is_used(
    inputs: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data, base = inputs
    out = tmp_path / "profiles" / "test-gpu-calibrated.yaml"
    code, stdout, stderr = run(calibrate_args(data, base, out, "--model", "fake-linear", "--model", "fake-constless"),
                               capsys)
    assert code == 0, stderr
    assert "| fake-linear | 8 (8) | 4 |" in stdout  # kernels (groups), folds
    assert "sync_cycles could not be fitted: changing it by +-10% moves no prediction" in stdout
    assert "| fake-constless | - | - | skipped: declares no machine constants" in stdout
    assert f"wrote {out}" in stderr and "Traceback" not in stderr
    profile = load_profile_file(out)
    assert profile.id == "test-gpu-calibrated" and profile.match == []
    truth = plugin_module().TRUE
    for name, value in truth.items():
        constant = profile.constant("fake-linear", name)
        assert constant is not None and constant.status == "calibrated"
        assert constant.value == pytest.approx(value, rel=0.02)
        assert constant.source.startswith("calibrated on kernels.yaml (nvperf-bridge calibrate, ")
    block = profile.raw["calibration"]
    assert block["base_profile"] == "test-gpu" and block["data"][0]["file"] == "kernels.yaml"
    assert block["command"].startswith("nvperf-bridge calibrate ")
    assert block["skipped"] == {"fake-constless": "declares no machine constants (nothing to calibrate)"}
    held_out = block["models"]["fake-linear"]["error"]["cv_held_out"]
    assert held_out["n"] == 8 and held_out["mape"] < 0.01
    # analyze picks it by path, and by id from --profile-dir
    kernels = read_profiles([data]).kernels
    assert choose_gpu(kernels, str(out))[0].id == "test-gpu-calibrated"
    assert choose_gpu(kernels, "test-gpu-calibrated", [out.parent])[0].is_calibrated


def test_calibrate_refuses_to_overwrite_without_force(
    inputs: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data, base = inputs
    out = tmp_path / "test-gpu-calibrated.yaml"
    out.write_text("keep me\n")
    code, stdout, stderr = run(calibrate_args(data, base, out, "--model", "fake-linear"), capsys)
    assert code == 1 and stdout == ""
    assert stderr.startswith("nvperf-bridge: error: ") and "already exists" in stderr and "--force" in stderr
    assert out.read_text() == "keep me\n"
    code, _, stderr = run(calibrate_args(data, base, out, "--model", "fake-linear", "--force"), capsys)
    assert code == 0, stderr
    assert load_profile_file(out).is_calibrated


@pytest.mark.parametrize(
    ("extra", "message"),
    [(["--model", "no-such-model"], "unknown model 'no-such-model'"), (["--loss", "l3"], "--loss 'l3'"),
     (["-o", "My_GPU.yaml"], "must be a lowercase-kebab profile id"), (["-o", "x.csv"], "must be a .yaml file")],
)
def test_calibrate_usage_errors_exit_2(
    inputs: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], message: str
) -> None:
    data, base = inputs
    code, _, stderr = run(calibrate_args(data, base, tmp_path / "x-calibrated.yaml", *extra), capsys)
    assert code == 2 and message in stderr
    assert not (tmp_path / "x-calibrated.yaml").exists() and not Path("My_GPU.yaml").exists()


def test_calibrate_without_measured_durations_is_an_input_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data, base = write_inputs(tmp_path)
    data.write_text(data.read_text().replace("duration_ns", "not_a_duration"))
    code, _, stderr = run(calibrate_args(data, base, tmp_path / "x-calibrated.yaml", "--model", "fake-linear"), capsys)
    assert code == 1 and "no kernel has a measured duration" in stderr


def test_calibrate_on_the_gtx_1080_ti_corpus(realdata_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The shipped profile's recipe on two magus kernels (a fast smoke run; the full run is
    examples/calibration/regenerate.sh)."""
    magus = realdata_dir / "magus"
    files = [magus / "magus__metrics_rodinia_lud.csv", magus / "magus__traces_rodinia_lud.csv"]
    if not all(f.is_file() for f in files):
        pytest.skip("magus lud files are not present")
    out = tmp_path / "gtx-1080-ti-lud.yaml"
    code, stdout, stderr = run(["calibrate", *map(str, files), "--gpu", "gtx-1080-ti", "--model", "roofline",
                                "-o", str(out), "--folds", "1"], capsys)
    assert code == 0, stderr
    assert "| roofline | 3 (3) | none |" in stdout and "cross-validation off (--folds 1" in stdout
    assert load_profile_file(out).raw["calibration"]["kernel_groups"] == 3


def test_nothing_to_calibrate_writes_nothing(inputs: tuple[Path, Path], tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    data, base = inputs
    out = tmp_path / "x-calibrated.yaml"
    code, stdout, stderr = run(calibrate_args(data, base, out, "--model", "fake-constless", "--model", "fake-broken"),
                               capsys)
    assert code == 1 and not out.exists()
    assert "no model could be calibrated" in stderr and "fake-broken: the model predicts none" in stderr
    assert "| fake-constless | - | - | skipped" in stdout


def test_constant_option_restricts_the_fit(inputs: tuple[Path, Path], tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    data, base = inputs
    out = tmp_path / "x-calibrated.yaml"
    code, _, stderr = run(calibrate_args(data, base, out, "--model", "fake-linear", "--folds", "0",
                                              "--constant", "fake-linear:issue_cycles"), capsys)
    assert code == 0, stderr
    block = load_profile_file(out).raw["calibration"]
    assert list(block["models"]["fake-linear"]["fitted"]) == ["issue_cycles"]
    assert block["models"]["fake-linear"]["not_fitted"]["mem_latency_cycles"]["reason"] == "not selected for fitting"
    assert "--constant fake-linear:issue_cycles" in block["command"]
    code, _, stderr = run(calibrate_args(data, base, out, "--model", "fake-linear", "--force",
                                         "--constant", "fake-linear:nope"), capsys)
    assert code == 2 and "has no constant 'nope'" in stderr
    code, _, stderr = run(calibrate_args(data, base, out, "--model", "fake-linear", "--force",
                                         "--constant", "issue_cycles"), capsys)
    assert code == 2 and "must be MODEL:NAME" in stderr


def test_shipped_calibrated_profile_loads_and_never_steals_auto_matching() -> None:
    from nvperf_bridge.gpu import load_profiles, match_device

    profiles = load_profiles()
    shipped = profiles["gtx-1080-ti-calibrated"]
    assert shipped.is_calibrated and shipped.match == []
    assert match_device("GeForce GTX 1080 Ti (0)", profiles).id == "gtx-1080-ti"
    block = shipped.raw["calibration"]
    # magus-corpus: 43 applications, a metrics and a trace file each
    assert len(block["data"]) == 86
    # fitted from the stock profile: directly, or (luo-suda, docs/calibration.md) one model refitted alone from the
    # shipped profile, every other model's record carried from the calibration of the stock one
    if block["base_profile"] != "gtx-1080-ti":
        assert block["base_profile"] == "gtx-1080-ti-calibrated"
        carried = {model_id: entry["carried_from"] for model_id, entry in block["models"].items() if "carried_from" in entry}
        assert sorted(carried) == ["hong-kim", "kothapalli", "roofline", "transit"]
        assert all("--gpu gtx-1080-ti --model" in made_by["command"] for made_by in carried.values())
    assert "cross-validation by application (43 applications" in block["models"]["transit"]["cross_validation"]["note"]
    for model_id, entry in block["models"].items():
        for name in entry["fitted"]:
            constant = shipped.constant(model_id, name)
            assert constant is not None and constant.status == "calibrated", (model_id, name)


def test_shipped_calibrated_profile_names_the_corpus_files_by_hash(realdata_dir: Path) -> None:
    from nvperf_bridge.calibration import file_sha256
    from nvperf_bridge.gpu import load_profiles

    block = load_profiles()["gtx-1080-ti-calibrated"].raw["calibration"]
    for entry in block["data"]:
        path = realdata_dir / "magus-corpus" / entry["file"]
        assert path.is_file(), entry["file"]
        assert file_sha256(path) == entry["sha256"], entry["file"]


def test_calibrate_takes_a_folder_and_holds_out_whole_applications(
    realdata_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A folder of nvprof metrics+trace pairs, as analyze takes it: each pair is one application,
    held out whole; the report gives the held-out within-2x share and the worst applications, and
    the profile lists every file read with its sha256."""
    folder = tmp_path / "corpus"
    folder.mkdir()
    apps = ("cudasdk_dct8x8", "rodinia_needle", "poly_3mm", "cudasdk_transpose")
    for app in apps:
        for kind in ("metrics", "traces"):
            (folder / f"{kind}_{app}.csv").symlink_to(realdata_dir / "magus-corpus" / f"{kind}_{app}.csv")
    (folder / "README.md").write_text("notes, not profiler output\n")
    out = tmp_path / "gtx-1080-ti-test.yaml"
    code, stdout, stderr = run(["calibrate", str(folder), "--gpu", "gtx-1080-ti", "--model", "transit", "-o", str(out),
                                "--folds", "4"], capsys)
    assert code == 0, stderr
    assert "4-fold cross-validation by application (4 applications, seed 0)" in stdout
    row = next(line for line in stdout.splitlines() if line.startswith("| transit |"))
    assert any(app in row for app in apps)  # the worst held-out applications are named
    block = load_profile_file(out).raw["calibration"]
    assert sorted(item["file"] for item in block["data"]) == sorted(f"{k}_{a}.csv" for a in apps for k in ("metrics", "traces"))


def test_per_kernel_factors_from_small_inputs_predict_the_large_ones(
    realdata_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """"Will this kernel scale": factors fitted on the smaller half of each kernel's input sizes
    (real GTX TITAN runs) predict the larger half through analyze --gpu FITTED.yaml."""
    import yaml

    from nvperf_bridge.analysis import analyze_files

    source = realdata_dir / "amaris-kepler-maxwell" / "gtx-titan.yaml"
    document = yaml.safe_load(source.read_text())
    records = document["kernels"]
    cut: dict[str, float] = {}
    for name in {r["kernel"] for r in records}:
        sizes = sorted({r["input_size"] for r in records if r["kernel"] == name})
        cut[name] = sizes[len(sizes) // 2 - 1]
    small, large = tmp_path / "small.yaml", tmp_path / "large.yaml"
    small.write_text(yaml.safe_dump({**document, "kernels": [r for r in records if r["input_size"] <= cut[r["kernel"]]]}))
    large.write_text(yaml.safe_dump({**document, "kernels": [r for r in records if r["input_size"] > cut[r["kernel"]]]}))
    out = tmp_path / "titan-per-kernel.yaml"
    code, stdout, stderr = run(["calibrate", str(small), "--per-kernel", "-o", str(out)], capsys)
    assert code == 0, stderr
    assert "| vectorAdd |" in stdout and "| matMul_gpu_sharedmem |" in stdout
    profile = load_profile_file(out)
    assert set(profile.raw["calibration"]["per_kernel"]["recommended"]) == set(cut)
    analysis = analyze_files([large], gpu=str(out), model_ids=["recommended"])
    result = analysis.runs["recommended"].result
    assert result["kernel_factor"].notna().all() and result["state"].str.contains("per-kernel factor").all()
    ape = ((result["predicted_ns"] - analysis.measured_ns).abs() / analysis.measured_ns).median()
    assert ape < 0.05  # measured: about 1% on this GPU; one bare factor per kernel gives about 8%


def test_per_kernel_factor_comes_from_the_largest_runs() -> None:
    """A model whose error settles as the input grows (measured/predicted 1.6 at small sizes, 1.0 at
    the largest) is corrected by the largest runs' ratio, not by the median over all runs."""
    import pandas as pd

    from nvperf_bridge.calibration import apply_kernel_factors, kernel_factors

    runs = pd.DataFrame({"kernel": ["dot"] * 4 + ["add"] * 2, "block_threads": [256.0] * 6,
                         "input_size": [1e3, 1e4, 1e5, 1e6, 1e3, 1e6],
                         "duration_ns": [1.6e3, 1.6e4, 1.6e5, 1.0e6, 2e3, 2e6]})
    predicted = pd.Series([1e3, 1e4, 1e5, 1e6, 1e3, 1e6])
    factors = kernel_factors(runs, predicted)
    assert factors["dot"]["factor"] == pytest.approx(1.0) and factors["dot"]["by_block_threads"]["256"] == pytest.approx(1.0)
    assert factors["add"]["factor"] == pytest.approx(2.0) and "largest input_size" in factors["dot"]["from"]
    larger = pd.DataFrame({"kernel": ["dot", "add", "other"], "block_threads": [256.0, 128.0, 256.0]})
    factor, how = apply_kernel_factors(larger, factors)
    assert list(factor) == pytest.approx([1.0, 2.0, 1.0]) and list(how) == ["kernel and block size", "kernel", ""]


def test_calibrate_option_is_kept_written_and_applied_by_analyze_under_the_users_option(
    realdata_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--option pins an option calibrate would otherwise choose (hong-kim's case_selection); the
    profile carries it under model_options; analyze --gpu PROFILE runs hong-kim with it, and the
    user's own --option wins over the profile's."""
    import json

    from nvperf_bridge.analysis import analyze
    from nvperf_bridge.discovery import read_inputs

    files = [realdata_dir / "magus-corpus" / f"{kind}_cudasdk_binomialOptions.csv" for kind in ("metrics", "traces")]
    files += [realdata_dir / "magus-corpus" / f"{kind}_cudasdk_transpose.csv" for kind in ("metrics", "traces")]
    out = tmp_path / "gtx-1080-ti-pinned.yaml"
    code, stdout, stderr = run(["calibrate", *map(str, files), "--gpu", "gtx-1080-ti", "--model", "hong-kim",
                                "--option", "hong-kim.case_selection=section-3.2", "-o", str(out), "--folds", "0"],
                               capsys)
    assert code == 0, stderr
    profile = load_profile_file(out)
    written = profile.raw["model_options"]["hong-kim"]
    assert written["case_selection"] == "section-3.2" and set(written) == {"case_selection", "l2_reads"}
    assert "--option hong-kim.case_selection=section-3.2" in profile.raw["calibration"]["command"]
    # pinned by the user, not chosen: only l2_reads was searched
    assert list(profile.raw["calibration"]["models"]["hong-kim"]["options"]["chosen"]) == ["l2_reads"]
    imported = read_inputs(files)
    binomial = imported.kernels["kernel"].astype(str).str.startswith("binomialOptions").to_numpy()
    by_profile = analyze(imported, gpu=str(out), model_ids=["hong-kim"])
    run_hk = by_profile.runs["hong-kim"]
    assert run_hk.options == written
    # binomialOptions is compute-bound with MWP > CWP: Section 3.2.2's Eq. (24), not the printed Eq. (23)
    assert set(run_hk.result.loc[binomial, "equation"]) == {"24"}
    by_user = analyze(imported, gpu=str(out), model_ids=["hong-kim"],
                      options={"hong-kim": {"case_selection": "published"}})
    assert by_user.runs["hong-kim"].options == {**written, "case_selection": "published"}
    assert set(by_user.runs["hong-kim"].result.loc[binomial, "equation"]) == {"23"}
    # an option for a model that is not calibrated is a usage error
    code, _, stderr = run(["calibrate", *map(str, files), "--gpu", "gtx-1080-ti", "--model", "hong-kim", "--force",
                           "--option", "transit.precision=dp", "-o", str(out), "--folds", "0"], capsys)
    assert code == 2 and "--option for model 'transit'" in stderr
    # a misspelt option is refused with a did-you-mean, never silently ignored by the fit
    code, _, stderr = run(["calibrate", *map(str, files), "--gpu", "gtx-1080-ti", "--model", "hong-kim", "--force",
                           "--option", "hong-kim.case_selektion=published", "-o", str(out), "--folds", "0"], capsys)
    assert code == 2 and "has no option 'case_selektion'" in stderr and "case_selection" in stderr
    assert load_profile_file(out).raw["model_options"]["hong-kim"] == written  # the profile is untouched
    json.dumps(profile.raw["model_options"])  # plain values


def test_a_misspelt_option_in_a_profile_is_refused_naming_the_file_and_key(
    realdata_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A hand-edited profile whose model_options misspell an option: analyze stops with one line
    naming the profile, the key and the right name, instead of running the model without it."""
    import yaml

    from nvperf_bridge.gpu import load_profiles

    shipped = load_profiles()["gtx-1080-ti-calibrated"]
    edited = {**shipped.raw, "id": "gtx-1080-ti-edited"}
    edited["model_options"] = {"hong-kim": {"case_selektion": "published", "l2_reads": False}}
    profile = tmp_path / "gtx-1080-ti-edited.yaml"
    profile.write_text(yaml.safe_dump(edited, sort_keys=False))
    files = [realdata_dir / "magus-corpus" / f"{kind}_cudasdk_transpose.csv" for kind in ("metrics", "traces")]
    out = tmp_path / "report.md"
    code, _, stderr = run(["analyze", *map(str, files), "--gpu", str(profile), "--model", "hong-kim",
                           "-o", str(out)], capsys)
    assert code == 1 and not out.exists()  # a bad input file, as every profile error
    line = stderr.strip().splitlines()[-1]
    assert str(profile) in line and "model_options.hong-kim.case_selektion" in line
    assert "did you mean 'case_selection'" in line and "Traceback" not in stderr
    # spelt right, the YAML boolean (l2_reads: off reads as False) runs as 'off'
    edited["model_options"] = {"hong-kim": {"case_selection": "published", "l2_reads": False}}
    profile.write_text(yaml.safe_dump(edited, sort_keys=False))
    code, _, stderr = run(["analyze", *map(str, files), "--gpu", str(profile), "--model", "hong-kim",
                           "--format", "json", "-o", str(tmp_path / "report.json")], capsys)
    assert code == 0, stderr
    import json

    details = json.loads((tmp_path / "report.json").read_text())["details"]["hong-kim"]
    assert "l2_reads" in details


def test_shipped_calibrated_profile_options_are_applied_by_analyze(realdata_dir: Path) -> None:
    """The options calibrate chose for the shipped GTX 1080 Ti profile (model_options) are what
    analyze --gpu gtx-1080-ti-calibrated runs each model with."""
    from nvperf_bridge.analysis import analyze
    from nvperf_bridge.discovery import read_inputs
    from nvperf_bridge.gpu import load_profiles

    shipped = load_profiles()["gtx-1080-ti-calibrated"]
    chosen = shipped.raw.get("model_options") or {}
    assert chosen, "the shipped profile records the options its calibration chose"
    files = [realdata_dir / "magus-corpus" / f"{kind}_cudasdk_transpose.csv" for kind in ("metrics", "traces")]
    analysis = analyze(read_inputs(files), gpu="gtx-1080-ti-calibrated", model_ids=sorted(chosen))
    for model_id, options in chosen.items():
        assert analysis.runs[model_id].options == options
        for name, value in options.items():
            if name in analysis.runs[model_id].result.columns:  # hong-kim reports its case rule as a detail
                assert set(analysis.runs[model_id].result[name]) == {value}


def test_reports_say_which_options_each_model_ran_with_and_which_are_extensions(
    realdata_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A reviewer comparing numbers with a colleague's must see that hong-kim ran with the
    calibrated profile's options, one of them beyond the paper, and that kothapalli's memory
    form came from the command line: JSON, Markdown and the workbook's Notes all say so."""
    import json

    from openpyxl import load_workbook

    files = [realdata_dir / "magus-corpus" / f"{kind}_cudasdk_transpose.csv" for kind in ("metrics", "traces")]
    common = [*map(str, files), "--gpu", "gtx-1080-ti-calibrated", "--model", "hong-kim", "--model", "kothapalli",
              "--option", "kothapalli.global_memory=dram", "-q"]
    code, _, stderr = run(["analyze", *common, "--format", "json", "-o", str(tmp_path / "r.json")], capsys)
    assert code == 0, stderr
    models = json.loads((tmp_path / "r.json").read_text())["models"]
    assert models["hong-kim"]["options"]["l2_reads"] == {
        "value": "memory-warps", "from": "profile gtx-1080-ti-calibrated", "extension": True}
    assert models["hong-kim"]["options"]["case_selection"]["extension"] is False  # Section 3.2.2's own reading
    assert models["kothapalli"]["options"] == {"global_memory": {"value": "dram", "from": "--option",
                                                                 "extension": False}}  # the paper's form
    code, _, stderr = run(["analyze", *common, "-o", str(tmp_path / "r.md")], capsys)
    assert code == 0, stderr
    text = (tmp_path / "r.md").read_text()
    assert ("Options: case_selection=section-3.2 (profile gtx-1080-ti-calibrated); l2_reads=memory-warps "
            "(profile gtx-1080-ti-calibrated; EXTENSION, not the paper).") in text
    assert "Options: global_memory=dram (--option)." in text
    code, _, stderr = run(["analyze", *common, "-o", str(tmp_path / "r.xlsx")], capsys)
    assert code == 0, stderr
    notes = [" ".join(str(c) for c in row if c is not None)
             for row in load_workbook(tmp_path / "r.xlsx", read_only=True)["Notes"].iter_rows(values_only=True)]
    assert any("hong-kim" in line and "l2_reads=memory-warps (profile gtx-1080-ti-calibrated; EXTENSION" in line
               for line in notes)
    # the GPU sheet spells the profile's nested fields out, one value a cell (a mapping once crashed the writer)
    gpu = {row[0]: row[1] for row in load_workbook(tmp_path / "r.xlsx", read_only=True)["GPU"].iter_rows(
        values_only=True) if len(row) > 1 and row[0]}
    assert gpu["model_options.hong-kim.l2_reads"] == "memory-warps"
    assert "options chosen: case_selection=section-3.2, l2_reads=memory-warps" in gpu["calibration.models.hong-kim"]
    assert all(len(str(value)) < 2000 for value in gpu.values())
