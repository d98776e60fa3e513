"""Execute chapters in place, storing outputs and widget state, so the book builds from
them.

    python scripts/execute.py                 # every notebook in _toc.yml that is stale
    python scripts/execute.py --all           # every notebook in _toc.yml, stale or not
    python scripts/execute.py chapters/gpt.ipynb [...]   # these, whatever their state
    python scripts/execute.py --check [...]   # list the stale ones and why; exit 1 if any

A notebook is stale when its own code changed or a ptlm_lite module that it actually
imported changed. After a successful run the kernel is asked which ptlm_lite modules it
loaded (the package loads its submodules lazily, so that is what the chapter used, plus
ptlm_lite/__init__.py and ptlm_lite/runtime.py, which are always imported); the
notebook's metadata["ptlm_book"] records

    code_hash   hash of the cells' types and sources
    modules     {module name: sha256 of its file, 16 hex digits}, only files inside ptlm_lite/
                and solutions/ (a chapter that imports its reference solutions, as
                ptlm_solutions.<chapter>, is stale when they change)
    seconds     how long the run took
    verdicts    every verdict the chapter printed (ptlm_lite.verdict logs them to
                $PTLM_VERDICT_LOG): book/replication.ipynb pairs them with a fresh-seed run

and the notebook is stale when the code hash differs, when a recorded module's file
changed or is gone, or when there is no such record (old metadata with only an
input_hash is stale once).

Execution runs offline in a fresh kernel (nbclient stores the widget state that the
static book needs) and fails loudly on any error: the notebook file is replaced only
after a successful run (written to a temporary file, then renamed).
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import os
import pathlib
import re
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
# the package whose modules are tracked; its directory is ROOT / PACKAGE
PACKAGE = "ptlm_lite"
KEY = "ptlm_book"

# Evaluated in the chapter's kernel after its last cell: {module name: file} for the
# package's modules in sys.modules (a submodule imported by a module is there too).
_PROBE = (
    "__import__('json').dumps({_n: getattr(_m, '__file__', None) for _n, _m in "
    "list(__import__('sys').modules.items()) if _n == %(p)r or "
    "_n.startswith((%(p)r + '.', %(s)r + '.'))})"
)


def package_dir() -> pathlib.Path:
    return (ROOT / PACKAGE).resolve()


# The reference solutions: solutions/<chapter>.py, beside the package (not in it), loaded
# by ptlm_lite.exercise_keys as modules named ptlm_solutions.<chapter>.
SOLUTIONS = "ptlm_solutions"


def solutions_dir() -> pathlib.Path:
    return (ROOT / "solutions").resolve()


def toc_notebooks() -> list[pathlib.Path]:
    toc = (ROOT / "_toc.yml").read_text()
    out = []
    for name in re.findall(r"file:\s*([^\s#]+)", toc) + re.findall(
        r"root:\s*([^\s#]+)", toc
    ):
        p = ROOT / (name if name.endswith(".ipynb") else name + ".ipynb")
        if p.exists():
            out.append(p)
    return sorted(set(out))


def code_hash(nb: dict) -> str:
    h = hashlib.sha256()
    for cell in nb["cells"]:
        h.update(cell["cell_type"].encode())
        src = cell["source"]
        h.update((src if isinstance(src, str) else "".join(src)).encode())
    return h.hexdigest()[:16]


def file_hash(path: pathlib.Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


def module_file(name: str) -> pathlib.Path | None:
    """The file in this repository that module `name` (PACKAGE or PACKAGE.x.y) loads
    from, if any.
    """
    parts = name.split(".")
    if parts[0] == SOLUTIONS and len(parts) == 2:
        f = solutions_dir() / f"{parts[1]}.py"
        return f if f.is_file() else None
    if parts[0] != PACKAGE:
        return None
    base = package_dir().joinpath(*parts[1:])
    # a package wins over a module
    for f in (base / "__init__.py", base.with_suffix(".py")):
        if f.is_file():
            return f
    return None


def module_hashes(
    files: dict[str, str | None], chapter: str | None = None
) -> dict[str, str]:
    """{name: file} reported by the kernel -> {name: hash} for the files inside the
    package dir (other chapters' exercise sets and solutions left out when ``chapter``,
    the notebook's stem, is given).
    """
    pkg = package_dir()
    # a chapter depends on its own exercise set and solutions only (looking up an
    # exercise's name may import other chapters' sets, which it does not use)
    per_chapter = (f"{PACKAGE}.exercise_sets.", f"{SOLUTIONS}.")
    out, outside = {}, []
    for name, file in sorted(files.items()):
        if (
            chapter
            and name.startswith(per_chapter)
            and name.rsplit(".", 1)[1] != chapter
        ):
            continue
        if not file:
            # namespace package, builtin: nothing to hash
            continue
        f = pathlib.Path(file).resolve()
        if f.is_file() and (f.is_relative_to(pkg) or f.is_relative_to(solutions_dir())):
            out[name] = file_hash(f)
        elif name == PACKAGE or name.startswith((f"{PACKAGE}.", f"{SOLUTIONS}.")):
            outside.append(f"{name} ({file})")
    if outside:
        # a record without these modules would never go stale: refuse to write it
        raise RuntimeError(
            f"execute: the kernel loaded {PACKAGE} modules from outside {pkg}: "
            f"{', '.join(outside)}; the notebook would be recorded against code that is "
            "not this checkout's"
        )
    return out


def stale_reasons(path: pathlib.Path) -> list[str]:
    """Why `path` must be re-executed; empty when it is up to date."""
    nb = json.loads(path.read_text())
    rec = nb.get("metadata", {}).get(KEY, {})
    if "code_hash" not in rec or not isinstance(rec.get("modules"), dict):
        return [
            "old record: whole-package hash"
            if "input_hash" in rec
            else "no execution record"
        ]
    reasons = []
    if rec["code_hash"] != code_hash(nb):
        reasons.append("code changed")
    changed, removed = [], []
    for name, digest in sorted(rec["modules"].items()):
        f = module_file(name)
        if f is None:
            removed.append(name)
        elif file_hash(f) != digest:
            changed.append(name)
    if changed:
        reasons.append(f"{', '.join(changed)} changed")
    if removed:
        reasons.append(f"{', '.join(removed)} removed")
    return reasons


def is_stale(path: pathlib.Path) -> bool:
    return bool(stale_reasons(path))


def package_hash() -> str:
    """Hash of the whole package. No longer decides staleness; kept for older callers."""
    h = hashlib.sha256()
    for f in sorted(package_dir().rglob("*.py")):
        h.update(str(f.relative_to(ROOT)).encode())
        h.update(f.read_bytes())
    return h.hexdigest()


def _run(nb, path: pathlib.Path, timeout: int) -> dict[str, str | None]:
    """Execute every cell of `nb` in one fresh kernel; return the package modules it
    loaded.
    """
    from nbclient import NotebookClient

    client = NotebookClient(
        nb,
        timeout=timeout,
        kernel_name="python3",
        store_widget_state=True,
        resources={"metadata": {"path": str(path.parent)}},
    )
    # owns the kernel: shut down when this block ends
    with client.setup_kernel():
        # every cell, language_info, widget state; raises on error
        client.execute(cleanup_kc=False)
        # Ask the same kernel, before it shuts down, which modules it loaded: a silent
        # request with a user expression adds no cell, no output and no execution
        # count to the notebook.
        msg_id = client.kc.execute(
            "",
            silent=True,
            store_history=False,
            user_expressions={"modules": _PROBE % {"p": PACKAGE, "s": SOLUTIONS}},
        )
        reply = client.wait_for_reply(msg_id)
    result = ((reply or {}).get("content", {}).get("user_expressions") or {}).get(
        "modules", {}
    )
    if result.get("status") != "ok":
        raise RuntimeError(
            f"execute: could not list the kernel's {PACKAGE} modules: {result}"
        )
    return json.loads(ast.literal_eval(result["data"]["text/plain"]))


def run_with_verdicts(
    nb, path: pathlib.Path, env: dict[str, str], timeout: int = 600
) -> tuple[list[dict], dict, float]:
    """Execute ``nb`` (in memory; nothing is written) offline with ``env`` added to the
    environment; return (the verdicts it printed, the package modules it loaded,
    seconds). The verdicts are what :mod:`ptlm_lite.verdict` logs to
    ``$PTLM_VERDICT_LOG``."""
    env_before = dict(os.environ)
    fd, log = tempfile.mkstemp(suffix=".jsonl")
    os.close(fd)
    # offline first: nothing downloads
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    # stored bertviz views load d3 and jQuery from the static book's own copies (or
    # the CDNs, opened in Jupyter) instead of carrying ~340 kB each
    os.environ.setdefault("PTLM_BERTVIZ_SCRIPTS", "linked")
    os.environ.update(env)
    os.environ["PTLM_VERDICT_LOG"] = log
    # the kernel imports this checkout's package, whatever `pip install -e` points at
    # (another clone's, after a CI run there): the record is of the code beside it
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT), *filter(None, [env_before.get("PYTHONPATH")])]
    )
    start = time.perf_counter()
    try:
        files = _run(nb, path, timeout)
        lines = pathlib.Path(log).read_text().splitlines()
    finally:
        os.environ.clear()
        os.environ.update(env_before)
        pathlib.Path(log).unlink(missing_ok=True)
    return [json.loads(x) for x in lines], files, time.perf_counter() - start


def execute(path: pathlib.Path, _unused=None, timeout: int = 600) -> float:
    """Execute `path` in place and record its staleness metadata; return the seconds it
    took.

    The second argument (formerly the package hash) is ignored; it is accepted for older
    callers.
    """
    import nbformat

    for var in ("PTLM_SEED_SET", "PTLM_MAX_STEPS"):
        if os.environ.get(var):
            raise SystemExit(
                f"execute: {var} is set ({os.environ[var]!r}): the committed chapters "
                "are executed with the seeds as written and no step cap; unset it"
            )
    nb = nbformat.read(path, as_version=4)
    verdicts, files, seconds = run_with_verdicts(nb, path, {}, timeout)
    rec = nb.metadata.setdefault(KEY, {})
    # every verdict the chapter printed, in order (book/replication.ipynb compares them
    # with a run on fresh seeds: scripts/replicate.py)
    rec["verdicts"] = verdicts
    # the old whole-package record
    rec.pop("input_hash", None)
    rec["code_hash"] = code_hash(nb)
    rec["modules"] = module_hashes(files, chapter=path.stem)
    rec["seconds"] = round(seconds, 1)
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".ipynb.tmp")
    try:
        with os.fdopen(fd, "w") as f:
            nbformat.write(nb, f)
        os.chmod(tmp, 0o644)  # mkstemp makes files private; a notebook is not
        os.replace(tmp, path)
    except BaseException:
        pathlib.Path(tmp).unlink(missing_ok=True)
        raise
    return seconds


def _rel(p: pathlib.Path) -> str:
    try:
        return str(p.relative_to(ROOT))
    except ValueError:
        return str(p)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "notebooks",
        nargs="*",
        type=pathlib.Path,
        help="execute these (with --check: check these) instead of _toc.yml's",
    )
    ap.add_argument(
        "--all", action="store_true", help="execute every notebook in _toc.yml"
    )
    ap.add_argument(
        "--check",
        action="store_true",
        help="only list stale notebooks and why; exit 1 if any",
    )
    args = ap.parse_args(argv)
    candidates = (
        [p.resolve() for p in args.notebooks] if args.notebooks else toc_notebooks()
    )
    reasons = {p: stale_reasons(p) for p in candidates}
    if args.check:
        stale = [p for p in candidates if reasons[p]]
        for p in stale:
            print(f"stale: {_rel(p)} ({'; '.join(reasons[p])})")
        return 1 if stale else 0
    todo = (
        candidates
        if (args.notebooks or args.all)
        else [p for p in candidates if reasons[p]]
    )
    if not todo:
        print("execute: every notebook is up to date")
    for p in todo:
        why = "; ".join(reasons[p]) or "up to date, executed as asked"
        print(f"execute: {_rel(p)} ({why}) ...", flush=True)
        s = execute(p)
        print(f"execute: {_rel(p)} done in {s:.1f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
