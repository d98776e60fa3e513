"""Exercises that check themselves.

A chapter's coding exercise is two cells: a stub the reader fills in (it raises
``NotImplementedError`` until then) and a check cell::

    def my_causal_mask(T):
        raise NotImplementedError

    check("causal mask", my_causal_mask)   # cases and reference: exercise_sets/transformer.py

:func:`check` never stops the chapter: an unattempted stub (it raises
``NotImplementedError``, returns ``...`` or ``None``, or is ``...`` itself) is *not
attempted*; a wrong answer says which case failed and why (a wrong value, an exception,
or an argument changed in place). The result is truthy only when right.
``check(name, candidate, reference, cases)`` checks what a chapter builds itself.

The solutions are in neither the notebooks nor the installed package: they live in the
repository's ``solutions/<chapter>.py`` (beside the package: ``pip install`` leaves
them out); :func:`verify` runs each through :func:`check` (CI). The checks compare with
the package's own implementation, not with them.

:func:`ask` checks a conceptual question (:data:`QUESTIONS`); the right answer is kept
only as a salted hash, its explanation sealed with it (:mod:`ptlm_lite.exercise_keys`,
which also says how guesses are recorded and limited, and how grading works)::

    answer = None                                  # your answer: "A", "B", "C" or "D"
    ask("why divide by √d", answer)

Each chapter registers its own (``exercise_sets/<chapter>.py``: :func:`register_exercise`,
:func:`register_question`); they load on first use (:func:`load_all`).

Introduced in ``chapters/transformer.ipynb``; every chapter's exercises use it.
"""

from __future__ import annotations

import functools
import html
import importlib
from dataclasses import dataclass, field
from typing import Callable, Iterable, Sequence

from .exercise_keys import grade_log as _record
from .exercise_keys import opens, sealed_keys, solutions_module, unseal
from .exercise_compare import (
    copy_answer,
    describe,
    difference,
    is_stub_value,
    same,
    show,
    unchanged,
)
from .runtime import env_count

__all__ = [
    "check",
    "ask",
    "Result",
    "Exercise",
    "Question",
    "EXERCISES",
    "QUESTIONS",
    "solution",
    "show_solution",
    "explanation",
    "answer",
    "verify",
    "register_exercise",
    "register_question",
    "GUESSES",
    "guess_limit",
    "describe",
    "is_stub_value",
    "NOT_ATTEMPTED",
    "RIGHT",
    "WRONG",
    "UNCHECKED",
]

NOT_ATTEMPTED, RIGHT, WRONG, UNCHECKED = "not attempted", "right", "wrong", "unchecked"


@dataclass
class Result:
    """The outcome of :func:`check` or :func:`ask`: truthy only when right.

    ``status``: "not attempted", "right" or "wrong" ("unchecked": nothing to check, e.g.
    a solution that this copy does not include).
    """

    exercise: str
    passed: bool
    attempted: bool
    message: str
    status: str = ""
    # shown under the message: a question and its choices
    details: str = field(default="", repr=False)

    def __post_init__(self):
        if not self.status:
            self.status = (
                RIGHT if self.passed else (WRONG if self.attempted else NOT_ATTEMPTED)
            )

    def __bool__(self):
        return self.passed

    def _repr_html_(self):
        colour = {RIGHT: "#1a7f37", NOT_ATTEMPTED: "#9a6700", UNCHECKED: "#57606a"}.get(
            self.status, "#cf222e"
        )
        text = html.escape(self.message)
        more = "".join(
            f"<div>{html.escape(line)}</div>" for line in self.details.splitlines()
        )
        return f'<div style="border-left:4px solid {colour};padding:4px 8px">{text}{more}</div>'

    def __repr__(self):
        return f"{self.message}\n{self.details}" if self.details else self.message


# ----------------------------------------------------------------------------------
# The exercises of the book: name -> reference, cases, and where the solution lives


