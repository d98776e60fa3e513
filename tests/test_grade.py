"""scripts/grade.py: an instructor grades a student's copy of a chapter (issue 26)."""

from __future__ import annotations

import importlib.util
import json
import pathlib

import nbformat
import pytest

from ptlm_lite import exercises as E

ROOT = pathlib.Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow


def _grade_module():
    spec = importlib.util.spec_from_file_location("grade", ROOT / "scripts/grade.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_grade_a_students_notebook(tmp_path):
    E.load_all()
    right = E.answer("why divide by √d")
    wrong = "A" if right != "A" else "C"
    cells = [
        "import torch\nfrom ptlm_lite.exercises import ask, check",
        # right
        "def my_causal_mask(T):\n    i = torch.arange(T)\n"
        "    return i[None, :] <= i[:, None]",
        # the student's own check passes a wrong function off as right: the grade
        # is the registered check's
        "def my_attention_weights(q, k, mask):\n    return (q @ k.T).softmax(-1)\n"
        "check('attention weights', my_attention_weights, my_attention_weights, "
        "[(torch.ones(2, 2), torch.ones(2, 2), None)])",
        f"ask('why divide by √d', {wrong!r})",
        "raise RuntimeError('a broken cell does not stop grading')",
        f"ask('why divide by √d', {right!r})",
        "answer = None\nask('what teacher forcing feeds', answer)",
    ]
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c) for c in cells]
    path = tmp_path / "alice.ipynb"
    nbformat.write(nb, path)
    before = path.read_text()
    out = tmp_path / "alice.json"
    assert (
        _grade_module().main(
            [str(path), "--chapter", "transformer", "--json", str(out)]
        )
        == 0
    )
    grades = json.loads(out.read_text())
    assert {n: g["status"] for n, g in grades.items()} == {
        "causal mask": E.RIGHT,
        "attention weights": E.WRONG,
        "why divide by √d": E.RIGHT,
        "what teacher forcing feeds": E.NOT_ATTEMPTED,
    }
    assert f"after 1 wrong: {wrong}" in grades["why divide by √d"]["message"]
    assert path.read_text() == before  # graded a copy
