"""Every Python code block of the README and the guides runs, as a reader would run it.

The blocks of one page run in order in one namespace (a page's blocks build on each
other), in a scratch directory that holds what the pages read: ``users/``, a small
Parquet dataset with the columns the Dask examples name (``value``, ``tcm``). A block
may warn only with a warning class its own page names, as the pages explain the
warnings their code gives.
"""

import re
import warnings
from pathlib import Path

import numpy as np
import pytest

import skhybrid.exceptions

REPOSITORY = Path(__file__).resolve().parents[1]
PAGES = [REPOSITORY / "README.md", REPOSITORY / "docs" / "index.rst",
         REPOSITORY / "docs" / "getting_started.rst",
         *sorted((REPOSITORY / "docs" / "user_guide").glob("*.rst"))]
LIBRARY_WARNINGS = tuple(
    value for value in vars(skhybrid.exceptions).values()
    if isinstance(value, type) and issubclass(value, Warning))


def python_blocks(path):
    """The Python code blocks of a Markdown or reStructuredText file, in order."""
    text = path.read_text()
    if path.suffix == ".md":
        return re.findall(r"^```python\n(.*?)^```", text, re.M | re.S)
    blocks = []
    for match in re.finditer(r"^( *)\.\. code-block:: python\n((?:\1 +.*\n|\s*\n)+)",
                             text, re.M):
        lines = match.group(2).splitlines()
        indent = min(len(line) - len(line.lstrip()) for line in lines if line.strip())
        blocks.append("\n".join(line[indent:] for line in lines) + "\n")
    return blocks


def test_the_pages_have_python_blocks():
    """The extraction finds the blocks (a broken pattern would pass every page)."""
    assert len(python_blocks(REPOSITORY / "README.md")) >= 4
    assert len(python_blocks(REPOSITORY / "docs" / "user_guide" / "accounting.rst")) >= 2


@pytest.fixture
def scratch(tmp_path, monkeypatch):
    """A working directory with the files the pages' code reads."""
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(0)
    (tmp_path / "users").mkdir()
    for part in range(2):
        pd.DataFrame({"value": rng.uniform(0, 500_000, 1_000),
                      "tcm": rng.random(1_000) < 0.1}).to_parquet(
            tmp_path / "users" / f"part-{part}.parquet")
    monkeypatch.chdir(tmp_path)
    # The first secure release without a ledger warns once per process: every page is
    # read as by a new reader, so a page that triggers it must explain it.
    monkeypatch.setattr("skhybrid.accounting._costs._UNACCOUNTED", {"warned": False})
    return tmp_path


@pytest.mark.parametrize("page", PAGES, ids=[page.name for page in PAGES])
def test_every_python_block_runs(page, scratch):
    import sklearn

    blocks = python_blocks(page)
    namespace = {"__name__": "__docs__"}
    text = page.read_text()
    try:
        for index, block in enumerate(blocks):
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                exec(compile(block, f"{page.name}, block {index + 1}", "exec"), namespace)
            for warning in caught:
                if issubclass(warning.category, LIBRARY_WARNINGS):
                    assert warning.category.__name__ in text, (
                        f"{page.name}, block {index + 1} warns {warning.category.__name__} "
                        f"which the page does not explain: {warning.message}")
    finally:
        sklearn.set_config(enable_metadata_routing=False)


def test_the_readme_runs_the_same_every_time(scratch):
    """A snippet a reader copies prints what its comments say on every run: the ledger
    of the Privacy section must not keep the previous run's charges."""
    for _ in range(3):
        namespace = {"__name__": "__docs__"}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for block in python_blocks(REPOSITORY / "README.md"):
                exec(compile(block, "README.md", "exec"), namespace)
        np.testing.assert_array_equal(namespace["ledger"].remaining(namespace["ids"]), 2.0)

