"""Plugin discovery: entry points, --plugin files, and plugins that misbehave."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from nvperf_bridge.cli import main
from nvperf_bridge.registry import load_registry

REPO = Path(__file__).resolve().parent.parent
CUSTOM = REPO / "examples" / "custom-model"
BUILTIN_IDS = {"hong-kim", "kothapalli", "luo-suda", "transit", "kerr", "roofline", "recommended"}

GOOD_PLUGIN = """
import pandas as pd
from nvperf_bridge.hookspecs import hookimpl
from nvperf_bridge.model import Requirements, empty_result

class Constant:
    id = "{mid}"
    version = "1.0"
    description = "always 1 us"
    paper = "none"
    requires = Requirements(required=())
    constants = ()
    def evaluate(self, kernels, gpu, options):
        out = empty_result(kernels)
        out["predicted_ns"] = 1000.0
        return out

@hookimpl
def register_models(register):
    register(Constant())
"""


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def test_builtin_models_come_through_the_entry_point_group() -> None:
    registry = load_registry()
    assert BUILTIN_IDS <= set(registry.models)
    for mid in BUILTIN_IDS:
        assert registry.models[mid].origin.startswith("entry point "), registry.models[mid].origin


def test_plugin_file_adds_a_model(tmp_path: Path) -> None:
    path = write(tmp_path, "constant.py", GOOD_PLUGIN.format(mid="constant-one"))
    registry = load_registry([path], entry_points=False)
    assert list(registry.models) == ["constant-one"]
    assert registry.models["constant-one"].origin == f"file {path}"
    assert registry.problems == []


def test_plugin_that_fails_to_import_is_reported_and_others_load(tmp_path: Path) -> None:
    broken = write(tmp_path, "broken.py", "raise RuntimeError('boom at import')\n")
    good = write(tmp_path, "good.py", GOOD_PLUGIN.format(mid="constant-one"))
    registry = load_registry([broken, good], entry_points=False)
    assert "constant-one" in registry.models
    assert len(registry.problems) == 1
    assert "broken" in registry.problems[0] and "boom at import" in registry.problems[0]


def test_plugin_raising_in_register_and_bad_models_are_skipped(tmp_path: Path) -> None:
    raising = write(tmp_path, "raising.py", """
        from nvperf_bridge.hookspecs import hookimpl
        @hookimpl
        def register_models(register):
            raise ValueError("cannot register")
    """)
    bad = write(tmp_path, "bad.py", """
        from nvperf_bridge.hookspecs import hookimpl
        class NoEvaluate:
            id = "Not_Kebab"
            version = "1"; description = ""; paper = ""; requires = None
            def evaluate(self, k, g, o): return None
        @hookimpl
        def register_models(register):
            register(object())
            register(NoEvaluate())
    """)
    registry = load_registry([raising, bad], entry_points=False)
    assert registry.models == {}
    text = "\n".join(registry.problems)
    assert "cannot register" in text
    assert "lacks" in text
    assert "not kebab-case" in text


def test_duplicate_model_id_keeps_the_first(tmp_path: Path) -> None:
    one = write(tmp_path, "one.py", GOOD_PLUGIN.format(mid="same-id"))
    two = write(tmp_path, "two.py", GOOD_PLUGIN.format(mid="same-id"))
    registry = load_registry([one, two], entry_points=False)
    assert registry.models["same-id"].origin == f"file {one}"
    assert any("already registered" in p for p in registry.problems)


def test_missing_plugin_file_is_reported(tmp_path: Path) -> None:
    registry = load_registry([tmp_path / "nope.py"], entry_points=False)
    assert registry.models == {} and "no such file" in registry.problems[0]


def test_models_command_lists_the_example_plugin_loaded_from_file(capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["models", "--json", "--plugin", str(CUSTOM / "littles_law_model.py")])
    out = capsys.readouterr()
    assert rc == 0
    listed = {row["id"]: row for row in json.loads(out.out)["models"]}
    assert "littles-law" in listed
    assert listed["littles-law"]["requires"][0] == "dram_bytes"
    assert listed["littles-law"]["origin"].startswith("file ")


def test_installed_example_plugin_appears_through_its_entry_point(tmp_path: Path) -> None:
    """`pip install ./examples/custom-model` is all a user does; emulate it into a target folder."""
    pytest.importorskip("setuptools")
    target = tmp_path / "site"
    install = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
         "--target", str(target), str(CUSTOM)],
        capture_output=True, text=True, timeout=300,
    )
    if install.returncode != 0:
        pytest.skip(f"pip could not build the example here: {install.stderr.strip()[-300:]}")
    env = {"PYTHONPATH": str(target), "PATH": ""}
    listed = subprocess.run(
        [sys.executable, "-m", "nvperf_bridge", "models", "--json"], capture_output=True, text=True, env=env, timeout=120,
        cwd=tmp_path,  # outside the checkout: `-m` puts the cwd first on sys.path
    )
    assert listed.returncode == 0, listed.stderr
    models = {row["id"]: row for row in json.loads(listed.stdout)["models"]}
    assert "littles-law" in models
    assert "nvperf-littles-law 0.1.0" in models["littles-law"]["origin"]
