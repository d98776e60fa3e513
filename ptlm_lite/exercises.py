"""Exercises that check themselves.

A chapter's coding exercise is two cells: a stub the reader fills in (it raises
``NotImplementedError`` until then) and a check cell::

    def my_causal_mask(T):
        raise NotImplementedError

    check("causal mask", my_causal_mask)          # the cases and the reference live here, in EXERCISES

:func:`check` never stops the chapter: an unattempted stub (it raises
``NotImplementedError``, returns ``...`` or ``None``, or is ``...`` itself) is reported
as *not attempted*; a wrong answer says which case failed and why (a wrong value, an
exception, or an argument changed in place); a right one passes every case. The result
renders as a coloured note and is truthy only when right. The older form ``check(name,
candidate, reference, cases)`` still works, for checks a chapter builds itself.

The solutions are not in the notebooks: they live in
``ptlm_lite/solutions/<chapter>.py``, under the names the stubs use, and
``tests/test_exercises.py`` runs every one through the same :func:`check` and shows that
a plausible wrong answer fails. :func:`show_solution` displays one (the book folds that
cell away). An instructor can delete ``ptlm_lite/solutions/``: the checks still work,
since they compare with the package's own implementation, not with the solutions.

A conceptual question is checked by :func:`ask`: the question and its choices live in
:data:`QUESTIONS`; the explanation of the right answer lives in the solutions module and is shown
once the reader has it right::

    answer = None                                  # your answer: "A", "B", "C" or "D"
    ask("why divide by √d", answer)

Introduced in ``chapters/transformer.ipynb``; every chapter's exercises use it.
"""

from __future__ import annotations

import copy
import functools
import html
import importlib
import math
from dataclasses import dataclass, field
from typing import Callable, Iterable, Sequence

import torch

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
    "verify",
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
# Comparing answers


def _same(a, b, atol: float) -> bool:
    if isinstance(b, torch.Tensor):
        if not isinstance(a, torch.Tensor) or a.shape != b.shape:
            return False
        if b.dtype == torch.bool or not b.is_floating_point():
            return a.dtype == b.dtype and torch.equal(a, b)
        return a.is_floating_point() and torch.allclose(
            a.float(), b.float(), atol=atol, rtol=1e-4
        )
    if isinstance(b, float):
        return isinstance(a, (int, float)) and math.isclose(
            a, b, rel_tol=1e-4, abs_tol=atol
        )
    if isinstance(b, (tuple, list)):
        return (
            isinstance(a, (tuple, list))
            and len(a) == len(b)
            and all(_same(x, y, atol) for x, y in zip(a, b))
        )
    if isinstance(b, dict):
        return (
            isinstance(a, dict)
            and a.keys() == b.keys()
            and all(_same(a[k], b[k], atol) for k in b)
        )
    return a == b


def _unchanged(before, after) -> bool:
    """Whether every tensor in ``after`` still equals its copy in ``before`` (other
    objects: assumed so).
    """
    if isinstance(before, torch.Tensor):
        return (
            isinstance(after, torch.Tensor)
            and before.shape == after.shape
            and torch.equal(before, after)
        )
    if isinstance(before, (tuple, list)):
        return len(before) == len(after) and all(
            _unchanged(x, y) for x, y in zip(before, after)
        )
    if isinstance(before, dict):
        return all(_unchanged(v, after.get(k)) for k, v in before.items())
    return True


def _copy(x):
    try:
        return copy.deepcopy(x)
    # an argument that cannot be copied is shared (and then cannot be checked)
    except Exception:
        return x


