"""The Colab cell of every notebook, written from _config.yml, and the chapters' first
screen.

    python scripts/colab.py                     # print the Colab cell
    python scripts/colab.py --check             # which notebooks' Colab cell differs (exit 1 if any)
    python scripts/colab.py --sync              # rewrite the Colab cell of every notebook
    python scripts/colab.py --title-first       # title first, then the Colab and parameters cells
    python scripts/colab.py --title-first --check

The repository's address lives in one place, ``repository.url`` (and ``branch``) in
_config.yml: the launch buttons use it, and so does the first code cell of every
notebook, which installs the package with its ``book`` extra when the notebook runs in
Colab (``pip install "ptlm_lite[book] @ git+<url>@<branch>"``) and does nothing
elsewhere; it is tagged ``remove-cell``, so the book hides it. A fork changes that one
line of _config.yml and runs ``--sync``.

``--title-first`` puts each chapter's title (and the introduction in the markdown cells
right after it) first, then the Colab cell, one sentence on how to scale up, and the
tagged parameters cell, which stays the second code cell. Both commands are idempotent,
write a notebook only when it changes and leave outputs alone; a notebook whose code
changed is stale for scripts/execute.py, which re-executes it (``python
scripts/execute.py``).
"""

from __future__ import annotations

import argparse
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
CONFIG = ROOT / "_config.yml"
EXTRA = "book"  # the extra of pyproject.toml with everything a chapter imports
COLAB_TAG = "remove-cell"
SCALE_SENTENCE = (
    'Set `SCALE = "small"` in the cell below on a GPU to scale up (the default, '
    '`"tiny"`, is sized for a laptop CPU: the [timings page](../book/timings.md) '
    "gives its measured time)."
)


def repository(config: pathlib.Path = CONFIG) -> tuple[str, str | None]:
    """``(url, branch)`` from _config.yml's ``repository`` section (branch may be None)."""
    import yaml

    repo = (yaml.safe_load(config.read_text()) or {}).get("repository") or {}
    url = str(repo.get("url") or "").rstrip("/")
    if not url:
        raise ValueError(f"{config.name} has no repository.url")
    branch = repo.get("branch")
    return url, (str(branch) if branch else None)


def requirement(config: pathlib.Path = CONFIG) -> str:
    """What Colab installs: the package with its book extra, from the repository's
    branch.
    """
    url, branch = repository(config)
    return f"ptlm_lite[{EXTRA}] @ git+{url}" + (f"@{branch}" if branch else "")


def colab_cell(config: pathlib.Path = CONFIG) -> str:
    """The source of every notebook's first code cell (plain Python: no ``%pip`` magic)."""
    return "\n".join(
        [
            "# In Colab: install ptlm_lite and everything the chapters import (hidden "
            "in "
            "the book; does",
            "# nothing elsewhere). Written by scripts/colab.py from _config.yml: edit "
            "that, not this cell.",
            "import sys",
            "",
            'if "google.colab" in sys.modules:',
            f'    package = "{requirement(config)}"',
            '    get_ipython().run_line_magic("pip", f\'install -q "{package}"\')',
        ]
    )


def source(cell) -> str:
    src = cell.get("source", "")
    return src if isinstance(src, str) else "".join(src)


def tags(cell) -> list[str]:
    return cell.get("metadata", {}).get("tags", [])


def is_colab_cell(cell) -> bool:
    return (
        cell.get("cell_type") == "code"
        and COLAB_TAG in tags(cell)
        and "google.colab" in source(cell)
    )


def is_title(cell) -> bool:
    return cell.get("cell_type") == "markdown" and source(cell).lstrip().startswith(
        "# "
    )


def notebooks() -> list[pathlib.Path]:
    """Every notebook of the book: the chapters, and the notebooks _toc.yml lists."""
    toc = (ROOT / "_toc.yml").read_text()
    out = set((ROOT / "chapters").glob("*.ipynb"))
    for name in re.findall(r"(?:file|root):\s*([^\s#]+)", toc):
        p = ROOT / (name if name.endswith(".ipynb") else name + ".ipynb")
        if p.exists():
            out.add(p)
    return sorted(out)


def sync_colab_cell(nb, cell_source: str) -> bool:
    """Make the first code cell of ``nb`` (an nbformat notebook) the Colab cell; True if
    changed.
    """
    import nbformat

    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        if is_colab_cell(cell):
            if source(cell) == cell_source:
                return False
            cell.source = cell_source
            return True
        new = nbformat.v4.new_code_cell(cell_source, metadata={"tags": [COLAB_TAG]})
        nb.cells.insert(i, new)
        return True
    nb.cells.insert(
        0, nbformat.v4.new_code_cell(cell_source, metadata={"tags": [COLAB_TAG]})
    )
    return True


def title_first(nb) -> bool:
    """Put the title first (True if ``nb`` changed).

    The title is the first markdown cell that starts with ``# ``; the markdown cells
    right after it are its introduction. Everything above the title (the Colab cell, the
    parameters cell) moves after the introduction, in its order, and a markdown sentence
    on scaling up goes right before the parameters cell when the cell before it does not
    say ``SCALE = "small"`` already.
    """
    import nbformat

    cells = list(nb.cells)
    t = next((i for i, c in enumerate(cells) if is_title(c)), None)
    if t is None:
        raise ValueError("no title: no markdown cell starts with '# '")
    end = t + 1
    while end < len(cells) and cells[end].cell_type == "markdown":
        end += 1
    new = cells[t:end] + cells[:t] + cells[end:]
    p = next(
        (
            i
            for i, c in enumerate(new)
            if c.cell_type == "code" and "parameters" in tags(c)
        ),
        None,
    )
    if p is not None and not (
        p > 0
        and new[p - 1].cell_type == "markdown"
        and 'SCALE = "small"' in source(new[p - 1])
    ):
        new.insert(p, nbformat.v4.new_markdown_cell(SCALE_SENTENCE))
    if [id(c) for c in new] == [id(c) for c in cells]:
        return False
    nb.cells = new
    return True


def _apply(paths, change, check: bool) -> int:
    import nbformat

    differ = []
    for path in paths:
        nb = nbformat.read(path, as_version=4)
        if change(nb):
            differ.append(path)
            if not check:
                nbformat.write(nb, path)
    verb = "would change" if check else "changed"
    for path in differ:
        print(
            f"colab: {verb} "
            f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}"
        )
    if not differ:
        print("colab: every notebook is up to date")
    return 1 if (check and differ) else 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "notebooks",
        nargs="*",
        type=pathlib.Path,
        help="default: every notebook of the book",
    )
    ap.add_argument(
        "--sync",
        action="store_true",
        help="rewrite each notebook's Colab cell from _config.yml",
    )
    ap.add_argument(
        "--title-first",
        action="store_true",
        help="move the title and introduction above the Colab and parameters cells",
    )
    ap.add_argument(
        "--check",
        action="store_true",
        help="write nothing; exit 1 if a notebook would change",
    )
    args = ap.parse_args(argv)
    paths = [p.resolve() for p in args.notebooks] or notebooks()
    if args.title_first:
        return _apply(paths, title_first, args.check)
    if args.sync or args.check:
        cell = colab_cell()
        return _apply(paths, lambda nb: sync_colab_cell(nb, cell), args.check)
    print(colab_cell())
    return 0


if __name__ == "__main__":
    sys.exit(main())
