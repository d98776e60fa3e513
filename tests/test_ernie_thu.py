"""ERNIE (Tsinghua): TransE by value, the token-entity alignment, the dEA corruption,
the fusion block's shapes, and bad input (chapters/ernie_thu.ipynb)."""

import pytest
import torch

from ptlm_lite import ernie_thu as E
from ptlm_lite import transe
from ptlm_lite.config import preset
from ptlm_lite.data import make_world
from ptlm_lite.output import IGNORE


def _transe(entities, relations, p=1):
    m = transe.TransE(len(entities), len(relations), dim=2, p=p)
    with torch.no_grad():
        m.entity.weight.copy_(torch.tensor(entities))
        m.relation.weight.copy_(torch.tensor(relations))
    return m


def test_transe_score_by_value():
    m = _transe([[1.0, 0.0], [0.0, 1.0]], [[0.5, -1.0]], p=1)
    # e0 + r - e1 = (1.5, -2): L1 3.5, L2 2.5
    s = m.score(torch.tensor([[0, 0, 1], [1, 0, 0]]))
    # e1 + r - e0 = (-0.5, 0): L1 0.5
    assert torch.allclose(s, torch.tensor([-3.5, -0.5]))
    m2 = _transe([[1.0, 0.0], [0.0, 1.0]], [[0.5, -1.0]], p=2)
    assert torch.allclose(m2.score(torch.tensor([[0, 0, 1]])), torch.tensor([-2.5]))


def test_transe_margin_loss_by_value():
    pos, neg = torch.tensor([-1.0, -3.0]), torch.tensor([-2.0, -2.5])
    # max(0, 1 + 1 - 2) = 0, max(0, 1 + 3 - 2.5) = 1.5
    assert float(transe.margin_loss(pos, neg, margin=1.0)) == pytest.approx(0.75)
    # margin 2: max(0, 2 + 1 - 2) = 1, max(0, 2 + 3 - 2.5) = 2.5
    assert float(transe.margin_loss(pos, neg, margin=2.0)) == pytest.approx(1.75)


def test_transe_ranks_and_training_learn_the_graph():
    m = _transe([[0.0, 0.0], [1.0, 0.0], [3.0, 0.0]], [[1.0, 0.0]])
    # 0 + r = (1, 0): entity 1 is nearest (rank 1); entity 2 is third
    ranks = transe.tail_ranks(m, torch.tensor([[0, 0, 1], [0, 0, 2]]))
    assert ranks.tolist() == [1, 3]
    world = make_world(0)
    triples, names, relations = transe.graph_tensors(world)
    assert len(triples) == len(world.triples()) and len(names) == len(world.entities)
    h, r, t = triples[0].tolist()
    assert (names[h], relations[r], names[t]) == world.triples()[0]
    model, losses = transe.train_transe(
        triples, len(names), len(relations), steps=60, seed=0
    )
    trained = transe.tail_ranks(model, triples).float()
    fresh = transe.tail_ranks(transe.TransE(len(names), len(relations)), triples)
    assert losses[-1] < losses[0]
    assert (1 / trained).mean() > 3 * (1 / fresh.float()).mean()
    norms = model.entity.weight.norm(dim=1)
    assert torch.allclose(norms, torch.ones_like(norms), atol=1e-5)


def test_corrupt_triples_one_side_input_untouched():
    triples = torch.tensor([[0, 0, 1], [2, 1, 3]] * 200)
    before = triples.clone()
    out = transe.corrupt_triples(
        triples, 50, generator=torch.Generator().manual_seed(0)
    )
    assert torch.equal(triples, before)
    assert torch.equal(out[:, 1], triples[:, 1])
    both = (out[:, 0] != triples[:, 0]) & (out[:, 2] != triples[:, 2])
    assert not both.any()
    head = (out[:, 2] == triples[:, 2]).float().mean()
    assert 0.4 < float(head) < 0.6


@pytest.fixture(scope="module")
def tok():
    from ptlm_lite.recipes import bert as bert_recipe

    return bert_recipe.tokenizer()


def test_alignment_of_world_sentences(tok):
    from ptlm_lite.recipes import ernie_thu as R

    world = make_world(0)
    rows = R.encode_rows(tok, world, max_len=64)
    assert rows[0].text == "Veadumia is a country in the west."
    linker = R.linker(tok, world)
    n_mentions = 0
    for row in rows:
        assert len(row.entities) == len(row.ids) and row.entities[0] == 0
        for i, e in enumerate(row.entities):
            if e:  # the entity's name starts at this token
                n_mentions += 1
                name = world.entities[e - 1].name
                assert tok.encode(name)[0] == row.ids[i]
                assert name in row.text
        # the linker (word pieces, no spans) finds the same alignment
        assert linker(torch.tensor([row.ids]))[0].tolist() == row.entities
    spans = sum(
        s.entity is not None for d in world.documents for s in d.spans
    )  # every mention of every document, each aligned once
    assert n_mentions == spans


