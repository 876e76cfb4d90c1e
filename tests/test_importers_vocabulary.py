"""Issue 13: nvprof event names and ncu DRAM byte spellings reach their canonical columns."""

from __future__ import annotations

from pathlib import Path

from nvperf_bridge.importers import read_profiles

EVENTS_HEAD = ('==4242== Event result:\n'
               '"Device","Kernel","Invocations","Event Name","Min","Max","Avg"\n')


def test_kepler_and_pascal_event_names_are_mapped(tmp_path: Path) -> None:
    rows = [("gld_request", 1200), ("gst_request", 300), ("shared_load", 64), ("shared_store", 32),
            ("global_load_transaction", 4800), ("global_store_transaction", 1200), ("inst_executed", 90000)]
    text = EVENTS_HEAD + "".join(f'"Tesla K40m (0)","stencil(float*, int)",3,"{n}",{v},{v},{v}\n' for n, v in rows)
    path = tmp_path / "events.csv"
    path.write_text(text)
    k = read_profiles([path]).kernels.iloc[0]
    assert (k["inst_global_ld"], k["inst_global_st"]) == (1200.0, 300.0)
    assert (k["inst_shared_ld"], k["inst_shared_st"]) == (64.0, 32.0)
    assert (k["global_ld_sectors"], k["global_st_sectors"]) == (4800.0, 1200.0)
    assert k["inst_executed"] == 90000.0


def test_maxwell_global_load_store_events(tmp_path: Path) -> None:
    rows = [("global_load", 500), ("global_store", 250)]
    path = tmp_path / "events.csv"
    path.write_text(EVENTS_HEAD + "".join(f'"GeForce GTX 980 (0)","k(int*)",1,"{n}",{v},{v},{v}\n' for n, v in rows))
    k = read_profiles([path]).kernels.iloc[0]
    assert (k["inst_global_ld"], k["inst_global_st"]) == (500.0, 250.0)


def test_ncu_dram_bytes_op_spellings(tmp_path: Path) -> None:
    head = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Kernel Time","Context","Stream",'
            '"Section Name","Metric Name","Metric Unit","Metric Value"\n')
    ident = '"0","7","app","host","k(float*)","2024-Jan-01 10:00:00","1","7","Command line profiler metrics"'
    path = tmp_path / "details.csv"
    path.write_text(head + f'{ident},"dram__bytes_op_read.sum","Mbyte","2.5"\n'
                    + f'{ident},"dram__bytes_op_write.sum","Kbyte","4"\n')
    k = read_profiles([path]).kernels.iloc[0]
    assert k["dram_read_bytes"] == 2.5e6 and k["dram_write_bytes"] == 4000.0
    assert k["dram_bytes"] == 2.5e6 + 4000.0
