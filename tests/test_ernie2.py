"""ERNIE 2.0 (chapters/ernie2.ipynb): the continual schedule by value, task sampling
proportions, the task embedding, each head's loss on a hand-checked batch, the pair and
group builders' labels by value, the recipe's word-aware examples, and bad input."""

import math
from collections import Counter

import pytest
import torch

from ptlm_lite import ernie2
from ptlm_lite.config import preset
from ptlm_lite.corrupt import pack_pairs
from ptlm_lite.output import IGNORE
from ptlm_lite.recipes import ernie2 as recipe

CFG = preset("bert-tiny", vocab_size=50)
HEADS = {"mask": "mlm", "caps": ("token", 2), "order": ("sequence", 9)}


def gen(seed=0):
    return torch.Generator().manual_seed(seed)


# ----------------------------------------------------------------------------------
# The continual schedule


def test_continual_schedule_by_value():
    sched = ernie2.continual_schedule([["t1"], ["t2"], ["t3"]], [10, 20, 30])
    assert [s.steps for s in sched] == [10, 20, 30]
    assert sched[0].shares == {"t1": 1.0}
    assert sched[1].shares == {"t1": 0.5, "t2": 0.5}
    assert sched[2].shares == pytest.approx({"t1": 1 / 3, "t2": 1 / 3, "t3": 1 / 3})
    # several new tasks in a stage; one int gives every stage the same steps
    grouped = ernie2.continual_schedule([["a"], ["b", "c"]], 5)
    assert [s.steps for s in grouped] == [5, 5]
    assert grouped[1].shares == pytest.approx({"a": 1 / 3, "b": 1 / 3, "c": 1 / 3})


def test_sequential_schedule_trains_only_the_new_tasks():
    sched = ernie2.sequential_schedule([["t1"], ["t2"], ["t3", "t4"]], 7)
    assert [s.shares for s in sched] == [
        {"t1": 1.0},
        {"t2": 1.0},
        {"t3": 0.5, "t4": 0.5},
    ]
    assert [s.steps for s in sched] == [7, 7, 7]


def test_draw_tasks_follows_the_stages_and_their_shares():
    sched = ernie2.continual_schedule([["t1"], ["t2"], ["t3"]], [50, 3000, 6000])
    order = ernie2.draw_tasks(sched, seed=1)
    assert len(order) == 9050
    assert set(order[:50]) == {"t1"}  # stage 1: task 1 only
    stage2, stage3 = Counter(order[50:3050]), Counter(order[3050:])
    assert set(stage2) == {"t1", "t2"}
    assert stage2["t1"] / 3000 == pytest.approx(0.5, abs=0.03)
    assert {t: n / 6000 for t, n in stage3.items()} == pytest.approx(
        {"t1": 1 / 3, "t2": 1 / 3, "t3": 1 / 3}, abs=0.025
    )
    assert order == ernie2.draw_tasks(sched, seed=1)  # seeded
    assert order != ernie2.draw_tasks(sched, seed=2)
    seq = ernie2.draw_tasks(ernie2.sequential_schedule([["t1"], ["t2"]], 40))
    assert seq == ["t1"] * 40 + ["t2"] * 40


def test_the_chapters_stages():
    sched = ernie2.continual_schedule(recipe.STAGES, 10)
    assert list(sched[-1].shares) == list(recipe.TASK_HEADS)  # all six at the end
    assert set(recipe.GROUPS.values()) == {
        "word-aware",
        "structure-aware",
        "semantic-aware",
    }


# ----------------------------------------------------------------------------------
# The model


def test_task_embedding_changes_the_encoding_and_only_by_the_task_row():
    model = ernie2.Ernie2(CFG, HEADS, seed=0).eval()
    assert model.task_ids == {"mask": 0, "caps": 1, "order": 2}
    ids = torch.randint(5, 50, (2, 6), generator=gen())
    emb = model.bert.embed
    outs = []
    for k in range(3):
        emb.task_id = k
        outs.append(emb(ids))
    assert not torch.allclose(outs[0], outs[1])
    with torch.no_grad():
        emb.task.weight[1] = emb.task.weight[0]
    emb.task_id = 1
    assert torch.allclose(emb(ids), outs[0])
    # forward(task) sets the row
    model("order", ids)
    assert emb.task_id == 2


