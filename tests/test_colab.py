"""Colab: every notebook's first code cell installs ``ptlm_lite[book]`` from the
repository named in _config.yml, and the package's dependencies with that extra cover
everything a notebook imports.

The imports checked are those of the notebook's code cells and those of the
``ptlm_lite`` modules it loaded (recorded by scripts/execute.py in the notebook's
metadata), lazy ones inside functions included: ``viz.bertviz_head_view`` imports
bertviz only when called, and a chapter calls it. Import names map to distributions
through ``importlib.metadata.packages_distributions()``; a distribution counts when
pyproject.toml lists it among the dependencies or in the ``book`` extra.
"""

from __future__ import annotations

import ast
import functools
import importlib.metadata
import json
import pathlib
import re
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import colab  # noqa: E402  (scripts/colab.py)

NOTEBOOKS = colab.notebooks()
PACKAGE = "ptlm_lite"


def normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def pyproject() -> dict:
    try:
        import tomllib
    except ImportError:  # Python 3.10
        tomllib = pytest.importorskip("tomli")
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def requirement_name(req: str) -> str:
    return normalize(re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", req).group(1))


def declared() -> set[str]:
    """Distributions that ``pip install "ptlm_lite[book] @ ..."`` installs by name."""
    project = pyproject()
    reqs = project["dependencies"] + project["optional-dependencies"][colab.EXTRA]
    return {requirement_name(r) for r in reqs}


def code_imports(src: str, notebook: bool = True) -> set[str]:
    """Top-level names of the absolute imports in ``src`` (in a notebook cell, IPython
    magics and shell lines skipped).
    """
    lines = [
        line[: len(line) - len(line.lstrip())] + "pass"
        if notebook
        and line.lstrip().startswith(("%", "!"))
        # a line may start with != (a comparison the formatter wrapped)
        and not line.lstrip().startswith("!=")
        else line
        for line in src.splitlines()
    ]
    tree = ast.parse("\n".join(lines))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
    return names


@functools.lru_cache(maxsize=None)
def _packages_distributions() -> dict[str, list[str]]:
    return importlib.metadata.packages_distributions()


@functools.lru_cache(maxsize=None)
def _inferred_from_files() -> dict[str, set[str]]:
    """Import name -> distributions, from each distribution's list of files (slow: read
    once).
    """
    out: dict[str, set[str]] = {}
    for dist in importlib.metadata.distributions():
        name = dist.metadata["Name"]
        for f in dist.files or []:
            if f.suffix not in (".py", ".so", ".pyd") or ".." in f.parts:
                continue
            top = f.parts[0] if len(f.parts) > 1 else f.name.split(".")[0]
            if not top.endswith((".dist-info", ".egg-info", ".data")):
                out.setdefault(top, set()).add(name)
    return out


def distributions_of(top: str) -> set[str]:
    """The distributions that provide import name ``top``: ``packages_distributions()``,
    else the distributions' file lists (Python 3.10's packages_distributions reads only
    top_level.txt, which wheels built without setuptools, such as matplotlib's, do not
    have).
    """
    found = _packages_distributions().get(top)
    return set(found) if found else _inferred_from_files().get(top, set())


def module_file(name: str) -> pathlib.Path | None:
    base = ROOT.joinpath(*name.split("."))
    for f in (base / "__init__.py", base.with_suffix(".py")):
        if f.is_file():
            return f
    return None


def notebook_imports(path: pathlib.Path) -> dict[str, set[str]]:
    """``{where: imported module names}`` for a notebook's cells and the package modules
    it loaded.
    """
    nb = json.loads(path.read_text())
    cells = set()
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            cells |= code_imports(colab.source(cell))
    out = {"the notebook's cells": cells}
    modules = set(nb.get("metadata", {}).get("ptlm_book", {}).get("modules", {}))
    modules |= {m for m in cells if m == PACKAGE or m.startswith(PACKAGE + ".")}
    for m in sorted(modules):
        f = module_file(m)
        if f is not None:
            out[m] = code_imports(f.read_text(), notebook=False)
    return out


def test_colab_cell_installs_the_book_extra_from_the_configured_repository():
    url, branch = colab.repository()
    cell = colab.colab_cell()
    ast.parse(cell)  # plain Python, so tools that parse the notebooks can read it
    assert url.startswith("https://") and url in cell
    assert f"ptlm_lite[{colab.EXTRA}] @ git+{url}" in cell and (
        branch is None or f"@{branch}" in cell
    )
    assert 'if "google.colab" in sys.modules:' in cell, (
        "the cell must do nothing outside Colab"
    )
    assert colab.EXTRA in pyproject()["optional-dependencies"], (
        "pyproject.toml lacks the book extra"
    )


# and hidden ones, *.egg-info
SKIP_DIRS = {"_build", "node_modules", "js", "__pycache__", "venv"}


def skipped(path: pathlib.Path) -> bool:
    parts = path.relative_to(ROOT).parts[:-1]
    return any(
        p in SKIP_DIRS or p.startswith(".") or p.endswith(".egg-info") for p in parts
    )


def test_the_repository_url_lives_only_in_config():
    """A fork changes one line, _config.yml's repository.url; notebooks get it from
    --sync (their Colab cell is written from it), and no other file repeats it.
    """
    url, _ = colab.repository()
    found = []
    for path in ROOT.rglob("*"):
        if not path.is_file() or skipped(path) or path == ROOT / "_config.yml":
            continue
        if path.suffix == ".ipynb":
            cells = json.loads(path.read_text())["cells"]
            text = "".join(colab.source(c) for c in cells if not colab.is_colab_cell(c))
        elif path.suffix in {
            ".py",
            ".md",
            ".toml",
            ".yml",
            ".yaml",
            ".txt",
            ".sh",
            ".cfg",
            ".json",
        }:
            text = path.read_text(errors="replace")
        else:
            continue
        if url in text:
            found.append(str(path.relative_to(ROOT)))
    assert not found, (
        f"{url} is repeated outside _config.yml (and the Colab cells): {found}"
    )


@pytest.mark.parametrize("nb", NOTEBOOKS, ids=lambda p: str(p.relative_to(ROOT)))
def test_first_code_cell_is_the_rendered_colab_cell(nb):
    code = [c for c in json.loads(nb.read_text())["cells"] if c["cell_type"] == "code"]
    assert code and colab.is_colab_cell(code[0]), (
        "the first code cell is the Colab cell, tagged remove-cell"
    )
    assert colab.source(code[0]) == colab.colab_cell(), (
        "the Colab cell differs from _config.yml's: run python scripts/colab.py --sync"
    )


@pytest.mark.parametrize("nb", NOTEBOOKS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_import_is_a_declared_dependency(nb):
    have = declared()
    problems = []
    for where, names in notebook_imports(nb).items():
        for name in sorted(names):
            top = name.split(".")[0]
            if top in sys.stdlib_module_names or top == PACKAGE:
                continue
            found = {normalize(d) for d in distributions_of(top)}
            if not found:
                problems.append(
                    f"{where}: import {name}: no installed distribution provides "
                    f"{top!r}"
                )
            elif not found & have:
                problems.append(
                    f"{where}: import {name}: {sorted(found)} is neither a dependency "
                    f"nor "
                    f"in the {colab.EXTRA!r} extra of pyproject.toml"
                )
    assert not problems, "\n".join(problems)


# --- scripts/colab.py on notebooks made here (the book's notebooks are changed by the
# lead) -------


def _toy(nbformat):
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell(
            'import sys\nif "google.colab" in sys.modules:\n    pass',
            metadata={"tags": ["remove-cell"]},
        ),
        nbformat.v4.new_code_cell('SCALE = "tiny"', metadata={"tags": ["parameters"]}),
        nbformat.v4.new_markdown_cell("# A chapter\n\nIts introduction."),
        nbformat.v4.new_markdown_cell("More introduction."),
        nbformat.v4.new_code_cell("import torch"),
        nbformat.v4.new_markdown_cell("## 1. A section"),
    ]
    return nb


def test_sync_rewrites_the_colab_cell_once():
    nbformat = pytest.importorskip("nbformat")
    nb = _toy(nbformat)
    assert colab.sync_colab_cell(nb, colab.colab_cell())
    assert nb.cells[0].source == colab.colab_cell() and nb.cells[0].metadata[
        "tags"
    ] == ["remove-cell"]
    assert not colab.sync_colab_cell(nb, colab.colab_cell()), (
        "a second --sync changes nothing"
    )
    bare = nbformat.v4.new_notebook()
    bare.cells = [
        nbformat.v4.new_markdown_cell("# T"),
        nbformat.v4.new_code_cell("x = 1"),
    ]
    assert colab.sync_colab_cell(bare, colab.colab_cell())
    assert [c.cell_type for c in bare.cells] == ["markdown", "code", "code"]
    assert colab.is_colab_cell(bare.cells[1]), (
        "a notebook without one gets it before its first code cell"
    )


def test_title_first_moves_the_title_and_introduction_up():
    nbformat = pytest.importorskip("nbformat")
    nb = _toy(nbformat)
    assert colab.title_first(nb)
    kinds = [(c.cell_type, colab.source(c).splitlines()[0]) for c in nb.cells]
    assert kinds == [
        ("markdown", "# A chapter"),
        ("markdown", "More introduction."),
        ("code", "import sys"),
        ("markdown", colab.SCALE_SENTENCE),
        ("code", 'SCALE = "tiny"'),
        ("code", "import torch"),
        ("markdown", "## 1. A section"),
    ]
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert colab.is_colab_cell(code[0]) and "parameters" in code[1].metadata["tags"], (
        "the Colab cell stays the first code cell and the parameters cell the second"
    )
    assert not colab.title_first(nb), "a second run changes nothing"
