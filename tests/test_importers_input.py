"""Input side of issue 18: what the command line's reading path checks (range checks, encodings, cut files)."""

from __future__ import annotations

from pathlib import Path

import pytest

from nvperf_bridge.commands.inspect import build_report, render_text
from nvperf_bridge.discovery import read_inputs
from nvperf_bridge.errors import InputError

TRACE_HEAD = ('"Start","Duration","Grid X","Grid Y","Grid Z","Block X","Block Y","Block Z","Registers Per Thread",'
              '"Static SMem","Dynamic SMem","Size","Throughput","Device","Context","Stream","Name"\n'
              "ms,us,,,,,,,,B,B,KB,MB/s,,,,\n")


def _trace_row(start: float, duration: str, name: str, corr: int) -> str:
    return (f'{start},{duration},64,1,1,256,1,1,32,0,0,,,"GeForce GTX 1080 Ti (0)","1","7","{name} [{corr}]"\n')


def test_command_line_path_runs_the_range_checks(tmp_path: Path) -> None:
    path = tmp_path / "trace.csv"
    path.write_text(TRACE_HEAD + _trace_row(1.0, "12.5", "k1(float*)", 10) + _trace_row(2.0, "-5.0", "k2(float*)", 11))
    result = read_inputs([path], jobs=1)
    k = result.kernels.set_index("kernel_name")
    assert k.loc["k1(float*)", "duration_ns"] == 12500.0
    assert k.loc["k2(float*)", "duration_ns"] != k.loc["k2(float*)", "duration_ns"]  # NaN: dropped, never used
    warning = next(w for w in result.warnings if "duration_ns" in w)
    assert f"{path}:4" in warning and "-5000" in warning


METRICS = ('==22569== Metric result:\n'
           '"Device","Kernel","Invocations","Metric Name","Metric Description","Min","Max","Avg"\n'
           '"GeForce GTX 1080 Ti (0)","lud_diagonal(float*, int, int)",16,"inst_executed","Instructions Executed",'
           '38340,38340,38340\n'
           '"GeForce GTX 1080 Ti (0)","lud_diagonal(float*, int, int)",16,"achieved_occupancy","Achieved Occupancy",'
           '0.015610,0.015625,0.015620\n'
           '"GeForce GTX 1080 Ti (0)","lud_perimeter(float*, int, int)",15,"inst_executed","Instructions Executed",'
           '130000,130000,130000\n')


@pytest.mark.parametrize("encoding,bom,shown", [
    ("utf-8", b"", "UTF-8"),
    ("utf-8", b"\xef\xbb\xbf", "UTF-8 with BOM"),
    ("utf-16-le", b"\xff\xfe", "UTF-16-LE with BOM"),
    ("utf-16-be", b"\xfe\xff", "UTF-16-BE with BOM"),
    ("latin-1", b"", "Latin-1 (not valid UTF-8)"),
])
def test_encodings_are_read_and_named(tmp_path: Path, encoding: str, bom: bytes, shown: str) -> None:
    text = METRICS.replace("lud_perimeter", "lud_périmètre") if encoding == "latin-1" else METRICS
    path = tmp_path / "metrics.csv"
    path.write_bytes(bom + text.replace("\n", "\r\n" if encoding.startswith("utf-16") else "\n").encode(encoding))
    result = read_inputs([path], jobs=1)
    assert len(result.kernels) == 2
    assert result.kernels["inst_executed"].tolist() == [38340.0, 130000.0]
    assert result.inputs[0].encoding == shown
    report = build_report(result, None)
    assert any(shown in line for line in render_text(report))


def test_utf16_file_found_in_a_folder_is_read(tmp_path: Path) -> None:
    (tmp_path / "ps.csv").write_bytes(b"\xff\xfe" + METRICS.replace("\n", "\r\n").encode("utf-16-le"))
    result = read_inputs([tmp_path], jobs=1)
    assert len(result.kernels) == 2 and result.inputs[0].format == "nvprof-metrics"


def test_nul_bytes_are_an_error_naming_the_line(tmp_path: Path) -> None:
    path = tmp_path / "metrics.csv"
    lines = METRICS.split("\n")
    lines[3] = lines[3].replace("0.015610", "0.01\x005610")
    path.write_text("\n".join(lines))
    with pytest.raises(InputError) as err:
        read_inputs([path], jobs=1)
    assert "line 4" in str(err.value) and "NUL" in str(err.value)


