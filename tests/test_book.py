"""The book's structure: every chapter is in the table of contents, executed, and follows the template."""
import json
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
CHAPTERS = sorted((ROOT / "chapters").glob("*.ipynb"))
TOC = (ROOT / "_toc.yml").read_text()


def cells(path):
    return json.loads(path.read_text())["cells"]


def test_there_are_chapters():
    assert CHAPTERS, "no chapter notebooks in chapters/"


def test_toc_lists_exactly_the_files_that_exist():
    listed = re.findall(r"file:\s*([^\s#]+)", TOC) + re.findall(r"root:\s*([^\s#]+)", TOC)
    for name in listed:
        assert any((ROOT / (name + ext)).exists() for ext in ("", ".ipynb", ".md")), f"_toc.yml lists missing {name}"
    for nb in CHAPTERS:
        assert f"chapters/{nb.stem}" in listed, f"{nb.name} is not in _toc.yml"


def test_readme_lists_every_chapter():
    readme = (ROOT / "README.md").read_text()
    for nb in CHAPTERS:
        assert f"chapters/{nb.name}" in readme, f"README's chapter table lacks {nb.name}"


@pytest.mark.parametrize("nb", CHAPTERS, ids=lambda p: p.name)
def test_chapter_template(nb):
    cs = cells(nb)
    code = [c for c in cs if c["cell_type"] == "code"]
    assert "remove-cell" in code[0]["metadata"].get("tags", []) and "google.colab" in "".join(code[0]["source"]), \
        "the first code cell installs the package in Colab and is tagged remove-cell"
    assert "parameters" in code[1]["metadata"].get("tags", []) and "SCALE" in "".join(code[1]["source"]), \
        "the second code cell is the tagged parameters cell that sets SCALE"
    assert any("show_source" in "".join(c["source"]) for c in code), "the chapter shows the package's code"
    checks = [c for c in code if "check(" in "".join(c["source"])]
    solutions = [c for c in checks if "hide-cell" in c["metadata"].get("tags", [])]
    assert len(solutions) >= 2, "at least two self-checking exercises with hidden solutions"
    for s in solutions:
        assert "assert check(" in "".join(s["source"]), "a solution must pass its own check"


@pytest.mark.parametrize("nb", CHAPTERS, ids=lambda p: p.name)
def test_chapter_is_stored_executed_and_small(nb):
    code = [c for c in cells(nb) if c["cell_type"] == "code" and "".join(c["source"]).strip()]
    executed = [c for c in code[1:] if c.get("execution_count")]
    assert len(executed) == len(code) - 1, "commit chapters executed (python scripts/execute.py)"
    assert not any(o.get("output_type") == "error" for c in code for o in c.get("outputs", []))
    assert nb.stat().st_size < 1_500_000, f"{nb.name} is {nb.stat().st_size / 1e6:.1f} MB"