@dataclass(frozen=True)
class Exercise:
    """A coding exercise: ``check(name, candidate)`` compares ``call(candidate, *case)``
    with ``call(reference, *case)`` on every case (``call`` defaults to plain
    ``f(*case)``).
    """

    name: str
    # chapters/<chapter>.ipynb and solutions/<chapter>.py (the repository)
    chapter: str
    solution: str  # the stub's name, e.g. "my_causal_mask"
    # the package's own implementation (not the solution)
    reference: Callable
    cases: Callable[[], list]  # built on demand, from fixed seeds
    atol: float = 1e-5
    # how a function is applied to a case (e.g. statistics of a sampler)
    call: Callable | None = None


EXERCISES: dict[str, Exercise] = {}


def register_exercise(name, chapter, solution, atol=1e-5, call=None):
    def register(make):  # make() -> (reference, cases); built once, on first use
        make = functools.lru_cache(maxsize=None)(make)

        def reference(*args, **kwargs):
            return make()[0](*args, **kwargs)

        EXERCISES[name] = Exercise(
            name, chapter, solution, reference, lambda: list(make()[1]), atol, call
        )
        return make

    return register


# ----------------------------------------------------------------------------------
# check


def _not_attempted(exercise: str, why: str) -> Result:
    return Result(
        exercise,
        False,
        False,
        f"⏳ {exercise}: not attempted yet ({why}). Replace the stub with your code.",
    )


def check(
    exercise: str,
    candidate: Callable,
    reference: Callable | None = None,
    cases: Iterable[tuple] | None = None,
    atol: float | None = None,
) -> Result:
    """Check ``candidate`` on every case; return a :class:`Result` (truthy only when
    every case is right).

    ``check(name, candidate)``: a registered exercise (:data:`EXERCISES`): its reference
    and cases come from the package. ``check(name, candidate, reference, cases)``:
    compare ``candidate(*case)`` with ``reference(*case)`` for each tuple in ``cases``.
    Each gets its own copy of the arguments; a candidate that changes an argument in
    place is wrong even when it returns the right value.

    Not attempted (reported, never raised): ``candidate`` is ``...`` or ``None``, raises
    ``NotImplementedError``, or returns ``...`` or ``None`` where the reference returns
    a value.
    """
    return _record("check", _check(exercise, candidate, reference, cases, atol))


def _check(exercise, candidate, reference, cases, atol) -> Result:
    if (reference is None) != (cases is None):
        raise TypeError(
            "give both reference and cases, or neither (to use the registered exercise)"
        )
    call = None
    if reference is None:
        if not _known(exercise, EXERCISES):
            raise ValueError(
                f"exercise {exercise!r} is not registered; known: {sorted(EXERCISES)}. "
                "Pass reference and cases to check something else."
            )
        spec = EXERCISES[exercise]
        reference, cases, call = spec.reference, spec.cases(), spec.call
        atol = spec.atol if atol is None else atol
    atol = 1e-5 if atol is None else atol
    if is_stub_value(candidate):
        return _not_attempted(
            exercise, "it is `...`" if candidate is Ellipsis else "it is None"
        )
    if not callable(candidate) or not callable(reference):
        raise TypeError(
            f"candidate and reference must be functions, got "
            f"{type(candidate).__name__} "
            f"and {type(reference).__name__}"
        )
    call = call or (lambda f, *args: f(*args))
    cases = list(cases)
    if not cases:
        raise ValueError("cases must hold at least one tuple of arguments")
    for case in cases:
        args = case if isinstance(case, tuple) else (case,)
        want = call(reference, *copy_answer(args))
        given = copy_answer(args)
        try:
            got = call(candidate, *given)
        except NotImplementedError:
            return _not_attempted(exercise, "it raises NotImplementedError")
        except Exception as e:  # the reader's bug: say where, do not crash the chapter
            return Result(
                exercise,
                False,
                True,
                f"✗ {exercise}: raised {type(e).__name__}: {e} for arguments "
                f"{show(args, True)}",
            )
        if is_stub_value(got) and not is_stub_value(want):
            return _not_attempted(
                exercise,
                "it returns `...`"
                if got is Ellipsis
                else "it returns None; if you wrote code, is a `return` missing?",
            )
        if not same(got, want, atol):
            return Result(
                exercise,
                False,
                True,
                f"✗ {exercise}: wrong for arguments {show(args, True)}: "
                f"{difference(got, want, atol)}",
            )
        if not unchanged(args, given):
            return Result(
                exercise,
                False,
                True,
                f"✗ {exercise}: right value, but it changed its arguments in "
                f"place for "
                f"{show(args, True)}; "
                "work on a copy (e.g. `x.clone()`) or use out-of-place "
                "operations",
            )
    return Result(exercise, True, True, f"✓ {exercise}: all {len(cases)} cases pass.")


