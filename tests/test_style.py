"""The code the book shows fits the page: the package, scripts and tests are formatted
by ``ruff format`` at 88 columns (``[tool.ruff]`` in pyproject.toml), and the modules
that chapters display with ``show_source`` have no line longer than 88 characters, so
a code box never scrolls sideways (issue 12, item 7).
"""

import pathlib
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
WIDTH = 88

# Modules whose long lines are HTML/JS templates, reST tables or data (never displayed in
# a chapter). Every other module of the package is held to the width.
EXEMPT = {
    "cache.py",
    "config.py",
    "data/batching.py",
    "data/shakespeare.py",
    "data/tokenizer.py",
    "data/vocabulary.py",
    "data/world.py",
    "exercises.py",
    "exercise_compare.py",
    "hf/bert.py",
    "hf/gpt.py",
    "source.py",
    "suite/__init__.py",
    "suite/build.py",
    "verdict.py",
    "viz/_html.py",
    "viz/bertviz_views.py",
    "viz/diagram.py",
    "viz/mask_views.py",
    "viz/tables.py",
}


def _ruff():
    exe = shutil.which("ruff")
    if exe:
        return [exe]
    try:
        import ruff  # noqa: F401
    except ImportError:
        pytest.fail("ruff is not installed: pip install -r requirements.txt")
    return [sys.executable, "-m", "ruff"]


def test_python_is_formatted():
    proc = subprocess.run(
        [*_ruff(), "format", "--check", "ptlm_lite", "tests", "scripts", "benchmarks"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, (
        "run `ruff format ptlm_lite tests scripts benchmarks`:\n" + proc.stdout[-2000:]
    )


def test_displayed_modules_fit_88_columns():
    long = []
    for f in sorted((ROOT / "ptlm_lite").rglob("*.py")):
        rel = f.relative_to(ROOT / "ptlm_lite").as_posix()
        if rel in EXEMPT or rel.startswith(("solutions/", "exercise_sets/")):
            continue
        for i, line in enumerate(f.read_text(encoding="utf-8").splitlines(), 1):
            if len(line) > WIDTH:
                long.append(f"ptlm_lite/{rel}:{i} ({len(line)} characters)")
    assert not long, "lines wider than the book's code boxes:\n" + "\n".join(long)
