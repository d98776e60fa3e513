"""The fine-tuning harness: batch shapes for encoders and decoders, scores that expose a
constant predictor, and a few real (tiny) runs.
"""

import subprocess
import sys

import numpy as np
import pytest
import torch
from torch import nn

import ptlm_lite.bert  # noqa: F401  (registers the "bert-tiny" preset)
from ptlm_lite import finetune as F
from ptlm_lite import suite
from ptlm_lite.config import preset
from ptlm_lite.data import make_world, train_tokenizer
from ptlm_lite.output import Output


@pytest.fixture(scope="module")
def tok():  # a small WordPiece trained on the world in milliseconds (no cache)
    return train_tokenizer(
        "wordpiece",
        [d.text for d in make_world(0).documents],
        vocab_size=300,
        n_sentinels=0,
    )


@pytest.fixture(scope="module")
def tasks():
    return suite.tasks()


def small(task, n_train=48, n_test=32):
    """The task with fewer examples, so a test trains in a second."""
    return task.subset(n_train, n_test)


class Constant(nn.Module):
    """Always the same answer, whatever the input: what 'always person' looks like."""

    def __init__(self, n_labels, answer):
        super().__init__()
        self.w = nn.Parameter(torch.zeros(()))
        self.n_labels, self.answer = n_labels, answer

    def forward(self, ids, segments=None, valid=None, labels=None):
        logits = torch.zeros(ids.shape[0], self.n_labels)
        logits[:, self.answer] = 1.0
        return Output(logits + 0 * self.w)


def test_encoder_batches(tok, tasks):
    sp = tok.special_ids
    single = F.encoder_batch(tasks["kind_from_sentence"], "test", tok)
    assert single["ids"].shape == single["valid"].shape == single["segments"].shape
    assert single["ids"].shape[0] == len(tasks["kind_from_sentence"].test)
    assert (single["ids"][:, 0] == sp["cls"]).all() and (single["segments"] == 0).all()
    pair = F.encoder_batch(
        tasks["relation_check"], tasks["relation_check"].test[:3], tok
    )
    row, seg = (
        pair["ids"][0][pair["valid"][0]].tolist(),
        pair["segments"][0][pair["valid"][0]].tolist(),
    )
    assert row[0] == sp["cls"] and row.count(sp["sep"]) == 2 and row[-1] == sp["sep"]
    assert seg == [0] * (row.index(sp["sep"]) + 1) + [1] * (
        len(row) - row.index(sp["sep"]) - 1
    )
    choice = F.encoder_batch(tasks["fact_cloze"], tasks["fact_cloze"].test[:5], tok)
    assert choice["ids"].shape[:2] == (5, 4) and choice["labels"].shape == (5,)
    ex = tasks["fact_cloze"].test[0]
    text = tok.decode(choice["ids"][0, ex["label"]].tolist())
    assert ex["endings"][ex["label"]].split()[0] in text


def test_decoder_batches(tok, tasks):
    sp = tok.special_ids
    for name, C in (("kind_from_name", 1), ("relation_check", 1), ("fact_cloze", 4)):
        b = F.decoder_batch(tasks[name], tasks[name].test[:6], tok)
        assert b["ids"].shape[:2] == (6, C) and b["last"].shape == (6, C)
        assert (b["ids"][:, :, 0] == sp["bos"]).all()
        # [extract] at last
        assert (b["ids"].gather(2, b["last"][..., None]) == sp["cls"]).all()
    pair = F.decoder_batch(
        tasks["relation_check"], tasks["relation_check"].test[:1], tok
    )
    # [delim] between the two segments
    assert (pair["ids"][0, 0] == sp["sep"]).sum() == 1


def test_scores_expose_a_constant_predictor(tasks):
    task = tasks["kind_from_sentence"]  # 65% people
    labels = np.array([e["label"] for e in task.test])
    constant = np.full_like(labels, task.majority_label)
    s = F.scores(constant, labels)
    assert s["accuracy"] == pytest.approx(task.majority) and s["constant"]
    assert s["macro_f1"] < 0.25  # one class's F1 out of four
    perfect = F.scores(labels, labels)
    assert perfect == {"accuracy": 1.0, "macro_f1": 1.0, "constant": False}
    assert (
        F.is_constant([2, 2, 2])
        and not F.is_constant([2, 1, 2])
        and not F.is_constant([])
    )