def test_span_alignment_first_token_only():
    from ptlm_lite.data.world import Span

    offsets = [(0, 3), (3, 5), (6, 9), (10, 12)]  # "Kuzin Vu" = tokens 0-2
    spans = [Span(0, 8, "person", 7), Span(10, 12, "phrase:age")]
    assert E.span_alignment(offsets, spans) == [8, 0, 0, 0]


def test_dea_corruption_fractions_and_input_untouched():
    g = torch.Generator().manual_seed(0)
    ents = torch.randint(1, 30, (400, 12), generator=g)
    ents[:, ::2] = 0  # half the positions have no entity
    before = ents.clone()
    d = E.dea_corrupt(ents, 30, generator=g)
    assert torch.equal(ents, before)
    aligned = ents > 0
    assert (d.action[~aligned] == -1).all() and (d.inputs[~aligned] == 0).all()
    assert (d.targets[~aligned] == IGNORE).all()
    share = lambda code: float((d.action[aligned] == code).float().mean())  # noqa
    assert share(E.MASKED) == pytest.approx(0.15, abs=0.02)
    assert share(E.REPLACED) == pytest.approx(0.05, abs=0.015)
    assert (d.inputs[d.action == E.MASKED] == 0).all()
    assert (d.inputs[d.action == E.KEEP] == ents[d.action == E.KEEP]).all()
    # every aligned token's target points at its true entity among the candidates
    picked = d.candidates.gather(1, d.targets.clamp(min=0))
    assert torch.equal(picked[aligned], ents[aligned])
    for row, cands in zip(ents.tolist(), d.candidates.tolist()):
        assert sorted(set(row) - {0}) == [c for c in cands if c]


def _config(**kw):
    return preset(
        "ernie-thu-tiny", vocab_size=50, n_entities=10, n_layer=3, n_knowledge=2, **kw
    )


def test_fusion_shapes_and_entity_stream():
    model = E.ErnieThu(_config(), seed=0).eval()
    model.load_entities(torch.randn(10, 32))
    ids = torch.randint(5, 50, (2, 7))
    ents = torch.zeros(2, 7, dtype=torch.long)
    ents[0, 1], ents[0, 4] = 3, 9
    out = model(ids, entities=ents, return_attention=True)
    assert out.last_hidden.shape == (2, 7, 64) and out.pooled.shape == (2, 64)
    assert out.extra["entities"].shape == (2, 7, 32)
    no_entity = ents == 0
    assert (out.extra["entities"][no_entity] == 0).all()  # zero where none is aligned
    assert len(out.attentions) == 3  # one T-Encoder block, two fusion blocks
    w_tok, w_ent = out.attentions[1]
    assert w_tok.shape == (2, 4, 7, 7) and w_ent.shape == (2, 4, 7, 7)
    assert (w_ent[0][..., no_entity[0]] == 0).all()  # entities see entities only
    assert (w_ent[1] == 0).all()  # a sentence without entities: zero weights
    # the entity reaches the tokens: another entity changes the token outputs
    other = ents.clone()
    other[0, 4] = 2
    assert not torch.allclose(
        model(ids, entities=other).last_hidden[0], out.last_hidden[0]
    )
    assert torch.allclose(model(ids, entities=other).last_hidden[1], out.last_hidden[1])
    assert not any(p.requires_grad for p in model.entity_table.parameters())


def test_pretraining_and_classification_heads():
    cfg = _config()
    model = E.ErnieThuForPreTraining(cfg, seed=0)
    ids = torch.randint(5, 50, (3, 6))
    ents = torch.tensor([[0, 2, 0, 5, 0, 0], [0, 0, 0, 0, 0, 0], [0, 7, 0, 0, 0, 0]])
    d = E.dea_corrupt(ents, 10, generator=torch.Generator().manual_seed(1))
    targets = torch.full_like(ids, IGNORE)
    targets[0, 2] = 9
    out = model(
        ids, d.inputs, targets=targets, dea_targets=d.targets, candidates=d.candidates
    )
    assert out.extra["dea_logits"].shape == (3, 2)  # 3 aligned tokens, 2 candidates
    assert out.loss is not None and torch.isfinite(out.loss)
    clf = E.ErnieThuForSequenceClassification.from_pretrained(model, n_labels=4)
    with pytest.raises(ValueError, match="linker"):
        clf(ids)
    assert clf(ids, entities=ents).logits.shape == (3, 4)


