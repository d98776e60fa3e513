"""Scaled dot-product attention and multi-head attention: one function for every model.

    Attention(Q, K, V) = softmax(Q Kᵀ / √d_k + bias, where mask) V        (Vaswani et al., 2017)

Two channels carry everything that differs between models:

* ``mask``: a boolean tensor, ``True`` = may attend (see :mod:`ptlm_lite.masks`). Causal, padding,
  cross, prefix, permutation and memory masks all arrive here; attention never decides who sees whom.
* ``bias``: an optional additive float tensor on the logits (relative positions, T5, ALiBi).

A query row whose mask allows no key at all (XLNet's first-predicted position, a fully padded
example) gets zero weights and a zero output, never NaN.

Introduced in ``chapters/transformer.ipynb``.
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["attention", "MultiHeadAttention", "check_mask"]


def check_mask(mask: torch.Tensor, Tq: int, Tk: int, name: str = "mask") -> torch.Tensor:
    """Validate a boolean mask and return it shaped to broadcast against ``(B, H, Tq, Tk)``.

    Accepted shapes: ``(Tq, Tk)``, ``(B, Tq, Tk)``, ``(B, 1, Tk)`` and ``(B, H, Tq, Tk)``; any
    dimension may be 1 (it broadcasts).
    """
    if not isinstance(mask, torch.Tensor):
        raise TypeError(f"{name} must be a bool torch.Tensor (True = may attend), got {type(mask).__name__}")
    if mask.dtype != torch.bool:
        raise TypeError(
            f"{name} must have dtype torch.bool (True = may attend), got {mask.dtype}. "
            f"Convert a 0/1 mask with `{name}.bool()`; do not pass additive -inf masks here (use bias)."
        )
    if mask.dim() not in (2, 3, 4) or mask.shape[-2] not in (1, Tq) or mask.shape[-1] not in (1, Tk):
        raise ValueError(
            f"{name} of shape {tuple(mask.shape)} does not fit {Tq} queries and {Tk} keys: expected "
            f"(Tq, Tk), (B, Tq, Tk), (B, 1, Tk) or (B, H, Tq, Tk) with Tq={Tq}, Tk={Tk}"
        )
    if mask.dim() == 3:
        mask = mask[:, None]  # (B, 1, Tq, Tk): the same for every head
    return mask


def attention(q, k, v, mask=None, bias=None, dropout: float = 0.0, return_weights: bool = False):
    """Scaled dot-product attention over heads.

    q: (B, H, Tq, dh); k, v: (B, H, Tk, dh); mask: bool, True = may attend (see :func:`check_mask`);
    bias: float, broadcastable to (B, H, Tq, Tk), added to the logits.
    Returns ``(out, weights)``: out is (B, H, Tq, dh); weights is (B, H, Tq, Tk) if
    ``return_weights`` else None.
    """
    Tq, Tk = q.shape[-2], k.shape[-2]
    empty_rows = None
    if mask is not None:
        mask = check_mask(mask, Tq, Tk)
        allowed_any = mask.any(dim=-1, keepdim=True)  # (..., Tq, 1)
        if not bool(allowed_any.all()):
            # Let rows with nothing to see attend everywhere (finite softmax), then zero them below.
            empty_rows = ~allowed_any
            mask = mask | empty_rows
    if bias is not None and bias.dtype == torch.bool:
        raise TypeError("bias must be a float tensor added to the logits; pass boolean masks as mask=")

    if not return_weights:
        # The fused kernel (flash / memory-efficient / math) when nobody needs the weights.
        attn_mask = mask
        if bias is not None:
            attn_mask = bias if mask is None else bias.masked_fill(~mask, float("-inf"))
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, dropout_p=dropout)
        weights = None
    else:
        # The same computation written out, for pictures and for reading.
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])  # (B, H, Tq, Tk)
        if bias is not None:
            scores = scores + bias
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
        weights = scores.softmax(dim=-1)
        if empty_rows is not None:
            weights = weights.masked_fill(empty_rows, 0.0)
        out = F.dropout(weights, p=dropout) @ v  # (B, H, Tq, dh)
    if empty_rows is not None:
        out = out.masked_fill(empty_rows, 0.0)
    return out, weights


class MultiHeadAttention(nn.Module):
    """h heads, each attending in its own d_model/h-dimensional subspace, then concatenated.

    ``forward(x, context=None, ...)``: self-attention when ``context`` is None, otherwise queries
    from ``x`` and keys/values from ``context`` (encoder-decoder "cross" attention).

    ``cache``: a dict kept between calls during generation (GPT chapter). The keys and values of
    earlier positions are stored under ``"k"``/``"v"`` as ``(B, H, T_past, dh)`` and the new ones are
    appended, so each step computes attention for the new positions only. Who may see whom is still
    the caller's mask: ``masks.causal_mask(T, memory=T_past)``.
    """

    def __init__(self, d_model: int, n_head: int, dropout: float = 0.0, bias: bool = True):
        super().__init__()
        if d_model % n_head != 0:
            raise ValueError(f"d_model ({d_model}) must be divisible by n_head ({n_head})")
        self.n_head, self.dropout = n_head, dropout
        self.q = nn.Linear(d_model, d_model, bias=bias)
        self.k = nn.Linear(d_model, d_model, bias=bias)
        self.v = nn.Linear(d_model, d_model, bias=bias)
        self.o = nn.Linear(d_model, d_model, bias=bias)

    def split(self, x):  # (B, T, D) -> (B, H, T, D/H)
        B, T, D = x.shape
        return x.view(B, T, self.n_head, D // self.n_head).transpose(1, 2)

    def forward(self, x, context=None, mask=None, bias=None, return_weights=False, cache=None):
        context = x if context is None else context
        q, k, v = self.split(self.q(x)), self.split(self.k(context)), self.split(self.v(context))
        if cache is not None:  # generation: prepend the keys/values of earlier positions
            if "k" in cache:
                k, v = torch.cat([cache["k"], k], dim=2), torch.cat([cache["v"], v], dim=2)  # (B, H, Tk, dh)
            cache["k"], cache["v"] = k, v
        p = self.dropout if self.training else 0.0
        out, weights = attention(q, k, v, mask=mask, bias=bias, dropout=p, return_weights=return_weights)
        B, H, T, dh = out.shape
        out = out.transpose(1, 2).reshape(B, T, H * dh)  # (B, T, D): concatenate the heads
        return self.o(out), weights
