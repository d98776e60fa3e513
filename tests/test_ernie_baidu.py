"""ERNIE 1.0's knowledge masking (ptlm_lite.ernie), its recipe (ptlm_lite.recipes.ernie)
and the chapter's exercises: exact fractions on large batches, units masked whole,
special tokens and padding never chosen, arguments untouched, same generator -> same
output, clear errors, and plausible wrong answers rejected."""

import pytest
import torch

from ptlm_lite import corrupt
from ptlm_lite import exercises as E
from ptlm_lite.data import make_world
from ptlm_lite.data.world import Span
from ptlm_lite.ernie import (
    LEVELS,
    dialogue_example,
    knowledge_mask,
    select_units,
    span_level,
    token_units,
)
from ptlm_lite.exercise_keys import solutions_module
from ptlm_lite.exercise_sets.ernie_baidu import _unit_batch
from ptlm_lite.recipes import ernie as R

SPECIAL = list(range(7))  # as the book's tokenizers: 0..6 are special ids
V, MASK, PAD, CLS, SEP = 1024, 4, 0, 2, 3


def _gen(seed=0):
    return torch.Generator().manual_seed(seed)


def _batch(seed=0, B=2000, T=48):
    """(ids, maskable, units): [CLS] ... [SEP] + padding, spans of 1 to 5 tokens."""
    maskable, units = _unit_batch(seed, B, T)
    ids = torch.randint(7, V, (B, T), generator=_gen(seed + 1))
    lengths = (maskable.sum(1) + 2)[:, None]
    pos = torch.arange(T)
    ids[:, 0] = CLS
    ids = torch.where(pos == lengths - 1, SEP, ids)
    ids = torch.where(pos >= lengths, PAD, ids)
    return ids, maskable, units


def _unit_counts(selected, units):
    """(tokens per unit, chosen tokens per unit) over every unit of the batch."""
    B, T = units.shape
    key = (torch.arange(B)[:, None] * T + units)[units >= 0]
    size = torch.zeros(B * T).index_add_(0, key, torch.ones(key.numel()))
    hit = torch.zeros(B * T).index_add_(0, key, selected[units >= 0].float())
    keep = size > 0
    return size[keep], hit[keep]


# --- select_units


def test_fractions_are_exact_on_a_large_batch():
    ids, maskable, units = _batch()
    for p in (0.15, 0.4):
        sel = select_units(maskable, units, p, generator=_gen(3))
        n = int(maskable.sum())
        size, hit = _unit_counts(sel, units)
        alone = maskable & (units < 0)
        # Every token, alone or in a unit, is chosen with probability p. A unit's
        # tokens go together, so the token share's standard error counts each unit
        # with its size squared: sqrt(p(1-p) * sum(size^2)) / n, about 0.004 here.
        se = (p * (1 - p) * (float((size**2).sum()) + int(alone.sum()))) ** 0.5 / n
        assert abs(int(sel.sum()) / n - p) < 4 * se < 0.02
        se_units = (p * (1 - p) / len(size)) ** 0.5
        assert abs(float((hit == size).float().mean()) - p) < 4 * se_units
        se_alone = (p * (1 - p) / int(alone.sum())) ** 0.5
        assert abs(int(sel[alone].sum()) / int(alone.sum()) - p) < 4 * se_alone


def test_units_are_chosen_whole():
    ids, maskable, units = _batch()
    sel = select_units(maskable, units, 0.3, generator=_gen(4))
    size, hit = _unit_counts(sel, units)
    assert ((hit == 0) | (hit == size)).all()
    assert (hit == size).any() and (hit == 0).any()
    assert (size > 1).sum() > 1000  # many multi-token units were tested


def test_special_tokens_and_padding_are_never_chosen():
    ids, maskable, units = _batch()
    sel = select_units(maskable, units, 1.0, generator=_gen(5))
    assert torch.equal(sel, maskable)  # p = 1: every maskable token and nothing else
    for level_units in (units, torch.full_like(units, -1)):
        m = knowledge_mask(
            ids,
            level_units,
            special_ids=SPECIAL,
            mask_id=MASK,
            vocab_size=V,
            p=0.5,
            generator=_gen(6),
        )
        assert not m.selected[~maskable].any()
        assert torch.equal(m.inputs[~maskable], ids[~maskable])