def _show(x, short: bool = False) -> str:
    """A readable value; with ``short``, a tensor of more than 16 entries is only its
    shape and dtype.
    """
    if isinstance(x, torch.Tensor):
        if short and x.numel() > 9:
            return f"tensor{tuple(x.shape)} {str(x.dtype).replace('torch.', '')}"
        s = repr(x.tolist())
    elif isinstance(x, (tuple, list)):
        inner = ", ".join(_show(y, short) for y in x)
        s = (
            f"[{inner}]"
            if isinstance(x, list)
            else f"({inner}{',' if len(x) == 1 else ''})"
        )
    elif isinstance(x, torch.nn.Module):
        s = type(x).__name__
    elif isinstance(x, float):
        s = f"{x:.1f}" if x.is_integer() else f"{x:.6g}"
    else:
        s = repr(x)
    return s if len(s) < 200 else s[:200] + " ..."


def _difference(got, want, atol: float) -> str:
    """What differs between ``got`` and ``want``, in a few words."""
    if isinstance(want, torch.Tensor) and isinstance(got, torch.Tensor):
        if got.shape != want.shape:
            return f"expected shape {tuple(want.shape)}, got {tuple(got.shape)}"
        if want.dtype == torch.bool or not want.is_floating_point():
            if got.dtype != want.dtype:
                return f"expected dtype {want.dtype}, got {got.dtype}"
            bad = got != want
        elif not got.is_floating_point():
            return f"expected a floating-point tensor ({want.dtype}), got {got.dtype}"
        else:
            g, w = got.float(), want.float()
            bad = ~torch.isclose(g, w, atol=atol, rtol=1e-4, equal_nan=False) & ~(
                (g == w) & torch.isinf(w)
            )
        if want.numel() <= 9:
            return f"expected {_show(want)}, got {_show(got)}"
        where = tuple(int(i) for i in bad.nonzero()[0])
        return (
            f"{int(bad.sum())} of {want.numel()} entries differ; the first at {where}: "
            f"expected {_show(want[where].item())}, got {_show(got[where].item())}"
        )
    if isinstance(want, torch.Tensor) != isinstance(got, torch.Tensor) or (
        isinstance(want, float) and not isinstance(got, (int, float))
    ):
        return f"expected a {type(want).__name__} {_show(want, True)}, got a {type(got).__name__} {_show(got, True)}"
    if isinstance(want, dict) and isinstance(got, dict) and got.keys() == want.keys():
        # None: not measured
        bad = [
            k for k in want if not _same(got[k], want[k], atol) and got[k] is not None
        ]
        tol = (
            f" (fractions must match within {atol})"
            if any(isinstance(want[k], float) for k in bad)
            else ""
        )
        return (
            "; ".join(
                f"{k}: expected {_show(want[k])}, got {_show(got[k])}" for k in bad
            )
            + tol
        )
    if (
        isinstance(want, (tuple, list))
        and isinstance(got, (tuple, list))
        and len(got) == len(want)
        and type(got) is type(want)
    ):
        return "; ".join(
            f"item {i}: {_difference(g, w, atol)}"
            for i, (g, w) in enumerate(zip(got, want))
            if not _same(g, w, atol)
        )
    return f"expected {_show(want)}, got {_show(got)}"


def _is_stub_value(x) -> bool:
    return x is None or x is Ellipsis


# ----------------------------------------------------------------------------------
# The exercises of the book: name -> reference, cases, and where the solution lives


@dataclass(frozen=True)
class Exercise:
    """A coding exercise: ``check(name, candidate)`` compares ``call(candidate, *case)``
    with ``call(reference, *case)`` on every case (``call`` defaults to plain
    ``f(*case)``).
    """

    name: str
    # chapters/<chapter>.ipynb and ptlm_lite/solutions/<chapter>.py
    chapter: str
    solution: str  # the stub's name, e.g. "my_causal_mask"
    # the package's own implementation (not the solution)
    reference: Callable
    cases: Callable[[], list]  # built on demand, from fixed seeds
    atol: float = 1e-5
    # how a function is applied to a case (e.g. statistics of a sampler)
    call: Callable | None = None


EXERCISES: dict[str, Exercise] = {}


