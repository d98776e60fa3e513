"""MASS: the noise by value (fractions, lengths, windows, input untouched, same generator
same output, bad input), what each prediction may read (``reads``, k = 1 is BERT's row,
k = m GPT's triangle), leak tests through the model (a token a prediction may not see
leaves its output unchanged; every token it may see moves it), the decoder's positions,
generation unchanged without ``start``, the encoder head and the recipe."""

from __future__ import annotations

import copy

import pytest
import torch

import ptlm_lite as P
from ptlm_lite import seq2seq
from ptlm_lite.mass import (
    MASS,
    MassForChoice,
    fragment_length,
    fragment_start,
    mass_noise,
    reads,
)

V, MASK, PAD, BOS, EOS = 40, 4, 0, 5, 6
DOC = [[11, 12, 13], [14, 15, 16, 17], [18, 19]]  # m = 9
TEXT = [t for s in DOC for t in s]


def g(seed=0):
    return torch.Generator().manual_seed(seed)


def model(seed=0, scale=0.3) -> MASS:
    """A tiny MASS with large random weights (every input it may see moves every
    output)."""
    cfg = P.Config(vocab_size=V, d_model=32, n_head=4, n_layer=2, d_ff=64, max_len=24,
                   dropout=0.0, pad_id=PAD, pre_norm=True)  # fmt: skip
    m = MASS(cfg, seed=seed).eval()
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in m.parameters():
            if p.dim() > 1:
                p.copy_(torch.randn(p.shape, generator=gen) * scale)
    return m


def collated(pairs):
    b = seq2seq.collate(
        pairs, pad_id=PAD, bos_id=BOS, eos_id=EOS, max_src=24, max_tgt=24
    )
    return {**b, "start": fragment_start(b["src"], MASK)}


# ----------------------------------------------------------------------------------
# The noise


def test_noise_by_value():
    p = mass_noise(DOC, g(), mask_id=MASK, k=3, start=2)
    assert p.source == [11, 12, MASK, MASK, MASK, 16, 17, 18, 19]
    assert p.target == [13, 14, 15]
    p = mass_noise(DOC, g(), mask_id=MASK, k=1, start=0)
    assert p.source == [MASK, *TEXT[1:]] and p.target == [11]
    p = mass_noise(DOC, g(), mask_id=MASK, fraction=1.0)
    assert p.source == [MASK] * 9 and p.target == TEXT


@pytest.mark.parametrize("fragment", [dict(k=1), dict(k=4), dict(k=50),
                                      dict(fraction=0.5), dict(fraction=0.2)])  # fmt: skip
def test_noise_lengths_fractions_and_the_fragment(fragment):
    gen = g(1)
    for _ in range(50):
        p = mass_noise(DOC, gen, mask_id=MASK, **fragment)
        k = fragment_length(9, **fragment)
        assert len(p.source) == 9 and len(p.target) == k  # same length, k predicted
        u = p.source.index(MASK)
        assert p.source[u : u + k] == [MASK] * k  # one contiguous fragment
        assert p.source.count(MASK) == k
        assert p.target == TEXT[u : u + k]  # the fragment, in order
        assert p.source[:u] + p.target + p.source[u + k :] == TEXT


def test_fragment_length():
    assert fragment_length(9, k=1) == 1 and fragment_length(9, k=20) == 9
    assert fragment_length(9, fraction=0.5) == 4  # round(4.5): banker's rounding
    assert fragment_length(10, fraction=0.5) == 5
    assert fragment_length(3, fraction=0.01) == 1  # at least one token
    assert fragment_length(7, fraction=1.0) == 7


def test_starts_are_uniform_over_the_positions_that_fit():
    gen, k = g(2), 3
    starts = [mass_noise(DOC, gen, mask_id=MASK, k=k).source.index(MASK)
              for _ in range(700)]  # fmt: skip
    counts = torch.bincount(torch.tensor(starts), minlength=9)
    assert counts[: 9 - k + 1].min() > 60 and counts[9 - k + 1 :].sum() == 0


