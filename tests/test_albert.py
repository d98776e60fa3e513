"""ALBERT (ptlm_lite.albert, recipes.albert): the three forms of cross-layer sharing
(parameter counts, which tensors are the same object), the factorised embeddings and
head, the presets' parameter counts, n-gram masking (the share of tokens, P(n) ∝ 1/n,
whole words, special tokens never selected, the input left alone), sentence-order pairs
and bad input. Chapter: ``chapters/albert.ipynb``.
"""

import pytest
import torch

from ptlm_lite import albert as A
from ptlm_lite import bert, heads
from ptlm_lite.config import Config, preset
from ptlm_lite.corrupt import Pair, nsp_pairs, pack_pairs
from ptlm_lite.train import count_parameters

SPECIAL = tuple(
    range(7)
)  # as the book's WordPiece: [PAD] 0, [CLS] 2, [SEP] 3, [MASK] 4
PAD, CLS, SEP, MASK = 0, 2, 3, 4
V = 200


def _cfg(**kw):
    return preset("albert-tiny", vocab_size=V, **kw)


def _n_block(cfg):
    D, F = cfg.d_model, cfg.d_ff
    attn, ff, ln = 4 * D * D + 4 * D, 2 * D * F + F + D, 2 * D
    return attn, ff, ln


@pytest.mark.parametrize("share", ["all", "attention", "ffn", "none"])
def test_sharing_counts_and_identity(share):
    cfg = _cfg(share=share)
    model = A.Albert(cfg, seed=0)
    blocks = [model.blocks[i % len(model.blocks)] for i in range(cfg.n_layer)]
    L, (attn, ff, ln) = cfg.n_layer, _n_block(cfg)
    # each shared part is counted once, each unshared part L times
    n = {
        "all": attn + ff + 2 * ln,
        "attention": attn + ln + L * (ff + ln),
        "ffn": L * (attn + ln) + ff + ln,
        "none": L * (attn + ff + 2 * ln),
    }[share]
    stack = count_parameters(model.blocks)
    assert stack == n
    same = {
        part: all(getattr(b, part) is getattr(blocks[0], part) for b in blocks)
        for part in ("attn", "ln1", "ff", "ln2")
    }
    expect = {
        "all": dict(attn=True, ln1=True, ff=True, ln2=True),
        "attention": dict(attn=True, ln1=True, ff=False, ln2=False),
        "ffn": dict(attn=False, ln1=False, ff=True, ln2=True),
        "none": dict(attn=False, ln1=False, ff=False, ln2=False),
    }[share]
    assert same == expect
    # a shared module gets one gradient, summed over the layers that use it
    ids = torch.randint(7, V, (2, 9))
    model(ids).last_hidden.sum().backward()
    assert all(p.grad is not None for p in model.blocks.parameters())


def test_share_layers_still_means_whole_blocks():
    old = preset("bert-tiny", vocab_size=V, share_layers=True)
    assert len(bert.Bert(old).blocks) == 1  # the plain Config's switch is unchanged
    cfg = _cfg(share="none", share_layers=True)
    assert cfg.sharing == "all" and len(A.Albert(cfg).blocks) == 1
    assert len(A.Albert(_cfg(share="none")).blocks) == 4
    assert _cfg(share="none").replace(share="all").sharing == "all"


def test_bad_configs():
    with pytest.raises(ValueError, match="share must be one of"):
        _cfg(share="layers")
    with pytest.raises(ValueError, match="share_layers=True"):
        _cfg(share="attention", share_layers=True)
    with pytest.raises(TypeError, match="AlbertConfig"):
        A.Albert(preset("bert-tiny", vocab_size=V))
    with pytest.raises(ValueError, match="pos='learned'"):
        A.Albert(_cfg(pos="sinusoidal"))
    with pytest.raises(ValueError, match="share must be"):
        A.share_blocks(A.Albert(_cfg()).blocks, "half")


def test_factorised_embeddings_and_head():
    cfg = _cfg()
    E, D = cfg.d_embed, cfg.d_model
    model = A.AlbertForPreTraining(cfg, seed=0)
    emb = model.bert.embed
    assert emb.tok.weight.shape == (V, E) and emb.up.weight.shape == (D, E)
    assert emb.ln.normalized_shape == (E,)  # the LayerNorm is over E, before E -> D
    assert model.mlm.decoder.weight is emb.tok.weight  # tied: V x E
    assert model.mlm.dense.weight.shape == (E, D)  # D -> E -> V
    ids = torch.randint(7, V, (2, 7))
    out = model(ids, nsp_labels=torch.tensor([0, 1]))
    assert out.logits.shape == (2, 7, V) and out.extra["nsp_logits"].shape == (2, 2)
    assert torch.isfinite(out.loss)
    # the fine-tuning heads take ALBERT's encoder as it is
    head = heads.BertForSequenceClassification(model.bert, n_labels=3)
    assert head(ids).logits.shape == (2, 3)