def _exercise(name, chapter, solution, atol=1e-5, call=None):
    def register(make):  # make() -> (reference, cases); built once, on first use
        make = functools.lru_cache(maxsize=None)(make)

        def reference(*args, **kwargs):
            return make()[0](*args, **kwargs)

        EXERCISES[name] = Exercise(
            name, chapter, solution, reference, lambda: list(make()[1]), atol, call
        )
        return make

    return register


# --- chapters/transformer.ipynb


@_exercise("causal mask", "transformer", "my_causal_mask")
def _causal_mask():
    from . import masks

    return masks.causal_mask, [(1,), (2,), (5,), (9,)]


@_exercise("attention weights", "transformer", "my_attention_weights")
def _attention_weights():
    from . import masks
    from .attention import attention

    # q (Tq, d), k (Tk, d) -> (Tq, Tk), through the package's attention
    def reference(q, k, mask):
        return attention(
            q[None, None], k[None, None], k[None, None], mask=mask, return_weights=True
        )[1][0, 0]

    g = torch.Generator().manual_seed(1)
    cases = [
        (
            torch.randn(4, 8, generator=g),
            torch.randn(4, 8, generator=g),
            masks.causal_mask(4),
        ),
        (
            torch.randn(3, 16, generator=g),
            torch.randn(5, 16, generator=g),
            torch.ones(3, 5, dtype=torch.bool),
        ),
        (
            torch.randn(5, 4, generator=g),
            torch.randn(5, 4, generator=g),
            masks.prefix_mask(5, 2),
        ),
    ]
    return reference, cases


# --- chapters/gpt.ipynb


@_exercise("top-k filtering", "gpt", "my_top_k")
def _top_k():
    from .generate import filter_logits

    g = torch.Generator().manual_seed(0)
    cases = [(torch.randn(2, 10, generator=g), k) for k in (1, 3, 10)]
    return (lambda logits, k: filter_logits(logits, top_k=k)), cases


@_exercise("cached causal mask", "gpt", "my_cache_mask")
def _cache_mask():
    from . import masks

    return (lambda T, past: masks.causal_mask(T, memory=past)), [
        (1, 0),
        (1, 5),
        (3, 4),
        (4, 0),
    ]


# --- chapters/bert.ipynb

# as the chapter's WordPiece: ids 0..6 are special
BERT_VOCAB, BERT_MASK, BERT_FIRST_ORDINARY = 1024, 4, 7


def _replacement_stats(replace, seed):
    """What a replacement function did to the 15% selected of 160,000 positions: the
    fraction of the selected that became [MASK], the fraction that became another
    ordinary token, and checks that nothing else moved. Fractions are compared within
    0.015 (the sampling noise is about 0.003).
    """
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(BERT_FIRST_ORDINARY, BERT_VOCAB, (400, 400), generator=g)
    sel = torch.rand(ids.shape, generator=g) < 0.15
    given = ids.clone()
    out = replace(given, sel, g, mask_id=BERT_MASK, vocab_size=BERT_VOCAB)
    if _is_stub_value(out):
        return out
    stats = dict.fromkeys(
        [
            "output",
            "fraction [MASK]",
            "fraction random",
            "unselected unchanged",
            "random tokens are ordinary",
            "ids left untouched",
        ]
    )
    stats["output"] = (
        f"tensor{tuple(out.shape)} {str(out.dtype).replace('torch.', '')}"
        if isinstance(out, torch.Tensor)
        else type(out).__name__
    )
    if not isinstance(out, torch.Tensor) or out.shape != ids.shape:
        # differs in "output" (and the rest)
        return stats
    n = int(sel.sum())
    random = (out != ids) & (out != BERT_MASK)
    return {
        **stats,
        "fraction [MASK]": int((out[sel] == BERT_MASK).sum()) / n,
        "fraction random": int(random[sel].sum()) / n,
        "unselected unchanged": bool((out[~sel] == ids[~sel]).all()),
        "random tokens are ordinary": bool((out[random] >= BERT_FIRST_ORDINARY).all()),
        "ids left untouched": bool(torch.equal(given, ids)),
    }