# ----------------------------------------------------------------------------------
# Solutions (solutions/<chapter>.py in the repository, not in the installed package)


def load_all() -> None:
    """Register the exercises and questions of every chapter in
    :mod:`ptlm_lite.exercise_sets` (one module per chapter)."""
    import pkgutil

    from . import exercise_sets

    for m in pkgutil.iter_modules(exercise_sets.__path__):
        importlib.import_module(f"ptlm_lite.exercise_sets.{m.name}")


def _known(name: str, registry: dict) -> bool:
    if name not in registry:
        load_all()
    return name in registry


_solutions = solutions_module


def solution(exercise: str):
    """The solution of a registered exercise, or ``None`` when this copy has no
    solutions.
    """
    if not _known(exercise, EXERCISES):
        raise ValueError(
            f"exercise {exercise!r} is not registered; known: {sorted(EXERCISES)}"
        )
    spec = EXERCISES[exercise]
    module = _solutions(spec.chapter)
    return None if module is None else getattr(module, spec.solution)


def show_solution(exercise: str):
    """Display the solution's source (for a folded cell under the exercise)."""
    from .source import show_source

    f = solution(exercise)
    if f is None:
        return Result(
            exercise,
            False,
            False,
            f"The solution of {exercise!r} is not included in this copy.",
            status=UNCHECKED,
        )
    return show_source(f)


def verify(chapter: str | None = None) -> list[Result]:
    """Run every registered exercise (of one chapter, or all) on its solution: what CI
    checks.
    """
    load_all()
    out = []
    for name, spec in EXERCISES.items():
        if chapter is None or spec.chapter == chapter:
            f = solution(name)
            if f is None:
                raise ModuleNotFoundError(
                    "no solutions/ folder: verify() runs in a checkout of the "
                    "repository (or set PTLM_SOLUTIONS to the folder)"
                )
            out.append(_check(name, f, None, None, None))
    return out


# ----------------------------------------------------------------------------------
# Conceptual questions


@dataclass(frozen=True)
class Question:
    """A multiple-choice question. A registered one has no ``answer``: its key is a
    salted hash (``exercise_sets/sealed.json``); a question made on the spot
    (``ask(..., answer_index=)``) has the index of its right choice.
    """

    name: str
    chapter: str
    question: str
    choices: tuple
    answer: int | None = None


QUESTIONS: dict[str, Question] = {}
# name -> the letters of the wrong answers given so far in this kernel, in order
GUESSES: dict[str, list[str]] = {}


def _guess_limit() -> int | None:  # wrong guesses before ask stops telling (None: any)
    return env_count("PTLM_ASK_LIMIT", " (wrong guesses per question), or unset")


guess_limit: int | None = _guess_limit()


def register_question(name, chapter, question, choices):
    QUESTIONS[name] = Question(name, chapter, question, tuple(choices))


def _from_solutions(name: str, table: str):
    if not _known(name, QUESTIONS):
        raise ValueError(
            f"question {name!r} is not registered; known: {sorted(QUESTIONS)}"
        )
    module = _solutions(QUESTIONS[name].chapter)
    return None if module is None else getattr(module, table, {}).get(name)


def explanation(name: str) -> str | None:
    """Why the right answer of a registered question is right (from the solutions,
    where this copy has them), or ``None``."""
    return _from_solutions(name, "EXPLANATIONS")


def answer(name: str) -> str | None:
    """The right letter of a registered question, from the solutions (``ANSWERS``), or
    ``None`` when this copy has no solutions (an instructor's and CI's helper)."""
    return _from_solutions(name, "ANSWERS")


