#!/usr/bin/env python3
"""Write the answer keys of the chapters' questions: ptlm_lite/exercise_sets/sealed.json.

    python scripts/seal_answers.py           # (re)write the keys from solutions/
    python scripts/seal_answers.py --check   # only verify them (CI: tests/test_exercises.py)

The right answers (``ANSWERS``, a letter per question) and their explanations
(``EXPLANATIONS``) live in the repository's ``solutions/<chapter>.py``, which the
installed package does not contain. The package keeps, per question, a salted hash of
the right choice's text and the explanation encrypted with it
(:mod:`ptlm_lite.exercise_keys`): ``ask`` tells right from wrong and shows the
explanation to whoever answers right, and no file of the package holds the answer.
A key whose answer and explanation are unchanged keeps its salt (no churn); after
editing a question's choices, answer or explanation, rerun this script.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ptlm_lite import exercises as E  # noqa: E402
from ptlm_lite.exercise_keys import SEALED, opens, seal, sealed_keys, unseal  # noqa: E402


def expected() -> dict[str, tuple[str, str | None]]:
    """{question: (the right choice's text, its explanation)} from solutions/."""
    E.load_all()
    out = {}
    for name, q in sorted(E.QUESTIONS.items()):
        module = E._solutions(q.chapter)
        if module is None:
            raise SystemExit("no solutions/ folder: run this in a checkout")
        letter = getattr(module, "ANSWERS", {}).get(name)
        if letter is None:
            raise SystemExit(f"solutions/{q.chapter}.py: ANSWERS lacks {name!r}")
        index = "ABCDEFGHIJ".index(letter)
        why = getattr(module, "EXPLANATIONS", {}).get(name)
        out[name] = (q.choices[index], why)
    return out


def fits(key: dict | None, name: str, choice: str, why: str | None) -> bool:
    """Whether ``key`` opens with ``choice`` and holds ``why``."""
    return (
        key is not None
        and opens(key, name, choice)
        and unseal(key, name, choice) == why
    )


def problems() -> list[str]:
    keys, want = sealed_keys(), expected()
    bad = [
        n for n, (choice, why) in want.items() if not fits(keys.get(n), n, choice, why)
    ]
    return bad + [f"{n} (no such question)" for n in sorted(set(keys) - set(want))]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args(argv)
    if args.check:
        bad = problems()
        if bad:
            print("stale keys (rerun scripts/seal_answers.py):", "; ".join(bad))
        return 1 if bad else 0
    old, keys = sealed_keys(), {}
    for name, (choice, why) in expected().items():
        key = old.get(name)
        keys[name] = key if fits(key, name, choice, why) else seal(name, choice, why)
    SEALED.write_text(json.dumps(keys, indent=1, ensure_ascii=False) + "\n")
    print(f"{SEALED.name}: {len(keys)} questions")
    return 0


if __name__ == "__main__":
    sys.exit(main())