def test_each_head_loss_on_a_hand_checked_batch():
    model = ernie2.Ernie2(CFG, HEADS, seed=0).eval()
    with torch.no_grad():
        model.heads["caps"].weight.zero_()  # p = (1/4, 3/4) at every token
        model.heads["caps"].bias.copy_(torch.tensor([0.0, math.log(3)]))
        model.heads["order"].weight.zero_()  # uniform over the 9 orders
        model.heads["order"].bias.zero_()
        mlm = model.heads["mask"]
        mlm.dense.weight.zero_()
        mlm.dense.bias.zero_()
        mlm.ln.weight.zero_()  # the hidden state entering the decoder is 0
        mlm.ln.bias.zero_()
        mlm.decoder.bias.zero_()
        mlm.decoder.bias[7] = math.log(2)  # token 7 twice as likely as each other one
    ids = torch.randint(5, 50, (2, 6), generator=gen())
    targets = torch.full((2, 6), IGNORE)
    targets[0, 1], targets[0, 3], targets[1, 2] = 1, 0, 1
    with torch.no_grad():
        caps = model("caps", ids, targets=targets).loss
        assert float(caps) == pytest.approx((2 * math.log(4 / 3) + math.log(4)) / 3)
        order = model("order", ids, labels=torch.tensor([0, 8])).loss
        assert float(order) == pytest.approx(math.log(9))
        words = torch.full((2, 6), IGNORE)
        words[0, 0], words[1, 5] = 7, 9  # p(7) = 2/51, p(9) = 1/51
        mask = model("mask", ids, targets=words).loss
        assert float(mask) == pytest.approx(
            (math.log(51 / 2) + math.log(51)) / 2, abs=1e-5
        )
        # without targets: logits at every position
        assert model("caps", ids).logits.shape == (2, 6, 2)
        assert model("mask", ids).logits.shape == (2, 6, 50)
        assert model("order", ids).logits.shape == (2, 9)


def test_one_update_through_any_head_moves_the_shared_encoder():
    model = ernie2.Ernie2(CFG, HEADS, seed=0)
    before = next(model.bert.blocks.parameters()).clone()
    ids = torch.randint(5, 50, (2, 6), generator=gen())
    model("order", ids, labels=torch.tensor([1, 2])).loss.backward()
    assert model.bert.embed.task.weight.grad[2].abs().sum() > 0  # its own row
    assert model.bert.embed.task.weight.grad[:2].abs().sum() == 0  # no other row
    assert model.heads["caps"].weight.grad is None  # other heads untouched
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    opt.step()
    after = next(model.bert.blocks.parameters())
    assert not torch.equal(before, after)


# ----------------------------------------------------------------------------------
# Pair and group builders


DOCS = [[[10 + 10 * d + i] for i in range(n)] for d, n in enumerate([3, 5, 1, 4])]


def position(seg):  # (document, sentence) of a one-token segment
    return (seg[0] - 10) // 10, (seg[0] - 10) % 10


def test_reorder_groups_labels_by_value():
    assert len(ernie2.PERMUTATIONS) == 9
    assert ernie2.PERMUTATIONS[:3] == [(0,), (0, 1), (1, 0)]
    assert ernie2.PERMUTATIONS[3] == (0, 1, 2) and ernie2.PERMUTATIONS[8] == (2, 1, 0)
    groups = ernie2.reorder_groups(DOCS, 400, generator=gen(1))
    seen = Counter()
    for g in groups:
        perm = ernie2.PERMUTATIONS[g.label]
        where = [position(s) for s in g.segments]
        assert len({d for d, _ in where}) == 1  # one document
        assert len(perm) == len(g.segments)
        # the shown segment j is original segment perm[j] of a consecutive run
        start = min(i for _, i in where)
        assert [i - start for _, i in where] == list(perm)
        seen[g.label] += 1
    assert set(seen) == set(range(9))  # every order occurs
    # by hand: 1 order of one segment, 2 of two, then (0, 1, 2), (0, 2, 1), (1, 0, 2),
    # (1, 2, 0), (2, 0, 1): showing the run's sentences 2, 0, 1 is class 7
    assert ernie2.PERMUTATIONS.index((2, 0, 1)) == 7
    assert ernie2.PERMUTATIONS.index((1, 2, 0)) == 6


def test_distance_pairs_labels_by_value():
    pairs = ernie2.distance_pairs(DOCS, 300, generator=gen(2))
    assert Counter(p.label for p in pairs) == {0: 100, 1: 100, 2: 100}
    for p in pairs:
        (da, ia), (db, ib) = position(p.a), position(p.b)
        if p.label == 0:
            assert da == db and ib == ia + 1
        elif p.label == 1:
            assert da == db and abs(ib - ia) > 1
        else:
            assert da != db
        assert len(DOCS[da]) >= 3  # A comes from a document with a farther sentence
    # the packing of NSP takes them: nsp_labels are the labels
    b = pack_pairs(pairs[:6], cls_id=1, sep_id=2, pad_id=0, max_len=8)
    assert b["nsp_labels"].tolist() == [p.label for p in pairs[:6]]


