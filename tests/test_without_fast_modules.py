"""The fallbacks of the two fast modules: where pyarrow and orjson cannot be imported, ``analyze`` reads
the same tables with pandas' parser and writes the same values with the standard library's encoder.

Both are runtime dependencies (README, Dependencies), so CI has them; here a fresh process runs with a
folder first on its path whose ``pyarrow`` and ``orjson`` packages raise ImportError (what pandas and
nvperf-bridge see on a machine without them), and its reports must hold what the normal run's hold.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

# a real ncu raw page (pyarrow's CSV reader reads it) and a real nvprof metrics + trace pair
RAW = "roofline-analysis/roofline-analysis__torch_sdpa_flash__gqa_bf16_b64_ctx4k_p64.ncu.csv"
PAIR = ("magus/magus__metrics_rodinia_lud.csv", "magus/magus__traces_rodinia_lud.csv")


def _blocker(folder: Path) -> Path:
    """A folder whose pyarrow and orjson packages fail to import, as on a machine without them."""
    for name in ("pyarrow", "orjson"):
        package = folder / name
        package.mkdir(parents=True)
        (package / "__init__.py").write_text(f"raise ImportError('{name} hidden by the test')\n")
    return folder


def _analyze(files: list[Path], out: Path, fmt: str, hidden: Path | None) -> str:
    env = dict(os.environ)
    if hidden is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(hidden), *filter(None, [env.get("PYTHONPATH")])])
    code = ("import sys\n"
            "from nvperf_bridge.cli import main\n"
            "rc = main(sys.argv[1:])\n"
            "import pandas\n"
            "print('pyarrow' in sys.modules and sys.modules['pyarrow'] is not None, 'orjson' in sys.modules)\n"
            "sys.exit(rc)\n")
    proc = subprocess.run([sys.executable, "-c", code, "analyze", *map(str, files), "--format", fmt, "-o", str(out),
                           "--force", "-q"], env=env, capture_output=True, text=True, timeout=300,
                          cwd=out.parent)  # not the checkout: `python -c` would import its nvperf_bridge/ first
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def _without_time_stamp(text: str) -> dict:
    document = json.loads(text)
    document.pop("created")
    return document


@pytest.mark.parametrize("inputs", [(RAW,), PAIR], ids=["ncu-raw", "nvprof-pair"])
def test_reports_are_the_same_without_pyarrow_and_orjson(realdata_dir: Path, tmp_path: Path,
                                                          inputs: tuple[str, ...]) -> None:
    files = [realdata_dir / name for name in inputs]
    if not all(path.is_file() for path in files):
        pytest.skip(f"{inputs} not in ../shared/realdata")
    hidden = _blocker(tmp_path / "hidden")
    seen_fast = _analyze(files, tmp_path / "fast.json", "json", None)
    seen_plain = _analyze(files, tmp_path / "plain.json", "json", hidden)
    assert seen_fast == "True True", "the normal run imports both (they are runtime dependencies)"
    assert seen_plain == "False False", "the blocked run could not import either"
    fast_text = (tmp_path / "fast.json").read_text(encoding="utf-8")
    plain_text = (tmp_path / "plain.json").read_text(encoding="utf-8")
    assert _without_time_stamp(plain_text) == _without_time_stamp(fast_text)
    _analyze(files, tmp_path / "fast.csv", "csv", None)
    _analyze(files, tmp_path / "plain.csv", "csv", hidden)
    assert (tmp_path / "plain.csv").read_bytes() == (tmp_path / "fast.csv").read_bytes()
