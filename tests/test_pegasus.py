"""PEGASUS: gap-sentence selection by value, the ratio, purity, and reference equivalence
with Hugging Face's ``PegasusForConditionalGeneration`` (tiny random config, nothing
downloaded)."""

import copy

import numpy as np
import pytest
import torch

from ptlm_lite import seq2seq
from ptlm_lite.config import preset
from ptlm_lite.pegasus import (
    Pegasus,
    gap_sentences,
    n_gaps,
    pegasus_positions,
    select_gaps,
    sentence_scores,
)

# A hand-checked document (token ids as words). Sentence 1 shares most with the rest.
#   s0 = [1, 2, 3]        s1 = [1, 2, 4, 5]        s2 = [4, 5, 6]        s3 = [7, 8]
DOC = [[1, 2, 3], [1, 2, 4, 5], [4, 5, 6], [7, 8]]
# ROUGE-1 F1 of each against the others' tokens (multiset, clipped counts):
#   s0 vs [1,2,4,5,4,5,6,7,8] (9): overlap 2 -> P=2/3, R=2/9 -> F=1/3
#   s1 vs [1,2,3,4,5,6,7,8]   (8): overlap 4 -> P=1,   R=1/2 -> F=2/3
#   s2 vs [1,2,3,1,2,4,5,7,8] (9): overlap 2 -> P=2/3, R=2/9 -> F=1/3
#   s3 vs the first three (10):    overlap 0 -> F=0
SCORES = [1 / 3, 2 / 3, 1 / 3, 0.0]


def g(seed=0):
    return torch.Generator().manual_seed(seed)


def test_principal_scores_by_hand():
    np.testing.assert_allclose(sentence_scores(DOC), SCORES, atol=1e-9)


def test_selection_by_value():
    # ratio 0.5 of 4 sentences: 2 gaps; principal: s1, then s0 (tied with s2, earlier)
    assert select_gaps(DOC, "principal", 0.5) == [0, 1]
    assert select_gaps(DOC, "principal", 0.25) == [1]
    assert select_gaps(DOC, "lead", 0.5) == [0, 1]
    assert select_gaps(DOC, "lead", 0.75) == [0, 1, 2]
    pair = gap_sentences(DOC, g(), mask_id=99, strategy="principal", ratio=0.25)
    assert pair == seq2seq.Pair([1, 2, 3, 99, 4, 5, 6, 7, 8], [1, 2, 4, 5])
    pair = gap_sentences(DOC, g(), mask_id=99, strategy="principal", ratio=0.5)
    assert pair == seq2seq.Pair([99, 99, 4, 5, 6, 7, 8], [1, 2, 3, 1, 2, 4, 5])
    pair = gap_sentences(DOC, g(), mask_id=99, strategy="lead", ratio=0.3)
    assert pair == seq2seq.Pair([99, 1, 2, 4, 5, 4, 5, 6, 7, 8], [1, 2, 3])


def test_ratio():
    assert [n_gaps(n, 0.3) for n in range(1, 9)] == [1, 1, 1, 1, 2, 2, 2, 2]
    assert n_gaps(10, 0.3) == 3 and n_gaps(10, 0.5) == 5 and n_gaps(2, 0.9) == 1
    assert n_gaps(10, 0.99) == 9  # a source keeps one sentence
    doc = [[i, i + 100] for i in range(1, 11)]
    for strategy in ("principal", "random", "lead"):
        for ratio, m in ((0.1, 1), (0.3, 3), (0.5, 5)):
            pair = gap_sentences(doc, g(), mask_id=0, strategy=strategy, ratio=ratio)
            assert pair.source.count(0) == m, (strategy, ratio)
            assert len(pair.target) == 2 * m and len(pair.source) == 2 * (10 - m) + m
    for bad in (0, 1, 1.5, -0.1):
        with pytest.raises(ValueError, match="ratio"):
            gap_sentences(doc, g(), mask_id=0, ratio=bad)
    with pytest.raises(TypeError, match="ratio"):
        gap_sentences(doc, g(), mask_id=0, ratio="0.3")
    with pytest.raises(ValueError, match="strategy"):
        gap_sentences(doc, g(), mask_id=0, strategy="best")
    with pytest.raises(ValueError, match="mask_id"):
        gap_sentences(doc, g(), mask_id=-1)