def test_paper_parameter_counts():
    """Lan et al. (2019), Table 1: 12M, 18M, 60M (and BERT's 108M / 334M). xxlarge's
    235M is not what its sizes give: 223M, as the released checkpoint has."""

    def count(name):
        cfg = preset(name)
        cls = A.AlbertForPreTraining if name.startswith("albert") else None
        with torch.device("meta"):
            model = (cls or bert.BertForPreTraining)(cfg)
        return count_parameters(model) / 1e6

    for name, paper in [
        ("albert-base", 12),
        ("albert-large", 18),
        ("albert-xlarge", 60),
        ("albert-xxlarge", 223),
        ("bert-base", 108),
        ("bert-large", 334),
    ]:
        assert abs(count(name) - paper) / paper < 0.04, name


# ----------------------------------------------------------------------------------
# n-gram masking


def _vocab(seed=0):
    g = torch.Generator().manual_seed(seed)
    starts = torch.ones(V, dtype=torch.bool)
    starts[torch.randperm(V - 7, generator=g)[: (V - 7) // 3] + 7] = False
    return starts


def _rows(B, T, seed=0, min_len=8):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(7, V, (B, T), generator=g)
    for r in range(B):
        n = int(torch.randint(min_len, T + 1, (1,), generator=g))
        ids[r, 0], ids[r, n - 1] = CLS, SEP
        ids[r, n:] = PAD
    return ids


def _mask(ids, seed=0, **kw):
    return A.ngram_mask(
        ids,
        special_ids=SPECIAL,
        mask_id=MASK,
        vocab_size=V,
        generator=torch.Generator().manual_seed(seed),
        **kw,
    )


def test_ngram_probs():
    assert torch.allclose(
        A.ngram_probs(3), torch.tensor([6, 3, 2], dtype=torch.float64) / 11
    )
    for bad in (0, 2.0, True):
        with pytest.raises(ValueError, match="max_n"):
            A.ngram_probs(bad)


def test_ngram_mask_exact_share_and_never_special():
    ids = _rows(64, 40)
    before = ids.clone()
    m = _mask(ids, starts_word=_vocab())
    assert torch.equal(ids, before)  # the argument is left alone
    maskable = ~torch.isin(ids, torch.tensor(SPECIAL))
    n = maskable.sum(1)
    k = (n.double() * 0.15).round().long().clamp(min=1)
    assert torch.equal(m.selected.sum(1), k)  # exactly round(0.15 n) per row
    assert not (m.selected & ~maskable).any()
    assert torch.equal(m.targets[m.selected], ids[m.selected])
    assert (m.targets[~m.selected] == -100).all()
    assert torch.equal(_mask(ids, starts_word=_vocab()).inputs, m.inputs)  # seeded


def test_ngram_lengths_follow_one_over_n():
    """The drawn n: 6/11, 3/11, 2/11; every n-gram starts a word and holds n words
    (or fewer, at the budget or a special token)."""
    starts = _vocab()
    ids = _rows(400, 64, seed=1, min_len=40)
    maskable = ~torch.isin(ids, torch.tensor(SPECIAL))
    word_start = A.word_starts(ids, starts, SPECIAL)
    g = torch.Generator().manual_seed(0)
    sel, grams = A.select_ngrams(
        maskable, word_start, 0.15, generator=g, return_ngrams=True
    )
    drawn = torch.tensor([n for row in grams for _, _, n in row])
    share = torch.bincount(drawn, minlength=4)[1:].double() / len(drawn)
    assert len(drawn) > 1000
    assert torch.allclose(share, A.ngram_probs(3), atol=0.03), share
    for r, row in enumerate(grams):
        for i, j, n in row:
            assert word_start[r, i]
            assert int(word_start[r, i:j].sum()) <= n
    # with every token a word, the whole-token n-grams are n tokens long but the last
    ids = _rows(200, 64, seed=2, min_len=60)
    maskable = ~torch.isin(ids, torch.tensor(SPECIAL))
    _, grams = A.select_ngrams(
        maskable, maskable.clone(), 0.15, generator=g, return_ngrams=True
    )
    lengths = [(j - i, n) for row in grams for i, j, n in row[:-1]]
    assert sum(a == n for a, n in lengths) / len(lengths) > 0.9


def test_ngram_bad_input():
    ids = _rows(2, 10)
    g = torch.Generator().manual_seed(0)
    ok = ~torch.isin(ids, torch.tensor(SPECIAL))
    with pytest.raises(TypeError, match="generator"):
        A.select_ngrams(ok, ok, 0.15, generator=None)
    with pytest.raises(ValueError, match="p must be"):
        A.select_ngrams(ok, ok, 1.5, generator=g)
    with pytest.raises(TypeError, match="maskable"):
        A.select_ngrams(ok.long(), ok, 0.15, generator=g)
    with pytest.raises(TypeError, match="starts_word"):
        _mask(ids, starts_word=torch.ones(3, dtype=torch.bool))
    with pytest.raises(TypeError, match="ids"):
        _mask(ids.float())


# ----------------------------------------------------------------------------------
# sentence-order pairs


def _docs():
    # document d, sentence s is the token list [10 * d + s] * (s + 1)
    return [[[10 * d + s] * (s + 1) for s in range(4)] for d in range(6)]


def test_sop_pairs_are_consecutive_and_half_swapped():
    docs = _docs()
    pairs = A.sop_pairs(docs, 2000, generator=torch.Generator().manual_seed(0))
    swapped = 0
    for p in pairs:
        a, b = (p.b, p.a) if p.label else (p.a, p.b)  # back in order
        assert a[0] // 10 == b[0] // 10  # one document: never a random B
        assert b[0] == a[0] + 1  # B follows A there
        swapped += p.label
    assert abs(swapped / len(pairs) - 0.5) < 0.04
    # the in-order pairs are those of BERT's pair builder with no random B
    same = nsp_pairs(docs, 50, generator=torch.Generator().manual_seed(3), p_random=0)
    sop = A.sop_pairs(docs, 50, generator=torch.Generator().manual_seed(3), p_swap=0)
    assert sop == same
    batch = pack_pairs(pairs[:8], cls_id=CLS, sep_id=SEP, pad_id=PAD, max_len=16)
    assert batch["nsp_labels"].tolist() == [p.label for p in pairs[:8]]


def test_sop_bad_input():
    g = torch.Generator().manual_seed(0)
    with pytest.raises(ValueError, match="p_swap"):
        A.sop_pairs(_docs(), 4, generator=g, p_swap=2)
    with pytest.raises(TypeError, match="p_swap"):
        A.sop_pairs(_docs(), 4, generator=g, p_swap="half")
    with pytest.raises(ValueError, match="n must be"):
        A.sop_pairs(_docs(), 0, generator=g)
    with pytest.raises(TypeError, match="generator"):
        A.sop_pairs(_docs(), 4, generator=0)
    assert isinstance(A.sop_pairs(_docs(), 1, generator=g)[0], Pair)


def test_recipe_batches_and_measurements():
    from ptlm_lite.recipes import albert as R
    from ptlm_lite.recipes import bert as B

    tok = B.tokenizer()
    with pytest.raises(ValueError, match="pairs"):
        R.albert_batches(tok, pairs="order")
    held = R.held_out(tok, "sop", 1, 8, 32)
    b = held[0]
    assert set(b) >= {"ids", "segments", "valid", "targets", "nsp_labels"}
    model = A.AlbertForPreTraining(
        preset("albert-tiny", vocab_size=tok.vocab_size), seed=0
    )
    mask_id = tok.special_ids["mask"]
    at_mask = (b["targets"] != -100) & (b["ids"] == mask_id)
    # scored where the input reads [MASK] only: not the chosen tokens left unchanged
    assert 0 < at_mask.sum() < (b["targets"] != -100).sum()
    assert R.mlm_correct(model, held, mask_id).shape == (at_mask.sum(),)
    assert R.pair_correct(model, held).shape == (8,)
    # correct where the head's answer is the pair's label: one call reads the other
    answers, labels = (
        R.pair_answers(model, held),
        torch.cat([x["nsp_labels"] for x in held]),
    )
    assert set(answers.tolist()) <= {0, 1}
    assert torch.equal(R.pair_correct(model, held), (answers == labels).float())
    l2, cos = R.layer_steps(model, held)
    assert l2.shape == cos.shape == (8, 4) and (cos <= 1 + 1e-5).all()


def test_config_is_a_config():
    assert isinstance(_cfg(), Config) and _cfg().to_dict()["share"] == "all"


# ----------------------------------------------------------------------------------
# plausible wrong answers to the chapter's exercises (tests/test_exercises.py checks
# that each is rejected)


def _no_bias(V, E, H):
    return V * E + E * H  # forgets the projection's bias


def _always_project(V, E, H):
    return V * E + E * H + H  # a projection even when E == H


def _unfactorised(V, E, H):
    return V * H  # BERT's table


def _uniform(max_n):
    return torch.full((max_n,), 1.0 / max_n, dtype=torch.float64)


def _unnormalised(max_n):
    return 1.0 / torch.arange(1, max_n + 1, dtype=torch.float64)


def _geometric(max_n):
    w = 0.5 ** torch.arange(max_n, dtype=torch.float64)
    return w / w.sum()


WRONG_ANSWERS = {
    "factorised embedding parameters": [_no_bias, _always_project, _unfactorised],
    "n-gram length distribution": [_uniform, _unnormalised, _geometric],
}