@_exercise(
    "80/10/10 replacement", "bert", "my_replace", atol=0.015, call=_replacement_stats
)
def _replace():
    def reference(ids, selected, generator, mask_id, vocab_size):
        from .corrupt import replace_selected

        return replace_selected(
            ids,
            selected,
            mask_id=mask_id,
            vocab_size=vocab_size,
            generator=generator,
            random_ids=range(BERT_FIRST_ORDINARY, vocab_size),
        ).inputs

    return reference, [(0,), (1,), (2,)]


@_exercise("best span", "bert", "my_best_span")
def _best_span():
    from .bert import best_span

    g = torch.Generator().manual_seed(0)
    return (
        (lambda s, e, L: best_span(s, e, L)),
        [
            (torch.randn(3, 12, generator=g), torch.randn(3, 12, generator=g), L)
            for L in (1, 3, 12)
        ],
    )


# --- chapters/gpt2.ipynb


@_exercise("GPT-2 parameter count", "gpt2", "my_gpt2_params")
def _gpt2_params():
    from .config import preset
    from .gpt import GPT
    from .train import count_parameters

    def counted(vocab_size, max_len, d_model, n_layer, d_ff):
        cfg = preset(
            "gpt2-tiny",
            vocab_size=vocab_size,
            max_len=max_len,
            d_model=d_model,
            n_layer=n_layer,
            d_ff=d_ff,
        )
        with torch.device("meta"):
            return count_parameters(GPT(cfg))

    return counted, [
        (50257, 1024, 768, 12, 3072),
        (512, 128, 64, 2, 256),
        (100, 16, 32, 5, 64),
    ]


@_exercise("pre-LN sublayer", "gpt2", "my_pre_ln")
def _pre_ln():
    # fixed weights without touching the caller's random state
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        ln, lin = torch.nn.LayerNorm(8), torch.nn.Linear(8, 8)
        (
            torch.nn.init.normal_(ln.weight, 1.0, 0.5),
            torch.nn.init.normal_(ln.bias, 0.0, 0.5),
        )
        cases = [
            (torch.randn(2, 3, 8), ln, lin),
            (torch.randn(1, 5, 8), ln, torch.tanh),
        ]
    return (lambda x, norm, f: x + f(norm(x))), cases


# --- chapters/gpt3.ipynb


def _gpt3_task():
    from .icl import SymbolTasks

    return SymbolTasks(n_inputs=8, n_labels=8)  # the chapter's T


@_exercise("k-shot prompt", "gpt3", "my_prompt")
def _prompt():
    return _gpt3_task().prompt, [([], 3), ([(0, 1)], 0), ([(2, 5), (7, 7), (2, 5)], 4)]


@_exercise("accuracy at the query", "gpt3", "my_accuracy")
def _accuracy():
    T = _gpt3_task()

    def reference(logits, x, y):
        return (T.label_logits(logits, x).argmax(-1) == y).float().mean().item()

    g = torch.Generator().manual_seed(3)
    return reference, [
        (
            torch.randn(n, T.vocab_size, generator=g),
            torch.randint(8, (n,), generator=g),
            torch.randint(8, (n,), generator=g),
        )
        for n in (1, 5, 64)
    ]


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
    if _is_stub_value(candidate):
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
        want = call(reference, *_copy(args))
        given = _copy(args)
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
                f"{_show(args, True)}",
            )
        if _is_stub_value(got) and not _is_stub_value(want):
            return _not_attempted(
                exercise,
                "it returns `...`"
                if got is Ellipsis
                else "it returns None; if you wrote code, is a `return` missing?",
            )
        if not _same(got, want, atol):
            return Result(
                exercise,
                False,
                True,
                f"✗ {exercise}: wrong for arguments {_show(args, True)}: "
                f"{_difference(got, want, atol)}",
            )
        if not _unchanged(args, given):
            return Result(
                exercise,
                False,
                True,
                f"✗ {exercise}: right value, but it changed its arguments in "
                f"place for "
                f"{_show(args, True)}; "
                "work on a copy (e.g. `x.clone()`) or use out-of-place "
                "operations",
            )
    return Result(exercise, True, True, f"✓ {exercise}: all {len(cases)} cases pass.")