def test_arguments_are_never_modified():
    ids, maskable, units = _batch(B=200)
    copies = ids.clone(), maskable.clone(), units.clone()
    select_units(maskable, units, 0.5, generator=_gen())
    knowledge_mask(
        ids, units, special_ids=SPECIAL, mask_id=MASK, vocab_size=V, generator=_gen()
    )
    assert all(torch.equal(a, b) for a, b in zip((ids, maskable, units), copies))


def test_same_generator_same_output():
    ids, maskable, units = _batch(B=200)
    kw = dict(special_ids=SPECIAL, mask_id=MASK, vocab_size=V)
    a = knowledge_mask(ids, units, generator=_gen(7), **kw)
    b = knowledge_mask(ids, units, generator=_gen(7), **kw)
    c = knowledge_mask(ids, units, generator=_gen(8), **kw)
    assert all(torch.equal(x, y) for x, y in zip(vars(a).values(), vars(b).values()))
    assert not torch.equal(a.selected, c.selected)
    # the global random state is neither used nor changed
    torch.manual_seed(0)
    want = torch.rand(3)
    torch.manual_seed(0)
    knowledge_mask(ids, units, generator=_gen(7), **kw)
    assert torch.equal(torch.rand(3), want)


def test_replacement_is_berts_80_10_10():
    ids, maskable, units = _batch()
    m = knowledge_mask(
        ids, units, special_ids=SPECIAL, mask_id=MASK, vocab_size=V, generator=_gen(9)
    )
    n = int(m.selected.sum())
    shares = [
        int((m.action == a).sum()) / n
        for a in (corrupt.MASKED, corrupt.RANDOM, corrupt.UNCHANGED)
    ]
    assert n > 7000 and all(abs(s - w) < 0.015 for s, w in zip(shares, (0.8, 0.1, 0.1)))
    assert torch.equal(m.targets[m.selected], ids[m.selected])
    assert (m.targets[~m.selected] == -100).all()
    assert (m.inputs[m.action == corrupt.RANDOM] >= 7).all()  # never a special token


def test_basic_level_is_per_token():
    ids, maskable, units = _batch()
    sel = select_units(maskable, torch.full_like(units, -1), 0.15, generator=_gen(10))
    # neighbours are chosen independently: P(both) = p^2, not p
    both = (sel[:, 1:] & sel[:, :-1]).sum() / (maskable[:, 1:] & maskable[:, :-1]).sum()
    assert abs(float(both) - 0.15**2) < 0.004


def test_bad_input_raises_clear_errors():
    ids, maskable, units = _batch(B=4, T=12)
    with pytest.raises(ValueError, match="p "):
        select_units(maskable, units, 1.5, generator=_gen())
    with pytest.raises(TypeError, match="units must"):
        select_units(maskable, units[:, :5], 0.1, generator=_gen())
    with pytest.raises(TypeError, match="units must"):
        select_units(maskable, units.float(), 0.1, generator=_gen())
    with pytest.raises(TypeError, match="maskable must"):
        select_units(maskable.long(), units, 0.1, generator=_gen())
    with pytest.raises(TypeError, match="generator"):
        select_units(maskable, units, 0.1, generator=0)
    bad = units.clone()
    bad[:, 0] = 0  # a unit over [CLS]
    with pytest.raises(ValueError, match="units covers a special token"):
        select_units(maskable, bad, 0.1, generator=_gen())
    with pytest.raises(ValueError, match="units must hold"):
        select_units(maskable, units - 5, 0.1, generator=_gen())
    with pytest.raises(ValueError, match="level must be one of"):
        token_units([(0, 1)], (), "word")


# --- spans to token units


def test_token_units_follow_character_offsets():
    # "Kuzin Vu was born in Shefemo." cut by the book's WordPiece
    offsets = [
        (0, 1),
        (1, 2),
        (2, 3),
        (3, 5),
        (6, 7),
        (7, 8),
        (9, 12),
        (13, 15),
        (15, 16),
        (16, 17),
        (18, 20),
        (21, 24),
        (24, 26),
        (26, 27),
        (27, 28),
        (28, 29),
    ]
    spans = (Span(21, 28, "city"), Span(0, 8, "person"), Span(9, 17, "phrase:x"))
    assert token_units(offsets, spans, "entity") == [0] * 6 + [-1] * 5 + [1] * 4 + [-1]
    assert token_units(offsets, spans, "phrase") == [-1] * 6 + [0] * 4 + [-1] * 6
    assert token_units(offsets, spans, "basic") == [-1] * 16
    assert token_units([(0, 4)], (Span(3, 9, "city"),), "entity") == [0]  # overlap
    assert token_units([(0, 3)], (Span(3, 9, "city"),), "entity") == [-1]  # touches
    assert span_level("phrase:colour") == "phrase" and span_level("PERSON") == "entity"