def test_random_is_seeded_uniform_and_pure():
    doc = [[i] for i in range(1, 6)]
    kept = copy.deepcopy(doc)
    a = gap_sentences(doc, g(3), mask_id=0, strategy="random", ratio=0.4)
    b = gap_sentences(doc, g(3), mask_id=0, strategy="random", ratio=0.4)
    assert a == b and doc == kept
    counts = np.zeros(5)
    gen = g(1)
    for _ in range(2000):
        for i in select_gaps(doc, "random", 0.4, gen):
            counts[i] += 1
    assert np.all(np.abs(counts / 2000 - 0.4) < 0.05), counts  # each 2 of 5
    # the target is the removed sentences in document order; the rest is the source
    pair = gap_sentences(doc, g(5), mask_id=0, strategy="random", ratio=0.4)
    assert pair.target == sorted(pair.target)
    assert sorted(pair.target + [t for t in pair.source if t]) == [1, 2, 3, 4, 5]


def test_input_untouched_every_strategy():
    for strategy in ("principal", "random", "lead"):
        doc = copy.deepcopy(DOC)
        gap_sentences(doc, g(), mask_id=9, strategy=strategy, ratio=0.5)
        assert doc == DOC
        t = [torch.tensor(s) for s in DOC]  # tensors as sentences are read, not changed
        gap_sentences(t, g(), mask_id=9, strategy=strategy, ratio=0.5)
        assert [s.tolist() for s in t] == DOC


def test_one_sentence_document():
    pair = gap_sentences([[5, 6]], g(), mask_id=9, strategy="principal")
    assert pair == seq2seq.Pair([9], [5, 6])
    with pytest.raises(TypeError):
        gap_sentences([5, 6], g(), mask_id=9)  # a flat list is not a document
    with pytest.raises(TypeError, match="generator"):
        gap_sentences(DOC, 0, mask_id=9)


def test_positions_and_config_checks():
    pe = pegasus_positions(10, 8)
    assert torch.allclose(pe[:, :4], torch.sin(pe.new_tensor(range(10))[:, None]
                                               * 10000 ** (-torch.arange(0, 8, 2) / 8)))  # fmt: skip
    assert torch.allclose(pe[0, 4:], torch.ones(4))
    with pytest.raises(ValueError, match="pre_norm"):
        Pegasus(preset("tiny", vocab_size=50))
    with pytest.raises(TypeError, match="config"):
        Pegasus({"vocab_size": 50})


# --------------------------------------------------------------------------------------
# Reference equivalence with Hugging Face


def hf_pair(seed=0, d_model=32):
    transformers = pytest.importorskip("transformers")
    from ptlm_lite.hf.pegasus import from_hf

    cfg = transformers.PegasusConfig(
        vocab_size=61, d_model=d_model, encoder_layers=2, decoder_layers=2,
        encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=48,
        decoder_ffn_dim=48, max_position_embeddings=40, scale_embedding=True,
        activation_function="relu", pad_token_id=0, eos_token_id=1, bos_token_id=2,
        decoder_start_token_id=2, forced_eos_token_id=None, dropout=0.0,
        attention_dropout=0.0, activation_dropout=0.0,
    )  # fmt: skip
    torch.manual_seed(seed)
    hf = transformers.PegasusForConditionalGeneration(cfg).eval()
    with torch.no_grad():  # non-trivial norms and biases
        for name, p in hf.named_parameters():
            if "norm" in name or name.endswith(".bias"):
                p.add_(torch.randn_like(p) * 0.1)
    return hf, from_hf(hf)


def padded_batch(seed=1):
    gen = torch.Generator().manual_seed(seed)
    src = torch.randint(3, 61, (3, 9), generator=gen)
    src[1, 6:] = 0  # padding
    src[2, 4:] = 0
    tgt = torch.randint(3, 61, (3, 7), generator=gen)
    tgt[:, 0] = 2  # the decoder start
    tgt[1, 5:] = 0
    return src, tgt


def test_hf_logits_with_padding():
    hf, ours = hf_pair()
    src, tgt = padded_batch()
    with torch.no_grad():
        want = hf(
            input_ids=src, attention_mask=src != 0, decoder_input_ids=tgt,
            decoder_attention_mask=tgt != 0,
        ).logits  # fmt: skip
        got = ours(src, tgt).logits
    keep = tgt != 0
    assert (got[keep] - want[keep]).abs().max() < 1e-5
    assert ours.config.pre_norm and ours.config.d_model == 32