# ----------------------------------------------------------------------------------
# Solutions (ptlm_lite/solutions/<chapter>.py, which an instructor may delete)


def load_all() -> None:
    """Register the exercises and questions of every chapter in
    :mod:`ptlm_lite.exercise_sets` (the first five chapters' are in this module)."""
    import pkgutil

    from . import exercise_sets

    for m in pkgutil.iter_modules(exercise_sets.__path__):
        importlib.import_module(f"ptlm_lite.exercise_sets.{m.name}")


def _known(name: str, registry: dict) -> bool:
    if name not in registry:
        load_all()
    return name in registry


def _solutions(chapter: str):
    try:
        return importlib.import_module(f"ptlm_lite.solutions.{chapter}")
    except ModuleNotFoundError as e:
        if e.name in ("ptlm_lite.solutions", f"ptlm_lite.solutions.{chapter}"):
            return None
        raise


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
                    "ptlm_lite.solutions is not installed in this copy"
                )
            out.append(check(name, f))
    return out


# ----------------------------------------------------------------------------------
# Conceptual questions


@dataclass(frozen=True)
class Question:
    """A multiple-choice question; the explanation of the answer lives in the solutions
    module.
    """

    name: str
    chapter: str
    question: str
    choices: tuple
    # index into choices (an auto-checker reveals it to anyone who tries them all
    # anyway)
    answer: int


QUESTIONS: dict[str, Question] = {}


def _question(name, chapter, question, choices, answer):
    QUESTIONS[name] = Question(name, chapter, question, tuple(choices), answer)


