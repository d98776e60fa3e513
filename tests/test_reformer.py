"""Reformer (ptlm_lite.reformer, ptlm_lite.recipes.reformer).

The LSH mask against its drawing; one bucket is full attention minus oneself; a leak
test (a key outside a query's bucket and chunk window has no effect on its output);
the sorted, chunked form equals the mask form; the reversible backward pass gives the
ordinary gradients; reversible activation memory does not grow with depth; and
plausible wrong answers to the exercises.
"""

import pytest
import torch

from ptlm_lite import masks
from ptlm_lite.attention import attention
from ptlm_lite.config import Config, preset
from ptlm_lite.recipes import reformer as R
from ptlm_lite.reformer import (
    LSHAttention,
    Reformer,
    ReformerConfig,
    hash_buckets,
    lsh_attention,
    lsh_counts,
    lsh_mask,
)

V = 40


def model(seed=0, **kw):
    return Reformer(preset("reformer-tiny", vocab_size=V, chunk=8, **kw), seed=seed)


def ids(*shape, seed=0):
    return torch.randint(0, V, shape, generator=torch.Generator().manual_seed(seed))


def test_presets_and_config_checks():
    cfg = preset("reformer-tiny", vocab_size=V)
    assert isinstance(cfg, ReformerConfig) and cfg.n_hashes == 2 and cfg.reversible
    with pytest.raises(ValueError, match="n_buckets must be 1 or even"):
        preset("reformer-tiny", vocab_size=V, n_buckets=3)
    with pytest.raises(ValueError, match="chunk"):
        preset("reformer-tiny", vocab_size=V, chunk=0)
    with pytest.raises(TypeError, match="ReformerConfig"):
        Reformer(Config(vocab_size=V))
    # one shared block would run once in training and n_layer times in evaluation
    with pytest.raises(TypeError, match="share_layers"):
        Reformer(preset("reformer-tiny", vocab_size=V, share_layers=True))


def test_lsh_mask_is_its_drawing():
    doc = lsh_mask.__doc__.split("::")[1]
    rows = [r.strip() for r in doc.strip().splitlines() if r.strip()]
    assert masks.draw(lsh_mask(torch.tensor([[0, 1, 0, 1, 1, 0]]), 2)) == "\n".join(
        rows
    )


@pytest.mark.parametrize("causal", [False, True])
def test_one_bucket_is_full_attention_minus_oneself(causal):
    T = 12
    full = masks.causal_mask(T) if causal else masks.full_mask(T)
    want = full & ~torch.eye(T, dtype=torch.bool)
    want[0, 0] = causal  # the first token of a causal model has only itself
    got = lsh_mask(torch.zeros(1, T, dtype=torch.long), T, full if causal else None)
    assert torch.equal(got, want)
    att = LSHAttention(16, 2, n_buckets=1, n_hashes=3, chunk=T).eval()
    x = torch.randn(2, T, 16)
    q, k, v = att.project(x)
    ref, _ = attention(q, k, v, mask=want)
    out, _ = att.attend(q, k, v, mask=full if causal else None)
    assert torch.allclose(out, ref, atol=1e-6)  # rounds add log 3 to every score


def test_leak_a_key_outside_the_window_changes_nothing():
    torch.manual_seed(0)
    B, H, T, d, m = 1, 1, 16, 8, 4
    q, v = torch.randn(B, H, T, d), torch.randn(B, H, T, d)
    buckets = torch.randint(0, 3, (B, H, T))
    allowed = lsh_mask(buckets[:, :, None], m)[0, 0]
    out = lsh_attention(q, q, v, buckets, m)
    for j in range(T):
        v2 = v.clone()
        v2[..., j, :] += 1.0  # change key/value j only
        k2 = q.clone()
        k2[..., j, :] += 1.0
        out2 = lsh_attention(q, k2, v2, buckets, m)
        moved = (out2 - out).abs().amax(-1)[0, 0] > 0
        assert torch.equal(moved, allowed[:, j]), j  # exactly the queries that see j


