"""scripts/execute.py: a chapter is stale when its code or a package module it imported
changed.

A tiny synthetic repository (a package with a lazy __init__, a module the notebook uses,
one it does not, and a notebook) stands in for the book; one real kernel run records
what was imported.
"""

from __future__ import annotations

import importlib.util
import json
import pathlib
import sys
import textwrap

import pytest

nbformat = pytest.importorskip("nbformat")
pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

SCRIPT = pathlib.Path(__file__).resolve().parents[1] / "scripts" / "execute.py"
PKG = "ptlm_fake_pkg_for_execute"  # unique, so nothing installed can shadow it


@pytest.fixture(scope="module")
def ex():
    spec = importlib.util.spec_from_file_location("_execute_under_test", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def write_repo(root: pathlib.Path) -> pathlib.Path:
    pkg = root / PKG
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text(
        textwrap.dedent("""
        import importlib
        from . import runtime as _runtime
        def __getattr__(name):
            value = importlib.import_module(f".{name}", __name__)
            globals()[name] = value
            return value
    """)
    )
    (pkg / "runtime.py").write_text("READY = True\n")
    (pkg / "used.py").write_text(
        "from .sub import helper\ndef f():\n    return helper.VALUE + 1\n"
    )
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "helper.py").write_text("VALUE = 41\n")
    (pkg / "unused.py").write_text("X = 0\n")
    (root / "chapters").mkdir()
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_markdown_cell("# A chapter"),
        nbformat.v4.new_code_cell(f"import {PKG} as P\nP.used.f()"),
    ]
    path = root / "chapters" / "toy.ipynb"
    nbformat.write(nb, path)
    (root / "_toc.yml").write_text("format: jb-book\nroot: chapters/toy\n")
    return path


@pytest.fixture(scope="module")
def executed(ex, tmp_path_factory):
    """One kernel run over the synthetic notebook; the package is found through
    PYTHONPATH.
    """
    root = tmp_path_factory.mktemp("repo")
    path = write_repo(root)
    mp = pytest.MonkeyPatch()
    mp.setattr(ex, "ROOT", root)
    mp.setattr(ex, "PACKAGE", PKG)
    mp.setenv("PYTHONPATH", str(root), prepend=":")
    try:
        assert ex.stale_reasons(path) == ["no execution record"]
        seconds = ex.execute(path)
        yield ex, root, path, seconds
    finally:
        mp.undo()


def test_execute_records_the_imported_modules(executed):
    ex, root, path, seconds = executed
    nb = nbformat.read(path, as_version=4)
    rec = nb.metadata["ptlm_book"]
    assert set(rec["modules"]) == {
        PKG,
        f"{PKG}.runtime",
        f"{PKG}.used",
        f"{PKG}.sub",
        f"{PKG}.sub.helper",
    }
    assert rec["modules"][f"{PKG}.used"] == ex.file_hash(root / PKG / "used.py")
    assert all(len(h) == 16 for h in rec["modules"].values())
    assert rec["code_hash"] == ex.code_hash(nb) and rec["seconds"] == pytest.approx(
        seconds, abs=0.1
    )
    assert "input_hash" not in rec
    # the module probe left no trace in the notebook: same cells, the chapter's own
    # output only
    assert len(nb.cells) == 2 and nb.cells[1].execution_count == 1
    assert nb.cells[1].outputs[0]["data"]["text/plain"] == "42"
    assert not list(path.parent.glob("*.tmp"))
    assert ex.stale_reasons(path) == []