def test_same_generator_same_pair_and_input_untouched():
    doc = copy.deepcopy(DOC)
    a = [mass_noise(doc, g(7), mask_id=MASK, fraction=0.5, max_len=5) for _ in "ab"]
    assert a[0] == a[1] and doc == DOC
    gen = g(7)
    many = {tuple(mass_noise(doc, gen, mask_id=MASK, k=2).source) for _ in range(30)}
    assert len(many) > 1 and doc == DOC  # the generator moves; the doc does not


def test_max_len_takes_a_contiguous_window():
    gen = g(3)
    for _ in range(30):
        p = mass_noise(DOC, gen, mask_id=MASK, k=2, max_len=5)
        u = p.source.index(MASK)
        window = p.source[:u] + p.target + p.source[u + 2 :]
        assert len(window) == 5
        assert any(TEXT[i : i + 5] == window for i in range(5))


@pytest.mark.parametrize(
    "kw, match",
    [
        (dict(k=0), "k must be"),
        (dict(k=1.5), "k must be"),
        (dict(k=True), "k must be"),
        (dict(fraction=0.0), "fraction must be"),
        (dict(fraction=1.5), "fraction must be"),
        (dict(fraction="half"), "fraction must be"),
        (dict(), "exactly one of k"),
        (dict(k=1, fraction=0.5), "exactly one of k"),
        (dict(k=1, mask_id=-1), "mask_id"),
        (dict(k=1, max_len=0), "max_len"),
        (dict(k=3, start=7), "start must be"),
        (dict(k=3, start=-1), "start must be"),
    ],
)
def test_bad_parameters_raise_naming_them(kw, match):
    kw = {"mask_id": MASK, **kw}
    with pytest.raises(ValueError, match=match):
        mass_noise(DOC, g(), **kw)


def test_bad_documents_and_generators():
    with pytest.raises(TypeError, match="doc"):
        mass_noise("some text", g(), mask_id=MASK, k=1)
    with pytest.raises(TypeError, match="doc"):
        mass_noise([], g(), mask_id=MASK, k=1)
    with pytest.raises(ValueError, match="doc"):
        mass_noise([[1, -2]], g(), mask_id=MASK, k=1)
    with pytest.raises(ValueError, match="at least one token"):
        mass_noise([[]], g(), mask_id=MASK, k=1)
    with pytest.raises(TypeError, match="generator"):
        mass_noise(DOC, 0, mask_id=MASK, k=1)


def test_fragment_start():
    src = torch.tensor([[7, MASK, MASK, 8], [MASK, 9, 9, 9], [7, 8, 9, 9]])
    assert fragment_start(src, MASK).tolist() == [1, 0, 0]
    with pytest.raises(ValueError, match="src"):
        fragment_start(torch.tensor([1, 2]), MASK)


# ----------------------------------------------------------------------------------
# What each prediction reads


def test_reads_picture_and_the_two_ends():
    lines = [ln.split("(")[0].split(":")[-1] for ln in reads.__doc__.splitlines()]
    pic = [[int(c) for c in ln.split()] for ln in lines if ln.strip()[:3] == "1 1"]
    assert torch.equal(reads(7, 2, 3), torch.tensor(pic))
    # k = 1: BERT's row, everything but the token itself, through the encoder
    assert reads(6, 3, 1).tolist() == [[1, 1, 1, 0, 1, 1]]
    # k = m: GPT's strict past, through the decoder only
    assert torch.equal(reads(5, 0, 5), 2 * torch.tril(torch.ones(5, 5), -1).long())
    with pytest.raises(ValueError):
        reads(5, 3, 3)


def moved(m, text, start, k):
    """(k, len(text)) bool: does the prediction of fragment token i move when text
    token j changes (the pair re-noised with the same start)?"""

    def outputs(t):
        b = collated([mass_noise([t], g(), mask_id=MASK, k=k, start=start)])
        with torch.no_grad():
            return m(b["src"], b["tgt_in"], start=b["start"]).logits[0, :k]

    base = outputs(text)
    out = torch.zeros(k, len(text), dtype=torch.bool)
    for j in range(len(text)):
        changed = list(text)
        changed[j] = 30 if text[j] != 30 else 31
        out[:, j] = (outputs(changed) - base).abs().amax(-1) > 1e-6
    return out