@pytest.fixture(scope="module")
def tok():
    from ptlm_lite.recipes import bert as recipe

    return recipe.tokenizer()


def test_world_spans_flow_to_whole_units(tok):
    world = make_world(0, n_entities=30)
    items = R.world_sentences(world)
    assert len(items) > 90
    for text, spans in items:  # re-based spans still point at their mentions
        for s in spans:
            if s.entity is not None:
                assert text[s.start : s.end] == world.entities[s.entity].name
    rows = R.encode_rows(tok, items, max_len=32)
    checked = 0
    for row, (text, spans) in zip(rows, items):
        ents = sorted(
            (s for s in spans if span_level(s.label) == "entity"), key=lambda s: s.start
        )
        units = row.units["entity"]
        for u, s in enumerate(ents):
            pieces = [i for i, x in zip(row.ids, units) if x == u]
            assert tok.decode(pieces).replace(" ", "") == text[s.start : s.end].replace(
                " ", ""
            )
            checked += 1
        assert units[0] == units[-1] == -1  # [CLS] and [SEP] belong to no unit
        assert row.units["basic"] == [-1] * len(row.ids)
    assert checked > 150


def test_plays_speakers_and_names_become_units(tok):
    rows = R.encode_rows(tok, R.play_speeches("train", n=50), max_len=48)
    assert all(r.units["entity"][1] == 0 for r in rows)  # the speaker opens the row
    assert all(max(r.units["entity"]) >= 1 for r in rows if len(r.ids) < 40)
    assert all(r.units["phrase"] == [-1] * len(r.ids) for r in rows)


def test_knowledge_batches_differ_only_in_the_masking(tok):
    rows = R.encode_rows(tok, R.world_sentences(make_world(0, n_entities=30)))
    batches = {
        lv: R.knowledge_batches(tok, rows, lv, batch_size=64, seed=1) for lv in LEVELS
    }
    for step in (1, 2, 7):
        clean = []
        for lv, get in batches.items():
            b = get(step)
            assert set(b) == {"ids", "valid", "segments", "targets"}
            assert torch.equal(b["targets"], get(step)["targets"])  # same step, same
            sel = b["targets"] != -100
            clean.append(torch.where(sel, b["targets"], b["ids"]))
            assert not sel[~b["valid"]].any()
        assert all(torch.equal(c, clean[0]) for c in clean)  # the same rows, in order
    with pytest.raises(ValueError, match="level must be one of"):
        R.knowledge_batches(tok, rows, "word")


def test_entity_batches_mask_whole_entities(tok):
    rows = R.encode_rows(tok, R.world_sentences(make_world(0, n_entities=30)))
    n = len(rows)
    b = R.knowledge_batches(tok, rows, "entity", batch_size=n, seed=0, p=0.5)(1)
    sel = b["targets"] != -100
    # the batch does not carry the rows: find each by its clean ids
    clean = torch.where(sel, b["targets"], b["ids"])
    by_ids = {tuple(r.ids): r for r in rows}
    assert len(by_ids) == n
    half = whole = 0
    for k in range(n):
        row = by_ids[tuple(clean[k, : int(b["valid"][k].sum())].tolist())]
        units = torch.tensor(row.units["entity"])
        for u in range(int(units.max()) + 1):
            chosen = sel[k, : len(units)][units == u]
            half += int(chosen.any() and not chosen.all())
            whole += int(chosen.all())
    assert half == 0 and whole > 50


# --- the knowledge cloze