def test_hf_greedy_and_beam_generation():
    hf, ours = hf_pair(seed=2)
    src, _ = padded_batch(seed=3)
    n = 12
    kw = dict(
        attention_mask=src != 0, max_new_tokens=n, min_length=0, do_sample=False,
        eos_token_id=1, pad_token_id=0, decoder_start_token_id=2,
    )  # fmt: skip
    with torch.no_grad():
        want = hf.generate(src, num_beams=1, **kw)[:, 1:]  # drop the start token
    got = seq2seq.greedy(ours, src, bos_id=2, eos_id=1, max_new_tokens=n)
    assert (
        torch.equal(got, want[:, : got.shape[1]])
        and (want[:, got.shape[1] :] == 0).all()
    )
    for beams, lp in ((3, 1.0), (4, 0.6)):
        with torch.no_grad():
            want = hf.generate(
                src, num_beams=beams, length_penalty=lp, early_stopping=False, **kw
            )[:, 1:]
        got = seq2seq.beam_search(
            ours, src, bos_id=2, eos_id=1, beams=beams, max_new_tokens=n,
            length_penalty=lp,
        )  # fmt: skip
        T = max(got.shape[1], want.shape[1])
        pad = lambda t: torch.nn.functional.pad(t, (0, T - t.shape[1]))  # noqa: E731
        assert torch.equal(pad(got), pad(want)), (beams, got, want)


def test_gap_explorer_views():
    from ptlm_lite.viz.pegasus_views import GAP_CLASS, gap_explorer, gap_view

    sentences = ["A is a cat.", "A likes B.", "B is a dog."]
    html = gap_view(sentences, [1], "principal", scores=[0.5, 0.6, 0.4])
    assert "view: principal: 1 of 3" in html
    assert "[MASK]" in html and "A likes B." in html.split("<b>target</b>")[1]
    assert "A is a cat. [MASK] B is a dog." in html
    with pytest.raises(ValueError, match="chosen"):
        gap_view(sentences, [3], "lead")
    box = gap_explorer(sentences, {"principal": [1], "lead": [0]})
    assert GAP_CLASS in box._dom_classes
    with pytest.raises(ValueError, match="chosen"):
        gap_explorer(sentences, {})


# --------------------------------------------------------------------------------------
# The chapter's exercises: plausible wrong answers are rejected


def _pair_mask_per_token(doc, gaps, mask_id):  # one mask per removed token
    src, tgt = [], []
    for i, s in enumerate(doc):
        (src.extend([mask_id] * len(s)), tgt.extend(s)) if i in gaps else src.extend(s)
    return src, tgt


def _pair_target_in_gap_order(doc, gaps, mask_id):  # the order the gaps were given
    src = [t for i, s in enumerate(doc) for t in ([mask_id] if i in gaps else s)]
    return src, [t for i in gaps for t in doc[i]]


def _pair_no_mask(doc, gaps, mask_id):  # the sentences just vanish
    src = [t for i, s in enumerate(doc) if i not in gaps for t in s]
    return src, [t for i in sorted(gaps) for t in doc[i]]


def _rouge1_sets(a, b):  # unique tokens: repeated tokens not counted
    overlap = len(set(a) & set(b))
    if not overlap:
        return 0.0
    p, r = overlap / len(set(a)), overlap / len(set(b))
    return 2 * p * r / (p + r)


def _rouge1_unclipped(a, b):  # every token of a that appears in b counts
    overlap = sum(t in b for t in a)
    if not overlap:
        return 0.0
    p, r = overlap / len(a), overlap / len(b)
    return 2 * p * r / (p + r)


def _rouge1_precision(a, b):  # precision, not F1
    from collections import Counter

    return sum((Counter(a) & Counter(b)).values()) / len(a)


WRONG_ANSWERS = {
    "gap-sentence pair": [
        _pair_mask_per_token, _pair_target_in_gap_order, _pair_no_mask,
    ],
    "ROUGE-1 F1 of token ids": [_rouge1_sets, _rouge1_unclipped, _rouge1_precision],
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

    solutions = solutions_module("pegasus")
    for name, fn in (
        ("gap-sentence pair", solutions.my_gap_pair),
        ("ROUGE-1 F1 of token ids", solutions.my_rouge1),
    ):
        assert check(name, fn), name