@pytest.mark.parametrize("start, k", [(4, 1), (0, 1), (3, 4), (0, 9), (2, 7)])
def test_leak_each_prediction_moves_exactly_with_what_it_may_read(start, k):
    """Change one token of the text, noise it again with the same fragment: the
    prediction of fragment token i moves exactly when ``reads`` allows (a later
    fragment token, or the token itself, never moves it)."""
    assert torch.equal(moved(model(), TEXT, start, k), reads(9, start, k) > 0)


def test_a_source_token_reaches_the_decoder_only_through_the_encoder():
    m, text = model(1), TEXT
    b = collated([mass_noise([text], g(), mask_id=MASK, k=3, start=3)])
    memory, valid, _ = m.encode(b["src"])
    with torch.no_grad():
        want = m.decode(b["tgt_in"], memory, valid, start=b["start"])[0]
        changed = b["src"].clone()
        changed[0, 0] = 30  # an unmasked source token
        other, _, _ = m.encode(changed)
        # with the encoder's output held fixed, the source token changes nothing
        same = m.decode(b["tgt_in"], memory, valid, start=b["start"])[0]
        moved_ = m.decode(b["tgt_in"], other, valid, start=b["start"])[0]
    assert torch.equal(want, same) and not torch.allclose(want, moved_)


def test_k_equal_m_the_encoder_sees_nothing_of_the_text():
    m = model(2)
    other = [[21, 22, 23, 24], [25, 26, 27, 28, 29]]  # another text of the same length
    mem = [
        m.encode(collated([mass_noise(d, g(), mask_id=MASK, fraction=1.0)])["src"])[0]
        for d in (DOC, other)
    ]
    assert torch.equal(mem[0], mem[1])


# ----------------------------------------------------------------------------------
# The decoder's positions, and the model without them


def test_decoder_positions_start_at_the_fragment():
    m = model(3)
    src = torch.tensor([[11, 12, MASK, MASK, 15, 16, EOS]])
    tgt = torch.tensor([[BOS, 13]])
    memory, valid, _ = m.encode(src)
    with torch.no_grad():
        at2 = m.decode(tgt, memory, valid, start=torch.tensor([2]))[0]
        # by hand: the embeddings at positions 2, 3 through the same decoder
        x = m.embed(tgt, positions=torch.tensor([2, 3]))
        cross = P.masks.cross_mask(valid, 2)
        mask = P.masks.causal_mask(2)
        hand = m.head(m.decoder(x, mask=mask, context=memory, context_mask=cross)
                      .last_hidden)  # fmt: skip
        at0 = m.decode(tgt, memory, valid, start=torch.tensor([0]))[0]
        plain = m.decode(tgt, memory, valid)[0]
    assert torch.allclose(at2, hand, atol=1e-6)
    assert torch.allclose(at0, plain, atol=1e-6)  # start 0 is the plain decoder
    assert not torch.allclose(at2, plain)  # positions matter


def test_without_start_it_is_the_transformer_and_greedy_works():
    m = model(4)
    t = P.Transformer(m.config)
    t.load_state_dict(m.state_dict())
    t.eval()
    src = torch.tensor([[11, 12, 13, EOS, PAD], [14, 15, 16, 17, EOS]])
    tgt = torch.tensor([[BOS, 20, 21], [BOS, 22, 23]])
    with torch.no_grad():
        assert torch.equal(m(src, tgt).logits, t(src, tgt).logits)
    ours = seq2seq.greedy(m, src, bos_id=BOS, eos_id=EOS, max_new_tokens=6)
    theirs = seq2seq.greedy(t, src, bos_id=BOS, eos_id=EOS, max_new_tokens=6)
    assert torch.equal(ours, theirs)


