"""MT-DNN (chapters/mt_dnn.ipynb): task sampling, each head's loss by value, the shared
encoder, the mixture's suite tasks, and bad input."""

import math
from collections import Counter

import pytest
import torch

from ptlm_lite import mt_dnn, suite
from ptlm_lite.suite import multitask
from ptlm_lite.config import preset
from ptlm_lite.data import make_world
from ptlm_lite.data.world import COLOURS, OCCUPATIONS
from ptlm_lite.heads import BertForSequenceClassification, MultiTask
from ptlm_lite.recipes import mt_dnn as recipe

CFG = preset("bert-tiny", vocab_size=50)


def batch(B=3, T=6, C=None, seed=0):
    g = torch.Generator().manual_seed(seed)
    shape = (B, T) if C is None else (B, C, T)
    ids = torch.randint(5, 50, shape, generator=g)
    return {"ids": ids, "segments": torch.zeros_like(ids), "valid": ids > 0}


# ----------------------------------------------------------------------------------
# Task sampling


def test_probabilities_are_proportional_at_temperature_one():
    p = mt_dnn.task_probabilities({"a": 100, "b": 300})
    assert p == pytest.approx({"a": 0.25, "b": 0.75})
    # T = 2: square roots, 10 : 17.32
    p2 = mt_dnn.task_probabilities({"a": 100, "b": 300}, temperature=2)
    assert p2["a"] == pytest.approx(10 / (10 + math.sqrt(300)))
    assert mt_dnn.task_probabilities({"a": 1, "b": 99}, math.inf) == {
        "a": 0.5,
        "b": 0.5,
    }


def test_schedule_draws_tasks_in_those_proportions():
    sizes = {"big": 600, "mid": 300, "small": 100}
    order = mt_dnn.task_schedule(sizes, 20_000, seed=1)
    share = {t: n / len(order) for t, n in Counter(order).items()}
    assert share == pytest.approx({"big": 0.6, "mid": 0.3, "small": 0.1}, abs=0.012)
    assert order == mt_dnn.task_schedule(sizes, 20_000, seed=1)  # seeded
    assert order != mt_dnn.task_schedule(sizes, 20_000, seed=2)
    flat = Counter(mt_dnn.task_schedule(sizes, 20_000, temperature=math.inf))
    assert all(abs(n / 20_000 - 1 / 3) < 0.012 for n in flat.values())


# ----------------------------------------------------------------------------------
# Each head's loss on a hand-checked batch


def test_ranking_losses_by_value():
    s = torch.tensor([[1.0, 0.0, -1.0], [1.0, 0.0, -1.0]])
    y = torch.tensor([0, 2])
    listwise = mt_dnn.ranking_loss(s, y)  # -log softmax(s)[y], averaged
    # label 0: log(e + 1 + 1/e) - 1 = 0.407606; label 2: log(e + 1 + 1/e) + 1
    assert float(listwise) == pytest.approx((0.407606 + 2.407606) / 2, abs=1e-5)
    # pairwise: mean over the wrong candidates of log(1 + exp(-(s_right - s_j)))
    pairwise = mt_dnn.ranking_loss(s, y, "pairwise")
    by_hand = (
        math.log1p(math.exp(-1)) + math.log1p(math.exp(-2))
        + math.log1p(math.exp(2)) + math.log1p(math.exp(1))
    ) / 4  # fmt: skip
    assert float(pairwise) == pytest.approx(by_hand, abs=1e-6)
    # gamma scales the scores
    assert float(mt_dnn.ranking_loss(s, y, gamma=2.0)) == pytest.approx(
        float(mt_dnn.ranking_loss(2 * s, y))
    )


