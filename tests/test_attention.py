"""Attention: the fused and the explicit path agree, masks are obeyed, nothing becomes
NaN.
"""

import math

import pytest
import torch

from ptlm_lite import masks
from ptlm_lite.attention import MultiHeadAttention, attention, fast_dropout


def qkv(B=2, H=3, Tq=5, Tk=5, d=8, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(B, H, T, d, generator=g) for T in (Tq, Tk, Tk)]


@pytest.mark.parametrize(
    "mask",
    [
        None,
        masks.causal_mask(5),
        masks.padding_mask(torch.tensor([[1, 1, 1, 0, 0], [1] * 5]).bool()),
    ],
)
def test_fused_equals_explicit(mask):
    q, k, v = qkv()
    bias = torch.randn(1, 3, 5, 5)
    for b in (None, bias):
        fast, _ = attention(q, k, v, mask=mask, bias=b)
        slow, w = attention(q, k, v, mask=mask, bias=b, return_weights=True)
        assert torch.allclose(fast, slow, atol=1e-5)
        assert torch.allclose(w.sum(-1), torch.ones(2, 3, 5), atol=1e-5)


def test_explicit_is_the_formula():
    q, k, v = qkv(B=1, H=1)
    out, w = attention(q, k, v, return_weights=True)
    ref = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(8), -1)
    assert torch.allclose(w, ref, atol=1e-6) and torch.allclose(out, ref @ v, atol=1e-5)


@pytest.mark.parametrize("mask", [masks.causal_mask(5), torch.ones(5, 5, dtype=bool)])
def test_dropout_path_is_masked_softmax_then_inverted_dropout(mask):
    # With dropout on a CPU the written-out path runs (q pre-scaled, the mask added as
    # 0/-inf, an all-True mask skipped): the same numbers as the textbook formula.
    q, k, v = qkv(d=16)
    torch.manual_seed(0)
    out, w = attention(q, k, v, mask=mask, dropout=0.5)
    torch.manual_seed(0)
    keep = fast_dropout(torch.ones_like(w), 0.5)  # the same draws: 0 or 1/(1-p)
    scores = q @ k.transpose(-1, -2) / 4  # √16 = 4: scaling q first is exact
    ref = torch.softmax(scores.masked_fill(~mask, float("-inf")), -1)
    assert torch.equal(w, ref)
    assert set(keep.unique().tolist()) == {0.0, 2.0}
    assert torch.allclose(out, (ref * keep) @ v, atol=1e-6)


def test_fast_dropout_keeps_the_dtype():
    x = torch.ones(1000, dtype=torch.bfloat16)
    y = fast_dropout(x, 0.2)
    assert y.dtype == torch.bfloat16
    assert set(y.unique().tolist()) == {0.0, 1.25}


def test_masked_keys_get_zero_weight():
    q, k, v = qkv()
    _, w = attention(q, k, v, mask=masks.causal_mask(5), return_weights=True)
    assert (w[..., ~masks.causal_mask(5)] == 0).all()


def test_row_with_nothing_to_see_is_zero_not_nan():
    # XLNet's first-predicted position sees nothing in the query stream.
    _, query = masks.permutation_masks([2, 0, 3, 1])
    q, k, v = qkv(Tq=4, Tk=4)
    for rw in (False, True):
        out, w = attention(q, k, v, mask=query, return_weights=rw)
        assert torch.isfinite(out).all()
        assert (out[:, :, 2] == 0).all()
        if rw:
            assert (w[:, :, 2] == 0).all()
    # Gradients stay finite too.
    q.requires_grad_(True)
    attention(q, k, v, mask=query)[0].sum().backward()
    assert torch.isfinite(q.grad).all()


@pytest.mark.parametrize(
    "mask, words",
    [
        (torch.ones(5, 5), "dtype torch.bool"),
        (torch.ones(4, 5).bool(), "does not fit 5 queries and 5 keys"),
        (torch.ones(5).bool(), "does not fit"),
        ([[True]], "bool torch.Tensor"),
    ],
)
def test_bad_mask(mask, words):
    q, k, v = qkv()
    with pytest.raises((TypeError, ValueError)) as e:
        attention(q, k, v, mask=mask)
    assert words in str(e.value)


@pytest.mark.parametrize(
    "bias, words",
    [
        (torch.zeros(5, 5, dtype=torch.bool), "pass boolean masks as mask="),
        (torch.zeros(3, 5, 6), "does not broadcast to (B, H, Tq, Tk) = (2, 3, 5, 5)"),
        (torch.zeros(4, 5, 5), "does not broadcast"),  # 4 heads, not 3
        (torch.zeros(1, 2, 3, 5, 5), "does not broadcast"),  # five dimensions
        ([[0.0]], "float tensor added to the logits"),
    ],
)
def test_bad_bias(bias, words):
    q, k, v = qkv()
    with pytest.raises((TypeError, ValueError)) as e:
        attention(q, k, v, bias=bias)
    assert words in str(e.value)


@pytest.mark.parametrize("shape", [(5,), (5, 5), (3, 1, 5), (2, 1, 1, 5), (2, 3, 5, 5)])
def test_bias_that_broadcasts_is_accepted(shape):
    q, k, v = qkv()
    bias = torch.randn(shape, generator=torch.Generator().manual_seed(1))
    out, w = attention(q, k, v, bias=bias, return_weights=True)
    expected = ((q @ k.transpose(-1, -2)) / math.sqrt(8) + bias).softmax(-1)
    torch.testing.assert_close(w, expected)


def test_mha_heads_must_divide():
    with pytest.raises(ValueError, match="divisible by n_head"):
        MultiHeadAttention(10, 3)


def test_mha_cross_shapes():
    mha = MultiHeadAttention(16, 4).eval()
    x, ctx = torch.randn(2, 3, 16), torch.randn(2, 7, 16)
    out, w = mha(x, context=ctx, return_weights=True)
    assert out.shape == (2, 3, 16) and w.shape == (2, 4, 3, 7)
