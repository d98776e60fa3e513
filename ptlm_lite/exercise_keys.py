"""What the exercises need from outside the package: answer keys kept as salted hashes,
and the reference solutions, which are not part of it.

* **Keys.** The right answer of each conceptual question is stored only as a salted
  SHA-256 hash of the right choice's text (``exercise_sets/sealed.json``), and its
  explanation encrypted with a key derived from that same text: :func:`ptlm_lite.
  exercises.ask` can tell a right answer and then show why, but reading the package
  does not give the answer away. (It is a lock against reading, not against trying:
  with four choices a reader who tries them all finds it; ``ask`` records and can
  limit guesses.) ``scripts/seal_answers.py`` writes the file from ``solutions/``.
* **Solutions.** ``solutions/<chapter>.py`` sits at the top of the repository, beside
  the package, not in it: a ``pip install`` (Colab's install cell) does not install
  it. :func:`solutions_module` finds it in a checkout (or wherever ``PTLM_SOLUTIONS``
  points), and returns ``None`` elsewhere.

* **Grading.** :func:`ptlm_lite.exercises.ask` records each wrong guess (``GUESSES``;
  a right answer says how many came before it) and, where ``PTLM_ASK_LIMIT`` (or
  ``guess_limit``) is set, stops telling right from wrong after that many. With
  ``PTLM_GRADE_LOG`` set to a file, every result of ``check`` and ``ask`` is appended
  to it as a line of JSON (:func:`grade_log`): how ``scripts/grade.py`` grades a
  student's notebook.

Introduced in ``chapters/transformer.ipynb`` (its exercises); every chapter's
exercises use it.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import importlib.util
import json
import os
import secrets
import sys
from pathlib import Path

__all__ = [
    "SEALED",
    "seal",
    "opens",
    "unseal",
    "sealed_keys",
    "solutions_dir",
    "solutions_module",
    "grade_log",
]

SEALED = Path(__file__).resolve().parent / "exercise_sets" / "sealed.json"


def _digest(salt: str, name: str, choice: str, purpose: bytes) -> bytes:
    data = b"\0".join([purpose, salt.encode(), name.encode(), choice.encode()])
    return hashlib.sha256(data).digest()


def _stream(key: bytes, n: int) -> bytes:
    blocks = (hashlib.sha256(key + i.to_bytes(4, "big")).digest() for i in range(n))
    return b"".join(blocks)[:n]


def seal(name: str, choice: str, why: str | None = None, salt: str | None = None):
    """The key of question ``name`` whose right choice reads ``choice``: ``{"salt",
    "hash", "why"}``, ``why`` (the explanation) encrypted so that only the right choice
    opens it. Used by ``scripts/seal_answers.py``."""
    if not isinstance(choice, str) or not choice:
        raise TypeError(f"choice must be the right choice's text, got {choice!r}")
    salt = secrets.token_hex(8) if salt is None else salt
    key = {"salt": salt, "hash": _digest(salt, name, choice, b"answer").hex()}
    if why:
        data = why.encode()
        pad = _stream(_digest(salt, name, choice, b"why"), len(data))
        key["why"] = base64.b64encode(bytes(a ^ b for a, b in zip(data, pad))).decode()
    return key


def opens(key: dict, name: str, choice: str) -> bool:
    """Whether ``choice`` (a choice's text) is the right answer under ``key``."""
    return _digest(key["salt"], name, choice, b"answer").hex() == key["hash"]


def unseal(key: dict, name: str, choice: str) -> str | None:
    """The explanation sealed in ``key``, opened with the right ``choice`` (``None`` if
    there is none or the choice is wrong)."""
    if "why" not in key or not opens(key, name, choice):
        return None
    data = base64.b64decode(key["why"])
    pad = _stream(_digest(key["salt"], name, choice, b"why"), len(data))
    return bytes(a ^ b for a, b in zip(data, pad)).decode()


@functools.lru_cache(maxsize=None)
def sealed_keys() -> dict:
    """{question name: key} from ``exercise_sets/sealed.json`` (empty if missing)."""
    if not SEALED.exists():
        return {}
    return json.loads(SEALED.read_text(encoding="utf-8"))


def solutions_dir() -> Path | None:
    """Where the reference solutions are: ``$PTLM_SOLUTIONS``, else the repository's
    ``solutions/`` beside the package (a checkout or an editable install); ``None``
    in an installed copy."""
    env = os.environ.get("PTLM_SOLUTIONS")
    path = Path(env) if env else Path(__file__).resolve().parents[1] / "solutions"
    return path if (path / "__init__.py").exists() else None


def solutions_module(chapter: str):
    """The module ``solutions/<chapter>.py`` (loaded once, as
    ``ptlm_solutions.<chapter>``), or ``None`` when this copy has no solutions."""
    if not isinstance(chapter, str) or not chapter.isidentifier():
        raise ValueError(f"chapter must be a chapter's file stem, got {chapter!r}")
    name = f"ptlm_solutions.{chapter}"
    if name in sys.modules:
        return sys.modules[name]
    folder = solutions_dir()
    if folder is None or not (folder / f"{chapter}.py").exists():
        return None
    spec = importlib.util.spec_from_file_location(name, folder / f"{chapter}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def grade_log(kind: str, result):
    """Append a result of ``check`` or ``ask`` (``kind``) to ``$PTLM_GRADE_LOG`` as a
    line of JSON, when that is set; returns ``result``."""
    log = os.environ.get("PTLM_GRADE_LOG")
    if log:
        line = {"kind": kind, "name": result.exercise, "status": result.status}
        line["message"] = result.message
        with open(log, "a", encoding="utf-8") as f:
            f.write(json.dumps(line, ensure_ascii=False) + "\n")
    return result