@pytest.mark.parametrize(
    "n_buckets, causal", [(1, True), (4, False), (4, True), (16, True)]
)
def test_sorted_chunked_form_equals_the_mask_form(n_buckets, causal):
    g = torch.Generator().manual_seed(n_buckets)
    q, k, v = (
        torch.randn(2, 3, 32, 8, generator=g, dtype=torch.float64) for _ in "qkv"
    )
    b = torch.randint(0, n_buckets, (2, 3, 32), generator=g)
    mask = masks.causal_mask(32) if causal else None
    ref, _ = attention(q, k, v, mask=lsh_mask(b[:, :, None], 8, mask))
    assert torch.allclose(lsh_attention(q, k, v, b, 8, causal), ref, atol=1e-12)
    with pytest.raises(ValueError, match="multiple of chunk"):
        lsh_attention(q[:, :, :30], k[:, :, :30], v[:, :, :30], b[..., :30], 8)


def test_rounds_count_keys_found_twice():
    b = torch.tensor([[0, 0, 1, 1], [0, 1, 0, 1]])  # two rounds, (R, T)
    n = lsh_counts(b, 4)
    assert n[0, 1] == 1 and n[0, 2] == 1 and n[0, 3] == 0
    assert torch.equal(lsh_mask(b, 4), n > 0)
    b = torch.tensor([[0, 0, 1, 1], [0, 0, 1, 1]])
    assert lsh_counts(b, 4)[0, 1] == 2


def test_hashing_is_angular_and_seeded():
    x = torch.randn(1, 2, 10, 8)
    g = lambda: torch.Generator().manual_seed(3)
    a = hash_buckets(x, 8, 2, g())
    assert a.shape == (1, 2, 2, 10) and 0 <= int(a.min()) and int(a.max()) < 8
    assert torch.equal(a, hash_buckets(x, 8, 2, g()))
    assert torch.equal(a, hash_buckets(3.0 * x, 8, 2, g()))  # the length does not count


@pytest.mark.parametrize("hash_seed", [-1, 5])
def test_reversible_backward_gives_the_ordinary_gradients(hash_seed):
    m = model(hash_seed=hash_seed, ff_chunk=3).double()
    x, t = ids(2, 16), ids(2, 16, seed=1)
    torch.manual_seed(0)
    m(x, targets=t).loss.backward()
    rev = [p.grad.clone() for p in m.parameters()]
    m.zero_grad()
    m.config.reversible = False
    torch.manual_seed(0)  # the same rotations when they are drawn afresh
    m(x, targets=t).loss.backward()
    assert all(
        torch.allclose(a, p.grad, atol=1e-10) for a, p in zip(rev, m.parameters())
    )


def test_reversible_memory_is_flat_in_depth():
    x, t = ids(2, 32), ids(2, 32, seed=1)
    rev = [R.saved_bytes(model(n_layer=L), x, t) for L in (1, 2, 4)]
    plain = [R.saved_bytes(model(n_layer=L, reversible=False), x, t) for L in (1, 2, 4)]
    assert rev[0] == rev[1] == rev[2]
    assert plain[2] - plain[1] == 2 * (plain[1] - plain[0]) > 0


def test_no_query_sees_a_future_token():
    m = model().eval()
    x = ids(1, 24)
    a = m(x).logits
    for t in (5, 17):
        y = x.clone()
        y[0, t] = (y[0, t] + 1) % V
        torch.manual_seed(0)
        b = m(y).logits
        assert torch.equal(a[0, :t], b[0, :t]) or m.blocks[0].attn.hash_seed < 0


def test_forward_shapes_and_attention():
    m = model(hash_seed=1).eval()
    out = m(ids(2, 16), targets=ids(2, 16, seed=1), return_attention=True)
    assert out.logits.shape == (2, 16, V) and out.loss.ndim == 0
    assert [w.shape for w in out.attentions] == [(2, 4, 16, 16)] * 2
    assert all(w[..., ~masks.causal_mask(16)].abs().max() == 0 for w in out.attentions)


