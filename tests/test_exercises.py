"""Exercises that check themselves (ptlm_lite.exercises) and their solutions
(solutions/ in the repository, outside the package).

Every registered exercise: its solution passes the chapter's check, a stub is "not
attempted", and plausible wrong answers are rejected, so the check is tight enough to
mean something.
"""

import json
import math
import pathlib
import sys

import pytest
import torch

from ptlm_lite import exercises as E
from ptlm_lite.exercises import NOT_ATTEMPTED, RIGHT, WRONG, ask, check
from ptlm_lite.exercise_sets.gpt3 import _gpt3_task

ROOT = pathlib.Path(__file__).resolve().parents[1]
E.load_all()  # the later chapters' exercise sets (ptlm_lite/exercise_sets/)


# --- every solution passes its check; every exercise is found in its chapter


@pytest.mark.parametrize("name", sorted(E.EXERCISES))
def test_solution_passes_its_check(name):
    r = check(name, E.solution(name))
    assert r.status == RIGHT and r, r.message


def test_verify_runs_every_exercise():
    results = E.verify()
    assert len(results) == len(E.EXERCISES) and all(results)
    assert len(E.verify("transformer")) == 2
    assert len(E.verify("spanbert")) == 2 and len(E.verify("transformer_xl")) == 2


@pytest.mark.parametrize("name", sorted(E.EXERCISES))
def test_exercise_belongs_to_a_chapter(name):
    spec = E.EXERCISES[name]
    cells = json.loads((ROOT / "chapters" / f"{spec.chapter}.ipynb").read_text())[
        "cells"
    ]
    text = "".join("".join(c["source"]) for c in cells)
    assert f'"{name}"' in text, (
        f"chapters/{spec.chapter}.ipynb no longer has the exercise {name!r}"
    )
    assert f"def {spec.solution}(" in text


# --- plausible wrong answers are rejected (one list per exercise)


def _causal_strict(T):
    i = torch.arange(T)
    return i[None, :] < i[:, None]  # forgets the diagonal


def _causal_upper(T):
    i = torch.arange(T)
    # transposed: sees the future
    return i[None, :] >= i[:, None]


def _causal_float(T):
    return torch.ones(T, T).tril()  # 1.0/0.0, not a bool mask


def _att_unscaled(q, k, mask):
    return (q @ k.T).masked_fill(~mask, float("-inf")).softmax(-1)


def _att_polarity(q, k, mask):
    return (
        (q @ k.T / math.sqrt(q.shape[-1])).masked_fill(mask, float("-inf")).softmax(-1)
    )


def _att_wrong_axis(q, k, mask):
    return (
        (q @ k.T / math.sqrt(q.shape[-1])).masked_fill(~mask, float("-inf")).softmax(0)
    )


def _att_mask_after_softmax(q, k, mask):
    return (q @ k.T / math.sqrt(q.shape[-1])).softmax(-1) * mask


def _topk_inclusive(logits, k):
    kth = logits.topk(k, dim=-1).values[:, -1:]
    return logits.masked_fill(logits <= kth, float("-inf"))


def _topk_zero(logits, k):
    kth = logits.topk(k, dim=-1).values[:, -1:]
    return logits.masked_fill(logits < kth, 0.0)


def _topk_in_place(logits, k):
    kth = logits.topk(k, dim=-1).values[:, -1:]
    # right values, but the caller's logits change
    logits[logits < kth] = float("-inf")
    return logits


def _cache_ignores_past(T, past):
    i = torch.arange(T)
    return i[None, :] <= i[:, None]


def _cache_tril_no_offset(T, past):
    return torch.ones(T, past + T, dtype=torch.bool).tril()


def _cache_strict(T, past):
    return torch.arange(past + T)[None, :] < past + torch.arange(T)[:, None]


def _replace_with(p_mask, p_random, low=7, clone=True):
    def replace(ids, selected, generator, mask_id, vocab_size):
        u = torch.rand(ids.shape, generator=generator)
        random_tokens = torch.randint(low, vocab_size, ids.shape, generator=generator)
        out = ids.clone() if clone else ids
        out[selected & (u < p_mask)] = mask_id
        swap = selected & (u >= p_mask) & (u < p_mask + p_random)
        out[swap] = random_tokens[swap]
        return out

    return replace


def _replace_everywhere(ids, selected, generator, mask_id, vocab_size):
    u = torch.rand(ids.shape, generator=generator)
    out = ids.clone()
    out[u < 0.15 * 0.8] = mask_id  # ignores `selected`
    return out


