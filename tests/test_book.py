"""The book's structure: every chapter is in the table of contents, executed, and
follows the template.
"""

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
    listed = re.findall(r"file:\s*([^\s#]+)", TOC) + re.findall(
        r"root:\s*([^\s#]+)", TOC
    )
    for name in listed:
        assert any((ROOT / (name + ext)).exists() for ext in ("", ".ipynb", ".md")), (
            f"_toc.yml lists missing {name}"
        )
    for nb in CHAPTERS:
        assert f"chapters/{nb.stem}" in listed, f"{nb.name} is not in _toc.yml"


def test_readme_lists_every_chapter():
    readme = (ROOT / "README.md").read_text()
    for nb in CHAPTERS:
        assert f"chapters/{nb.name}" in readme, (
            f"README's chapter table lacks {nb.name}"
        )


@pytest.mark.parametrize("nb", CHAPTERS, ids=lambda p: p.name)
def test_chapter_opens_with_its_title(nb):
    """The first screen is the title, not the parameters cell (python scripts/colab.py
    --title-first).
    """
    first = cells(nb)[0]
    assert first["cell_type"] == "markdown" and "".join(first["source"]).startswith(
        "# "
    ), "the first cell is the title: a markdown cell starting with '# '"


@pytest.mark.parametrize("nb", CHAPTERS, ids=lambda p: p.name)
def test_chapter_template(nb):
    # Order: title and introduction (markdown), the Colab cell (first code cell,
    # hidden), a sentence on scaling up, the parameters cell (second code cell), then
    # the chapter.
    cs = cells(nb)
    code = [c for c in cs if c["cell_type"] == "code"]
    assert "remove-cell" in code[0]["metadata"].get(
        "tags", []
    ) and "google.colab" in "".join(code[0]["source"]), (
        "the first code cell installs the package in Colab and is tagged remove-cell"
    )
    assert "parameters" in code[1]["metadata"].get("tags", []) and "SCALE" in "".join(
        code[1]["source"]
    ), "the second code cell is the tagged parameters cell that sets SCALE"
    assert any("show_source" in "".join(c["source"]) for c in code), (
        "the chapter shows the package's code"
    )
    src = ["".join(c["source"]) for c in code]
    checks = [s for s in src if re.search(r"\bcheck\(", s)]
    assert len(checks) >= 2, (
        "at least two self-checking exercises (check(name, candidate))"
    )
    assert any(re.search(r"\bask\(", s) for s in src), (
        "at least one auto-checked conceptual question (ask)"
    )
    # Solutions live in solutions/ (CI checks them), never in the chapter: not
    # even hidden.
    assert not any("assert check(" in s for s in src), (
        "a solution cell is in the chapter: move it to solutions/"
    )
    # One clock: the Timer made in the imports cell, and the closing sentence from it
    # (it says when other work shared the machine; CONTRIBUTING.md, "Device and time")
    assert "TIMES = P.Timer()" in src[2], "the imports cell makes TIMES = P.Timer()"
    assert "TIMES.summary(SCALE)" in src[-1], (
        "the last code cell ends the chapter with display(Markdown(TIMES.summary(SCALE)))"
    )


@pytest.mark.parametrize("nb", CHAPTERS, ids=lambda p: p.name)
def test_chapter_is_stored_executed_and_small(nb):
    code = [
        c
        for c in cells(nb)
        if c["cell_type"] == "code" and "".join(c["source"]).strip()
    ]
    executed = [c for c in code[1:] if c.get("execution_count")]
    assert len(executed) == len(code) - 1, (
        "commit chapters executed (python scripts/execute.py)"
    )
    assert not any(
        o.get("output_type") == "error" for c in code for o in c.get("outputs", [])
    )
    assert nb.stat().st_size < 1_500_000, (
        f"{nb.name} is {nb.stat().st_size / 1e6:.1f} MB"
    )


WARNING = re.compile(r"\b\w*Warning: ")


@pytest.mark.parametrize(
    "nb", CHAPTERS + sorted((ROOT / "book").glob("*.ipynb")), ids=lambda p: p.name
)
def test_no_page_shows_a_warning(nb):
    """A warning in a stored output is something a reader sees and cannot act on (a
    stale model-cache entry, a figure laid out twice): mend its cause, then
    re-execute."""
    shown = [
        (i, m.group(0) + "".join(o["text"])[m.end() : m.end() + 120])
        for i, c in enumerate(cells(nb))
        for o in c.get("outputs", [])
        if o.get("output_type") == "stream"
        for m in [WARNING.search("".join(o["text"]))]
        if m
    ]
    assert not shown, f"{nb.name}: warnings in stored outputs (cell, text): {shown}"


