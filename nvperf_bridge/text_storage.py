"""Which storage pandas gives the text columns nvperf-bridge makes: Python objects, as without pyarrow.

pyarrow is a runtime dependency (its CSV reader parses ncu raw pages, ``--format parquet`` writes with
it), and where it is installed pandas 3 keeps every new text column in Arrow arrays by default
(``mode.string_storage`` "auto"). The kernel table's texts (names, launch IDs, the ``derived`` marks)
are read value by value by the models, the review and the reports, and Arrow-backed they measured
slower and larger: 100k-launch ncu raw, ``analyze --format json``, models 1.96 against 1.12 CPU s and
peak RSS 869 against 593 MB in one process, measured at load 2-3. So the command line runs with
Python-backed text, which is exactly what pandas does where pyarrow is not installed; a setting the
user made (anything but "auto") is kept, and the library's functions leave the option as they find it.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

OPTION = "mode.string_storage"


@contextmanager
def python_text() -> Iterator[None]:
    """Within the block, pandas' default text storage is "python" where it would be chosen
    automatically; the option is put back afterwards. Imports pandas."""
    import pandas as pd

    try:
        before = pd.get_option(OPTION)
    except KeyError:  # pragma: no cover - a pandas without the option keeps text as Python objects
        yield
        return
    if before != "auto":  # pandas 2 ("python" unless the user chose otherwise) or the user's own choice
        yield
        return
    pd.set_option(OPTION, "python")
    try:
        yield
    finally:
        pd.set_option(OPTION, before)


def current() -> str | None:
    """The text storage now in effect ("python", "pyarrow", ...), for a worker process to follow its
    parent; None where pandas has no such option."""
    import pandas as pd

    try:
        return str(pd.get_option(OPTION))
    except KeyError:  # pragma: no cover - older pandas
        return None


def follow(storage: str | None) -> None:
    """In a worker process: use the parent's text storage (``current()`` there), so a file read in a
    worker gives the frame the parent would have read itself."""
    if storage is None:
        return
    import pandas as pd

    pd.set_option(OPTION, storage)
