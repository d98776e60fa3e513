"""Synthetic in-context learning tasks: layout, families, the k-shot reading of a
sequence.
"""

import pytest
import torch

from ptlm_lite.gpt import IGNORE
from ptlm_lite.icl import FAMILIES, SymbolTasks


def test_layout_and_targets():
    T = SymbolTasks(4, 3)
    b = T.sequences(5, 6, "recall", torch.Generator().manual_seed(0))
    assert b["ids"].shape == (5, 13) and T.vocab_size == 1 + 4 + 12
    assert (b["ids"][:, 0] == T.BOS).all()
    assert torch.equal(b["ids"][:, 1::2], T.query_token(b["x"]))
    assert torch.equal(b["ids"][:, 2::2], T.answer_token(b["x"], b["y"]))
    assert torch.equal(b["targets"][:, 1::2], b["ids"][:, 2::2])  # answers only
    assert (b["targets"][:, 0::2] == IGNORE).all()


def test_families_follow_their_rule_within_a_sequence():
    T, g = SymbolTasks(8, 8), torch.Generator().manual_seed(1)
    for fam in FAMILIES:
        b = T.sequences(50, 20, fam, g)
        for x, y in zip(b["x"], b["y"]):
            table = {}
            for xi, yi in zip(x.tolist(), y.tolist()):
                # a function of x
                assert table.setdefault(xi, yi) == yi
            if fam == "shift":
                assert (
                    len({(yi - xi) % 8 for xi, yi in zip(x.tolist(), y.tolist())}) == 1
                )
            if fam == "reverse":
                assert (
                    len({(yi + xi) % 8 for xi, yi in zip(x.tolist(), y.tolist())}) == 1
                )
    with pytest.raises(ValueError, match="family"):
        T.mappings("nope", 1, g)


def test_seen_prompt_names_and_label_logits():
    T = SymbolTasks(3, 2)
    b = T.sequences(20, 5, "recall", torch.Generator().manual_seed(2))
    for x, s in zip(b["x"].tolist(), b["seen"].tolist()):
        assert s == [x[i] in x[:i] for i in range(len(x))]
    p = T.prompt([(0, 1), (2, 0)], 1)
    assert T.token_names(p) == ["<s>", "x0", "x0→y1", "x2", "x2→y0", "x1"]
    logits = torch.arange(T.vocab_size, dtype=torch.float).expand(2, -1)
    got = T.label_logits(logits, torch.tensor([0, 2]))
    assert torch.equal(got, torch.tensor([[4.0, 5.0], [8.0, 9.0]]))
    seq = T.sequences(1, 4, "shift", torch.Generator().manual_seed(3))
    # the 2-shot prompt is a prefix
    k = 2
    x, y = seq["x"][0].tolist(), seq["y"][0].tolist()
    assert torch.equal(
        T.prompt(list(zip(x[:k], y[:k])), x[k]), seq["ids"][0, : 2 * k + 2]
    )


class _Copier(torch.nn.Module):
    """A 'model' that answers a query with its latest demonstration, else label 0."""

    def __init__(self, T):
        super().__init__()
        self.T = T

    def forward(self, ids):
        from types import SimpleNamespace

        T, (B, L) = self.T, ids.shape
        logits = torch.zeros(B, L, T.vocab_size)
        for b in range(B):
            shown = {}
            for i, t in enumerate(ids[b].tolist()):
                if 1 <= t <= T.n_inputs:
                    x = t - 1
                    y = shown.get(x, 0)
                    logits[b, i, int(T.answer_token(x, y))] = 1.0
                elif t > T.n_inputs:
                    x, y = divmod(t - 1 - T.n_inputs, T.n_labels)
                    shown[x] = y
        return SimpleNamespace(logits=logits)


