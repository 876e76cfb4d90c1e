"""hugepages.small_pages: numpy's huge-page advice off inside the block where faults compact, restored after."""

from __future__ import annotations

import pytest

from nvperf_bridge import hugepages


def _advice() -> bool:
    switch = hugepages._switch()
    assert switch is not None
    before = switch(True)
    switch(before)
    return bool(before)


@pytest.mark.parametrize("compacts", [True, False])
def test_small_pages_turns_the_advice_off_only_where_faults_compact_and_restores_it(monkeypatch, compacts) -> None:
    if hugepages._switch() is None:
        pytest.skip("this numpy has no huge-page switch: small_pages changes nothing")
    monkeypatch.setattr(hugepages, "compacts_on_fault", lambda: compacts)
    before = _advice()
    with hugepages.small_pages():
        assert _advice() is (before and not compacts)
        with hugepages.small_pages():  # nested: the inner end restores nothing yet
            pass
        assert _advice() is (before and not compacts)
    assert _advice() is before


def test_defrag_modes_that_compact_on_a_fault(tmp_path, monkeypatch) -> None:
    setting = tmp_path / "defrag"
    monkeypatch.setattr(hugepages, "DEFRAG_SETTING", setting)
    for text, compacts in (("always defer defer+madvise [madvise] never\n", True),
                           ("always [defer] defer+madvise madvise never\n", False),
                           ("always defer [defer+madvise] madvise never\n", True),
                           ("always defer defer+madvise madvise [never]\n", False)):
        setting.write_text(text)
        hugepages.compacts_on_fault.cache_clear()
        assert hugepages.compacts_on_fault() is compacts, text
    setting.unlink()
    hugepages.compacts_on_fault.cache_clear()
    assert hugepages.compacts_on_fault() is False  # no such file (not Linux): nothing to avoid
    hugepages.compacts_on_fault.cache_clear()