def test_each_head_loss_on_a_hand_checked_batch():
    model = mt_dnn.mt_dnn(
        _bert(),
        {"single": ("classify", 2), "sim": "similarity", "rank": "rank"},
    )
    model.eval()
    heads = model.heads
    with torch.no_grad():
        # classifier: zero weights, biases (0, ln 3): p = (1/4, 3/4) for every input
        heads["single"].classifier.weight.zero_()
        heads["single"].classifier.bias.copy_(torch.tensor([0.0, math.log(3)]))
        # similarity: always 0.5
        heads["sim"].classifier.weight.zero_()
        heads["sim"].classifier.bias.fill_(0.5)
        # ranker: every candidate scores 0
        heads["rank"].score.weight.zero_()
        heads["rank"].score.bias.zero_()
    out = model("single", **batch(), labels=torch.tensor([0, 1, 1]))
    expected = (math.log(4) + 2 * math.log(4 / 3)) / 3
    assert out.loss.item() == pytest.approx(expected, abs=1e-6)
    out = model("sim", **batch(), scores=torch.tensor([0.0, 1.0, 0.5]))
    assert out.logits.shape == (3,)
    assert out.loss.item() == pytest.approx((0.25 + 0.25 + 0.0) / 3, abs=1e-6)
    out = model("rank", **batch(C=4), labels=torch.tensor([0, 3, 1]))
    assert out.logits.shape == (3, 4)
    assert out.loss.item() == pytest.approx(math.log(4), abs=1e-6)


def _bert():
    from ptlm_lite.bert import Bert

    return Bert(CFG)


def test_heads_share_the_encoder_and_training_records_the_mixture():
    enc = _bert()
    model = mt_dnn.mt_dnn(enc, {"a": ("classify", 2), "b": "rank"})
    assert model.heads["a"].bert is enc and model.heads["b"].bert is enc
    data = {
        "a": {**batch(B=30), "labels": torch.randint(0, 2, (30,))},
        "b": {**batch(B=10, C=2), "labels": torch.randint(0, 2, (10,))},
    }
    w0 = {k: v.clone() for k, v in enc.state_dict().items()}
    hist = mt_dnn.train_multitask(model, data, 12, batch_size=4, seed=0, device="cpu")
    assert len(hist.tasks) == len(hist.losses) == 12
    assert hist.probabilities == pytest.approx({"a": 0.75, "b": 0.25})
    assert set(hist.tasks) <= {"a", "b"}
    assert hist.tasks == mt_dnn.task_schedule({"a": 30, "b": 10}, 12, seed=0)
    assert any(not torch.equal(w0[k], v) for k, v in enc.state_dict().items())
    curves = mt_dnn.task_losses(hist)
    assert sum(len(s) for s, _ in curves.values()) == 12


# ----------------------------------------------------------------------------------
# Bad input


def test_bad_input_raises():
    with pytest.raises(ValueError, match="sizes"):
        mt_dnn.task_probabilities({})
    with pytest.raises(ValueError, match="sizes"):
        mt_dnn.task_probabilities({"a": 0})
    with pytest.raises(ValueError, match="temperature"):
        mt_dnn.task_probabilities({"a": 3}, temperature=0)
    with pytest.raises(ValueError, match="steps"):
        mt_dnn.task_schedule({"a": 3}, 0)
    with pytest.raises(ValueError, match="loss"):
        mt_dnn.ranking_loss(torch.zeros(1, 2), torch.zeros(1, dtype=torch.long), "x")
    with pytest.raises(ValueError, match="gamma"):
        mt_dnn.BertForRanking(CFG, gamma=0)
    with pytest.raises(ValueError, match="heads"):
        mt_dnn.mt_dnn(_bert(), {"a": "classify"})
    with pytest.raises(ValueError, match="heads"):
        mt_dnn.mt_dnn(_bert(), {"a": "regress"})
    with pytest.raises(ValueError, match="scores"):
        mt_dnn.BertForSimilarity(CFG)(**batch(), scores=torch.tensor([0, 1, 1]))
    model = mt_dnn.mt_dnn(_bert(), {"a": ("classify", 2)})
    with pytest.raises(ValueError, match="without a head"):
        mt_dnn.train_multitask(model, {"b": {"labels": torch.zeros(3)}}, 2)
    # a head not built on the shared encoder
    with pytest.raises(ValueError, match="name"):
        multitask.get("slot_filler")
    with pytest.raises(ValueError, match="share"):
        MultiTask(_bert(), {"a": BertForSequenceClassification(CFG)})


# ----------------------------------------------------------------------------------
# The mixture's suite tasks