def test_relevance_pairs_labels_by_value():
    names = [[90], [91], None]
    docs = [[[90, 5], [90, 91]], [[91, 6], [91, 7]], [[8, 9], [90, 3]]]
    pairs = recipe.relevance_pairs(docs, names, 300, generator=gen(3))
    for p in pairs:
        name, sent = p.a, p.b
        own = names.index(name)
        if p.label == 0:
            assert sent in docs[own]
        elif p.label == 1:
            assert sent not in docs[own] and name[0] in sent
        else:
            assert name[0] not in sent
    assert Counter(p.label for p in pairs)[0] == 100


def test_capitalisation_and_token_document_examples():
    from ptlm_lite.recipes.bert import tokenizer

    tok = tokenizer()
    ids, targets = recipe.capitalisation_example(tok, "Kuzin Vu was born in Shefemo.")
    assert len(ids) == len(targets) and ids[0] == tok.special_ids["cls"]
    scored = [t for t in targets if t != IGNORE]
    assert scored == [1, 1, 0, 0, 0, 1]  # Kuzin Vu was born in Shefemo (not ".")
    assert tok.decode(ids) == tok.decode(tok.encode("kuzin vu was born in shefemo."))
    doc = [[5, 6, 7], [7, 8], [9, 5]]
    ids, targets = recipe.token_document_example(doc, 0, 1, 2)
    assert ids == [1, 5, 6, 7, 2] and targets == [IGNORE, 1, 0, 1, IGNORE]


# ----------------------------------------------------------------------------------
# Bad input


def test_bad_input_errors():
    with pytest.raises(ValueError, match="heads"):
        ernie2.Ernie2(CFG, {"x": ("token", 1)})
    with pytest.raises(ValueError, match="heads"):
        ernie2.Ernie2(CFG, {"x": "classify"})
    with pytest.raises(TypeError, match="heads"):
        ernie2.Ernie2(CFG, {})
    with pytest.raises(ValueError, match="n_tasks"):
        ernie2.TaskEmbeddings(CFG, 0)
    model = ernie2.Ernie2(CFG, HEADS)
    with pytest.raises(ValueError, match="task="):
        model("nope", torch.ones(1, 3, dtype=torch.long))
    with pytest.raises(ValueError, match="stages"):
        ernie2.continual_schedule([], 10)
    with pytest.raises(ValueError, match="new task"):
        ernie2.continual_schedule([["a"], ["a"]], 10)
    with pytest.raises(ValueError, match="steps"):
        ernie2.continual_schedule([["a"], ["b"]], [10])
    with pytest.raises(ValueError, match="steps"):
        ernie2.sequential_schedule([["a"]], 0)
    with pytest.raises(ValueError, match="n must"):
        ernie2.distance_pairs(DOCS, 0, generator=gen())
    with pytest.raises(ValueError, match=">= 3 segments"):
        ernie2.distance_pairs([[[1], [2]], [[3]]], 4, generator=gen())
    with pytest.raises(ValueError, match="max_segments"):
        ernie2.reorder_groups(DOCS, 4, generator=gen(), max_segments=4)
    with pytest.raises(TypeError):
        ernie2.reorder_groups(DOCS, 4, generator=None)
    with pytest.raises(ValueError, match="measure"):
        recipe.task_scores(model, {}, measure="f1")


# ----------------------------------------------------------------------------------
# Exercises: plausible wrong answers are rejected


def _shares_only_new(stages):  # the sequential schedule's shares
    return [{t: 1 / len(new) for t in new} for new in stages]


def _shares_by_stage(stages):  # equal shares per stage, not per task
    out, seen = [], []
    for new in stages:
        seen.append(list(new))
        out.append({t: 1 / len(seen) for group in seen for t in group})
    return out


def _shares_first_keeps_half(stages):  # task 1 fixed at one half
    out, seen = [], []
    for new in stages:
        seen += list(new)
        rest = seen[1:]
        out.append(
            {seen[0]: 1.0 if not rest else 0.5, **{t: 0.5 / len(rest) for t in rest}}
        )
    return out


def _reorder_within_length(order):  # the index among orders of its own length only
    import itertools

    return list(itertools.permutations(range(len(order)))).index(tuple(order))


def _reorder_inverse(order):  # where each original segment went, not what is shown
    inverse = [0] * len(order)
    for j, o in enumerate(order):
        inverse[o] = j
    return ernie2.PERMUTATIONS.index(tuple(inverse))


def _reorder_lexicographic_all(order):  # all orders sorted, not grouped by length
    return sorted(ernie2.PERMUTATIONS).index(tuple(order))


WRONG_ANSWERS = {
    "continual stage shares": [
        _shares_only_new,
        _shares_by_stage,
        _shares_first_keeps_half,
    ],
    "sentence reordering label": [
        _reorder_within_length,
        _reorder_inverse,
        _reorder_lexicographic_all,
    ],
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

    sol = importlib.import_module("solutions.ernie2")
    assert check("continual stage shares", sol.my_stage_shares)
    assert check("sentence reordering label", sol.my_reorder_label)