def test_staleness_follows_only_what_was_imported(executed, capsys):
    ex, root, path, _ = executed
    original = path.read_text()
    unused, helper, used = (
        root / PKG / "unused.py",
        root / PKG / "sub" / "helper.py",
        root / PKG / "used.py",
    )
    keep = {f: f.read_text() for f in (unused, helper, used)}
    try:
        # not imported: still fresh
        unused.write_text("X = 1  # edited\n")
        (root / PKG / "new.py").write_text("Y = 2\n")
        assert ex.stale_reasons(path) == []
        assert ex.main(["--check"]) == 0

        # imported by used.py: stale
        helper.write_text("VALUE = 1\n")
        assert ex.stale_reasons(path) == [f"{PKG}.sub.helper changed"]
        assert ex.main(["--check"]) == 1
        assert (
            capsys.readouterr().out.strip()
            == f"stale: chapters/toy.ipynb ({PKG}.sub.helper changed)"
        )
        # back as it was: fresh again
        helper.write_text(keep[helper])
        assert ex.stale_reasons(path) == []

        # a recorded module is gone
        used.unlink()
        assert ex.stale_reasons(path) == [f"{PKG}.used removed"]
        used.write_text(keep[used])

        nb = json.loads(original)  # a cell's code changed
        nb["cells"][1]["source"] = f"import {PKG} as P\nP.used.f() * 2"
        path.write_text(json.dumps(nb))
        assert ex.stale_reasons(path) == ["code changed"]
        # outputs alone do not count
        nb["cells"][1]["outputs"] = []
        nb["cells"][1]["source"] = f"import {PKG} as P\nP.used.f()"
        path.write_text(json.dumps(nb))
        assert ex.stale_reasons(path) == []

        nb["metadata"]["ptlm_book"] = {"input_hash": "0123456789abcdef", "seconds": 1.0}
        # the old whole-package record
        path.write_text(json.dumps(nb))
        assert ex.stale_reasons(path) == ["old record: whole-package hash"]
        assert ex.main(["--check", str(path)]) == 1
        assert "(old record: whole-package hash)" in capsys.readouterr().out
    finally:
        path.write_text(original)
        for f, text in keep.items():
            f.write_text(text)
        (root / PKG / "new.py").unlink(missing_ok=True)


def test_module_file_prefers_package_and_stays_inside(executed):
    ex, root, _, _ = executed
    assert ex.module_file(PKG) == root / PKG / "__init__.py"
    assert ex.module_file(f"{PKG}.sub") == root / PKG / "sub" / "__init__.py"
    assert ex.module_file(f"{PKG}.sub.helper") == root / PKG / "sub" / "helper.py"
    assert ex.module_file(f"{PKG}.nothing") is None
    assert ex.module_file("json") is None
    # files the kernel loaded from outside the package directory are not recorded
    assert (
        ex.module_hashes({"json": sys.modules["json"].__file__, f"{PKG}.x": None}) == {}
    )


def test_the_package_loaded_from_another_checkout_is_refused(executed):
    """A kernel that imported the package from elsewhere (an editable install pointing
    at another clone) would leave a record with no modules, never stale: refused."""
    ex, root, _, _ = executed
    elsewhere = {f"{PKG}.sub": sys.modules["json"].__file__}
    with pytest.raises(RuntimeError, match="from outside"):
        ex.module_hashes(elsewhere)


def test_a_failing_notebook_is_left_untouched(executed):
    ex, root, _, _ = executed
    from nbclient.exceptions import CellExecutionError

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("raise ValueError('boom')")]
    path = root / "chapters" / "broken.ipynb"
    nbformat.write(nb, path)
    before = path.read_text()
    with pytest.raises(CellExecutionError, match="boom"):
        ex.execute(path)
    assert path.read_text() == before and not list(path.parent.glob("*.tmp"))
    assert ex.stale_reasons(path) == ["no execution record"]


def test_other_chapters_exercise_sets_are_not_dependencies(ex, tmp_path, monkeypatch):
    monkeypatch.setattr(ex, "ROOT", tmp_path)
    pkg = ex.PACKAGE
    files = {}
    for sub, chapter, name in (
        (f"{pkg}/exercise_sets", "roberta", f"{pkg}.exercise_sets.roberta"),
        (f"{pkg}/exercise_sets", "spanbert", f"{pkg}.exercise_sets.spanbert"),
        ("solutions", "spanbert", f"{ex.SOLUTIONS}.spanbert"),  # beside the package
        ("solutions", "roberta", f"{ex.SOLUTIONS}.roberta"),
    ):
        f = tmp_path / sub / f"{chapter}.py"
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text("X = 1\n")
        files[name] = str(f)
    assert set(ex.module_hashes(files, chapter="roberta")) == {
        f"{pkg}.exercise_sets.roberta",
        f"{ex.SOLUTIONS}.roberta",
    }
    assert len(ex.module_hashes(files)) == 4
    assert (
        ex.module_file(f"{ex.SOLUTIONS}.roberta") == tmp_path / "solutions/roberta.py"
    )