def test_mixture_tasks_are_balanced_and_never_show_slot_filler_test_words():
    world = make_world(0)
    split = suite.entity_split(world)
    by_name = {e.name: e for e in world.entities}
    for name in multitask.MT_TASKS:
        task = multitask.get(name)
        assert name not in suite.TASKS and not task.needs_pretraining
        assert len(set(task.balance().values())) == 1  # every label equally often
        for part in ("train", "test"):
            for e in getattr(task, part):
                text = f" {e['a']} {e['b']} ".lower()
                assert not any(f" {w} " in text for w in COLOURS + OCCUPATIONS)
                assert split[by_name[e["entity"]].id] == part
                assert split[by_name[e["b"]].id] == part
    fit = multitask.get("slot_fit")
    for e in fit.train + fit.test:
        fits = by_name[e["b"]].kind == multitask.SLOT_KINDS[e["slot"]]
        assert fits == bool(e["label"])
    sim = multitask.get("kind_similarity")
    for e in sim.train:
        assert multitask.similarity(by_name[e["a"]], by_name[e["b"]]) == e["label"]


def test_recipe_data_gives_a_similarity_head_float_scores():
    from ptlm_lite.recipes.bert import tokenizer

    tasks = recipe.tasks(("kind_similarity", "slot_filler"))
    data = recipe.task_data(tasks, tokenizer())
    assert "labels" not in data["kind_similarity"]
    assert set(data["kind_similarity"]["scores"].tolist()) == {0.0, 0.5, 1.0}
    assert data["slot_filler"]["ids"].dim() == 3


def test_mixture_tasks_do_not_depend_on_the_hash_seed():
    import json
    import os
    import subprocess
    import sys

    code = (
        "from ptlm_lite.suite import multitask as m; import json; "
        "print(json.dumps([m.get(n).train for n in m.MT_TASKS]))"
    )
    runs = [
        subprocess.run(
            [sys.executable, "-c", code],
            env={**os.environ, "PYTHONHASHSEED": str(h)},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for h in (1, 2)
    ]
    assert runs[0] == runs[1] and json.loads(runs[0])


# ----------------------------------------------------------------------------------
# Exercises: plausible wrong answers must be rejected


def _probs_temperature_as_power(sizes, temperature):  # n^T instead of n^(1/T)
    if math.isinf(temperature):
        return {t: 1 / len(sizes) for t in sizes}
    w = {t: n**temperature for t, n in sizes.items()}
    return {t: x / sum(w.values()) for t, x in w.items()}


def _probs_ignore_temperature(sizes, temperature):  # always proportional
    return {t: n / sum(sizes.values()) for t, n in sizes.items()}


def _probs_unnormalised(sizes, temperature):
    return {
        t: n ** (1 / temperature) if math.isfinite(temperature) else 1.0
        for t, n in sizes.items()
    }


def _listwise_sum(scores, labels):  # summed, not averaged, over the queries
    return torch.nn.functional.cross_entropy(scores, labels, reduction="sum")


def _listwise_sigmoid(scores, labels):  # the paper's squash, which the head skips
    return torch.nn.functional.cross_entropy(torch.sigmoid(scores), labels)


def _listwise_binary(scores, labels):  # each candidate alone, right or wrong
    target = torch.nn.functional.one_hot(labels, scores.shape[1]).float()
    return torch.nn.functional.binary_cross_entropy_with_logits(scores, target)


WRONG_ANSWERS = {
    "task sampling probabilities": [
        _probs_temperature_as_power,
        _probs_ignore_temperature,
        _probs_unnormalised,
    ],
    "listwise ranking loss": [_listwise_sum, _listwise_sigmoid, _listwise_binary],
}


@pytest.mark.parametrize(
    "name, i", [(n, i) for n, fs in WRONG_ANSWERS.items() for i in range(len(fs))]
)
def test_wrong_answers_are_rejected(name, i):
    from ptlm_lite.exercises import WRONG, check

    r = check(name, WRONG_ANSWERS[name][i])
    assert r.status == WRONG, r.message


def test_solutions_pass():
    import importlib

    from ptlm_lite.exercises import check

    sol = importlib.import_module("solutions.mt_dnn")
    assert check("task sampling probabilities", sol.my_task_probabilities)
    assert check("listwise ranking loss", sol.my_listwise_loss)