def test_fact_probes_state_the_documents_facts():
    world = make_world(0, n_entities=30)
    sentences = {t for t, _ in R.world_sentences(world)}
    probes = R.fact_probes(world)
    assert {p.relation for p in probes} == {
        "born_in",
        "works_for",
        "city_in",
        "based_in",
    }
    assert all(p.before + p.answer + p.after in sentences for p in probes)
    names = {k: {e.name for e in world.of_kind(k)} for k in R.TAIL_KINDS}
    assert all(p.answer in names[p.kind] for p in probes)
    templates = R.fact_probes(world, "template")
    assert len(templates) == len(probes)
    assert not any(p.before + p.answer + p.after in sentences for p in templates)
    guess = R.frequency_guess(probes)
    assert set(guess) == {(p.relation, p.kind) for p in probes}


class _Oracle(torch.nn.Module):
    """A 'model' whose logits at every position prefer the pieces of ``names``."""

    def __init__(self, tok, names, vocab_size):
        super().__init__()
        bias = torch.full((vocab_size,), -5.0)
        for name in names:
            bias[tok.encode(name)] = 5.0
        self.bias = torch.nn.Parameter(bias)

    def forward(self, ids, valid=None):
        from types import SimpleNamespace

        return SimpleNamespace(logits=self.bias.expand(*ids.shape, -1).clone())


def test_cloze_accuracy_ranks_the_candidates(tok):
    world = make_world(0, n_entities=30)
    probes = R.fact_probes(world)
    cands = {k: [e.name for e in world.of_kind(k)] for k in R.TAIL_KINDS}
    # a constant model ties every candidate: ties count against the answer
    c = R.cloze_accuracy(_Oracle(tok, [], tok.vocab_size), tok, probes, cands)
    acc, ranks = c.accuracy, c.ranks
    assert acc == 0.0 and all(r == len(cands[p.kind]) for r, p in zip(ranks, probes))
    # a model that prefers one city's pieces picks that city for every city probe
    city = probes[0].answer if probes[0].kind == "city" else cands["city"][0]
    c = R.cloze_accuracy(_Oracle(tok, [city], tok.vocab_size), tok, probes, cands)
    ranks = c.ranks
    assert all(x == city for x, p in zip(c.chosen, probes) if p.kind == "city")
    city_probes = [r for r, p in zip(ranks, probes) if p.kind == "city"]
    hits = [p.answer == city for p in probes if p.kind == "city"]
    assert [r == 1 for r in city_probes] == hits


# --- the dialogue LM's input


def test_dialogue_example_roles_and_fakes():
    turns = [[10, 11], [12], [13, 14, 15]]
    pool = [[900, 901]]
    real = [
        dialogue_example(
            turns,
            ["A", "B", "A"],
            pool,
            cls_id=CLS,
            sep_id=SEP,
            generator=_gen(s),
            p_fake=0.0,
        )
        for s in range(3)
    ]
    assert real[0] == {
        "ids": [CLS, 10, 11, SEP, 12, SEP, 13, 14, 15, SEP],
        "roles": [0, 0, 0, 0, 1, 1, 0, 0, 0, 0],  # Q R Q
        "label": 0,
    }
    qrr = dialogue_example(
        turns,
        ["A", "B", "C"],
        pool,
        cls_id=CLS,
        sep_id=SEP,
        generator=_gen(),
        p_fake=0.0,
    )
    assert qrr["roles"][4:] == [1, 1, 1, 1, 1, 1]
    fakes = [
        dialogue_example(
            turns, ["A", "B", "A"], pool, cls_id=CLS, sep_id=SEP, generator=_gen(s)
        )
        for s in range(400)
    ]
    share = sum(f["label"] for f in fakes) / len(fakes)
    assert 0.4 < share < 0.6
    for f in fakes:  # a fake has exactly one turn swapped for the pool's sentence
        assert (900 in f["ids"]) == bool(f["label"])
    assert turns == [[10, 11], [12], [13, 14, 15]]  # untouched
    a = dialogue_example(
        turns, ["A", "B", "A"], pool, cls_id=CLS, sep_id=SEP, generator=_gen(5)
    )
    assert a == dialogue_example(
        turns, ["A", "B", "A"], pool, cls_id=CLS, sep_id=SEP, generator=_gen(5)
    )
    with pytest.raises(ValueError, match="turns and speakers"):
        dialogue_example(turns, ["A"], pool, cls_id=CLS, sep_id=SEP, generator=_gen())
    with pytest.raises(ValueError, match="pool"):
        dialogue_example(
            turns, ["A", "B", "A"], [], cls_id=CLS, sep_id=SEP, generator=_gen()
        )


