"""The package's import graph: no circles (not even through imports inside functions),
no private name imported across modules, every module importable first in a fresh
interpreter, and no module over ~500 lines."""

from __future__ import annotations

import ast
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
PKG = ROOT / "ptlm_lite"
MAX_LINES = 520  # "about 500"


def _name(path: pathlib.Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


MODULES = {
    _name(p): p
    for p in sorted(PKG.rglob("*.py"))
    if "solutions" not in p.parts  # reference solutions: checked by test_exercises
}


def _edges(name: str, path: pathlib.Path) -> list[tuple[str, list[str]]]:
    """(imported module, names) for every ptlm_lite import in the file, anywhere."""
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            names = [a.name for a in node.names]
            if not target.startswith("ptlm_lite"):
                continue
            # "from . import x" / "from .pkg import mod": x may be a module itself
            subs = [f"{target}.{n}" for n in names if f"{target}.{n}" in MODULES]
            out += [(s, []) for s in subs]
            rest = [n for n in names if f"{target}.{n}" not in MODULES]
            if rest or not subs:
                out.append((target, rest))
        elif isinstance(node, ast.Import):
            out += [(a.name, []) for a in node.names if a.name.startswith("ptlm_lite")]
    return [(t, n) for t, n in out if t in MODULES and t != name]


def test_no_import_circles():
    graph = {m: {t for t, _ in _edges(m, p)} for m, p in MODULES.items()}
    # a package's __init__ that loads its submodules lazily (ptlm_lite itself) adds no
    # edge; one that imports them does, and a submodule importing its package's
    # __init__ back would be a circle
    cycles, state = [], {}

    def visit(m, stack):
        state[m] = "open"
        for t in sorted(graph[m]):
            if state.get(t) == "open":
                cycles.append(stack[stack.index(t) :] + [t])
            elif t not in state:
                visit(t, stack + [t])
        state[m] = "done"

    for m in sorted(graph):
        if m not in state:
            visit(m, [m])
    assert not cycles, "import circles:\n" + "\n".join(" -> ".join(c) for c in cycles)


def test_no_private_names_cross_modules():
    found = [
        f"{m} imports {t}.{n}"
        for m, p in MODULES.items()
        for t, names in _edges(m, p)
        for n in names
        if n.startswith("_") and not n.startswith("__")
    ]
    assert not found, "private names imported across modules:\n" + "\n".join(found)


def test_every_module_imports_first_in_a_fresh_interpreter():
    code = (
        "import importlib, sys\n"
        "bad = []\n"
        f"for name in {sorted(MODULES)!r}:\n"
        "    for k in [k for k in sys.modules if k == 'ptlm_lite' or k.startswith('ptlm_lite.')]:\n"
        "        del sys.modules[k]\n"
        "    try:\n"
        "        importlib.import_module(name)\n"
        "    except Exception as e:\n"
        "        bad.append(f'{name}: {type(e).__name__}: {e}')\n"
        "print('\\n'.join(bad))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert not out.stdout.strip(), out.stdout


def test_no_module_over_about_500_lines():
    long = {
        m: n
        for m, p in MODULES.items()
        if (n := len(p.read_text().splitlines())) > MAX_LINES
    }
    assert not long, f"modules over {MAX_LINES} lines (split them): {long}"


@pytest.mark.parametrize(
    "imports, kept_out",
    [
        # model code never imports the widgets
        ("ptlm_lite, ptlm_lite.transformer, ptlm_lite.attention", "ptlm_lite.viz"),
        # scipy.stats takes about a second to import: no chapter pays it for a
        # quantile (intervals.t_quantile goes through scipy.special)
        ("ptlm_lite.verdict, ptlm_lite.intervals", "scipy.stats"),
    ],
)
def test_importing_leaves_a_module_out(imports, kept_out):
    code = f"import sys, {imports}; print({kept_out!r} in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "False", f"importing {imports} imports {kept_out}"
