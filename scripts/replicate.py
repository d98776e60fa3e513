"""Re-run every chapter's experiments with fresh seeds and record both runs' verdicts.

    python scripts/replicate.py                      # every chapter in _toc.yml
    python scripts/replicate.py chapters/gpt.ipynb   # these only (others kept)
    python scripts/replicate.py --check              # exit 1 if the record is stale

A chapter's committed run (``scripts/execute.py``) stores the verdicts it printed in
the notebook's metadata. This script executes the same notebook, in memory, with
``PTLM_SEED_SET=fresh`` (every experiment's seeds move to a disjoint set of the same
size: ``ptlm_lite.runtime.seeds``) and records the verdicts of that run beside the
committed ones in ``book/data/replication.json``, with the notebook's code and module
hashes. ``book/replication.ipynb`` shows, claim by claim, whether the verdict kept its
category; ``tests/test_replication.py`` fails when the record no longer matches the
chapters (re-run this script after re-executing a chapter).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import pathlib
import platform
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import execute as X  # noqa: E402

ROOT = X.ROOT
RECORD = ROOT / "book" / "data" / "replication.json"


def chapters() -> list[pathlib.Path]:
    return [p for p in X.toc_notebooks() if p.parent.name == "chapters"]


def load() -> dict:
    if RECORD.exists():
        return json.loads(RECORD.read_text())
    return {"chapters": {}}


def stale(record: dict | None = None) -> list[str]:
    """Why the record does not match the committed chapters (empty: it does)."""
    record = load() if record is None else record
    why = []
    for p in chapters():
        meta = json.loads(p.read_text()).get("metadata", {}).get(X.KEY, {})
        entry = record["chapters"].get(p.stem)
        if not meta.get("verdicts"):
            if entry:
                why.append(f"{p.stem}: recorded, but the chapter prints no verdict")
            continue
        if entry is None:
            why.append(f"{p.stem}: not replicated")
        elif entry["code_hash"] != meta.get("code_hash") or entry[
            "modules"
        ] != meta.get("modules"):
            why.append(f"{p.stem}: the chapter was re-executed since its replication")
        elif entry["main"] != meta["verdicts"]:
            why.append(f"{p.stem}: the recorded verdicts differ from the notebook's")
    for name in record["chapters"]:
        if not (ROOT / "chapters" / f"{name}.ipynb").exists():
            why.append(f"{name}: recorded, but there is no such chapter")
    return why


def replicate(path: pathlib.Path) -> dict:
    import nbformat

    if X.stale_reasons(path):
        raise SystemExit(
            f"replicate: {path.name} is stale ({'; '.join(X.stale_reasons(path))}): "
            "run scripts/execute.py first"
        )
    nb = nbformat.read(path, as_version=4)
    meta = nb.metadata[X.KEY]
    fresh, _, seconds = X.run_with_verdicts(nb, path, {"PTLM_SEED_SET": "fresh"})
    return {
        "code_hash": meta["code_hash"],
        "modules": meta["modules"],
        "main": meta.get("verdicts", []),
        "fresh": fresh,
        "fresh_seconds": round(seconds, 1),
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("notebooks", nargs="*", type=pathlib.Path)
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args(argv)
    if args.check:
        why = stale()
        for w in why:
            print("stale:", w)
        return 1 if why else 0
    for var in ("PTLM_SEED_SET", "PTLM_MAX_STEPS"):
        if os.environ.get(var):
            raise SystemExit(f"replicate: unset {var} first")
    todo = [p.resolve() for p in args.notebooks] or chapters()
    from filelock import FileLock

    for p in todo:
        print(f"replicate: {p.name} with fresh seeds ...", flush=True)
        entry = replicate(p)
        RECORD.parent.mkdir(parents=True, exist_ok=True)
        lock = FileLock(str(RECORD) + ".lock")
        lock.acquire()  # several runs at once: each re-reads, adds its chapter, writes
        record = load()
        if not entry["main"]:
            record["chapters"].pop(p.stem, None)
        else:
            record["chapters"][p.stem] = entry
        same = sum(
            a["verdict"] == b["verdict"] for a, b in zip(entry["main"], entry["fresh"])
        )
        print(
            f"replicate: {p.name}: {same} of {len(entry['main'])} verdicts kept their "
            f"category ({entry['fresh_seconds']:.0f} s)",
            flush=True,
        )
        record["chapters"] = dict(sorted(record["chapters"].items()))
        record["machine"] = f"{platform.machine()}, {os.cpu_count()} cores"
        record["date"] = datetime.date.today().isoformat()
        RECORD.parent.mkdir(parents=True, exist_ok=True)
        tmp = RECORD.with_suffix(".json.tmp")
        try:
            tmp.write_text(json.dumps(record, indent=1) + "\n")
            os.replace(tmp, RECORD)  # never a half-written record
        finally:
            lock.release()
    return 0


if __name__ == "__main__":
    sys.exit(main())