# --- exercises: the solutions pass, plausible wrong answers fail


def _units_in_given_order(offsets, spans, level):
    units = [-1] * len(offsets)
    if level == "basic":
        return units
    kept = [s for s in spans if s.label.startswith("phrase:") == (level == "phrase")]
    for u, s in enumerate(kept):  # not sorted by position
        for i, (a, b) in enumerate(offsets):
            if a < s.end and b > s.start:
                units[i] = u
    return units


def _units_contained_only(offsets, spans, level):
    units = [-1] * len(offsets)
    if level == "basic":
        return units
    kept = [s for s in spans if s.label.startswith("phrase:") == (level == "phrase")]
    for u, s in enumerate(sorted(kept, key=lambda s: s.start)):
        for i, (a, b) in enumerate(offsets):
            if a >= s.start and b <= s.end:  # drops a piece that runs past the span
                units[i] = u
    return units


def _units_every_span(offsets, spans, level):
    units = [-1] * len(offsets)
    for u, s in enumerate(sorted(spans, key=lambda s: s.start)):  # ignores the level
        for i, (a, b) in enumerate(offsets):
            if a < s.end and b > s.start:
                units[i] = u
    return units


def _select_per_token(maskable, units, p, generator):
    return (torch.rand(units.shape, generator=generator) < p) & maskable


def _select_then_grow(maskable, units, p, generator):
    sel = (torch.rand(units.shape, generator=generator) < p) & maskable
    B, T = units.shape
    for b in range(B):  # a chosen token drags its whole unit in
        for u in set(units[b][sel[b] & (units[b] >= 0)].tolist()):
            sel[b] |= units[b] == u
    return sel


def _select_ignoring_maskable(maskable, units, p, generator):
    my_select_units = solutions_module("ernie_baidu").my_select_units

    return my_select_units(torch.ones_like(maskable), units, p, generator)


def _select_in_place(maskable, units, p, generator):
    my_select_units = solutions_module("ernie_baidu").my_select_units

    out = my_select_units(maskable, units, p, generator)
    maskable &= out  # right value, but the caller's tensor changes
    return out.clone()


def _select_units_too_often(maskable, units, p, generator):
    my_select_units = solutions_module("ernie_baidu").my_select_units

    return my_select_units(maskable, units, 2 * p, generator)


WRONG_ANSWERS = {
    "token units": [_units_in_given_order, _units_contained_only, _units_every_span],
    "unit selection": [
        _select_per_token,
        _select_then_grow,
        _select_ignoring_maskable,
        _select_in_place,
        _select_units_too_often,
    ],
}


def test_every_exercise_of_the_chapter_has_wrong_answers():
    E.load_all()
    mine = {n for n, s in E.EXERCISES.items() if s.chapter == "ernie_baidu"}
    assert mine == set(WRONG_ANSWERS)
    assert {n for n, q in E.QUESTIONS.items() if q.chapter == "ernie_baidu"}


def test_friend_probes_have_one_right_answer_among_their_candidates(tok):
    world = make_world(0, n_entities=30)
    sentences = {t for t, _ in R.world_sentences(world)}
    base = R.fact_probes(world)
    probes = R.fact_probes(world, friends=True)
    friends = [p for p in probes if p.relation == "friend_of"]
    assert [p for p in probes if p.relation != "friend_of"] == base
    assert friends and all(p.before + p.answer + p.after in sentences for p in friends)
    people = {e.name for e in world.of_kind(R.FRIEND_KIND)}
    assert all(p.kind == R.FRIEND_KIND and p.answer in people for p in friends)
    assert all(p.answer not in p.others and set(p.others) <= people for p in friends)
    assert any(p.others for p in friends)  # someone has several friends
    # an oracle that prefers every friend of a person still ranks the probe's own
    # answer first: the other friends are not candidates
    p = next(p for p in friends if p.others)
    cands = {R.FRIEND_KIND: sorted(people)}
    names = [p.answer, *p.others]
    c = R.cloze_accuracy(_Oracle(tok, names, tok.vocab_size), tok, [p], cands)
    assert c.chosen[0] in names and c.chosen[0] not in p.others
    assert len(R.fact_probes(world, "template", friends=True)) == len(probes)