def _span_separate(s, e, L):
    # best start and best end, not the best pair
    return s.argmax(-1), e.argmax(-1)


def _span_off_by_one(s, e, L):
    T = s.shape[1]
    i, j = torch.arange(T)[:, None], torch.arange(T)[None, :]
    ok = (j >= i) & (j <= i + L)  # one token too long
    best = (
        (s[:, :, None] + e[:, None, :])
        .masked_fill(~ok, float("-inf"))
        .flatten(1)
        .argmax(-1)
    )
    return best // T, best % T


def _span_end_before_start(s, e, L):
    T = s.shape[1]
    i, j = torch.arange(T)[:, None], torch.arange(T)[None, :]
    # lets the end come before the start
    ok = (j - i).abs() < L
    best = (
        (s[:, :, None] + e[:, None, :])
        .masked_fill(~ok, float("-inf"))
        .flatten(1)
        .argmax(-1)
    )
    return best // T, best % T


def _params(final_ln=True, biases=True, untied=False, lns=2):
    def count(V, max_len, D, n_layer, d_ff):
        b = 1 if biases else 0
        block = (
            4 * (D * D + b * D)
            + (D * d_ff + b * d_ff)
            + (d_ff * D + b * D)
            + lns * 2 * D
        )
        return (
            V * D
            + max_len * D
            + n_layer * block
            + (2 * D if final_ln else 0)
            + (V * D if untied else 0)
        )

    return count


def _prompt_no_bos(demos, query):
    T = _gpt3_task()
    ids = []
    for x, y in demos:
        ids += [int(T.query_token(x)), int(T.answer_token(x, y))]
    return torch.tensor(ids + [int(T.query_token(query))])


def _prompt_answer_first(demos, query):
    T = _gpt3_task()
    ids = [T.BOS]
    for x, y in demos:
        ids += [int(T.answer_token(x, y)), int(T.query_token(x))]
    return torch.tensor(ids + [int(T.query_token(query))])


def _prompt_raw_symbols(demos, query):
    ids = [0]
    for x, y in demos:
        ids += [x, y]  # symbol indices, not tokens
    return torch.tensor(ids + [query])


def _prompt_list(demos, query):
    T = _gpt3_task()
    ids = [T.BOS]
    for x, y in demos:
        ids += [int(T.query_token(x)), int(T.answer_token(x, y))]
    return ids + [int(T.query_token(query))]  # a list, not a tensor


def _accuracy_whole_vocab(logits, x, y):
    # argmax over every token, not the M answers
    return (logits.argmax(-1) == y).float().mean().item()


def _accuracy_label_index(logits, x, y):
    # the first M logits, not the answers to x
    return (logits[:, :8].argmax(-1) == y).float().mean().item()


def _accuracy_tensor(logits, x, y):
    T = _gpt3_task()
    # a tensor, not a Python float
    return (T.label_logits(logits, x).argmax(-1) == y).float().mean()


WRONG_ANSWERS = {
    "causal mask": [_causal_strict, _causal_upper, _causal_float],
    "attention weights": [
        _att_unscaled,
        _att_polarity,
        _att_wrong_axis,
        _att_mask_after_softmax,
    ],
    "top-k filtering": [_topk_inclusive, _topk_zero, _topk_in_place],
    "cached causal mask": [_cache_ignores_past, _cache_tril_no_offset, _cache_strict],
    "80/10/10 replacement": [
        _replace_with(0.8, 0.2),
        _replace_with(0.75, 0.15),
        _replace_with(0.85, 0.1),
        _replace_with(1.0, 0.0),
        _replace_with(0.8, 0.1, low=0),
        _replace_with(0.8, 0.1, clone=False),
        _replace_everywhere,
    ],
    "best span": [_span_separate, _span_off_by_one, _span_end_before_start],
    "GPT-2 parameter count": [
        _params(final_ln=False),
        _params(biases=False),
        _params(untied=True),
        _params(lns=1),
    ],
    "pre-LN sublayer": [
        lambda x, norm, f: norm(x + f(x)),
        lambda x, norm, f: f(norm(x)),
        lambda x, norm, f: x + norm(f(x)),
    ],
    "k-shot prompt": [
        _prompt_no_bos,
        _prompt_answer_first,
        _prompt_raw_symbols,
        _prompt_list,
    ],
    "accuracy at the query": [
        _accuracy_whole_vocab,
        _accuracy_label_index,
        _accuracy_tensor,
    ],
}