def test_recipe_learns_and_changes_hashing():
    torch.manual_seed(0)
    stream = torch.arange(2000) % 7  # a pattern that repeats
    m = model()
    h = R.pretrain(m, stream, steps=30, T=16, batch=4, lr=1e-2, progress=False)
    assert h.final_loss(5) < h.losses[0] - 1.0
    R.set_hashing(m, n_hashes=4, n_buckets=2)
    assert m.blocks[1].attn.n_hashes == 4 and m.blocks[1].attn.n_buckets == 2
    blocks = R.windows(stream, 2, 16, torch.Generator().manual_seed(0))
    assert R.evaluate(m, blocks) == R.evaluate(m, blocks)  # hashing seeded
    assert 0.5 < R.agreement(m, blocks[:, :-1], 8) <= 1.0 + 1e-6
    lsh, rnd = (R.closeness(m, blocks[:, :-1], 2, random=r) for r in (False, True))
    for c in (lsh, rnd):  # shares, and the control hides as many keys on average
        assert all(0.0 < c[k] <= 1.0 + 1e-6 for k in ("agreement", "mass", "keys"))
    assert rnd["keys"] == pytest.approx(lsh["keys"], abs=0.25)
    R.set_hashing(m, n_buckets=1, chunk=16)
    assert R.agreement(m, blocks[:, :-1], 1) == pytest.approx(1.0, abs=1e-5)
    for r in (False, True):  # one bucket, one chunk: every key, all of the mass
        c = R.closeness(m, blocks[:, :-1], 3, random=r)
        assert c["mass"] == pytest.approx(1.0, abs=1e-5) and c["keys"] == 1.0


def test_per_block_scores_average_to_the_overall_ones():
    # the chapter's verdicts take one score per validation block (seeds × blocks)
    torch.manual_seed(0)
    stream = torch.arange(2000) % 7
    m = model()
    blocks = R.windows(stream, 3, 16, torch.Generator().manual_seed(0))
    per = R.evaluate(m, blocks, seed=1, per_block=True)
    assert per.shape == (3,)
    assert per.mean() == pytest.approx(R.evaluate(m, blocks, seed=1), rel=1e-5)
    for r in (False, True):
        whole = R.closeness(m, blocks[:, :-1], 2, seed=3, random=r)
        rows = R.closeness(m, blocks[:, :-1], 2, seed=3, random=r, per_block=True)
        for k in ("agreement", "mass", "keys"):
            assert rows[k].shape == (3,)
            assert rows[k].mean() == pytest.approx(whole[k], rel=1e-5)


# --- exercises: plausible wrong answers are rejected


def _mask_with_self(buckets, chunk):
    T = len(buckets)
    c = (buckets * T + torch.arange(T)).argsort().argsort() // chunk
    near = (c[None, :] == c[:, None]) | (c[None, :] == c[:, None] - 1)
    return (buckets[:, None] == buckets[None, :]) & near


def _mask_no_fallback(buckets, chunk):
    return _mask_with_self(buckets, chunk) & ~torch.eye(len(buckets), dtype=torch.bool)


def _mask_same_bucket_only(buckets, chunk):
    ok = (buckets[:, None] == buckets[None, :]) & ~torch.eye(
        len(buckets), dtype=torch.bool
    )
    return ok | (~ok.any(-1, keepdim=True) & torch.eye(len(buckets), dtype=torch.bool))


def _mask_chunks_unsorted(buckets, chunk):
    T = len(buckets)
    c, pos = torch.arange(T) // chunk, torch.arange(T)  # forgets to sort
    ok = (buckets[:, None] == buckets[None, :]) & (pos[:, None] != pos[None, :])
    ok &= (c[None, :] == c[:, None]) | (c[None, :] == c[:, None] - 1)
    return ok | (~ok.any(-1, keepdim=True) & (pos[:, None] == pos[None, :]))


def _mask_looks_forward(buckets, chunk):
    T = len(buckets)
    pos = torch.arange(T)
    c = (buckets * T + pos).argsort().argsort() // chunk
    ok = (buckets[:, None] == buckets[None, :]) & (pos[:, None] != pos[None, :])
    ok &= (c[None, :] == c[:, None]) | (c[None, :] == c[:, None] + 1)  # the next chunk
    return ok | (~ok.any(-1, keepdim=True) & (pos[:, None] == pos[None, :]))


def _reverse_wrong_order(y1, y2, f, g):
    x1 = y1 - f(y2)  # F reads X₂, not Y₂
    return x1, y2 - g(y1)


def _reverse_plus(y1, y2, f, g):
    x2 = y2 + g(y1)
    return y1 + f(x2), x2


def _reverse_swapped(y1, y2, f, g):
    x2 = y2 - g(y1)
    return x2, y1 - f(x2)


WRONG_ANSWERS = {
    "lsh mask": [
        _mask_with_self,
        _mask_no_fallback,
        _mask_same_bucket_only,
        _mask_chunks_unsorted,
        _mask_looks_forward,
    ],
    "undo a reversible block": [_reverse_wrong_order, _reverse_plus, _reverse_swapped],
}