def test_stored_bertviz_views_load_their_scripts_instead_of_carrying_them():
    """A bertviz view made in a kernel run from the checkout carries d3 and jQuery
    (~340 kB); the committed notebooks store the linked form (scripts/execute.py sets
    PTLM_BERTVIZ_SCRIPTS=linked), which the static book serves from its own copies. A
    chapter executed by hand in Jupyter and committed would fail here."""
    views = 0
    for nb in [*CHAPTERS, *sorted((ROOT / "book").glob("*.ipynb"))]:
        for c in cells(nb):
            for o in c.get("outputs", []):
                html = "".join(o.get("data", {}).get("text/html", ""))
                if "ptlm-bertviz" not in html:
                    continue
                views += 1
                assert "d3js.org" not in html and "window.ptlmBookJs" in html, (
                    f"{nb.name}: a bertviz view carries its scripts: re-execute it with "
                    "python scripts/execute.py"
                )
    assert views >= 3, (
        f"expected the bertviz views of BERT, the Transformer and book/widgets, found {views}"
    )


def _shown_only_when_displayed() -> set[str]:
    """``show_source`` and every public function and class of ``ptlm_lite.viz`` that
    returns something: they return the view (a listing, a table, a figure, a stepper)
    rather than display it. Those annotated ``-> None`` (set-up helpers) are left out."""
    import importlib
    import inspect
    import pkgutil

    import ptlm_lite.viz as viz

    names = {"show_source"}
    for m in pkgutil.iter_modules(viz.__path__):
        if m.name.startswith("_"):  # helpers (escaping, fonts, figure set-up)
            continue
        mod = importlib.import_module(f"ptlm_lite.viz.{m.name}")
        for n, f in inspect.getmembers(
            mod, lambda f: inspect.isfunction(f) or inspect.isclass(f)
        ):
            if n.startswith("_") or not f.__module__.startswith("ptlm_lite.viz"):
                continue
            returns = (
                inspect.signature(f).return_annotation if inspect.isfunction(f) else ""
            )
            if returns not in (None, "None"):
                names.add(n)
    return names


def _unshown_views(src: str, returned: set[str]) -> list[str]:
    """Calls to a view that Jupyter does not display: anywhere in the cell but its last
    top-level expression (mid-cell, or inside a ``with``, ``for`` or ``if`` block).
    A view is a name in ``returned`` called bare (``table_views(...)``) or through
    ``viz.``/``P.`` (``viz.attention_heatmaps(...)``, ``P.show_source(...)``)."""
    import ast

    tree = ast.parse(src)
    last = tree.body[-1] if tree.body and isinstance(tree.body[-1], ast.Expr) else None
    lost = []
    for node in ast.walk(tree):
        if node is last or not isinstance(node, ast.Expr):
            continue
        call = node.value
        if not isinstance(call, ast.Call):
            continue
        f = call.func
        if isinstance(f, ast.Name):
            hit = f.id in returned
        elif isinstance(f, ast.Attribute):
            base = ast.unparse(f.value)
            hit = f.attr in returned and (base in ("P", "viz") or base.endswith(".viz"))
        else:
            hit = False
        if hit:
            lost.append(ast.unparse(node))
    return lost


def test_unshown_views_are_found_where_jupyter_drops_them():
    """The check below, on the shapes a view takes in a cell."""
    r = {"table", "table_views"}
    assert _unshown_views("viz.table(df)\nx = 1", r) == ["viz.table(df)"]
    assert _unshown_views("x = 1\nwith T('a'):\n    viz.table(df)", r) != []
    assert _unshown_views("for d in dfs:\n    table_views(d)\nx = 1", r) != []
    assert _unshown_views("x = 1\nviz.table(df)", r) == []  # the last: shown
    assert _unshown_views("display(viz.table(df))\nx = 1", r) == []
    assert _unshown_views("R.table(df)\nx = 1", r) == []  # another module's table
    names = _shown_only_when_displayed()
    assert {
        "show_source",
        "table_views",
        "attention_heatmaps",
        "TrainingCurve",
    } <= names
    assert "install_book_figures" not in names  # returns None: a set-up step


