#!/usr/bin/env python3
"""Grade a student's copy of a chapter: which exercises are right, wrong, not attempted.

    python scripts/grade.py student.ipynb                  # chapter from the file name
    python scripts/grade.py work/alice.ipynb --chapter bert --json alice.json
    python scripts/grade.py student.ipynb --max-steps 2    # quick: training capped

The notebook runs top to bottom in a fresh kernel (a copy: the file is not changed; a
cell that raises does not stop the run), with the package the grader has installed.
Then, in the same kernel:

* every coding exercise of the chapter is checked again by the package's own
  :func:`ptlm_lite.exercises.check`, on the function the student defined under the
  stub's name (``my_causal_mask``, ...): whatever the student's check cell did, the
  grade is the registered check's;
* every conceptual question is graded by the student's last :func:`ask` of it, which
  the package logs (``PTLM_GRADE_LOG``), with the wrong guesses before it.

The grader needs no solutions; ``verify()`` in a checkout shows the reference
solutions pass the same checks. See CONTRIBUTING.md, "Grading a student's notebook".
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[1]

# runs in the student's kernel after the last cell; prints one JSON line
GRADER = r"""
import json as _json
from ptlm_lite import exercises as _E
_E.load_all()
_out = {}
for _name, _spec in _E.EXERCISES.items():
    if _spec.chapter != %(chapter)r:
        continue
    _f = globals().get(_spec.solution)
    _r = _E._check(_name, _f, None, None, None) if _f is not None else None
    _out[_name] = {
        "kind": "check",
        "status": _r.status if _r is not None else "not attempted",
        "message": _r.message if _r is not None else f"no function {_spec.solution}",
    }
for _name, _q in _E.QUESTIONS.items():
    if _q.chapter == %(chapter)r:
        _out[_name] = {"kind": "ask", "status": "not attempted", "message": "never asked"}
print("PTLM-GRADE " + _json.dumps(_out, ensure_ascii=False))
"""


def grade(
    path: pathlib.Path,
    chapter: str,
    timeout: int = 900,
    max_steps: int | None = None,
) -> dict[str, dict]:
    """Run ``path`` and grade it: ``{exercise: {"kind", "status", "message"}}``."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell(GRADER % {"chapter": chapter}))
    fd, log = tempfile.mkstemp(suffix=".jsonl")
    os.close(fd)
    saved = dict(os.environ)
    os.environ["PTLM_GRADE_LOG"] = log
    os.environ.pop("PTLM_ASK_LIMIT", None)
    if max_steps is not None:
        os.environ["PTLM_MAX_STEPS"] = str(max_steps)
    try:
        client = NotebookClient(
            nb,
            timeout=timeout,
            kernel_name="python3",
            allow_errors=True,
            resources={"metadata": {"path": str(path.parent)}},
        )
        client.execute()
        lines = pathlib.Path(log).read_text(encoding="utf-8").splitlines()
    finally:
        os.environ.clear()
        os.environ.update(saved)
        pathlib.Path(log).unlink(missing_ok=True)
    printed = "".join(
        o.get("text", "") for o in nb.cells[-1].get("outputs", []) if "text" in o
    )
    if "PTLM-GRADE " not in printed:
        raise SystemExit(f"grade: the grading cell did not run:\n{printed[-2000:]}")
    out = json.loads(printed.split("PTLM-GRADE ", 1)[1].splitlines()[0])
    asked: dict[str, list[dict]] = {}
    for line in map(json.loads, lines):
        if line["kind"] == "ask" and line["name"] in out:
            asked.setdefault(line["name"], []).append(line)
    for name, tries in asked.items():
        last = tries[-1]  # its message counts the wrong guesses before a right one
        out[name] = {
            "kind": "ask",
            "status": last["status"],
            "message": last["message"],
        }
        out[name]["tries"] = len(tries)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog=__doc__.split("\n\n", 1)[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("notebook", type=pathlib.Path)
    ap.add_argument(
        "--chapter", help="the chapter it is a copy of (default: the file's stem)"
    )
    ap.add_argument("--timeout", type=int, default=900, help="seconds per cell")
    ap.add_argument("--max-steps", type=int, help="cap training (PTLM_MAX_STEPS)")
    ap.add_argument("--json", type=pathlib.Path, help="also write the grades here")
    args = ap.parse_args(argv)
    chapter = args.chapter or args.notebook.stem
    if not (ROOT / "chapters" / f"{chapter}.ipynb").exists():
        raise SystemExit(
            f"grade: no chapter {chapter!r} (chapters/{chapter}.ipynb); "
            "name it with --chapter"
        )
    grades = grade(args.notebook, chapter, args.timeout, args.max_steps)
    if not grades:
        raise SystemExit(f"grade: chapter {chapter!r} has no exercises")
    right = sum(g["status"] == "right" for g in grades.values())
    print(f"{args.notebook} (chapter {chapter}): {right} of {len(grades)} right")
    width = max(len(n) for n in grades)
    for name, g in grades.items():
        print(f"  {g['kind']:<5}  {name:<{width}}  {g['status']:<13}  {g['message']}")
    if args.json:
        args.json.write_text(json.dumps(grades, indent=1, ensure_ascii=False) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