def _letter(i: int) -> str:
    return "ABCDEFGHIJ"[i]


def ask(
    name: str,
    candidate=None,
    *,
    question: str | None = None,
    choices: Sequence[str] | None = None,
    answer_index: int | None = None,
    why: str | None = None,
) -> Result:
    """Check the reader's answer ``candidate`` (a letter, ``"B"``, or the text of a
    choice) to a question.

    A registered question (:data:`QUESTIONS`) needs only its name; any other needs
    ``question``, ``choices`` and ``answer_index`` (0-based), and may give ``why``.
    ``candidate`` ``None`` or ``...``: "not attempted" (the question and its choices are
    shown). The explanation is shown only once the answer is right, and comes from the
    solutions module (or, sealed, from the package) for a registered question.
    """
    return _record(
        "ask",
        _ask(name, candidate, question, choices, answer_index, why, limit=guess_limit),
    )


def _ask(name, candidate, question, choices, answer_index, why, limit) -> Result:
    if (
        question is None
        and _known(name, QUESTIONS)
        and choices is None
        and answer_index is None
    ):
        q = QUESTIONS[name]
        why = explanation(name) if why is None else why
    elif question is None or choices is None or answer_index is None:
        raise ValueError(
            f"question {name!r} is not registered (known: {sorted(QUESTIONS)}); "
            "give question, choices and answer_index"
        )
    else:
        q = Question(name, "", question, tuple(choices), answer_index)
    if len(q.choices) < 2 or not all(isinstance(c, str) for c in q.choices):
        raise ValueError(f"choices must be at least two strings, got {q.choices!r}")
    key = sealed_keys().get(name) if q.answer is None else None
    if q.answer is None and key is None:
        raise ValueError(
            f"question {name!r} has no sealed key (scripts/seal_answers.py)"
        )
    if q.answer is not None and (
        isinstance(q.answer, bool)
        or not isinstance(q.answer, int)
        or not 0 <= q.answer < len(q.choices)
    ):
        raise ValueError(
            f"answer_index must be an int in [0, {len(q.choices)}), got {q.answer!r}"
        )
    letters = [_letter(i) for i in range(len(q.choices))]
    shown = "\n".join([q.question, *(f"{l}. {c}" for l, c in zip(letters, q.choices))])
    if is_stub_value(candidate):
        return Result(
            name,
            False,
            False,
            f"⏳ {name}: not attempted yet. Set your answer to one of "
            f"{', '.join(repr(l) for l in letters)} and run the cell again.",
            details=shown,
        )
    if isinstance(candidate, str) and candidate.strip().upper() in letters:
        picked = letters.index(candidate.strip().upper())
    elif isinstance(candidate, str) and candidate.strip() in q.choices:
        picked = q.choices.index(candidate.strip())
    else:
        return Result(
            name,
            False,
            True,
            f"✗ {name}: answer with one of the letters "
            f"{', '.join(repr(l) for l in letters)}, got {candidate!r}.",
            details=shown,
        )
    wrong = GUESSES.setdefault(name, [])
    if limit is not None and len(wrong) >= limit:
        return Result(
            name,
            False,
            True,
            f"✗ {name}: no guesses left ({len(wrong)} wrong: "
            f"{', '.join(wrong)}); ask your instructor.",
            details=shown,
        )
    right = (
        picked == q.answer
        if q.answer is not None
        else opens(key, name, q.choices[picked])
    )
    if not right:
        if letters[picked] not in wrong:
            wrong.append(letters[picked])
        return Result(
            name,
            False,
            True,
            f"✗ {name}: {letters[picked]} is not it. Think again.",
            details=shown,
        )
    if why is None and key is not None:
        why = unseal(key, name, q.choices[picked])
    note = "" if why else " (The explanation is not included in this copy.)"
    before = f" (after {len(wrong)} wrong: {', '.join(wrong)})" if wrong else ""
    return Result(
        name,
        True,
        True,
        f"✓ {name}: {letters[picked]} is right{before}.{note}",
        details=why or "",
    )
