"""The progress lines of the long test run (conftest.py at the repository root): a
header before the tests and one per notebook, ``[k/N] path (m:ss so far)``; nothing in
a session without notebooks."""

from __future__ import annotations

import importlib.util
import pathlib
import re
from types import SimpleNamespace

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]


@pytest.fixture()
def progress():
    spec = importlib.util.spec_from_file_location(
        "_progress_under_test", ROOT / "conftest.py"
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def session(*nodeids):
    return SimpleNamespace(items=[SimpleNamespace(nodeid=n) for n in nodeids])


def test_a_line_before_the_tests_and_before_each_notebook(progress):
    ids = [
        "tests/test_a.py::test_one",
        "tests/test_a.py::test_two",
        "tests/browser/test_book.py::test_x[p]",
        "chapters/gpt.ipynb::Cell 0",
        "chapters/gpt.ipynb::Cell 1",
        "book/widgets.ipynb::Cell 0",
    ]
    progress.pytest_configure(config=None)
    progress.pytest_collection_finish(session(*ids))
    lines = [progress.header(n) for n in ids]
    assert lines[0] == "[tests] 3 tests, then 2 notebooks"
    assert lines[1] is None and lines[2] is None and lines[4] is None
    assert re.fullmatch(r"\[1/2\] chapters/gpt\.ipynb \(0:0\d so far\)", lines[3])
    assert re.fullmatch(r"\[2/2\] book/widgets\.ipynb \(0:0\d so far\)", lines[5])


def test_nothing_extra_without_notebooks(progress):
    ids = ["tests/test_a.py::test_one", "tests/test_b.py::test_two"]
    progress.pytest_configure(config=None)
    progress.pytest_collection_finish(session(*ids))
    assert [progress.header(n) for n in ids] == [None, None]


def test_the_clock(progress):
    assert progress._clock(5) == "0:05"
    assert progress._clock(12 * 60 + 40) == "12:40"
    assert progress._clock(3600 + 61) == "1:01:01"


def test_test_sh_runs_one_pytest_over_the_same_paths():
    """One pytest session (one exit status) over the unit tests and every notebook; the
    progress lines come from conftest.py, not from a loop of separate runs."""
    text = (ROOT / "scripts" / "test.sh").read_text()
    runs = [ln for ln in text.splitlines() if re.search(r"-m pytest\b", ln)]
    assert len(runs) == 1, runs
    for path in ("tests", "chapters", "book/widgets.ipynb", "book/replication.ipynb"):
        assert f" {path} " in runs[0], (path, runs[0])


def test_in_parallel_a_notebook_is_announced_once(progress):
    """Under xdist two workers interleave: each notebook's line comes once, when it
    starts, and the tests' line once."""
    ids = [
        "tests/test_a.py::test_one",
        "chapters/gpt.ipynb::Cell 0",
        "chapters/bert.ipynb::Cell 0",
    ]
    progress.pytest_configure(config=None)
    progress.pytest_xdist_node_collection_finished(node=None, ids=ids)
    order = [ids[1], ids[0], ids[2], ids[1], "tests/test_b.py::test_two", ids[2]]
    lines = [progress.header(n) for n in order]
    assert lines[0].startswith("[1/2] chapters/gpt.ipynb")
    assert lines[1] == "[tests] 1 test, then 2 notebooks"
    assert lines[2].startswith("[2/2] chapters/bert.ipynb")
    assert lines[3:] == [None, None, None]


def test_the_parallel_groups(progress):
    """A notebook and a test file are one group each (cells share a kernel, modules
    share fixtures); each chapter's capped run is its own group."""
    assert progress.group("chapters/gpt.ipynb::Cell 3") == "chapters/gpt.ipynb"
    assert progress.group("tests/test_a.py::test_one[x]") == "tests/test_a.py"
    capped = (
        "tests/test_replication.py::"
        "test_chapter_runs_with_fresh_seeds_under_a_step_cap[gpt-small]"
    )
    assert progress.group(capped) == capped


def test_test_sh_runs_the_groups_in_parallel():
    text = (ROOT / "scripts" / "test.sh").read_text()
    assert "--dist loadgroup" in text and "PTLM_THREADS" in text
