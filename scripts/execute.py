"""Execute chapters in place, storing outputs and widget state, so the book builds from them.

    python scripts/execute.py                 # every notebook in _toc.yml whose inputs changed
    python scripts/execute.py --all           # every notebook, stale or not
    python scripts/execute.py chapters/gpt.ipynb [...]   # these, whatever their state

A notebook is stale when the hash of its code cells plus the whole ptlm_lite package differs from
the hash stored in its metadata when it was last executed. Execution runs offline in a fresh kernel
(nbclient stores the widget state that the static book needs) and fails loudly on any error: the
notebook file is replaced only after a successful run (written to a temporary file, then renamed).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import pathlib
import re
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
KEY = "ptlm_book"


def toc_notebooks() -> list[pathlib.Path]:
    toc = (ROOT / "_toc.yml").read_text()
    out = []
    for name in re.findall(r"file:\s*([^\s#]+)", toc) + re.findall(r"root:\s*([^\s#]+)", toc):
        p = ROOT / (name if name.endswith(".ipynb") else name + ".ipynb")
        if p.exists():
            out.append(p)
    return sorted(set(out))


def package_hash() -> str:
    h = hashlib.sha256()
    for f in sorted((ROOT / "ptlm_lite").rglob("*.py")):
        h.update(str(f.relative_to(ROOT)).encode())
        h.update(f.read_bytes())
    return h.hexdigest()


def input_hash(nb: dict, pkg: str) -> str:
    h = hashlib.sha256(pkg.encode())
    for cell in nb["cells"]:
        h.update(cell["cell_type"].encode())
        h.update("".join(cell["source"]).encode())
    return h.hexdigest()[:16]


def is_stale(path: pathlib.Path, pkg: str) -> bool:
    nb = json.loads(path.read_text())
    return nb.get("metadata", {}).get(KEY, {}).get("input_hash") != input_hash(nb, pkg)


def execute(path: pathlib.Path, pkg: str, timeout: int = 600) -> float:
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    env_before = dict(os.environ)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")           # offline first: nothing downloads
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    start = time.perf_counter()
    try:
        NotebookClient(nb, timeout=timeout, kernel_name="python3", store_widget_state=True,
                       resources={"metadata": {"path": str(path.parent)}}).execute()
    finally:
        os.environ.clear()
        os.environ.update(env_before)
    seconds = time.perf_counter() - start
    nb.metadata.setdefault(KEY, {})
    nb.metadata[KEY]["input_hash"] = input_hash(nb, pkg)
    nb.metadata[KEY]["seconds"] = round(seconds, 1)
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".ipynb.tmp")
    with os.fdopen(fd, "w") as f:
        nbformat.write(nb, f)
    os.chmod(tmp, 0o644)  # mkstemp makes files private; a notebook is not
    os.replace(tmp, path)
    return seconds


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("notebooks", nargs="*", type=pathlib.Path)
    ap.add_argument("--all", action="store_true", help="execute every notebook in _toc.yml")
    ap.add_argument("--check", action="store_true", help="only list stale notebooks; exit 1 if any")
    args = ap.parse_args(argv)
    pkg = package_hash()
    if args.notebooks:
        todo = [p.resolve() for p in args.notebooks]
    else:
        todo = [p for p in toc_notebooks() if args.all or is_stale(p, pkg)]
    if args.check:
        for p in todo:
            print(f"stale: {p.relative_to(ROOT)}")
        return 1 if todo else 0
    if not todo:
        print("execute: every notebook is up to date")
    for p in todo:
        print(f"execute: {p.relative_to(ROOT)} ...", flush=True)
        s = execute(p, pkg)
        print(f"execute: {p.relative_to(ROOT)} done in {s:.1f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