def test_nul_bytes_far_into_a_streamed_raw_file_are_an_error(realdata_dir: Path, tmp_path: Path) -> None:
    data = (realdata_dir / "roofline-analysis" / "roofline-analysis__torch_sdpa_flash__gqa_bf16_b64_ctx4k_p64.ncu.csv"
            ).read_bytes()
    at = data.rfind(b'"', 0, len(data) - 100)
    path = tmp_path / "raw.csv"
    path.write_bytes(data[:at] + b"\x00" + data[at:])
    with pytest.raises(InputError) as err:
        read_inputs([path], jobs=1)
    assert "NUL" in str(err.value) and "line 20" in str(err.value)


def test_a_number_cut_off_at_the_end_is_never_kept(tmp_path: Path) -> None:
    path = tmp_path / "metrics.csv"
    path.write_text(METRICS.rstrip("\n")[:-4])  # ...,130000,130000,13  (profiling killed)
    result = read_inputs([path], jobs=1)
    k = result.kernels.set_index("kernel_name")
    assert "lud_perimeter(float*, int, int)" not in k.index  # its only row was cut: dropped
    assert k.loc["lud_diagonal(float*, int, int)", "inst_executed"] == 38340.0  # complete rows kept
    assert any(f"{path}:5" in w and "cut off" in w for w in result.warnings)


def test_a_complete_last_row_without_a_newline_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "metrics.csv"
    path.write_text(METRICS.rstrip("\n"))
    result = read_inputs([path], jobs=1)
    assert result.kernels["inst_executed"].tolist() == [38340.0, 130000.0]
    assert not any("cut off" in w for w in result.warnings)


@pytest.mark.parametrize("cut_back", [3, 500, 2000])
def test_a_raw_page_cut_inside_its_last_row_keeps_every_complete_row(realdata_dir: Path, tmp_path: Path,
                                                                       cut_back: int) -> None:
    source = realdata_dir / "roofline-analysis" / "roofline-analysis__torch_sdpa_flash__gqa_bf16_b64_ctx4k_p64.ncu.csv"
    data = source.read_bytes()
    path = tmp_path / "cut.csv"
    path.write_bytes(data[:len(data) - cut_back])
    whole = read_inputs([source], jobs=1).kernels
    result = read_inputs([path], jobs=1)
    assert len(result.kernels) == len(whole) - 1
    assert result.kernels["duration_ns"].tolist() == whole["duration_ns"].tolist()[:-1]
    assert any(f"{path}:20" in w for w in result.warnings)


def test_yaml_alias_bomb_fails_fast_with_a_short_message(tmp_path: Path) -> None:
    levels = ["  a: &a [x, x, x, x, x, x, x, x, x]"]
    for prev, name in zip("abcdefgh", "bcdefghi"):
        levels.append(f"  {name}: &{name} [" + ", ".join([f"*{prev}"] * 9) + "]")
    path = tmp_path / "bomb.yaml"
    path.write_text("notes:\n" + "\n".join(levels) + "\nkernels:\n  - kernel_name: k\n    grid_blocks: *i\n")
    with pytest.raises(InputError) as err:
        read_inputs([path], jobs=1)
    assert len(str(err.value)) < 300 and "grid_blocks" in str(err.value) and "list of 9 items" in str(err.value)


def test_a_header_with_too_many_columns_is_refused_clearly(tmp_path: Path) -> None:
    from nvperf_bridge.importers.sniff import MAX_COLUMNS

    path = tmp_path / "wide.csv"
    header = '"ID","Kernel Name",' + ",".join(f'"m{i}"' for i in range(MAX_COLUMNS + 5))
    path.write_text(header + "\n" + '"0","k",' + ",".join("1" for _ in range(MAX_COLUMNS + 5)) + "\n")
    with pytest.raises(InputError) as err:
        read_inputs([path], jobs=1)
    assert "columns" in str(err.value) and "line 1" in str(err.value).replace(":1:", "line 1")


def test_a_huge_field_before_a_cut_last_line_does_not_stop_the_import(tmp_path: Path) -> None:
    """Fuzz case (seed 1, index 7660): a 300,000-character field on the next-to-last line of a file
    with no final newline. The cut-row check used to raise the csv module's field-limit error as a
    traceback; now the unterminated last row, whose completeness cannot be checked, is dropped with
    its warning and the long-named row is kept whole."""
    lines = METRICS.rstrip("\n").split("\n")
    lines[-2] = lines[-2].replace("lud_diagonal", "lud_diagonal" + "x" * 300_000, 1)
    path = tmp_path / "metrics.csv"
    path.write_text("\n".join(lines)[:-4])
    result = read_inputs([path], jobs=1)
    names = list(result.kernels["kernel_name"])
    assert any(n.startswith("lud_diagonal" + "x" * 1000) for n in names)
    assert "lud_perimeter(float*, int, int)" not in names
    assert any(f"{path}:5" in w and "cut off" in w for w in result.warnings)
