"""Scaled dot-product attention and multi-head attention: one function for every model.

    Attention(Q, K, V) = softmax(Q Kᵀ / √d_k + bias, where mask) V    (Vaswani 2017)

Two channels carry everything that differs between models:

* ``mask``: a boolean tensor, ``True`` = may attend (see :mod:`ptlm_lite.masks`).
  Causal, padding, cross, prefix, permutation and memory masks all arrive here;
  attention never decides who sees whom.
* ``bias``: an optional additive float tensor on the logits (relative positions, T5,
  ALiBi).

A query row whose mask allows no key at all (XLNet's first-predicted position, a fully
padded example) gets zero weights and a zero output, never NaN; so does a row whose
bias is -inf at every key it may see. A NaN or inf in q, k or v (a NaN or +inf in the
bias) makes that (batch, head)'s whole output NaN, on the fused and the written-out
path alike (:func:`attention`): a NaN is never hidden.

Speed (measured in ``benchmarks/bench_train.py``; every trick of the package is in this
file):

* the mask stays the single source of truth, but a mask that *is* the causal triangle,
  or that allows everything, is handed to the fused kernel as ``is_causal=True`` / no
  mask, so it is not read at all (and the causal kernel skips the blocks above the
  diagonal);
* :func:`fast_dropout` draws four dropout decisions from each 64-bit random number
  instead of one ``bernoulli_`` call per element, several times faster on a CPU.
  Attention-weight dropout is done with it on the written-out path, because PyTorch's
  fused CPU kernel cannot drop out;
* the written-out path makes no pass over the (Tq, Tk) scores that it can avoid: q is
  scaled before the product, a mask that allows everything is skipped and any other
  mask is added as 0 / -inf (nothing to do backward).

Introduced in ``chapters/transformer.ipynb``.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

__all__ = [
    "attention", "MultiHeadAttention", "check_mask", "check_bias", "fast_dropout",
    "Dropout",
]  # fmt: skip


def check_mask(
    mask: torch.Tensor, Tq: int, Tk: int, name: str = "mask"
) -> torch.Tensor:
    """Validate a boolean mask and return it shaped to broadcast against ``(B, H, Tq,
    Tk)``.

    Accepted shapes: ``(Tq, Tk)``, ``(B, Tq, Tk)``, ``(B, 1, Tk)`` and ``(B, H, Tq,
    Tk)``; any dimension may be 1 (it broadcasts).
    """
    if not isinstance(mask, torch.Tensor):
        raise TypeError(
            f"{name} must be a bool torch.Tensor (True = may attend), got "
            f"{type(mask).__name__}"
        )
    if mask.dtype != torch.bool:
        raise TypeError(
            f"{name} must have dtype torch.bool (True = may attend), got {mask.dtype}. "
            f"Convert a 0/1 mask with `{name}.bool()`; do not pass additive -inf masks "
            f"here (use bias)."
        )
    if (
        mask.dim() not in (2, 3, 4)
        or mask.shape[-2] not in (1, Tq)
        or mask.shape[-1] not in (1, Tk)
    ):
        raise ValueError(
            f"{name} of shape {tuple(mask.shape)} does not fit {Tq} queries and {Tk} "
            f"keys: expected "
            f"(Tq, Tk), (B, Tq, Tk), (B, 1, Tk) or (B, H, Tq, Tk) with Tq={Tq}, Tk={Tk}"
        )
    if mask.dim() == 3:
        mask = mask[:, None]  # (B, 1, Tq, Tk): the same for every head
    return mask


def fast_dropout(x: torch.Tensor, p: float, training: bool = True) -> torch.Tensor:
    """Inverted dropout, ``F.dropout(x, p, training)`` with cheaper random numbers.

    Each element is kept with probability 1 - p and scaled by 1 / (1 - p). ``F.dropout``
    on a CPU calls ``bernoulli_``: one random draw per element. Here each 64-bit random
    number is cut into four 16-bit quarters, each compared with a threshold: a quarter
    of the draws, and the saved mask is one byte per element. p is rounded to a multiple
    of 1/65536 (0.1 -> 0.0999908). Not a chapter's topic: every model trains with it
    (measured in ``benchmarks/README.md``).
    """
    if not training or p == 0.0:
        return x
    if not 0.0 <= p < 1.0:
        raise ValueError(f"dropout probability must be in [0, 1), got {p!r}")
    n = x.numel()
    # all 64 bits
    bits = torch.empty((n + 3) // 4, dtype=torch.int64, device=x.device).random_(
        -(2**63), None
    )
    # uniform on [-32768, 32767]
    quarters = bits.view(torch.int16)[:n].view(x.shape)
    # 1 / (1 - p) with probability 1 - p, else 0, in x's dtype: one multiply forward
    # and one backward (x * bool_keep * scale casts the booleans and makes two passes)
    keep = (quarters >= round(p * 65536) - 32768).to(x.dtype).mul_(1.0 / (1.0 - p))
    return x * keep


class Dropout(nn.Dropout):
    """``nn.Dropout`` drawing its random numbers as :func:`fast_dropout` does (same
    ``p``, same behaviour in ``train()`` / ``eval()``).
    """

    def forward(self, x):
        return fast_dropout(x, self.p, self.training)


def _is_causal(mask: torch.Tensor) -> bool:
    """True if ``mask`` is exactly ``masks.causal_mask(T)``: a (T, T) lower triangle."""
    T = mask.shape[-1]
    return (
        mask.dim() == 2
        and mask.shape[0] == T
        and torch.equal(
            mask, torch.ones(T, T, dtype=torch.bool, device=mask.device).tril()
        )
    )


def check_qkv(q, k, v) -> None:
    """Clear errors for tensors that cannot attend to each other (instead of a shape
    error in torch).
    """
    for name, t in (("q", q), ("k", k), ("v", v)):
        if not isinstance(t, torch.Tensor) or t.dim() != 4 or not t.is_floating_point():
            raise ValueError(
                f"{name} must be a float tensor of shape (B, H, T, d_head), got "
                + (
                    f"{t.dtype} of shape {tuple(t.shape)}"
                    if isinstance(t, torch.Tensor)
                    else type(t).__name__
                )
            )
    if k.shape[:-1] != v.shape[:-1]:
        raise ValueError(
            f"k and v must have the same (B, H, Tk), got k {tuple(k.shape)} and v "
            f"{tuple(v.shape)}"
        )
    if q.shape[-1] != k.shape[-1] or q.shape[:2] != k.shape[:2]:
        raise ValueError(
            f"q {tuple(q.shape)} and k {tuple(k.shape)} must agree on B, H and d_head: "
            f"q is (B, H, Tq, d_head), k is (B, H, Tk, d_head)"
        )


def attention(
    q, k, v, mask=None, bias=None, dropout: float = 0.0, return_weights: bool = False
):
    """Scaled dot-product attention over heads.

    q: (B, H, Tq, dh); k, v: (B, H, Tk, dh); mask: bool, True = may attend (see
    :func:`check_mask`); bias: float, broadcastable to (B, H, Tq, Tk), added to the
    logits. Returns ``(out, weights)``: out is (B, H, Tq, dh); weights is (B, H, Tq, Tk)
    if ``return_weights`` else None.
    """
    check_qkv(q, k, v)
    Tq, Tk = q.shape[-2], k.shape[-2]
    empty_rows = None
    if mask is not None:
        mask = check_mask(mask, Tq, Tk)
        allowed_any = mask.any(dim=-1, keepdim=True)  # (..., Tq, 1)
        if not bool(allowed_any.all()):
            # Let rows with nothing to see attend everywhere (finite softmax), then zero
            # them below.
            empty_rows = ~allowed_any
            mask = mask | empty_rows
    if bias is not None:
        check_bias(bias, q.shape[0], q.shape[1], Tq, Tk)

    p = dropout
    if not return_weights and (p == 0.0 or q.device.type != "cpu"):
        # The fused kernel (flash / memory-efficient / math) when nobody needs the
        # weights. The same mask, said faster: the causal triangle as is_causal,
        # all-True as no mask.
        is_causal = bias is None and mask is not None and _is_causal(mask)
        if is_causal or (mask is not None and bool(mask.all())):
            mask = None
        attn_mask = mask
        if bias is not None:
            attn_mask = bias if mask is None else bias.masked_fill(~mask, float("-inf"))
        out = F.scaled_dot_product_attention(
            q, k, v, attn_mask=attn_mask, dropout_p=p, is_causal=is_causal
        )
        weights = None
    else:
        # The same computation written out, for pictures and for reading; also for
        # dropout on a CPU, where the fused kernel cannot drop out and would fall back
        # to this anyway.
        # q is scaled before the product: Tq·d multiplies instead of Tq·Tk (the same
        # numbers, bit for bit, when √d is a power of two)
        scores = (q * (1.0 / math.sqrt(q.shape[-1]))) @ k.transpose(-2, -1)
        if bias is not None:
            scores = scores + bias
        if mask is not None and not bool(mask.all()):
            # adding 0 / -inf gives masked_fill's result in one pass, with nothing to
            # do backward; a mask that allows everything is skipped
            scores = scores + torch.where(mask, 0.0, float("-inf")).to(scores.dtype)
        weights = scores.softmax(dim=-1)
        if bias is not None:
            # a row whose bias is -inf at every key it may see: zeros, as the fused
            # kernel gives (and as a row whose mask allows nothing), not 0/0 = NaN
            dead = scores.amax(-1, keepdim=True) == float("-inf")
            weights = weights.masked_fill(dead, 0.0)
        if empty_rows is not None:
            weights = weights.masked_fill(empty_rows, 0.0)
        out = fast_dropout(weights, p) @ v  # (B, H, Tq, dh)
    if empty_rows is not None:
        out = out.masked_fill(empty_rows, 0.0)
    return _poison(out, q, k, v, bias), weights


def _poison(out, q, k, v, bias):
    """NaN in every output of a (batch, head) whose q, k or v holds a NaN or inf, or
    whose bias holds a NaN or +inf; ``out`` unchanged elsewhere. The fused kernel and
    the written-out softmax treat such inputs differently (a NaN query can come out of
    the fused CPU kernel as zeros; a NaN key behind the mask poisons the written-out
    rows but not the fused causal ones): with this rule both paths give the same
    answer on every input, and a NaN is never hidden.

    One sum per tensor says whether anything is wrong (a NaN or ±inf makes the sum NaN
    or ±inf; a bias's -inf, a mask, only makes it -inf): on a CPU, where reading that
    number back costs nothing, the usual case ends there."""
    if out.device.type == "cpu" and not torch.compiler.is_compiling():
        with torch.no_grad():
            sums = [q.sum(), k.sum(), v.sum()]
            if bias is not None:
                b = bias.sum()
                sums.append(b.masked_fill(b == float("-inf"), 0.0))
            if bool(torch.stack(sums).isfinite().all()):
                return out
    bad = (~q.isfinite()).any(-1).any(-1) | (~k.isfinite()).any(-1).any(-1)
    bad = bad | (~v.isfinite()).any(-1).any(-1)  # (B, H)
    if bias is not None:
        # -inf in a bias hides a key (a mask); NaN and +inf have no meaning there
        nonsense = bias.isnan() | bias.isposinf()
        bad = bad | nonsense.any(-1).any(-1)  # broadcasts: bias fits (B, H, ...)
    poison = torch.where(bad, float("nan"), 0.0).to(out.dtype)
    return out + poison[..., None, None]


def check_bias(bias, B: int, H: int, Tq: int, Tk: int, name: str = "bias") -> None:
    """A clear error unless ``bias`` is a float tensor that broadcasts to (B, H, Tq,
    Tk) (a boolean mask belongs in ``mask=``)."""
    if not isinstance(bias, torch.Tensor) or not bias.is_floating_point():
        got = bias.dtype if isinstance(bias, torch.Tensor) else type(bias).__name__
        raise TypeError(
            f"{name} must be a float tensor added to the logits, broadcastable to "
            f"(B, H, Tq, Tk) = {(B, H, Tq, Tk)}, got {got}"
            + ("; pass boolean masks as mask=" if got == torch.bool else "")
        )
    # broadcasts: at most 4 dims, each (from the right) 1 or the target's (in plain
    # Python: torch.broadcast_shapes cost 0.1 ms a call, on every attention call)
    target = (B, H, Tq, Tk)
    fits = bias.dim() <= 4 and all(
        n in (1, t) for n, t in zip(reversed(bias.shape), reversed(target))
    )
    if not fits:
        raise ValueError(
            f"{name} of shape {tuple(bias.shape)} does not broadcast to (B, H, Tq, Tk) "
            f"= {(B, H, Tq, Tk)}"
        )


class MultiHeadAttention(nn.Module):
    """h heads, each attending in its own d_model/h-dimensional subspace, then
    concatenated.

    ``forward(x, context=None, mask=None, bias=None, return_weights=False,
    cache=None)``: queries from ``x`` (B, Tq, D); keys and values from ``context`` (B,
    Tk, D), which defaults to ``x`` (self-attention). A context is the encoder output
    (cross-attention), a Transformer-XL memory followed by ``x``, or XLNet's content
    stream read by its query stream.

    The query, key and value projections are one ``(3·D, D)`` matrix, ``qkv``:
    self-attention computes all three with one matmul (faster; its rows are W_Q, W_K,
    W_V stacked).

    ``attend`` is the one method a variant overrides to change how scores are made:
    relative positions (Transformer-XL, XLNet, T5) add a bias computed from q and k; LSH
    attention (Reformer) adds a mask of hash buckets. Everything still goes through
    :func:`attention`.

    ``cache``: a dict kept between calls during generation (GPT chapter). The keys and
    values of earlier positions are stored under ``"k"``/``"v"`` as ``(B, H, T_past,
    dh)`` and the new ones are appended, so each step computes attention for the new
    positions only. Who may see whom is still the caller's mask: ``masks.causal_mask(T,
    memory=T_past)``. With a ``context`` (cross-attention) the cache holds the
    context's keys and values instead, projected at the first call and reused as they
    are (the encoder output does not change while the decoder generates).
    """

    def __init__(
        self, d_model: int, n_head: int, dropout: float = 0.0, bias: bool = True
    ):
        super().__init__()
        if d_model % n_head != 0:
            raise ValueError(
                f"d_model ({d_model}) must be divisible by n_head ({n_head})"
            )
        self.d_model, self.n_head, self.dropout = d_model, n_head, dropout
        self.qkv = nn.Linear(d_model, 3 * d_model, bias=bias)  # W_Q; W_K; W_V
        self.o = nn.Linear(d_model, d_model, bias=bias)

    def split(self, x):  # (B, T, D) -> (B, H, T, D/H)
        B, T, D = x.shape
        return x.view(B, T, self.n_head, D // self.n_head).transpose(1, 2)

    def project(self, x, context=None):
        """q from x; k, v from context (default x). (B, T, D) -> three (B, H, T, dh)."""
        D = self.d_model
        if context is None:  # self-attention: one matmul for all three
            q, k, v = self.qkv(x).split(D, dim=-1)
        else:
            w, b = self.qkv.weight, self.qkv.bias
            q = F.linear(x, w[:D], None if b is None else b[:D])
            k, v = F.linear(context, w[D:], None if b is None else b[D:]).split(
                D, dim=-1
            )
        return self.split(q), self.split(k), self.split(v)

    def attend(self, q, k, v, mask=None, bias=None, return_weights=False):
        """The hook: q (B, H, Tq, dh), k and v (B, H, Tk, dh) -> (out, weights)."""
        p = self.dropout if self.training else 0.0
        return attention(
            q, k, v, mask=mask, bias=bias, dropout=p, return_weights=return_weights
        )

    def forward(
        self, x, context=None, mask=None, bias=None, return_weights=False, cache=None
    ):
        for name, t in (("x", x), ("context", context)):
            if t is not None and (t.dim() != 3 or t.shape[-1] != self.d_model):
                raise ValueError(
                    f"{name} must be (B, T, d_model={self.d_model}), got shape "
                    f"{tuple(t.shape)}"
                )
        if cache is not None and context is not None and "k" in cache:
            # cross-attention during generation: the encoder's keys and values were
            # projected at the first step and do not change
            D = self.d_model
            w, b = self.qkv.weight, self.qkv.bias
            q = self.split(F.linear(x, w[:D], None if b is None else b[:D]))
            k, v = cache["k"], cache["v"]
        elif cache is not None and context is not None:
            q, k, v = self.project(x, context)
            cache["k"], cache["v"] = k, v
        else:
            q, k, v = self.project(x, context)
        # generation: prepend the keys/values of earlier positions
        if cache is not None and context is None:
            if "k" in cache:
                # (B, H, Tk, dh)
                k, v = (
                    torch.cat([cache["k"], k], dim=2),
                    torch.cat([cache["v"], v], dim=2),
                )
            cache["k"], cache["v"] = k, v
        out, weights = self.attend(
            q, k, v, mask=mask, bias=bias, return_weights=return_weights
        )
        B, H, T, dh = out.shape
        # (B, T, D): concatenate the heads
        out = out.transpose(1, 2).reshape(B, T, H * dh)
        return self.o(out), weights