def test_macro_f1_by_hand():
    # labels 0 0 1 1 2, predictions 0 1 1 1 0: class 0 has precision 1/2, recall
    # 1/2 (F1 1/2); class 1 precision 2/3, recall 1 (F1 4/5); class 2 is never
    # predicted (F1 0): the mean is 13/30
    assert F.macro_f1([0, 1, 1, 1, 0], [0, 0, 1, 1, 2]) == pytest.approx(13 / 30)
    # a constant predictor on K balanced classes: 2 / (K + 1) / K (the docstring)
    for k in (2, 3, 5):
        y = np.repeat(np.arange(k), 4)
        assert F.macro_f1(np.zeros_like(y), y) == pytest.approx(2 / (k + 1) / k)
    # a class predicted but absent from the labels counts, with F1 0
    assert F.macro_f1([0, 1], [0, 0]) == pytest.approx((2 / 3 + 0) / 2)


def test_macro_f1_is_scikit_learns_bit_for_bit_without_importing_it():
    from sklearn.metrics import f1_score

    rng = np.random.default_rng(0)
    for _ in range(300):
        k, n = rng.integers(1, 6), rng.integers(1, 40)
        y, p = rng.integers(0, k, n), rng.integers(0, k, n)
        if rng.random() < 0.3:
            p[:] = p[0]  # a constant predictor
        want = f1_score(y, p, labels=np.union1d(p, y), average="macro", zero_division=0)
        assert F.macro_f1(p, y) == float(want)
    # scoring never imports scikit-learn (1.4 s, in every fine-tuning worker)
    code = (
        "import sys; from ptlm_lite.metrics import scores; "
        "scores([0, 1, 1], [0, 1, 0]); assert 'sklearn' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_scores_refuse_labels_out_of_range_and_misshapen_input():
    from ptlm_lite.metrics import scores

    with pytest.raises(ValueError, match=r"labels must be in \[0, 2\)"):
        scores([0, 1], [0, 7], n_labels=2)
    with pytest.raises(ValueError, match="predictions must be 1-D"):
        scores(np.zeros((2, 2), int), [0, 1, 0, 1])
    with pytest.raises(ValueError, match="one entry per example"):
        scores([0, 1, 1], [0, 1])


def test_evaluate_flags_a_constant_model(tok, tasks):
    task = tasks["kind_from_sentence"]
    batch = F.encoder_batch(task, "test", tok)
    out = F.evaluate(Constant(task.n_labels, task.majority_label), batch, chunk=7)
    assert out["constant"] and len(out["predictions"]) == len(task.test)
    assert out["accuracy"] == pytest.approx(task.majority)
    assert out["macro_f1"] < out["accuracy"] / 2


def test_finetune_a_tiny_random_bert(tok, tasks):
    task = small(tasks["relation_check"])
    train_batch, test_batch = F.batches(task, tok, decoder=False)
    torch.manual_seed(0)
    model = F.bert_model(task, preset("bert-tiny", vocab_size=tok.vocab_size))
    history = F.finetune(model, train_batch, steps=5, batch_size=8, seed=0)
    assert len(history.losses) == 5 and all(np.isfinite(history.losses))
    out = F.evaluate(model, test_batch)
    assert (
        0 <= out["accuracy"] <= 1
        and 0 <= out["macro_f1"] <= 1
        and len(out["predictions"]) == 32
    )


def test_multiple_choice_and_gpt_heads_train(tok, tasks):
    from ptlm_lite.gpt import gpt_config

    task = small(tasks["fact_cloze"], 16, 8)
    torch.manual_seed(0)
    bert = F.bert_model(task, preset("bert-tiny", vocab_size=tok.vocab_size))
    gpt = F.gpt_model(task, gpt_config("gpt-tiny", vocab_size=tok.vocab_size))
    for model, decoder in ((bert, False), (gpt, True)):
        train_batch, test_batch = F.batches(task, tok, model)
        assert ("last" in train_batch) == decoder
        F.finetune(model, train_batch, steps=2, batch_size=4)
        assert len(F.evaluate(model, test_batch)["predictions"]) == 8


def test_run_makes_one_table_with_the_baselines(tok, tasks):
    task = small(tasks["kind_from_sentence"])
    config = preset("bert-tiny", vocab_size=tok.vocab_size)
    table = F.run(
        task,
        {"random init": lambda seed: F.bert_model(task, config)},
        tok,
        seeds=(0, 1),
        steps=3,
        batch_size=8,
        surface=False,
    )
    assert list(table["model"]) == [
        "random init",
        "random init",
        "majority class",
        "chance",
    ]
    assert list(table["seed"][:2]) == [0, 1] and table["seed"][2:].isna().all()
    majority = table.set_index("model").loc["majority class"]
    assert majority["accuracy"] == pytest.approx(task.majority) and majority["constant"]
    assert table.set_index("model").loc["chance", "accuracy"] == pytest.approx(0.25)
    assert table.attrs["needs_pretraining"] is False
    again = F.run(
        task,
        lambda seed: F.bert_model(task, config),
        tok,
        seeds=(0,),
        steps=3,
        batch_size=8,
        surface=False,
    )
    # same seed, same batches, same result (the loss: every tiny run may answer the
    # majority class, and its accuracy would be equal whatever the batches)
    assert again["accuracy"][0] == table["accuracy"][0]
    assert again["final_loss"][0] == table["final_loss"][0]
    summary = F.summarize(table)
    assert summary.loc[(task.name, "random init"), "runs"] == 2
    assert summary.loc[(task.name, "majority class"), "constant runs"] == 1


def test_run_trains_and_scores_on_the_device_it_is_given(tok, tasks, monkeypatch):
    """device= reaches the training loop and the scoring, not only the first move."""
    import sys

    T = sys.modules["ptlm_lite.train"]  # the module (ptlm_lite.train is the function)

    task = small(tasks["kind_from_sentence"], 16, 8)
    config = preset("bert-tiny", vocab_size=tok.vocab_size)
    seen, real = [], T.train

    def spy(model, batches, **kw):
        seen.append(kw.get("device"))
        return real(model, batches, **kw)

    monkeypatch.setattr(T, "train", spy)
    F.run(task, lambda s: F.bert_model(task, config), tok, seeds=(0,), steps=1,
          batch_size=4, surface=False, device="cpu")  # fmt: skip
    assert seen == [torch.device("cpu")]


def test_chance_macro_f1_counts_a_class_missing_from_the_test(tasks):
    """Uniform guessing predicts every class: one absent from the test has F1 0."""
    import dataclasses

    task = tasks["kind_from_sentence"]
    kept = [e for e in task.test if e["label"] != 0]
    missing = dataclasses.replace(task, test=kept)
    rows = F._baselines(missing, surface=False)
    chance = next(r for r in rows if r["model"] == "chance")["macro_f1"]
    labels = np.array([e["label"] for e in kept])
    guesses = np.random.default_rng(0).integers(task.n_labels, size=(400, len(labels)))
    simulated = np.mean([F.macro_f1(g, labels) for g in guesses])
    assert chance == pytest.approx(simulated, abs=0.01)


def test_run_pairs_conditions_by_seed(tok, tasks, monkeypatch):
    """Every condition of a seed trains on the same examples in the same order (and
    a BERT's new head starts the same), and the seeds differ: what a paired verdict
    assumes."""
    import sys

    T = sys.modules["ptlm_lite.train"]
    task = small(tasks["kind_from_sentence"], 32, 8)
    config = preset("bert-tiny", vocab_size=tok.vocab_size)
    seen, real = {}, T.train

    def spy(model, batches, **kw):
        steps = [batches(i)["ids"].clone() for i in range(kw["steps"])]
        seen.setdefault(model.tag, []).append(
            (steps, model.classifier.weight.detach().clone())
        )
        return real(model, batches, **kw)

    def tagged(name):
        def make(seed):
            model = F.bert_model(task, config)
            model.tag = name
            return model

        return make

    monkeypatch.setattr(T, "train", spy)
    monkeypatch.setenv("PTLM_WORKERS", "1")  # the spy collects in this process
    F.run(task, {n: tagged(n) for n in ("a", "b")}, tok, seeds=(0, 1), steps=3,
          batch_size=4, surface=False)  # fmt: skip
    for (ids_a, head_a), (ids_b, head_b) in zip(seen["a"], seen["b"]):
        assert all(torch.equal(x, y) for x, y in zip(ids_a, ids_b))
        assert torch.equal(head_a, head_b)
    (ids_0, _), (ids_1, _) = seen["a"]
    assert not all(torch.equal(x, y) for x, y in zip(ids_0, ids_1))


class ByInput(nn.Module):
    """An answer that depends on the input: the first token after [CLS], modulo the
    number of classes, so that chunks scored out of order would show."""

    def __init__(self, n_labels: int):
        super().__init__()
        self.n, self.w = n_labels, nn.Parameter(torch.zeros(1))

    def forward(self, ids, segments=None, valid=None, labels=None):
        return Output(logits=nn.functional.one_hot(ids[:, 1] % self.n, self.n).float())


def test_evaluate_keeps_the_examples_in_order_across_chunks(tok, tasks):
    task = tasks["kind_from_sentence"]
    batch = F.encoder_batch(task, "test", tok)
    want = (batch["ids"][:, 1] % task.n_labels).tolist()
    for chunk in (7, 256):
        out = F.evaluate(ByInput(task.n_labels), batch, chunk=chunk)
        assert out["predictions"] == want and not out["constant"]
        right = [float(p == e["label"]) for p, e in zip(want, task.test)]
        assert out["correct"] == right


def test_bad_sizes_are_refused_by_name(tok, tasks):
    task = small(tasks["kind_from_sentence"])
    train_batch, test_batch = F.batches(task, tok, decoder=False)
    model = Constant(task.n_labels, 0)
    for kw, name in [
        (dict(batch_size=0), "batch_size"),  # would train nothing, with a loss of 0
        (dict(batch_size=2.0), "batch_size"),
        (dict(steps=0), "steps"),
        (dict(seed=None), "seed"),
    ]:
        with pytest.raises(ValueError, match=f"{name} must be an integer"):
            F.finetune(model, train_batch, **{"steps": 3, **kw})
    with pytest.raises(ValueError, match="chunk must be an integer"):
        F.evaluate(model, test_batch, chunk=0)
    with pytest.raises(ValueError, match="max_len must be an integer >= 3"):
        F.encoder_batch(task, "test", tok, max_len=2)  # would cut from the end
    config = preset("bert-tiny", vocab_size=tok.vocab_size)
    for seeds, error, match in [
        ((), ValueError, "seeds is empty"),
        (0, TypeError, "seeds must be a sequence"),
        ({0, 1}, TypeError, "in order"),  # a set's order is not the caller's
        ({0: "a"}, TypeError, "in order"),
        ((0.5,), TypeError, "seeds must hold ints"),
        ((True,), TypeError, "seeds must hold ints"),
        ((-1,), ValueError, "ints >= 0"),
        ((1, 1), ValueError, "seed twice"),
    ]:
        with pytest.raises(error, match=match):
            F.run(task, lambda s: F.bert_model(task, config), tok, seeds=seeds, steps=1)


def test_per_example_refuses_a_seed_counted_twice(tok, tasks):
    pd = pytest.importorskip("pandas")
    task = small(tasks["kind_from_sentence"])
    config = preset("bert-tiny", vocab_size=tok.vocab_size)
    table = F.run(
        task, lambda s: F.bert_model(task, config), tok, seeds=(0, 1), steps=1
    )
    assert F.per_example(table, "model").shape == (2, len(task.test))
    with pytest.raises(ValueError, match="seed of model='model' twice"):
        F.per_example(pd.concat([table, table]), "model")
