"""UniLM: the per-example seq2seq mask by value, leak tests for the three masks,
generation with the cache equals the full recomputation, the recipe, bad input."""

import pytest
import torch

from ptlm_lite import masks
from ptlm_lite.config import preset
from ptlm_lite.unilm import OBJECTIVES, UniLM, objective_mask

V = 40
MASK_ID = 4


def pictures(fn):
    """Every indented block of ■/· rows in a docstring, as a bool tensor."""
    blocks, cur = [], []
    for line in fn.__doc__.splitlines() + [""]:
        s = line.strip()
        if s and set(s) <= set("■· "):
            cur.append([c == "■" for c in s.split()])
        elif cur:
            blocks.append(torch.tensor(cur))
            cur = []
    return blocks


def model(seed=0, scale=0.3):
    """A tiny UniLM with large random weights (so that every input moves every output
    it can reach)."""
    m = UniLM(preset("bert-tiny", vocab_size=V, dropout=0.0), seed=seed).eval()
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in m.parameters():
            if p.dim() > 1:
                p.copy_(torch.randn(p.shape, generator=g) * scale)
    return m


def packed():
    """Two packed pairs: [CLS] a a [SEP] b b [SEP] and a shorter one with padding."""
    ids = torch.tensor(
        [[2, 11, 12, 3, 21, 22, 3, 0], [2, 13, 3, 23, 24, 25, 3, 0]], dtype=torch.long
    )
    segments = torch.tensor([[0, 0, 0, 0, 1, 1, 1, 0], [0, 0, 0, 1, 1, 1, 1, 0]])
    valid = ids != 0
    return ids, segments, valid


def test_seq2seq_picture():
    (pic,) = pictures(masks.seq2seq_mask)
    assert torch.equal(masks.seq2seq_mask(torch.tensor([[0, 0, 1, 1, 1]]))[0], pic)


def test_seq2seq_mask_by_value_per_example():
    ids, segments, valid = packed()
    m = masks.seq2seq_mask(segments, valid)
    assert m.shape == (2, 8, 8) and m.dtype == torch.bool
    # each example is prefix_mask with its own source length, padding keys hidden (a
    # padding query, segment 0, sees the source only: its output is never used)
    for b, source in enumerate((4, 3)):
        want = masks.prefix_mask(8, source) & valid[b][None, :]
        real = valid[b]
        assert torch.equal(m[b][real], want[real]), (b, masks.draw(m[b]))
    # by hand, the second example's rows 0 (source) and 4 (second target token)
    assert m[1, 0].tolist() == [True, True, True, False, False, False, False, False]
    assert m[1, 4].tolist() == [True, True, True, True, True, False, False, False]


def test_objective_masks_by_value():
    ids, segments, valid = packed()
    bi = objective_mask("bidirectional", segments, valid)
    l2r = objective_mask("left-to-right", segments, valid)
    s2s = objective_mask("seq2seq", segments, valid)
    assert torch.equal(bi[0], valid[0][None, :].expand(8, 8))
    assert torch.equal(l2r[0], masks.causal_mask(8) & valid[0][None, :])
    assert torch.equal(s2s, masks.seq2seq_mask(segments, valid))
    # the seq2seq mask lies between the other two (on the real queries)
    real = valid[:, :, None]
    assert ((l2r <= s2s) | ~real).all() and ((s2s <= bi) | ~real).all()
    assert not torch.equal(l2r, s2s) and not torch.equal(s2s, bi)


@pytest.mark.parametrize("objective", OBJECTIVES)
def test_leak(objective):
    """Changing a token a position may not see leaves its output unchanged; changing
    one it sees changes it (so the test can fail)."""
    m = model()
    ids, segments, valid = packed()
    allowed = objective_mask(objective, segments, valid)
    with torch.no_grad():
        base = m(ids, segments, valid, objective=objective).logits
    for j in range(ids.shape[1]):
        if not valid[0, j]:
            continue
        changed = ids.clone()
        changed[0, j] = 39 if ids[0, j] != 39 else 38
        with torch.no_grad():
            out = m(changed, segments, valid, objective=objective).logits
        for i in range(ids.shape[1]):
            moved = not torch.allclose(out[0, i], base[0, i], atol=1e-6)
            assert moved == bool(allowed[0, i, j]), (objective, i, j, moved)
        assert torch.equal(out[1], base[1])  # the other example is untouched