def test_bad_input_errors():
    model = E.ErnieThu(_config(), seed=0)
    ids = torch.randint(5, 50, (2, 4))
    with pytest.raises(TypeError, match="entities"):
        model(ids, entities=torch.zeros(2, 5, dtype=torch.long))
    with pytest.raises(ValueError, match="entities"):
        model(ids, entities=torch.full((2, 4), 11))
    with pytest.raises(ValueError, match="vectors"):
        model.load_entities(torch.zeros(10, 8))
    with pytest.raises(TypeError, match="mask"):
        model.k_encoder[0](torch.zeros(1, 4, 96), mask=torch.ones(1, 1, 4).bool())
    with pytest.raises(ValueError, match="d_entity"):
        _config(d_entity=30)
    with pytest.raises(ValueError, match="n_knowledge"):
        E.ErnieThu(preset("ernie-thu-tiny", vocab_size=50, n_knowledge=2))
    with pytest.raises(TypeError, match="generator"):
        E.dea_corrupt(torch.zeros(1, 3, dtype=torch.long), 5, generator=None)
    with pytest.raises(ValueError, match="p_mask"):
        E.dea_corrupt(
            torch.zeros(1, 3, dtype=torch.long),
            5,
            generator=torch.Generator(),
            p_mask=0.9,
            p_replace=0.2,
        )
    with pytest.raises(ValueError, match="p"):
        transe.TransE(5, 2, p=3)
    with pytest.raises(ValueError, match="margin"):
        transe.margin_loss(torch.zeros(2), torch.zeros(2), margin=0)
    with pytest.raises(TypeError, match="triples"):
        transe.TransE(5, 2).score(torch.zeros(2, 2, dtype=torch.long))
    with pytest.raises(ValueError, match="entity ids"):
        transe.TransE(5, 2).score(torch.tensor([[0, 0, 5]]))


def test_relation_type_task_split():
    from ptlm_lite.suite import entity_split, knowledge

    world = make_world(0)
    split = entity_split(world)
    task = knowledge.get("relation_type")
    by_name = {e.name: e for e in world.entities}
    for e in task.train:  # fine-tuning never names a test entity
        assert split[by_name[e["entity"]].id] == "train"
        if e["relation"] == "friend_of":
            assert split[by_name[e["tail"]].id] == "train"
    assert all(split[by_name[e["entity"]].id] == "test" for e in task.test)
    assert task.majority == pytest.approx(0.5)
    for e in task.test:  # the label is the graph's
        head, tail = by_name[e["entity"]], by_name[e["tail"]]
        related = tail in world.related(head, e["relation"])
        assert (e["label"] > 0) == related
    with pytest.raises(ValueError, match="unknown task"):
        knowledge.get("nope")


# Plausible wrong answers to the chapter's exercises: each must be rejected.
def _score_positive(h, r, t, p):
    return sum(abs(a + b - c) ** p for a, b, c in zip(h, r, t)) ** (1 / p)


def _score_no_root(h, r, t, p):
    return -sum(abs(a + b - c) ** p for a, b, c in zip(h, r, t))


def _score_wrong_sign(h, r, t, p):
    return -(sum(abs(a - b - c) ** p for a, b, c in zip(h, r, t)) ** (1 / p))


def _align_every_token(offsets, spans):
    out = [0] * len(offsets)
    for s in spans:
        for i, (a, b) in enumerate(offsets):
            if s.entity is not None and a < s.end and b > s.start:
                out[i] = s.entity + 1
    return out


def _align_no_offset(offsets, spans):
    out = [0] * len(offsets)
    for s in spans:
        for i, (a, b) in enumerate(offsets):
            if s.entity is not None and a < s.end and b > s.start:
                out[i] = s.entity
                break
    return out


def _align_phrases_too(offsets, spans):
    out = [0] * len(offsets)
    for s in spans:
        for i, (a, b) in enumerate(offsets):
            if a < s.end and b > s.start:
                out[i] = (s.entity or 0) + 1
                break
    return out


WRONG_ANSWERS = {
    "transe score": [_score_positive, _score_no_root, _score_wrong_sign],
    "entity alignment": [_align_every_token, _align_no_offset, _align_phrases_too],
}


def test_every_exercise_of_the_chapter_has_wrong_answers():
    from ptlm_lite import exercises as X

    X.load_all()
    mine = {n for n, s in X.EXERCISES.items() if s.chapter == "ernie_thu"}
    assert mine == set(WRONG_ANSWERS)
    assert {n for n, q in X.QUESTIONS.items() if q.chapter == "ernie_thu"}
    for name, wrongs in WRONG_ANSWERS.items():
        for wrong in wrongs:
            assert not X.check(name, wrong).passed, (name, wrong.__name__)