@pytest.mark.parametrize("nb", CHAPTERS, ids=lambda p: p.name)
def test_every_listing_a_chapter_asks_for_is_shown(nb):
    """``P.show_source(...)`` or a view (``table_views(...)``,
    ``viz.attention_heatmaps(...)``) is displayed by Jupyter only as a cell's last
    expression: one earlier in the cell, or inside a block, is computed and thrown
    away, and the listing or table the text promises never appears (the synthesis lost
    its section-4 tables, the GPT-3 chapter its attention maps). Wrap it in
    ``display(...)``."""
    returned = _shown_only_when_displayed()
    lost = []
    for i, c in enumerate(cells(nb)):
        if c["cell_type"] != "code":
            continue
        src = "\n".join(
            line
            for line in "".join(c["source"]).split("\n")
            if not line.lstrip().startswith(("%", "!"))  # magics: not Python
        )
        lost += [f"cell {i}: {v}" for v in _unshown_views(src, returned)]
    assert not lost, f"views that are never shown (wrap in display(...)): {lost}"


def api_pages() -> list[pathlib.Path]:
    return sorted((ROOT / "book").glob("api*.md"))


def test_api_pages_are_in_the_toc():
    listed = set(re.findall(r"file:\s*([^\s#]+)", TOC))
    assert "book/api" in listed
    for page in api_pages():
        assert f"book/{page.stem}" in listed, f"{page.name} is not in _toc.yml"


def test_api_reference_documents_every_module():
    """Every public module of ptlm_lite has autodoc on an API page (itself, or its
    package).
    """
    documented = set()
    for page in api_pages():
        documented |= set(
            re.findall(r"^\.\.\s+automodule::\s*(\S+)", page.read_text(), re.M)
        )
    missing = []
    for f in sorted((ROOT / "ptlm_lite").rglob("*.py")):
        parts = list(f.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if (
            len(parts) < 2
            or any(p.startswith("_") for p in parts)
            or parts[1] in ("solutions", "exercise_sets")
        ):
            continue  # the package itself, private modules, exercises' registrations
        names = {".".join(parts[:i]) for i in range(2, len(parts) + 1)}
        if not names & documented:
            missing.append(".".join(parts))
    assert not missing, f"modules on no API page (book/api_*.md): {missing}"


def test_timings_page_is_written_from_the_measurements():
    import sys

    sys.path.insert(0, str(ROOT / "benchmarks"))
    import chapter_times

    result = json.loads((ROOT / "benchmarks" / "chapter_times.json").read_text())
    avx2 = chapter_times.load_avx2()  # the same chapters on an AVX2-only machine
    assert (ROOT / "book" / "timings.md").read_text() == chapter_times.page(
        result, avx2
    ), (
        "book/timings.md is not what benchmarks/chapter_times.json gives: python "
        "benchmarks/chapter_times.py --page-only"
    )


# Chapters that other engineers were editing on 2026-11-26 still say "# NBVAL_CHECK_OUTPUT"
# in the cell a reader sees; each moves to the tag when it is next edited (issue 26), and
# the test below then asks for its name to leave this set.
NBVAL_COMMENTS_PENDING: set[str] = set()
NBVAL_COMMENT = re.compile(r"^\s*#\s*(NBVAL|PYTEST_VALIDATE)_\w+", re.M)


@pytest.mark.parametrize("nb", CHAPTERS, ids=lambda p: p.name)
def test_nbval_markers_are_cell_tags_not_comments(nb):
    """nbval reads a cell's tags (``nbval-check-output``) as it reads the comment
    ``# NBVAL_CHECK_OUTPUT``; the tag is invisible in the book and in Colab."""
    from nbval.plugin import find_metadata_tags

    code = [c for c in cells(nb) if c["cell_type"] == "code"]
    commented = [
        i for i, c in enumerate(code) if NBVAL_COMMENT.search("".join(c["source"]))
    ]
    if nb.stem in NBVAL_COMMENTS_PENDING:
        assert commented, (
            f"{nb.name} no longer has nbval comments: remove it from "
            "NBVAL_COMMENTS_PENDING"
        )
        return
    assert not commented, (
        f"{nb.name}: code cells {commented} show an nbval comment to the reader; tag "
        "the cell instead (metadata.tags: nbval-check-output)"
    )
    for c in code:
        tags = c.get("metadata", {}).get("tags", [])
        if any(t.startswith("nbval-") for t in tags):
            assert dict(find_metadata_tags(c["metadata"])), (tags, c["source"][:2])
    tagged = [c for c in code if "nbval-check-output" in c["metadata"].get("tags", [])]
    for c in tagged:
        assert dict(find_metadata_tags(c["metadata"])) == {"check": True}