def test_seq2seq_source_never_sees_target_and_padding_is_hidden():
    m = model()
    ids, segments, valid = packed()
    changed = ids.clone()
    changed[:, 4:7] = 30  # targets of both examples (and one source token of no one)
    changed[0, 7] = 17  # a padding token
    with torch.no_grad():
        a = m(ids, segments, valid, objective="seq2seq").last_hidden
        b = m(changed, segments, valid, objective="seq2seq").last_hidden
    assert torch.allclose(a[0, :4], b[0, :4], atol=1e-6)  # example 0's source
    assert torch.allclose(a[1, :3], b[1, :3], atol=1e-6)  # example 1's source


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_generation_equals_full_recomputation(seed):
    m = model(seed)
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(7, V, (4, 6), generator=g)
    src[:, 0] = 2
    src[1, 4:], src[2, 3:] = 0, 0  # right-padded sources
    a = m.generate(src, mask_id=MASK_ID, max_new_tokens=12)
    b = m.generate(src, mask_id=MASK_ID, max_new_tokens=12, cache=False)
    assert a.shape == (4, 12) and torch.equal(a, b)
    # and the step's logits agree, not only their argmax: the last step by hand
    ids = torch.cat([src, a[:, :-1], torch.full((4, 1), MASK_ID)], 1)
    seg = torch.cat([0 * src, torch.ones(4, 12, dtype=torch.long)], 1)
    valid = torch.cat([src != 0, torch.ones(4, 12, dtype=torch.bool)], 1)
    with torch.no_grad():
        full = m(ids, seg, valid, objective="seq2seq").logits[:, -1]
    assert torch.equal(full.argmax(-1), a[:, -1])


def test_generate_keeps_training_mode():
    m = model().train()
    m.generate(torch.tensor([[2, 9, 3]]), mask_id=MASK_ID, max_new_tokens=2)
    assert m.training


def test_targets_select_the_masked_positions():
    m = model()
    ids, segments, valid = packed()
    targets = torch.full_like(ids, -100)
    targets[0, 5], targets[1, 1] = 22, 13
    out = m(ids, segments, valid, objective="seq2seq", targets=targets)
    assert out.logits.shape == (2, V) and out.loss.dim() == 0
    assert torch.isfinite(out.loss)


def test_bad_input():
    m = model()
    ids, segments, valid = packed()
    with pytest.raises(TypeError, match="segments"):
        masks.seq2seq_mask(segments.float())
    with pytest.raises(TypeError, match="segments"):
        masks.seq2seq_mask(segments + 1)
    with pytest.raises(TypeError, match="segments"):
        masks.seq2seq_mask([[0, 1]])
    with pytest.raises(TypeError, match="valid"):
        masks.seq2seq_mask(segments, valid[:, :3])
    with pytest.raises(ValueError, match="objective"):
        objective_mask("right-to-left", segments, valid)
    with pytest.raises(ValueError, match="objective"):
        m(ids, segments, valid, objective="causal")
    with pytest.raises(ValueError, match="ids"):
        m(ids[0])
    with pytest.raises(ValueError, match="targets"):
        m(ids, targets=torch.full((2, 3), -100))
    with pytest.raises(ValueError, match="max_new_tokens"):
        m.generate(ids, mask_id=MASK_ID, max_new_tokens=0)
    with pytest.raises(ValueError, match="max_new_tokens"):
        m.generate(ids, mask_id=MASK_ID, max_new_tokens=m.config.max_len)
    with pytest.raises(ValueError, match="src"):
        m.generate(ids[0], mask_id=MASK_ID, max_new_tokens=2)
    with pytest.raises(TypeError, match="config"):
        UniLM("bert-tiny")