# The first five chapters keep their wrong answers above; every later chapter keeps them
# in tests/test_<chapter>.py as WRONG_ANSWERS, beside its other tests.
CORE = {"transformer", "gpt", "gpt2", "gpt3", "bert"}


def _chapter_wrong_answers(chapter: str) -> dict:
    """``WRONG_ANSWERS`` of ``tests/test_<chapter>.py``, where a later chapter keeps
    its plausible wrong answers (and tests that they are rejected)."""
    import importlib.util

    path = ROOT / "tests" / f"test_{chapter}.py"
    assert path.exists(), f"chapter {chapter!r} has exercises but no {path.name}"
    spec = importlib.util.spec_from_file_location(f"_wrong_{chapter}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, "WRONG_ANSWERS", {})


def test_every_exercise_has_wrong_answers():
    core = {n for n, e in E.EXERCISES.items() if e.chapter in CORE}
    assert set(WRONG_ANSWERS) == core
    for chapter in {e.chapter for e in E.EXERCISES.values()} - CORE:
        mine = {n for n, e in E.EXERCISES.items() if e.chapter == chapter}
        wrong = _chapter_wrong_answers(chapter)
        assert mine <= set(wrong) and all(wrong[n] for n in mine), (
            f"tests/test_{chapter}.py needs plausible wrong answers for "
            f"{sorted(mine - set(wrong))}"
        )


ALL_WRONG_ANSWERS = {
    **WRONG_ANSWERS,
    **{
        name: answers
        for chapter in sorted({e.chapter for e in E.EXERCISES.values()} - CORE)
        for name, answers in _chapter_wrong_answers(chapter).items()
    },
}


@pytest.mark.parametrize(
    "name, i",
    [(n, i) for n, fs in ALL_WRONG_ANSWERS.items() for i in range(len(fs))],
)
def test_plausible_wrong_answer_is_rejected(name, i):
    # every chapter's, so that a chapter's tests need not repeat this loop
    r = check(name, ALL_WRONG_ANSWERS[name][i])
    assert r.status == WRONG and not r and r.attempted, r.message
    assert r.message.startswith(f"✗ {name}:")


def test_changing_an_argument_in_place_is_named():
    r = check("top-k filtering", _topk_in_place)
    assert "changed its arguments in place" in r.message


def test_right_answer_written_differently_passes():
    def top_k(logits, k):  # sort instead of topk
        kth = logits.sort(-1, descending=True).values[:, k - 1 : k]
        return torch.where(
            logits >= kth, logits, torch.full_like(logits, float("-inf"))
        )

    assert check("top-k filtering", top_k)

    # other random calls, same distribution
    def replace(ids, selected, generator, mask_id, vocab_size):
        out = ids.clone()
        r = torch.rand(ids.shape, generator=generator)
        out[selected & (r >= 0.2)] = mask_id
        swap = selected & (r < 0.1)
        out[swap] = torch.randint(
            7, vocab_size, (int(swap.sum()),), generator=generator
        )
        return out

    assert check("80/10/10 replacement", replace)


# --- stubs are "not attempted", never an error


def _raises(*args, **kwargs):
    raise NotImplementedError


def _returns_ellipsis(*args, **kwargs):
    return ...


def _returns_none(*args, **kwargs):
    pass


@pytest.mark.parametrize("stub", [_raises, _returns_ellipsis, _returns_none, ..., None])
@pytest.mark.parametrize("name", sorted(E.EXERCISES))
def test_stub_is_not_attempted(name, stub):
    r = check(name, stub)
    assert r.status == NOT_ATTEMPTED and not r.attempted and not r
    assert "not attempted" in r.message and "not attempted" in r._repr_html_()


def test_missing_return_gets_a_hint():
    assert "`return` missing" in check("causal mask", _returns_none).message


def test_a_crash_is_reported_not_raised():
    def broken(T):
        return torch.arange(T)[None, :] <= torch.arange(T + 1)[:, None, None].bad

    r = check("causal mask", broken)
    assert (
        r.status == WRONG
        and "raised AttributeError" in r.message
        and "for arguments (1,)" in r.message
    )


def test_an_array_for_a_number_is_wrong_not_a_crash():
    """The reference returns a bool, an int or a float; an answer that returns a tensor
    or an array of several values made `==` raise ("Boolean value of Tensor ... is
    ambiguous") outside the check's try, stopping the chapter and the grader."""
    import numpy as np

    for name, answer in (
        ("is left-to-right", lambda *a, **k: torch.tensor([True, True])),
        ("GPT-2 parameter count", lambda *a, **k: np.array([1, 2])),
        ("GPT-2 parameter count", lambda *a, **k: [1, 2]),
    ):
        r = check(name, answer)
        assert r.status == WRONG and r.attempted and "expected" in r.message, r
    from ptlm_lite.exercise_compare import same

    # a 0-d tensor is an int's or a bool's value (((D & off) == tril).all()), but not
    # a float's: "accuracy at the query" asks for .item()
    assert same(torch.tensor(True), True, 0) and same(torch.tensor(5), 5, 0)
    assert same(np.int64(5), 5, 0) and same(np.float32(0.5), 0.5, 1e-6)
    assert not same(torch.tensor(0.5), 0.5, 1e-6) and not same(torch.tensor(6), 5, 0)


# --- the older call form, and bad calls


def test_explicit_reference_and_cases_still_work():
    from ptlm_lite import masks

    sol = E.solution("causal mask")
    assert check("causal mask", sol, masks.causal_mask, [(1,), (2,), (5,), (9,)])
    r = check("causal mask", _causal_strict, masks.causal_mask, [(1,), (2,)])
    assert r.status == WRONG and "expected [[True]], got [[False]]" in r.message
    assert check("custom", _raises, masks.causal_mask, [3]).status == NOT_ATTEMPTED
    assert check("double", lambda x: 2 * x, lambda x: x + x, [(1.5,), (2,)])
    assert not check("double", lambda x: 2 * x + 1e-3, lambda x: x + x, [(1.5,)])


def test_bad_calls_raise():
    with pytest.raises(ValueError, match="not registered"):
        check("no such exercise", _raises)
    with pytest.raises(TypeError, match="give both reference and cases"):
        check("causal mask", _raises, reference=lambda T: T)
    with pytest.raises(TypeError, match="must be functions"):
        check("causal mask", 3)
    with pytest.raises(ValueError, match="at least one tuple"):
        check("x", _raises, lambda: 0, [])


def test_check_leaves_the_global_random_state_alone():
    torch.manual_seed(123)
    want = torch.rand(3)
    torch.manual_seed(123)
    for name in E.EXERCISES:
        E.EXERCISES[name].cases()
        check(name, E.solution(name))
    assert torch.equal(torch.rand(3), want)


# --- questions


@pytest.mark.parametrize("name", sorted(E.QUESTIONS))
def test_question_right_wrong_and_not_attempted(name):
    q = E.QUESTIONS[name]
    right = E.answer(name)
    E.GUESSES.pop(name, None)
    assert ask(name, None).status == NOT_ATTEMPTED
    shown = repr(ask(name, ...))
    assert q.question in shown and all(c in shown for c in q.choices)
    r = ask(name, right.lower())
    assert r.status == RIGHT and r and E.explanation(name) in repr(r)
    # the text of the choice works too
    assert ask(name, q.choices["ABCD".index(right)]).status == RIGHT
    for wrong in "ABCD".replace(right, ""):
        w = ask(name, wrong)
        assert w.status == WRONG and not w and E.explanation(name) not in repr(w)
    assert (
        ask(name, "E").status == WRONG
        and "answer with one of the letters" in ask(name, "E").message
    )


@pytest.mark.parametrize("name", sorted(E.QUESTIONS))
def test_every_question_has_an_explanation_in_the_solutions(name):
    why = E.explanation(name)
    assert isinstance(why, str) and len(why) > 80


def test_question_defined_in_the_notebook():
    kw = dict(
        question="Which mask lets every token see every other?",
        choices=["causal", "full", "prefix"],
        answer_index=1,
        why="Full attention is BERT's.",
    )
    assert ask("masks", None, **kw).status == NOT_ATTEMPTED
    assert ask("masks", "B", **kw).status == RIGHT and "BERT" in repr(
        ask("masks", "B", **kw)
    )
    assert ask("masks", "C", **kw).status == WRONG
    with pytest.raises(ValueError, match="give question, choices and answer_index"):
        ask("unknown question", "A")
    with pytest.raises(ValueError, match="answer_index must be an int"):
        ask("masks", "A", **{**kw, "answer_index": 3})


# --- a copy without solutions/ (an installed package: tests/test_install.py)


@pytest.fixture
def no_solutions(monkeypatch, tmp_path):
    right = {n: E.answer(n) for n in E.QUESTIONS}
    monkeypatch.setenv("PTLM_SOLUTIONS", str(tmp_path))  # an empty folder
    for name in [n for n in sys.modules if n.startswith("ptlm_solutions.")]:
        monkeypatch.delitem(sys.modules, name)
    return right


def test_checks_and_questions_work_without_solutions(no_solutions):
    assert E.solution("causal mask") is None and E.answer("why divide by √d") is None
    assert "not included" in repr(E.show_solution("causal mask"))
    assert check("causal mask", _causal_strict).status == WRONG
    assert check("causal mask", _raises).status == NOT_ATTEMPTED
    E.GUESSES.pop("why divide by √d", None)
    r = ask("why divide by √d", no_solutions["why divide by √d"])
    # the explanation comes sealed with the answer: shown without the solutions
    assert r.status == RIGHT and "variance" in repr(r) and "not included" not in repr(r)
    with pytest.raises(ModuleNotFoundError):
        E.verify()


def test_answer_keys_are_sealed_and_match_the_solutions():
    """The package holds no answer: a salted hash per question, which the solutions'
    answer opens (scripts/seal_answers.py --check) and no other choice does."""
    from ptlm_lite.exercise_keys import opens, sealed_keys

    seal = _script("seal_answers")
    assert seal.problems() == []
    keys = sealed_keys()
    assert set(keys) == set(E.QUESTIONS)
    for name, q in E.QUESTIONS.items():
        assert q.answer is None  # nothing but the key knows it
        right = "ABCD".index(E.answer(name))
        assert [opens(keys[name], name, c) for c in q.choices] == [
            i == right for i in range(len(q.choices))
        ]
    # the sources of the exercise sets name no answer: no index, no letter argument
    sources = (ROOT / "ptlm_lite" / "exercise_sets").glob("*.py")
    assert not any("answer=" in f.read_text() for f in sources)


def test_ask_records_guesses_and_can_limit_them(monkeypatch):
    name = "why divide by √d"
    right = E.answer(name)
    wrong = [x for x in "ABCD" if x != right]
    E.GUESSES.pop(name, None)
    assert ask(name, wrong[0]).status == WRONG and ask(name, wrong[0]).status == WRONG
    assert E.GUESSES[name] == [wrong[0]]  # the same wrong answer counts once
    r = ask(name, right)
    assert r and f"after 1 wrong: {wrong[0]}" in r.message
    # with a limit, ask stops telling right from wrong once it is used up
    monkeypatch.setattr(E, "guess_limit", 2)
    E.GUESSES.pop(name, None)
    assert ask(name, wrong[0]).status == WRONG and ask(name, wrong[1]).status == WRONG
    spent = ask(name, right)
    assert not spent and "no guesses left" in spent.message
    E.GUESSES.pop(name, None)


def test_grade_log_records_every_result(monkeypatch, tmp_path):
    log = tmp_path / "log.jsonl"
    monkeypatch.setenv("PTLM_GRADE_LOG", str(log))
    E.GUESSES.pop("why divide by √d", None)
    check("causal mask", _causal_strict)
    check("causal mask", E.solution("causal mask"))
    ask("why divide by √d", None)
    lines = [json.loads(x) for x in log.read_text().splitlines()]
    assert [(x["kind"], x["name"], x["status"]) for x in lines] == [
        ("check", "causal mask", WRONG),
        ("check", "causal mask", RIGHT),
        ("ask", "why divide by √d", NOT_ATTEMPTED),
    ]


def _script(name):
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_show_solution_displays_the_source():
    src = E.show_solution("causal mask")
    assert "def my_causal_mask(T):" in repr(
        src
    ) and "ptlm_solutions.transformer" in repr(src)


@pytest.mark.parametrize("value", ["0", "-1", "two"])
def test_a_bad_guess_limit_names_the_variable(monkeypatch, value):
    monkeypatch.setenv("PTLM_ASK_LIMIT", value)
    with pytest.raises(
        ValueError, match="PTLM_ASK_LIMIT must be a positive integer .wrong guesses"
    ):
        E._guess_limit()
    monkeypatch.setenv("PTLM_ASK_LIMIT", "2")
    assert E._guess_limit() == 2
