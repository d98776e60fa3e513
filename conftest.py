"""Progress for the long test run (``scripts/test.sh``: 25-40 minutes on 2 cores).

pytest ``-q`` prints only dots. When a session runs notebooks (nbval), this prints a
header line before the tests and before each notebook, so a reader knows what is running
and how far the run is::

    [tests] 1,694 tests, then 15 notebooks
    ...
    [3/15] chapters/gpt2.ipynb (12:40 so far)

It only adds lines: the tests, their order and the exit status are pytest's. A session
without notebooks (``pytest tests``) prints nothing extra. Tested in
tests/test_progress.py.

Run in parallel (``pytest -n 2``, pytest-xdist: what ``scripts/test.sh`` does on a
machine with two cores or more), the tests go out in groups that a worker runs whole
and in order (``--dist loadgroup``): each notebook is one group (its cells share a
kernel), each unit-test file one group (its module fixtures are built once), and each
chapter's step-capped run (tests/test_replication.py) a group of its own, so the
longest file does not hold one worker for a quarter of an hour. The controller prints
each notebook's line when the notebook starts, on whichever worker.
"""

from __future__ import annotations

import time

import pytest

_STATE: dict = {}


def _file(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def _clock(seconds: float) -> str:
    m, s = divmod(int(seconds), 60)
    return f"{m // 60}:{m % 60:02d}:{s:02d}" if m >= 60 else f"{m}:{s:02d}"


def pytest_configure(config):
    _STATE.clear()
    _STATE["config"] = config


def group(nodeid: str) -> str:
    """The xdist group of a test: its file, or the test itself for a chapter's
    step-capped run (each of those takes most of a minute)."""
    if "test_chapter_runs_with_fresh_seeds_under_a_step_cap" in nodeid:
        return nodeid
    return _file(nodeid)


@pytest.hookimpl(tryfirst=True)  # before xdist's worker reads the marks
def pytest_collection_modifyitems(session, config, items):
    if not config.pluginmanager.hasplugin("xdist"):
        return
    for item in items:
        if item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(name=group(item.nodeid)))


def _collected(nodeids) -> None:
    notebooks: list[str] = []
    others = 0
    for nodeid in nodeids:
        f = _file(nodeid)
        if f.endswith(".ipynb"):
            if f not in notebooks:
                notebooks.append(f)
        else:
            others += 1
    _STATE.update(notebooks=notebooks, others=others, current=None, seen=set())
    _STATE["start"] = time.monotonic()


def pytest_collection_finish(session):
    _collected(item.nodeid for item in session.items)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node, ids):
    """Under xdist the controller collects nothing itself: the first worker's list."""
    if not _STATE.get("notebooks") and not _STATE.get("others"):
        _collected(ids)


def header(nodeid: str) -> str | None:
    """The line to print before the test ``nodeid``, or None (a notebook already
    announced, a test after the first, or a session without notebooks)."""
    notebooks = _STATE.get("notebooks")
    if not notebooks:
        return None
    f, seen = _file(nodeid), _STATE.setdefault("seen", set())
    if f in notebooks:
        if f in seen:
            return None
        seen.add(f)
        elapsed = _clock(time.monotonic() - _STATE["start"])
        return f"[{notebooks.index(f) + 1}/{len(notebooks)}] {f} ({elapsed} so far)"
    if "tests" in seen:
        return None
    seen.add("tests")
    n, t = len(notebooks), _STATE["others"]
    return f"[tests] {t:,} test{'s' * (t != 1)}, then {n} notebook{'s' * (n != 1)}"


def pytest_runtest_logstart(nodeid, location):
    line = header(nodeid)
    if line is None:
        return
    reporter = _STATE["config"].pluginmanager.get_plugin("terminalreporter")
    if reporter is None:  # -p no:terminal
        return
    # -q writes dots without ending the line: end it first
    if getattr(getattr(reporter, "_tw", None), "width_of_current_line", 0):
        reporter.write("\n")
    reporter.write_line(line, bold=True)