def test_forward_with_start_trains_and_checks_start():
    m = model(5).train()
    pairs = [mass_noise(DOC, g(s), mask_id=MASK, fraction=0.5) for s in range(3)]
    b = collated(pairs)
    out = m(**b)
    assert out.loss is not None and torch.isfinite(out.loss)
    out.loss.backward()
    with pytest.raises(ValueError, match="start"):
        m(b["src"], b["tgt_in"], start=torch.tensor([1]))


def test_mass_for_choice():
    m = model(6)
    head = MassForChoice(m)
    ids = torch.tensor([[[11, 12, 13, PAD], [11, 14, 15, 16]]] * 3)  # (3, 2, 4)
    out = head(ids, labels=torch.tensor([0, 1, 0]))
    assert out.logits.shape == (3, 2) and out.loss is not None
    out.loss.backward()
    assert all(p.grad is None for p in m.decoder.parameters())  # only the encoder
    with pytest.raises(ValueError, match="ids"):
        head(ids[0])
    with pytest.raises(TypeError, match="MASS"):
        MassForChoice(torch.nn.Linear(2, 2))


# ----------------------------------------------------------------------------------
# The recipe


def test_recipe_batches_cloze_and_summaries():
    from ptlm_lite import suite
    from ptlm_lite.recipes import mass as recipe
    from ptlm_lite.suite.generation import summaries

    tok = recipe.tokenizer()
    s = tok.special_ids
    docs = recipe.documents(tok)[:20]
    b = next(recipe.pretraining_batches(tok, docs, dict(fraction=0.5), batch_size=4,
                                        max_len=16, seed=0))  # fmt: skip
    assert b["src"].shape[1] <= 17 and b["start"].shape == (4,)
    for row in range(4):
        u, k = int(b["start"][row]), int((b["src"][row] == s["mask"]).sum())
        assert b["src"][row, u : u + k].eq(s["mask"]).all()
        assert b["tgt_in"][row, 0] == s["bos"] and b["tgt_out"][row, k] == s["eos"]
    m = recipe.new_model(tok, seed=0)
    ex = suite.get("slot_filler").test[:5]
    right = recipe.slot_cloze(m, tok, ex)
    assert right.shape == (5,) and set(right.tolist()) <= {0.0, 1.0}
    data = summaries(0)
    batch = recipe.summary_batch(tok, data["train"][:4])
    assert set(batch) == {"src", "tgt_in", "tgt_out"}
    texts = recipe.summarise(m, tok, batch["src"], max_new_tokens=4)
    assert len(texts) == 4 and all(isinstance(t, str) for t in texts)


# ----------------------------------------------------------------------------------
# The exercises: plausible wrong answers are rejected, the solutions pass


def _noise_target_keeps_masks(tokens, start, k, mask_id):
    return tokens[:start] + [mask_id] * k + tokens[start + k :], [mask_id] * k


def _noise_drops_fragment(tokens, start, k, mask_id):  # BART-like: one mask, shorter
    return tokens[:start] + [mask_id] + tokens[start + k :], tokens[start : start + k]


def _noise_off_by_one(tokens, start, k, mask_id):
    s = start + 1
    return tokens[:s] + [mask_id] * k + tokens[s + k :], tokens[s : s + k]


def _reads_sees_itself(m, start, k):
    out = reads(m, start, k)
    out[:, start : start + k] += 2 * torch.eye(k, dtype=torch.long)
    return out


def _reads_all_encoder(m, start, k):
    out = torch.ones(k, m, dtype=torch.long)
    out[:, start : start + k] = 0
    return out


def _reads_decoder_sees_all(m, start, k):
    out = torch.ones(k, m, dtype=torch.long)
    out[:, start : start + k] = 2
    return out


WRONG_ANSWERS = {
    "mass noise at a given start": [
        _noise_target_keeps_masks, _noise_drops_fragment, _noise_off_by_one,
    ],
    "what each MASS prediction reads": [
        _reads_sees_itself, _reads_all_encoder, _reads_decoder_sees_all,
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

    S = solutions_module("mass")
    assert check("mass noise at a given start", S.my_mass_noise)
    assert check("what each MASS prediction reads", S.my_reads)
