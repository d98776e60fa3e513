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
"""

from __future__ import annotations

import time

_STATE: dict = {}


def _file(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def _clock(seconds: float) -> str:
    m, s = divmod(int(seconds), 60)
    return f"{m // 60}:{m % 60:02d}:{s:02d}" if m >= 60 else f"{m}:{s:02d}"


def pytest_configure(config):
    _STATE.clear()
    _STATE["config"] = config


def pytest_collection_finish(session):
    notebooks: list[str] = []
    others = 0
    for item in session.items:
        f = _file(item.nodeid)
        if f.endswith(".ipynb"):
            if f not in notebooks:
                notebooks.append(f)
        else:
            others += 1
    _STATE.update(notebooks=notebooks, others=others, current=None)
    _STATE["start"] = time.monotonic()


def header(nodeid: str) -> str | None:
    """The line to print before the test ``nodeid``, or None (same file as the last
    one, or a session without notebooks)."""
    notebooks = _STATE.get("notebooks")
    f = _file(nodeid)
    if not notebooks or f == _STATE.get("current"):
        return None
    was, _STATE["current"] = _STATE.get("current"), f
    n = len(notebooks)
    if f in notebooks:
        elapsed = _clock(time.monotonic() - _STATE["start"])
        return f"[{notebooks.index(f) + 1}/{n}] {f} ({elapsed} so far)"
    if was is None or was in notebooks:
        return f"[tests] {_STATE['others']:,} tests, then {n} notebook{'s' * (n != 1)}"
    return None


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