def test_recipe_batches_take_turns_and_train():
    from ptlm_lite.recipes import unilm as recipe

    tok = recipe.tokenizer()
    batches = recipe.pretraining_batches(tok, batch_size=4, max_len=24)
    seen = [batches(s)["objective"] for s in range(6)]
    assert seen == list(OBJECTIVES) * 2
    b = batches(0)
    assert set(b) == {"ids", "segments", "valid", "targets", "objective"}
    assert (b["segments"] == 1).any() and (b["targets"] != -100).any()
    assert torch.equal(batches(3)["ids"], batches(3)["ids"])  # a step's batch is fixed
    only = recipe.pretraining_batches(tok, ("seq2seq",), batch_size=4)
    assert {only(s)["objective"] for s in range(3)} == {"seq2seq"}
    with pytest.raises(ValueError, match="objectives"):
        recipe.pretraining_batches(tok, ("bidirectional", "nope"))
    m = recipe.new_model(tok, seed=0)
    hist = recipe.pretrain(m, OBJECTIVES, steps=3, tok=tok, batch_size=4, max_len=24)
    assert len(hist.losses) == 3


def test_recipe_scores_per_example():
    from ptlm_lite import suite
    from ptlm_lite.recipes import unilm as recipe

    tok = recipe.tokenizer()
    m = recipe.new_model(tok, seed=0)
    pairs = recipe.generation_pairs(tok, 8)
    hits = recipe.next_token_hits(m, pairs, tok.special_ids["mask"])
    assert hits.shape == (8,) and ((hits >= 0) & (hits <= 1)).all()
    slot = suite.get("slot_filler").test[:10]
    right = recipe.slot_cloze(m, tok, slot)
    assert right.shape == (10,) and set(right.tolist()) <= {0.0, 1.0}


# --- the chapter's exercises: plausible wrong answers are rejected


def _s2s_one_prefix(segments):  # one split point for the whole batch (prefix_mask)
    source = int((segments[0] == 0).sum())
    return masks.prefix_mask(segments.shape[1], source).expand(len(segments), -1, -1)


def _s2s_source_sees_target(segments):  # the source reads the target too
    T = segments.shape[1]
    causal = masks.causal_mask(T)
    return (segments[:, None, :] == 0) | causal | (segments[:, :, None] == 0)


def _s2s_target_bidirectional(segments):  # the target reads its future
    return (segments[:, None, :] == 0) | (segments[:, :, None] == 1)


def _s2s_causal_everywhere(segments):  # the left-to-right mask
    return masks.causal_mask(segments.shape[1]).expand(len(segments), -1, -1)


def _step_ignores_padding(src_valid, t):
    S = src_valid.shape[1]
    m = masks.causal_mask(2, memory=S + t - 1)
    return m.expand(len(src_valid), -1, -1)


def _step_mask_sees_itself_not(src_valid, t):  # strict: a query misses its own key
    S = src_valid.shape[1]
    keys = torch.cat([src_valid, src_valid.new_ones(len(src_valid), t + 1)], 1)
    query_pos = S + t - 1 + torch.arange(2)[:, None]
    return (torch.arange(S + t + 1)[None, :] < query_pos) & keys[:, None, :]


def _step_mask_both_see_all(src_valid, t):  # the [MASK] seen by the chosen token
    S = src_valid.shape[1]
    keys = torch.cat([src_valid, src_valid.new_ones(len(src_valid), t + 1)], 1)
    return keys[:, None, :].expand(-1, 2, -1)


WRONG_ANSWERS = {
    "seq2seq mask from segments": [
        _s2s_one_prefix, _s2s_source_sees_target, _s2s_target_bidirectional,
        _s2s_causal_everywhere,
    ],
    "cached generation step mask": [
        _step_ignores_padding, _step_mask_sees_itself_not, _step_mask_both_see_all,
    ],
}  # fmt: skip


@pytest.mark.parametrize(
    "name, i", [(n, i) for n, fs in WRONG_ANSWERS.items() for i in range(len(fs))]
)
def test_plausible_wrong_answers_are_rejected(name, i):
    from ptlm_lite.exercises import WRONG, check

    r = check(name, WRONG_ANSWERS[name][i])
    assert r.status == WRONG and not r, r.message


def test_solutions_pass():
    from ptlm_lite.exercise_keys import solutions_module
    from ptlm_lite.exercises import check

    S = solutions_module("unilm")
    assert check("seq2seq mask from segments", S.my_seq2seq_mask)
    assert check("cached generation step mask", S.my_step_mask)
