"""T5 (chapters/t5.ipynb): relative position buckets by value against Hugging Face's
function, the model against ``T5ForConditionalGeneration`` (logits with padding, greedy
and beam generation), the two noises by value."""

import numpy as np
import pytest
import torch

import ptlm_lite as P
from ptlm_lite import seq2seq
from ptlm_lite.t5 import (
    T5,
    RelativeBias,
    T5Attention,
    bert_style,
    noise_spans,
    relative_position_bucket,
    span_corruption,
)

transformers = pytest.importorskip("transformers")
from transformers import T5ForConditionalGeneration  # noqa: E402
from transformers.models.t5.modeling_t5 import T5Attention as HFAttention  # noqa: E402

from ptlm_lite.hf import t5 as hf_t5  # noqa: E402

BOS, EOS = 5, 6


@pytest.mark.parametrize("bidirectional", [True, False])
@pytest.mark.parametrize(
    "n_buckets,max_distance", [(32, 128), (16, 64), (8, 20), (6, 7)]
)
def test_buckets_equal_hugging_face(bidirectional, n_buckets, max_distance):
    rel = torch.arange(-300, 301)[:, None] + torch.arange(0, 3)[None]
    ours = relative_position_bucket(rel, bidirectional, n_buckets, max_distance)
    ref = HFAttention._relative_position_bucket(
        rel, bidirectional, n_buckets, max_distance
    )
    assert torch.equal(ours, ref)


def test_buckets_by_hand():
    rel = torch.tensor([-200, -20, -8, -4, -3, -1, 0, 1, 3, 4, 8, 20, 200])
    both = relative_position_bucket(rel, True, 16, 64)
    # 8 buckets a side: 0-3 exact, then 4 + floor(log(d / 4) / log(64 / 4) * 4)
    # (d = 8: 5, d = 20: 6, d = 200: 9, cut to 7); keys after the query: + 8
    assert both.tolist() == [7, 6, 5, 4, 3, 1, 0, 9, 11, 12, 13, 14, 15]
    causal = relative_position_bucket(rel, False, 16, 64)
    # 16 buckets looking back: 0-7 exact, then 8 + floor(log(d / 8) / log(8) * 8)
    assert causal.tolist() == [15, 11, 8, 4, 3, 1, 0, 0, 0, 0, 0, 0, 0]


def test_relative_bias_equals_compute_bias():
    cfg = P.preset("t5-tiny", vocab_size=30)
    hf = T5ForConditionalGeneration(hf_t5.config_to_hf(cfg)).eval()
    m = hf_t5.from_hf(hf)
    for ours, layer in (
        (m.enc_bias, hf.encoder.block[0].layer[0].SelfAttention),
        (m.dec_bias, hf.decoder.block[0].layer[0].SelfAttention),
    ):
        with torch.no_grad():
            assert torch.equal(ours(7, 9), layer.compute_bias(7, 9)[0])
    assert isinstance(m.enc_bias, RelativeBias)


def _trained_hf(vocab=24, steps=30, tie=True):
    """A tiny HF T5 trained a few steps to copy: generations vary and stop at EOS."""
    cfg = P.preset("t5-tiny", vocab_size=vocab, tie_weights=tie)
    torch.manual_seed(0)
    hf = T5ForConditionalGeneration(
        hf_t5.config_to_hf(cfg, decoder_start_token_id=BOS, eos_token_id=EOS)
    )
    opt = torch.optim.Adam(hf.parameters(), lr=1e-2)
    g = torch.Generator().manual_seed(0)

    def batch(n):
        lengths = torch.randint(3, 9, (n,), generator=g)
        src = torch.randint(7, vocab, (n, 9), generator=g)
        src = src.masked_fill(torch.arange(9)[None] >= lengths[:, None], 0)
        src[torch.arange(n), lengths] = EOS
        return src, src.masked_fill(src == 0, -100)

    for _ in range(steps):
        src, labels = batch(32)
        loss = hf(input_ids=src, attention_mask=src != 0, labels=labels).loss
        opt.zero_grad()
        loss.backward()
        opt.step()
    return hf.eval(), batch(8)[0]


def _cut(ids):
    """Rows as lists up to and with the first EOS (HF pads after it with EOS)."""
    rows = []
    for row in ids.tolist():
        rows.append(row[: row.index(EOS) + 1] if EOS in row else row)
    return rows