def test_shot_scores_are_the_rows_per_example():
    T, shots = SymbolTasks(4, 4), [0, 1, 3]
    model = _Copier(T)
    s = T.shot_scores(model, "recall", 60, 5, torch.Generator().manual_seed(4), shots)
    assert s["correct"].shape == s["seen"].shape == s["copier"].shape == (60, 3)
    # a copier is right on every seen query; its expected score is 1 there
    assert (s["correct"][s["seen"]] == 1).all() and (s["copier"][s["seen"]] == 1).all()
    assert torch.allclose(s["copier"][~s["seen"]], torch.tensor(0.25))
    assert not s["seen"][:, 0].any()  # nothing is seen at 0 shots
    rows = T.shot_accuracy(
        model, "recall", 60, 5, torch.Generator().manual_seed(4), shots
    )
    assert [r["accuracy"] for r in rows] == pytest.approx(s["correct"].mean(0).tolist())
    assert [r["copier"] for r in rows] == pytest.approx(s["copier"].mean(0).tolist())


def test_unseen_scores_never_show_the_query():
    T, shots = SymbolTasks(4, 4), [0, 2, 8]
    model = _Copier(T)
    # a copier answers label 0 to every unseen query: right exactly when the answer
    # is y0, about 1 in 4 on shift tasks, at every k
    u = T.unseen_scores(model, "shift", 400, torch.Generator().manual_seed(5), shots)
    assert u.shape == (400, 3)
    assert torch.equal(u[:, 0], u[:, 1]) and torch.equal(u[:, 0], u[:, 2])
    assert 0.15 < u.mean().item() < 0.35
    with pytest.raises(ValueError, match="n_inputs"):
        SymbolTasks(1, 2).unseen_scores(model, "shift", 2, torch.Generator(), [1])


def test_scores_are_the_model_without_dropout_and_leave_its_mode():
    from ptlm_lite.gpt import GPT, gpt_config

    T, shots = SymbolTasks(4, 4), [0, 2]
    cfg = gpt_config("gpt-tiny", vocab_size=T.vocab_size, dropout=0.5)
    model = GPT(cfg, seed=0).train()
    runs = [
        T.shot_scores(model, "shift", 64, 5, torch.Generator().manual_seed(1), shots)
        for _ in range(2)
    ] + [
        T.unseen_scores(model, "shift", 64, torch.Generator().manual_seed(1), shots)
        for _ in range(2)
    ]
    assert torch.equal(runs[0]["correct"], runs[1]["correct"])  # no dropout draw
    assert torch.equal(runs[2], runs[3]) and model.training  # its mode put back


def test_bad_shots_mappings_and_sizes_name_the_argument():
    T, g = SymbolTasks(4, 4), torch.Generator().manual_seed(0)
    model = _Copier(T)
    for shots, error, match in [
        ([-1], ValueError, r"shots must hold ints >= 0 and < pairs=5"),  # was row -1
        ([5], ValueError, "< pairs=5"),  # was a bare IndexError
        ([1.0], TypeError, "shots must hold ints"),
        ([], ValueError, "shots is empty"),
        (3, TypeError, "shots must be a sequence"),
        ({0, 1}, TypeError, "in order"),
    ]:
        with pytest.raises(error, match=match):
            T.shot_scores(model, "shift", 2, 5, g, shots)
    with pytest.raises(ValueError, match="shots is empty"):
        T.unseen_scores(model, "shift", 2, g, [])
    with pytest.raises(ValueError, match=r"mapping must give one label in \[0, 4\)"):
        T.sequences(2, 3, "shift", g, mapping=[4, 4, 4, 4])  # wrote other tokens
    with pytest.raises(ValueError, match="mapping"):
        T.sequences(2, 3, "shift", g, mapping=[0, 1, 2])
    with pytest.raises(ValueError, match="n_inputs must be an integer"):
        SymbolTasks(2.5, 3)
    with pytest.raises(ValueError, match="n_labels must be an integer >= 2"):
        SymbolTasks(4, 1)


def test_shots_as_an_iterator_or_a_tensor_give_the_same_rows():
    T = SymbolTasks(4, 4)
    model = _Copier(T)
    rows = [
        T.shot_accuracy(model, "shift", 8, 5, torch.Generator().manual_seed(2), shots)
        for shots in ([0, 3], iter([0, 3]), torch.tensor([0, 3]), range(0, 4, 3))
    ]
    assert len(rows[0]) == 2 and all(str(r) == str(rows[0]) for r in rows[1:])  # NaNs
