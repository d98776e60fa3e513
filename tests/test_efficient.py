"""Efficient Transformers (ptlm_lite.efficient, ptlm_lite.recipes.efficient): each
pattern's picture and leak test, each fast form equal to full attention under its mask,
clear errors, the long-range task and the memory meter; the chapter's exercises."""

import math

import pytest
import torch

from ptlm_lite import efficient as E
from ptlm_lite import exercises as X
from ptlm_lite.attention import MultiHeadAttention, attention
from ptlm_lite.config import Config
from ptlm_lite.recipes import efficient as R


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


@pytest.mark.parametrize(
    "fn, made",
    [
        (E.local_mask, lambda: E.local_mask(5, 2)),
        (E.dilated_mask, lambda: E.dilated_mask(5, 2)),
        (E.strided_mask, lambda: E.strided_mask(6, 2)),
        (E.block_mask, lambda: E.block_mask(5, 2)),
        (E.global_mask, lambda: E.global_mask(5, 1, 2)),
        (E.bucket_mask, lambda: E.bucket_mask(torch.tensor([0, 1, 0, 1, 1]))),
    ],
)
def test_docstring_pictures_are_what_the_functions_return(fn, made):
    (pic,) = pictures(fn)
    assert torch.equal(made(), pic)


def qkv(T, B=2, H=3, d=8, seed=0, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    return tuple(torch.randn(B, H, T, d, generator=g, dtype=dtype) for _ in range(3))


def offsets(T):
    i = torch.arange(T)
    return i[:, None] - i[None, :]  # query minus key


# --- the masks: leak tests and exact shapes


CAUSAL_VARIANTS = {
    "local": lambda T: E.local_mask(T, 3, causal=True),
    "dilated": lambda T: E.dilated_mask(T, 3, causal=True),
    "strided": lambda T: E.strided_mask(T, 3, causal=True),
    "block": lambda T: E.block_mask(T, 3, causal=True),
    "bucket": lambda T: E.bucket_mask(torch.arange(T) % 3, causal=True),
}


@pytest.mark.parametrize("name", sorted(CAUSAL_VARIANTS))
@pytest.mark.parametrize("T", [1, 7, 20])
def test_causal_variants_never_see_the_future(name, T):
    m = CAUSAL_VARIANTS[name](T)
    assert m.dtype == torch.bool and m.shape == (T, T)
    assert not (m & (offsets(T) < 0)).any()
    assert m.diagonal().all()  # and every token sees itself: no empty row


@pytest.mark.parametrize("T, w", [(1, 1), (9, 1), (9, 3), (10, 4), (6, 20)])
def test_local_window_is_exactly_width_w(T, w):
    d = offsets(T)
    assert torch.equal(E.local_mask(T, w), d.abs() < w)
    causal = E.local_mask(T, w, causal=True)
    assert torch.equal(causal, (d >= 0) & (d < w))
    # a causal row sees exactly w keys once w - 1 keys lie behind it
    assert causal.sum(1).tolist() == [min(i + 1, w) for i in range(T)]


def test_dilated_strided_and_block_patterns():
    T, s = 17, 4
    d = offsets(T)
    assert torch.equal(E.dilated_mask(T, s), d % s == 0)
    assert torch.equal(E.strided_mask(T, s), (d >= 0) & ((d < s) | (d % s == 0)))
    b = torch.arange(T) // s
    assert torch.equal(E.block_mask(T, s), b[:, None] == b[None, :])


@pytest.mark.parametrize("T, g, w", [(12, 1, 2), (12, 3, 3), (5, 5, 1), (8, 0, 2)])
def test_global_tokens_see_and_are_seen_by_all(T, g, w):
    m = E.global_mask(T, g, w)
    assert m[:g].all() and m[:, :g].all()
    rest = m[g:, g:]  # between ordinary tokens: the window only
    assert torch.equal(rest, E.local_mask(T, w)[g:, g:])


def test_star_transformer_is_one_relay_and_two_neighbours():
    m = E.global_mask(9, 1, 2)
    assert m.sum(1)[0] == 9 and (m[:, 0]).all()
    assert m[4].nonzero().flatten().tolist() == [0, 3, 4, 5]


def test_buckets_are_deterministic_angular_and_in_range():
    x = torch.randn(3, 10, 8, generator=torch.Generator().manual_seed(0))
    a = E.lsh_buckets(x, 6, torch.Generator().manual_seed(1))
    b = E.lsh_buckets(3.0 * x, 6, torch.Generator().manual_seed(1))
    assert a.shape == (3, 10) and torch.equal(a, b)  # only the angle matters
    assert int(a.min()) >= 0 and int(a.max()) < 6
    m = E.bucket_mask(a[0])
    assert torch.equal(m, m.T) and torch.equal(m, a[0][:, None] == a[0][None, :])


# --- the fast forms equal full attention under their masks


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("T, w", [(1, 1), (16, 4), (37, 8), (20, 1), (5, 9), (64, 3)])
def test_chunked_local_attention_equals_masked_full_attention(T, w, causal):
    q, k, v = qkv(T)
    want = attention(q, k, v, mask=E.local_mask(T, w, causal))[0]
    got = E.local_attention(q, k, v, w, causal)
    assert got.shape == want.shape and torch.allclose(got, want, atol=1e-5)


@pytest.mark.parametrize("T, w, g", [(16, 4, 1), (37, 5, 3), (9, 2, 9), (30, 40, 2)])
def test_global_plus_local_by_chunks_equals_masked_full_attention(T, w, g):
    q, k, v = qkv(T, seed=1)
    want = attention(q, k, v, mask=E.global_mask(T, g, w))[0]
    got = E.local_attention(q, k, v, w, n_global=g)
    assert torch.allclose(got, want, atol=1e-5)


@pytest.mark.parametrize("T, b", [(16, 4), (17, 4), (3, 8), (12, 1)])
def test_block_attention_equals_masked_full_attention(T, b):
    q, k, v = qkv(T, seed=2)
    want = attention(q, k, v, mask=E.block_mask(T, b))[0]
    assert torch.allclose(E.block_attention(q, k, v, b), want, atol=1e-5)


@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("T, s, H", [(16, 4, 2), (23, 5, 3), (8, 1, 2), (10, 16, 4)])
def test_strided_heads_equal_full_attention_under_per_head_masks(T, s, H, causal):
    q, k, v = qkv(T, H=H, seed=3)
    h = H // 2  # the first half of the heads local, the rest dilated
    m = torch.stack(
        [E.local_mask(T, s, causal)] * h + [E.dilated_mask(T, s, causal)] * (H - h)
    )
    want = attention(q, k, v, mask=m[None])[0]
    assert torch.allclose(E.strided_attention(q, k, v, s, causal), want, atol=1e-5)


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("T", [1, 9, 64])
def test_linear_attention_equals_its_quadratic_form(T, causal):
    q, k, v = qkv(T, seed=4)
    out, a = E.quadratic_attention(q, k, v, causal)
    assert torch.allclose(E.linear_attention(q, k, v, causal), out, atol=1e-5)
    assert torch.allclose(a.sum(-1), torch.ones(a.shape[:-1]), atol=1e-5)
    if causal:
        assert not (a * (offsets(T) < 0)).any()


@pytest.mark.parametrize("fast", ["local", "strided", "linear"])
def test_causal_fast_forms_do_not_leak(fast):
    """Changing the keys and values after position t leaves outputs 0..t unchanged."""
    T, t = 24, 10
    f = {
        "local": lambda q, k, v: E.local_attention(q, k, v, 4, causal=True),
        "strided": lambda q, k, v: E.strided_attention(q, k, v, 5, causal=True),
        "linear": lambda q, k, v: E.linear_attention(q, k, v, causal=True),
    }[fast]
    q, k, v = qkv(T, seed=5)
    k2, v2 = k.clone(), v.clone()
    k2[:, :, t + 1 :] += 3.0
    v2[:, :, t + 1 :] -= 3.0
    a, b = f(q, k, v), f(q, k2, v2)
    assert torch.allclose(a[:, :, : t + 1], b[:, :, : t + 1], atol=1e-6)
    assert not torch.allclose(a[:, :, t + 1 :], b[:, :, t + 1 :])


def test_linear_attention_layer_fast_and_quadratic_paths_agree():
    torch.manual_seed(0)
    layer = E.LinearAttention(16, 2)
    x = torch.randn(2, 11, 16)
    for causal in (False, True):
        layer.causal = causal
        fast, none = layer(x)
        slow, w = layer(x, return_weights=True)
        assert none is None and w.shape == (2, 2, 11, 11)
        assert torch.allclose(fast, slow, atol=1e-5)


def test_linformer_with_identity_projections_is_full_attention():
    torch.manual_seed(0)
    T = 8
    lin = E.LinformerAttention(16, 2, max_len=T, rank=T)
    full = MultiHeadAttention(16, 2)
    full.load_state_dict(
        {
            n: p
            for n, p in lin.state_dict().items()
            if n in ("qkv.weight", "qkv.bias", "o.weight", "o.bias")
        }
    )
    with torch.no_grad():
        lin.E.copy_(torch.eye(T))
        lin.F.copy_(torch.eye(T))
    x = torch.randn(3, T, 16)
    assert torch.allclose(lin(x)[0], full(x)[0], atol=1e-5)
    lin(x)[0].sum().backward()  # E and F learn
    assert lin.E.grad.abs().sum() > 0 and lin.F.grad.abs().sum() > 0


def test_linformer_costs_rank_not_length():
    lin = E.LinformerAttention(16, 2, max_len=64, rank=5)
    _, w = lin(torch.randn(1, 64, 16), return_weights=True)
    assert w.shape == (1, 2, 64, 5)  # each query weighs 5 mixtures, not 64 keys


# --- bad arguments


@pytest.mark.parametrize(
    "call, word",
    [
        (lambda: E.local_mask(0, 2), "T"),
        (lambda: E.local_mask(5, 0), "window"),
        (lambda: E.local_mask(5, 2.0), "window"),
        (lambda: E.dilated_mask(5, -1), "stride"),
        (lambda: E.strided_mask(5, True), "stride"),
        (lambda: E.block_mask(5, 0), "block"),
        (lambda: E.global_mask(5, -1, 2), "n_global"),
        (lambda: E.lsh_buckets(torch.randn(4, 3), 3, torch.Generator()), "n_buckets"),
        (lambda: E.bucket_mask(torch.zeros(2, 3)), "buckets"),
        (lambda: E.local_attention(*qkv(8), 0), "window"),
        (lambda: E.local_attention(*qkv(8), 2, causal=True, n_global=1), "causal"),
        (lambda: E.block_attention(*qkv(8), -2), "block"),
        (lambda: E.strided_attention(*qkv(8), 0), "stride"),
        (lambda: E.local_attention(torch.randn(8, 4), *qkv(8)[1:], 2), "q"),
        (lambda: E.linear_attention(*qkv(8)[:2], qkv(9)[2]), "v"),
        (lambda: E.block_attention(qkv(8)[0], *qkv(6)[1:], 2), "positions"),
        (lambda: E.LinformerAttention(16, 2, max_len=8, rank=0), "rank"),
        (lambda: E.LinformerAttention(16, 2, max_len=8, rank=2)(
            torch.randn(1, 8, 16), mask=torch.ones(8, 8, dtype=torch.bool)), "mask"),
        (lambda: E.LinformerAttention(16, 2, max_len=8, rank=2)(
            torch.randn(1, 9, 16)), "max_len"),
        (lambda: E.LinearAttention(16, 2)(
            torch.randn(1, 8, 16), mask=E.local_mask(8, 2)), "mask"),
        (lambda: R.needles(4, 1, 3, torch.Generator()), "T"),
        (lambda: R.needles(4, 8, 1, torch.Generator()), "n_classes"),
    ],
)  # fmt: skip
def test_bad_arguments_raise_clear_errors(call, word):
    with pytest.raises(ValueError, match=word):
        call()


# --- the chapter's task, model and meter


def test_needles_one_needle_at_where_labelled_and_deterministic():
    a = R.needles(200, 32, 4, torch.Generator().manual_seed(0), n_noise=10)
    b = R.needles(200, 32, 4, torch.Generator().manual_seed(0), n_noise=10)
    assert torch.equal(a.ids, b.ids) and torch.equal(a.labels, b.labels)
    assert (a.ids[:, 0] == R.CLS).all()
    needle = a.ids > 10  # ids 11..14
    assert needle.sum(1).eq(1).all()
    assert torch.equal(needle.float().argmax(1), a.where)
    assert torch.equal(a.ids[torch.arange(200), a.where] - 11, a.labels)
    assert int(a.where.min()) >= 1 and int(a.where.max()) <= 31
    assert set(a.labels.tolist()) == {0, 1, 2, 3}


@pytest.mark.parametrize("w, layers", [(4, 2), (3, 1), (5, 3)])
def test_reach_of_a_window_is_layers_times_w_minus_one(w, layers):
    seen = R.reach(E.local_mask(40, w), layers)
    assert seen.nonzero().flatten().tolist() == list(range(layers * (w - 1) + 1))
    assert R.reach(E.global_mask(40, 1, w), 1).all()
    assert R.reach(E.block_mask(40, w), layers).sum() == w


def test_every_variant_trains_one_step_and_reads_cls():
    T, C = 32, 4
    cfg = Config(vocab_size=1 + 16 + C, d_model=16, n_layer=2, n_head=2, d_ff=32,
                 max_len=T, dropout=0.0, pre_norm=True, pos="learned")  # fmt: skip
    batch = R.needles(8, T, C, torch.Generator().manual_seed(0)).batch
    for name, kw in R.variants(T, 2, window=4, stride=6, rank=8).items():
        model = R.Classifier(cfg, C, seed=0, **kw)
        out = model(**batch)
        assert out.logits.shape == (8, C) and torch.isfinite(out.loss), name
        out.loss.backward()


def test_variants_classifier_leak_free_for_unreachable_needles():
    """With a window, a needle beyond the reach cannot change the logits at [CLS]."""
    T, C = 40, 4
    cfg = Config(vocab_size=1 + 16 + C, d_model=16, n_layer=2, n_head=2, d_ff=32,
                 max_len=T, dropout=0.0, pre_norm=True, pos="learned")  # fmt: skip
    model = R.Classifier(cfg, C, mask=E.local_mask(T, 4), seed=0).eval()
    ids = R.needles(1, T, C, torch.Generator().manual_seed(0)).ids
    far, near = ids.clone(), ids.clone()
    far[0, 30] = 1 + 16  # a needle 30 positions away: beyond 2 × 3
    near[0, 5] = 1 + 16
    with torch.no_grad():
        base, f, n = (model(x).logits for x in (ids, far, near))
    assert torch.equal(base, f) and not torch.allclose(base, n)


def test_peak_memory_counts_allocations_exactly():
    with R.PeakMemory() as m:
        a = torch.empty(1000)  # 4,000 bytes
        b = a * 2  # another 4,000
        del a, b
        c = torch.empty(250)  # 1,000 bytes, after both are freed
        view = c[:10]  # a view costs nothing
    assert m.peak == 8000 and m.live == 1000 and view.numel() == 10


def test_memory_of_masked_full_attention_is_quadratic_and_of_chunks_linear():
    """The chapter's cost claim in small: doubling T doubles the chunked window's
    memory and quadruples full attention's under a mask (exact byte counts)."""
    peak = {}
    for T in (256, 512):
        q, k, v = qkv(T, B=1, H=2, d=16)
        mask = E.local_mask(T, 16)
        peak["mask", T] = R.measure(lambda: attention(q, k, v, mask=mask), 1)
        peak["chunks", T] = R.measure(lambda: E.local_attention(q, k, v, 16), 1)
        peak["linear", T] = R.measure(lambda: E.linear_attention(q, k, v), 1)
    ratio = {n: peak[n, 512]["peak_bytes"] / peak[n, 256]["peak_bytes"]
             for n in ("mask", "chunks", "linear")}  # fmt: skip
    assert ratio["mask"] > 3.5 and ratio["chunks"] < 2.2 and ratio["linear"] < 2.2
    assert peak["chunks", 512]["seconds"] > 0


# --- the exercises: solutions pass, plausible wrong answers fail


def _local_off_by_one(T, window, causal):
    d = torch.arange(T)[:, None] - torch.arange(T)[None, :]
    m = d.abs() <= window
    return m & (d >= 0) if causal else m


def _local_ignores_causal(T, window, causal):
    d = torch.arange(T)[:, None] - torch.arange(T)[None, :]
    return d.abs() < window


def _local_future(T, window, causal):
    d = torch.arange(T)[:, None] - torch.arange(T)[None, :]
    m = d.abs() < window
    return m & (d <= 0) if causal else m


def _local_float(T, window, causal):
    return E.local_mask(T, window, causal).float()


def _blocks_unscaled(q, k, v, block):
    B, H, T, d = q.shape
    qb, kb, vb = (t.reshape(B, H, T // block, block, d) for t in (q, k, v))
    return ((qb @ kb.mT).softmax(-1) @ vb).reshape(B, H, T, d)


def _blocks_strided(q, k, v, block):
    B, H, T, d = q.shape  # groups positions i, i + n, i + 2n...: a dilated pattern
    qb, kb, vb = (t.reshape(B, H, block, T // block, d).mT for t in (q, k, v))
    w = (qb.mT @ kb / math.sqrt(d)).softmax(-1)
    return (w @ vb.mT).mT.reshape(B, H, T, d)


def _blocks_full(q, k, v, block):
    return attention(q, k, v)[0]


def _linear_not_causal(q, k, v):
    return E.linear_attention(q, k, v)


def _linear_unnormalised(q, k, v):
    q, k = E.feature_map(q), E.feature_map(k)
    kv = (k[..., :, None] * v[..., None, :]).cumsum(2)
    return (q[..., None] * kv).sum(-2)


def _linear_all_keys_normaliser(q, k, v):
    q, k = E.feature_map(q), E.feature_map(k)
    kv = (k[..., :, None] * v[..., None, :]).cumsum(2)
    return (q[..., None] * kv).sum(-2) / (q @ k.sum(2)[..., None])


def _linear_softmax(q, k, v):
    return attention(q, k, v, mask=torch.ones(q.shape[2], q.shape[2]).tril().bool())[0]


WRONG_ANSWERS = {
    "local window mask": [
        _local_off_by_one,
        _local_ignores_causal,
        _local_future,
        _local_float,
    ],
    "attention by blocks": [_blocks_unscaled, _blocks_strided, _blocks_full],
    "causal linear attention": [
        _linear_not_causal,
        _linear_unnormalised,
        _linear_all_keys_normaliser,
        _linear_softmax,
    ],
}


def test_every_efficient_exercise_has_wrong_answers_and_questions_explained():
    X.load_all()
    mine = {n for n, e in X.EXERCISES.items() if e.chapter == "efficient"}
    assert set(WRONG_ANSWERS) == mine
    qs = [n for n, q in X.QUESTIONS.items() if q.chapter == "efficient"]
    assert len(qs) == 3 and all(X.explanation(n) for n in qs)
    for n in qs:
        right = X.answer(n)
        assert X.ask(n, right) and not X.ask(n, "A" if right != "A" else "B")