_question(
    "why divide by √d",
    "transformer",
    "Why are the attention scores q·k divided by √d before the softmax?",
    [
        "It makes the attention scores cheaper to compute when d is large.",
        "It keeps the variance of the scores near 1 whatever d, so the softmax does "
        "not saturate.",
        "It makes each row of attention weights sum to one, like a distribution.",
        "It stops a query from attending to positions later than its own.",
    ],
    1,
)
_question(
    "what teacher forcing feeds",
    "transformer",
    "When the date model trains with teacher forcing, what does the decoder read "
    "at target position t?",
    [
        "Its own prediction from position t − 1, as it will at test time.",
        "The true target characters before position t: the target shifted one place "
        "right behind <bos>.",
        "The whole true target, the character at t included; only the loss hides it.",
        "Nothing but the encoder's output: the target enters through the loss alone.",
    ],
    1,
)
_question(
    "why a causal mask",
    "gpt",
    "Why does GPT's pre-training use a causal mask?",
    [
        "It halves the memory, since half of the attention scores need not be stored.",
        "It stops the model from attending to the padding at the end of a batch.",
        "Each position predicts the next token, so it must not see that token or "
        "later ones.",
        "The fine-tuning tasks are read left to right, so pre-training must match "
        "them.",
    ],
    2,
)
_question(
    "what a task must need",
    "gpt",
    "An earlier version of the GPT chapter fine-tuned on sentences such as "
    '"Pibrou is a small city in '
    'Semoria.", labelled person, city, country or organisation. Why could that '
    "task not test the "
    "claim that pre-training helps?",
    [
        "The sentences are too short for attention to matter, so any model does "
        "equally well.",
        "The kind word is in the input, so weights trained on the labelled examples "
        "alone learn it too.",
        "Accuracy cannot be compared with chance when there are four classes.",
        "A single sentence has no [delim] token, so GPT's input transformation does "
        "not apply.",
    ],
    1,
)
_question(
    "why not always [MASK]",
    "bert",
    "Why does BERT turn only 80% of the selected tokens into [MASK] (10% random, "
    "10% unchanged)?",
    [
        "[MASK] never appears in fine-tuning, so every real token must be represented "
        "well too.",
        "Replacing fewer tokens by [MASK] makes each pre-training step faster to "
        "compute.",
        "Masking every selected token would leave too little context to predict "
        "them from.",
        "Random and unchanged tokens make next-sentence prediction harder to learn.",
    ],
    0,
)
_question(
    "what pre-LN changes",
    "gpt2",
    "What does GPT-2's pre-LN change compared with the original post-LN Transformer?",
    [
        "It removes LayerNorm from the blocks and keeps a single one at the very end.",
        "It normalises after adding the residual, computing norm(x + f(x)).",
        "Each sublayer reads norm(x) and adds its output to x, so the residual sum "
        "is never normalised.",
        "It moves every LayerNorm into the feed-forward sublayers only.",
    ],
    2,
)
_question(
    "a zero-shot score at the majority share",
    "gpt2",
    "A zero-shot classifier scores 53% accuracy on a four-class test set in "
    "which 53% of the documents "
    "are about people. What can you conclude?",
    [
        "The model has learnt about half of the task.",
        "Nothing yet: always answering 'person' also scores 53%; look at the "
        "per-class accuracy first.",
        "It beats chance (25% for four classes), so zero-shot transfer shows up.",
        "It needs calibration, which is certain to raise its accuracy.",
    ],
    1,
)
_question(
    "why no weight stores the answer",
    "gpt3",
    "In this chapter's in-context tasks, why can no weight of the model store "
    "the answers?",
    [
        "The model is too small to memorise all the mappings it is trained on.",
        "The mapping x → y is drawn afresh for every sequence, so only the context "
        "tells it.",
        "The answer tokens are left out of the loss during training.",
        "The embeddings are frozen, so the answers cannot be stored in them.",
    ],
    1,
)
_question(
    "what recall accuracy measures",
    "gpt3",
    "On the recall family (a random mapping per sequence), 8-shot accuracy "
    "equals the share of queries "
    "already shown among the demonstrations, plus chance on the others. What "
    "does it measure?",
    [
        "How well the model infers the mapping's rule from the demonstrations.",
        "Copying: a random mapping gives no clue to an unseen query, so this is the "
        "ceiling of any reader.",
        "How many of the mappings the model memorised during training.",
        "Nothing: accuracy above chance at 8 shots is noise.",
    ],
    1,
)


def explanation(name: str) -> str | None:
    """Why the right answer of a registered question is right (from the solutions), or
    ``None``.
    """
    if not _known(name, QUESTIONS):
        raise ValueError(
            f"question {name!r} is not registered; known: {sorted(QUESTIONS)}"
        )
    module = _solutions(QUESTIONS[name].chapter)
    return None if module is None else getattr(module, "EXPLANATIONS", {}).get(name)


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
    solutions module for a registered question.
    """
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
    if (
        isinstance(q.answer, bool)
        or not isinstance(q.answer, int)
        or not 0 <= q.answer < len(q.choices)
    ):
        raise ValueError(
            f"answer_index must be an int in [0, {len(q.choices)}), got {q.answer!r}"
        )
    letters = [_letter(i) for i in range(len(q.choices))]
    shown = "\n".join([q.question, *(f"{l}. {c}" for l, c in zip(letters, q.choices))])
    if _is_stub_value(candidate):
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
    if picked != q.answer:
        return Result(
            name,
            False,
            True,
            f"✗ {name}: {letters[picked]} is not it. Think again.",
            details=shown,
        )
    note = "" if why else " (The explanation is not included in this copy.)"
    return Result(
        name,
        True,
        True,
        f"✓ {name}: {letters[picked]} is right.{note}",
        details=why or "",
    )