@pytest.mark.parametrize("tie", [True, False])
def test_logits_equal_hugging_face_with_padding(tie):
    hf, _ = _trained_hf(tie=tie, steps=3)
    m = hf_t5.from_hf(hf)
    assert m.config.tie_weights is tie
    g = torch.Generator().manual_seed(1)
    src = torch.randint(7, 24, (4, 11), generator=g)
    src[1, 7:], src[2, 4:] = 0, 0
    tgt = torch.randint(7, 24, (4, 9), generator=g)
    tgt[:, 0], tgt[0, 6:] = BOS, 0
    with torch.no_grad():
        ref = hf(
            input_ids=src,
            attention_mask=src != 0,
            decoder_input_ids=tgt,
            decoder_attention_mask=tgt != 0,
        ).logits
        ours = m(src, tgt).logits
    valid = tgt != 0
    assert (ref - ours)[valid].abs().max() < 1e-5


def test_generation_equals_hugging_face_generate():
    hf, src = _trained_hf()
    m = hf_t5.from_hf(hf)
    kw = dict(input_ids=src, attention_mask=src != 0, max_new_tokens=12)
    greedy = seq2seq.greedy(m, src, bos_id=BOS, eos_id=EOS, max_new_tokens=12)
    ref = hf.generate(**kw, do_sample=False, num_beams=1)
    assert _cut(greedy) == _cut(ref[:, 1:])
    assert any(EOS in r for r in _cut(greedy)) and len(set(map(len, _cut(greedy)))) > 1
    beam = seq2seq.beam_search(
        m, src, bos_id=BOS, eos_id=EOS, beams=3, max_new_tokens=12
    )
    # seq2seq.beam_search stops as Hugging Face's early_stopping=False does: once the
    # best running beam, scored at its present length, cannot beat the worst finished
    # one. (Compared with early_stopping="never", which searches on, this passed on
    # AVX-512 machines by chance and failed on an AVX2 one, 2026-11-29.)
    ref = hf.generate(
        **kw, do_sample=False, num_beams=3, length_penalty=1.0, early_stopping=False
    )
    assert _cut(beam) == _cut(ref[:, 1:])
    assert _cut(beam) != _cut(greedy), "beam search changes something here"


def test_attention_is_unscaled():
    attn = T5Attention(8, 2).eval()
    x = torch.randn(1, 5, 8)
    q, k, v = attn.project(x)
    want = (q @ k.transpose(-2, -1)).softmax(-1) @ v  # no 1/sqrt(d_head)
    got, _ = attn.attend(q, k, v)
    assert torch.allclose(got, want, atol=1e-6)
    assert attn.qkv.bias is None and attn.o.bias is None


def test_t5_model_parts_and_decoder_leak():
    m = T5(P.preset("t5-tiny", vocab_size=30), seed=0).eval()
    assert isinstance(m.encoder.norm, torch.nn.RMSNorm)
    assert all(
        mod.bias is None for mod in m.modules() if isinstance(mod, torch.nn.Linear)
    )
    assert m.head.weight is m.embed.tok.weight
    src = torch.randint(7, 30, (2, 6))
    tgt = torch.randint(7, 30, (2, 7))
    with torch.no_grad():
        base = m(src, tgt).logits
        changed = tgt.clone()
        changed[:, 4] = 7 + (changed[:, 4] - 6) % 23
        out = m(src, changed).logits
    assert torch.equal(out[:, :4], base[:, :4]), "a target position saw the future"
    assert not torch.allclose(out[:, 4:], base[:, 4:])
    with pytest.raises(ValueError, match="pos must be 'none'"):
        T5(P.preset("t5-tiny", vocab_size=30, pos="learned"))
    with pytest.raises(TypeError, match="T5Config"):
        T5(P.preset("tiny", vocab_size=30))


SENTINELS = list(range(100, 140))


