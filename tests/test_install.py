"""The package as Colab installs it (issue 26): a plain, non-editable ``pip install``
of the repository, used from outside it.

What is installed holds no reference solution and no plain answer key, and the
exercises still check answers there: ``check`` against the package's own code, ``ask``
against the salted hashes, which also unseal the explanation of a right answer.
"""

from __future__ import annotations

import inspect
import json
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

from ptlm_lite import exercises as E

ROOT = pathlib.Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> pathlib.Path:
    """``pip install --no-deps --target`` of a copy of the repository's source tree,
    ``solutions/`` included (as a ``git+`` URL would have it)."""
    tmp = tmp_path_factory.mktemp("install")
    src = tmp / "src"
    src.mkdir()
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", "build")
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    for name in ("ptlm_lite", "solutions"):
        shutil.copytree(ROOT / name, src / name, ignore=ignore)
    site = tmp / "site"
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "--no-build-isolation"]
        + ["--no-index", "--quiet", "--target", str(site), str(src)],
        capture_output=True,
        text=True,
        cwd=tmp,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert (site / "ptlm_lite" / "__init__.py").exists()
    return site


def _texts(site: pathlib.Path):
    for f in site.rglob("*"):
        if f.is_file() and f.suffix in (".py", ".json", ".txt", ".md", ".cfg", ""):
            yield f, f.read_text(encoding="utf-8", errors="replace")


def _flat(text: str) -> str:
    """Lines without their indentation (a function pasted at any depth matches)."""
    return "\n".join(line.strip() for line in text.splitlines() if line.strip())


def test_no_solution_is_installed(installed):
    E.load_all()
    paths = [f.relative_to(installed).as_posix() for f in installed.rglob("*")]
    assert not [p for p in paths if "solutions" in p.split("/")], paths
    assert not [p for p in paths if p.startswith("ptlm_solutions")]
    # no solution's code: its body (what follows the ``def`` line) is in no file
    bodies = {}
    for name in E.EXERCISES:
        lines = inspect.getsource(E.solution(name)).splitlines()
        bodies[name] = _flat("\n".join(lines[1:]))
    leaks = [
        (f.relative_to(installed).as_posix(), name)
        for f, text in _texts(installed)
        for name, body in bodies.items()
        if body in _flat(text)
    ]
    assert not leaks, f"solutions in the installed package: {leaks[:5]}"


def test_no_plain_answer_key_is_installed(installed):
    E.load_all()
    texts = dict(_texts(installed))
    assert (installed / "ptlm_lite/exercise_sets/sealed.json").exists()
    for f, text in texts.items():
        assert "ANSWERS = {" not in text and "EXPLANATIONS = {" not in text, f
    for name in E.QUESTIONS:
        why = E.explanation(name)
        right = E.answer(name)
        assert why and right
        # the explanation (which gives the answer away) is in no installed file
        assert not any(why[:60] in t for t in texts.values()), name
    # the keys hold a salt and a hash per question, not the answer
    keys = json.loads((installed / "ptlm_lite/exercise_sets/sealed.json").read_text())
    assert set(keys) == set(E.QUESTIONS)
    assert all(set(k) <= {"salt", "hash", "why"} for k in keys.values())


CHECK = r"""
import json, os, sys
import torch
import ptlm_lite
from ptlm_lite import exercises as E
from ptlm_lite.viz._html import register_fonts

site, answers = sys.argv[1], json.loads(sys.argv[2])
out = {"file": ptlm_lite.__file__, "solution": repr(E.solution("causal mask"))}
def right_mask(T):
    i = torch.arange(T)
    return i[None, :] <= i[:, None]
def wrong_mask(T):
    i = torch.arange(T)
    return i[None, :] < i[:, None]
out["right"] = E.check("causal mask", right_mask).status
out["wrong"] = E.check("causal mask", wrong_mask).status
out["stub"] = E.check("causal mask", ...).status
asked = {}
for name, letter in answers.items():
    wrong = "A" if letter != "A" else "B"
    r = E.ask(name, letter)
    asked[name] = [r.status, E.ask(name, wrong).status, bool(r.details.strip())]
out["ask"] = asked
try:
    E.verify()
    out["verify"] = "ran"
except ModuleNotFoundError as e:
    out["verify"] = str(e)
out["font"] = register_fonts()
print(json.dumps(out))
"""


def test_the_exercises_check_answers_in_the_installed_copy(installed, tmp_path):
    E.load_all()
    answers = {name: E.answer(name) for name in E.QUESTIONS}
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("PYTHONPATH", "PTLM_SOLUTIONS", "PTLM_GRADE_LOG", "PTLM_ASK_LIMIT")
    }
    env["PYTHONPATH"] = str(installed)
    proc = subprocess.run(
        [sys.executable, "-c", CHECK, str(installed), json.dumps(answers)],
        capture_output=True,
        text=True,
        cwd=tmp_path,  # outside the repository
        env=env,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["file"].startswith(str(installed)), out["file"]
    assert out["solution"] == "None"
    assert (out["right"], out["wrong"], out["stub"]) == (
        E.RIGHT,
        E.WRONG,
        E.NOT_ATTEMPTED,
    )
    # every question: the right letter is right and shows its explanation, unsealed
    # from the package; a wrong one is wrong
    assert out["ask"] == {n: [E.RIGHT, E.WRONG, True] for n in answers}
    assert "no solutions/ folder" in out["verify"]
    assert out["font"] and out["font"].startswith(str(installed))