def _doc(n=40):
    return [list(range(10, 10 + n // 2)), list(range(10 + n // 2, 10 + n))]


def test_span_corruption_by_value():
    doc = _doc(40)
    before = [list(s) for s in doc]
    pair = span_corruption(
        doc, torch.Generator().manual_seed(0), sentinel_ids=SENTINELS
    )
    assert doc == before, "the argument is untouched"
    flat = [t for s in doc for t in s]
    # sentinels in order, each once in the source and once in the target
    src_s = [t for t in pair.source if t in SENTINELS]
    tgt_s = [t for t in pair.target if t in SENTINELS]
    assert src_s == tgt_s == SENTINELS[: len(src_s)]
    # the target's spans put back in place of their sentinels give the text again
    spans, cur = {}, None
    for t in pair.target:
        if t in SENTINELS:
            cur = t
            spans[cur] = []
        else:
            spans[cur].append(t)
    rebuilt = [x for t in pair.source for x in (spans[t] if t in SENTINELS else [t])]
    assert rebuilt == flat
    n_noise = sum(len(v) for v in spans.values())
    assert n_noise == round(0.15 * 40) == 6 and len(spans) == round(6 / 3) == 2
    assert all(len(v) >= 1 for v in spans.values())
    # T5's layout: the text starts with kept tokens and ends with a span
    assert pair.source[0] not in SENTINELS and pair.target[-1] not in SENTINELS
    assert pair.source[-1] in SENTINELS
    again = span_corruption(
        doc, torch.Generator().manual_seed(0), sentinel_ids=SENTINELS
    )
    assert again == pair


def test_span_lengths_and_fraction_over_many():
    g = torch.Generator().manual_seed(1)
    lengths, fractions = [], []
    for _ in range(300):
        mask = noise_spans(100, g)
        fractions.append(int(mask.sum()))
        starts = mask & ~torch.cat([torch.tensor([False]), mask[:-1]])
        lengths.append(mask.sum().item() / starts.sum().item())
        assert not mask[0] and mask[-1]
    assert set(fractions) == {15}  # 15% of 100 tokens, every time
    assert sum(lengths) / len(lengths) == pytest.approx(3.0, abs=1e-9)  # 15 in 5 spans
    # span lengths vary: the cuts are random
    g = torch.Generator().manual_seed(2)
    spans = []
    for _ in range(200):
        m = noise_spans(100, g).int().tolist()
        spans += [len(s) for s in "".join(map(str, m)).split("0") if s]
    assert min(spans) == 1 and max(spans) >= 7


def test_span_corruption_rejects_bad_parameters():
    g = torch.Generator().manual_seed(0)
    with pytest.raises(ValueError, match="noise_density"):
        span_corruption(_doc(), g, sentinel_ids=SENTINELS, noise_density=1.5)
    with pytest.raises(ValueError, match="mean_span"):
        span_corruption(_doc(), g, sentinel_ids=SENTINELS, mean_span=0)
    with pytest.raises(ValueError, match="sentinel_ids"):
        span_corruption(_doc(), g, sentinel_ids=[100])
    with pytest.raises(TypeError, match="generator"):
        span_corruption(_doc(), 0, sentinel_ids=SENTINELS)
    assert span_corruption([[7]], g, sentinel_ids=SENTINELS) == seq2seq.Pair([7], [])


def test_bert_style_by_value():
    doc = [list(range(10, 1010))]
    before = [list(doc[0])]
    g = torch.Generator().manual_seed(0)
    pair = bert_style(doc, g, mask_id=4, random_ids=range(2000, 2100))
    assert doc == before and pair.target == doc[0]
    assert len(pair.source) == len(doc[0])
    masked = sum(t == 4 for t in pair.source)
    randomised = sum(t >= 2000 for t in pair.source)
    assert 0.8 * 0.15 * 1000 * 0.75 < masked < 0.8 * 0.15 * 1000 * 1.25
    assert 3 < randomised < 30
    again = bert_style(
        doc, torch.Generator().manual_seed(0), mask_id=4, random_ids=range(2000, 2100)
    )
    assert again == pair
    with pytest.raises(ValueError, match="rate"):
        bert_style(doc, g, mask_id=4, random_ids=[9], rate=0.0)
    with pytest.raises(ValueError, match="random_ids"):
        bert_style(doc, g, mask_id=4, random_ids=[])


def test_recipe_pairs_batches_and_flops(tmp_path, monkeypatch):
    from ptlm_lite.recipes import t5 as recipe

    monkeypatch.setenv("PTLM_CACHE", str(tmp_path))
    tok = recipe.tokenizer()
    assert tok.sentinel_ids == list(range(7, 7 + recipe.N_SENTINELS))
    examples = [{"text": "Rekrus Zou", "label": 0}, {"text": "Veadumia", "label": 2}]
    labels = ("person", "city", "country", "organisation")
    pairs = recipe.text_pairs(tok, examples, "classify", labels)
    # ":" is not in the world's documents: the Unigram model has it as [UNK]
    assert tok.decode(pairs[1].source) == "classify Veadumia"
    assert tok.decode(pairs[1].target) == "country"
    with pytest.raises(ValueError, match="task must be"):
        recipe.text_pairs(tok, examples, "translate")
    other = [seq2seq.Pair([9, 9], [10])] * 3
    it = recipe.pair_batches(
        tok, {"a": (pairs, 3), "b": (other, 1)}, batch_size=4, seed=0
    )
    firsts = [next(it)["src"][:, 0] for _ in range(400)]
    assert all(len(set(f.tolist())) == 1 for f in firsts), "one task per batch"
    share_b = np.mean([int(f[0]) == 9 for f in firsts])
    assert 0.18 < share_b < 0.32  # 1 batch in 4 from task b
    docs = recipe.pretraining_documents(tok)
    assert max(len(d[0]) for d in docs) == recipe.DOC_LEN
    cfg = P.preset("t5-tiny", vocab_size=tok.vocab_size)
    cost = {}
    for name, noise in recipe.noises(tok).items():
        batch = next(
            seq2seq.batches(
                docs, noise, batch_size=16, seed=0, pad_id=0, bos_id=5, eos_id=6,
                max_src=97, max_tgt=97,
            )
        )  # fmt: skip
        cost[name] = recipe.step_flops(cfg, batch)
    assert cost["span corruption"] < cost["BERT-style"] / 1.5


# --- the exercises reject plausible wrong answers


def _bucket_signed(relative_position, bidirectional, n_buckets, max_distance):
    """Forgets the causal case: keys after the query get buckets too."""
    import math

    n = n_buckets // 2 if bidirectional else n_buckets
    bucket = (relative_position > 0).long() * n if bidirectional else 0
    distance = relative_position.abs()
    exact = n // 2
    log = torch.log(distance.float().clamp(min=1) / exact) / math.log(
        max_distance / exact
    )
    large = (exact + (log * (n - exact)).long()).clamp(max=n - 1)
    return bucket + torch.where(distance < exact, distance, large)


def _bucket_linear(relative_position, bidirectional, n_buckets, max_distance):
    """Every distance its own bucket up to the last one (no logarithmic range)."""
    n = n_buckets // 2 if bidirectional else n_buckets
    if bidirectional:
        bucket = (relative_position > 0).long() * n
        distance = relative_position.abs()
    else:
        bucket = 0
        distance = (-relative_position).clamp(min=0)
    return bucket + distance.clamp(max=n - 1)


def _span_sentinel_per_token(tokens, mask, sentinel_ids):
    """One sentinel per corrupted token instead of one per span."""
    source, target, k = [], [], 0
    for t, noisy in zip(tokens, mask):
        if noisy:
            source.append(sentinel_ids[min(k, len(sentinel_ids) - 1)])
            target += [sentinel_ids[min(k, len(sentinel_ids) - 1)], t]
            k += 1
        else:
            source.append(t)
    return source, target


def _span_no_target_sentinel(tokens, mask, sentinel_ids):
    """The sentinels in the source only: the target cannot say which span is which."""
    source, target, k = [], [], 0
    for i, (t, noisy) in enumerate(zip(tokens, mask)):
        if noisy and (i == 0 or not mask[i - 1]):
            source.append(sentinel_ids[k])
            k += 1
        (target if noisy else source).append(t)
    return source, target


WRONG_ANSWERS = {
    "relative position bucket": [_bucket_signed, _bucket_linear],
    "span corruption from a mask": [_span_sentinel_per_token, _span_no_target_sentinel],
}


def test_every_exercise_of_the_chapter_has_wrong_answers():
    from ptlm_lite import exercises as X

    X.load_all()
    mine = {n for n, s in X.EXERCISES.items() if s.chapter == "t5"}
    assert mine == set(WRONG_ANSWERS)
    for name, wrongs in WRONG_ANSWERS.items():
        for wrong in wrongs:
            assert not X.check(name, wrong).passed, (name, wrong.__name__)
