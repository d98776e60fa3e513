"""Transformer-XL: a decoder with a memory of earlier segments and relative positions.

    segment τ-1: states of every layer ──detach──► memory ─┐
    segment τ:   ids ──► token embedding ──► Stack(relative attention, keys/values =
                 [memory ; segment], causal mask shifted by the memory) ──► logits

Two changes to GPT, each a hook on the one attention function (Dai et al., 2019):

1. **Segment-level recurrence.** Every layer reads the input states of the previous
   segment, *detached* (SG = stop-gradient), as extra keys and values:

       h̃ = [SG(m) ∘ h],   q = h W_q,   k = h̃ W_k,   v = h̃ W_v

   ``Stack(..., memory=)`` and :class:`~ptlm_lite.stack.Memory` do this for any model;
   the mask is GPT's causal mask with its diagonal shifted right by the memory length,
   ``masks.causal_mask(T, memory=M)``. Each layer reaches M positions further back, so
   the longest dependency grows as O(M·L) although no gradient crosses a segment.

2. **Relative positions.** Absolute positions would number the memory and the segment
   alike. Instead the score of query i and key j depends only on the distance i - j:

       A_ij = q_iᵀk_j + q_iᵀ W_R R_{i-j} + uᵀk_j + vᵀ W_R R_{i-j}
              (a)       (b)                (c)      (d)

   (a) content–content, (b) content–position, (c) a global content bias u, (d) a global
   position bias v; R are the sinusoids, W_R a learned projection. (a) + (c) is one
   product, (q_i + u)ᵀk_j; (b) + (d) is an additive bias on the scores. So
   :class:`RelativeAttention` overrides ``attend``: it hands the shared
   :func:`~ptlm_lite.attention.attention` the query moved by u, and that bias.

Chapter: ``chapters/transformer_xl.ipynb``; the training and evaluation loops over
segments are in :mod:`ptlm_lite.recipes.transformer_xl`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn

from . import masks
from .attention import Dropout, MultiHeadAttention, check_mask
from .config import Config, register_preset
from .layers import check_ids, init_weights, sinusoidal_positions
from .output import Output, cross_entropy
from .stack import Memory, Model, Stack, check_memory

__all__ = ["XLConfig", "window_mask", "RelativeAttention", "TransformerXL"]


@dataclass
class XLConfig(Config):
    # hidden states kept from earlier segments, per layer (the paper's N)
    mem_len: int = 32


# max_len is the longest segment; there is no position table to outgrow.
register_preset(
    "txl-tiny", config_cls=XLConfig, d_model=64, n_layer=2, n_head=4, d_ff=256,
    max_len=512, mem_len=32, pre_norm=True, dropout=0.0,  # 200 steps: no overfitting
)  # fmt: skip
register_preset(
    "txl-small", config_cls=XLConfig, d_model=256, n_layer=4, n_head=8, d_ff=1024,
    max_len=512, mem_len=128, pre_norm=True, dropout=0.1,
)  # fmt: skip


def window_mask(T: int, memory: int, window: int, device=None) -> torch.Tensor:
    """Every query sees exactly the ``window`` keys that end at itself (the paper's
    evaluation setting ``same_length``), so each token has the same context as in a
    sliding window of ``window`` tokens. Query i sits at key column memory + i.

    ``window_mask(3, memory=3, window=3)``::

        · ■ ■ ■ · ·
        · · ■ ■ ■ ·
        · · · ■ ■ ■

    Returns a ``(T, memory + T)`` bool tensor (True = may attend).
    """
    for name, n, low in (("T", T, 1), ("memory", memory, 0), ("window", window, 1)):
        if not isinstance(n, int) or isinstance(n, bool) or n < low:
            raise ValueError(f"{name} must be an integer >= {low}, got {n!r}")
    q = torch.arange(T, device=device)[:, None] + memory  # the query's own column
    k = torch.arange(memory + T, device=device)[None, :]
    return (k <= q) & (k > q - window)


class RelativeAttention(MultiHeadAttention):
    """Multi-head attention with Transformer-XL's relative positions, as a bias.

    Key j is ``i + (Tk - Tq) - j`` positions behind query i (the keys start with the
    memory). Terms (a) + (c) are one product, ``(q_i + u)ᵀk_j``, made by the attention
    itself (the query moved by u, as the paper's code does). Terms (b) + (d) are
    ``(q_i + v)ᵀ W_R R_d``, computed once per distance d and then gathered at d = i - j:
    the same numbers as the paper's "shift" trick; they reach the attention as its
    bias. Future keys (d < 0) are given distance 0; a language model masks them anyway.
    u and v belong to each layer (the paper's code can share them across layers).
    """

    def __init__(self, d_model: int, n_head: int, dropout: float = 0.0, bias=True):
        super().__init__(d_model, n_head, dropout, bias)
        d_head = d_model // n_head
        self.r = nn.Linear(d_model, d_model, bias=False)  # W_R
        self.u = nn.Parameter(torch.zeros(n_head, d_head))  # global content bias
        self.v = nn.Parameter(torch.zeros(n_head, d_head))  # global position bias

    def relative_bias(self, q, k):
        """Terms (b) + (d) of the score, divided by √d_head as (a) + (c) will be."""
        (B, H, Tq, dh), Tk = q.shape, k.shape[-2]
        R = sinusoidal_positions(Tk, self.d_model).to(q)  # (Tk, D): R_0 .. R_{Tk-1}
        r = self.split(self.r(R)[None])[0]  # (H, Tk, dh): W_R R_d, head by head
        bd = (q + self.v[:, None]) @ r.transpose(-1, -2)  # (B, H, Tq, Tk) by distance
        i = torch.arange(Tq, device=q.device)[:, None] + (Tk - Tq)
        d = (i - torch.arange(Tk, device=q.device)[None]).clamp(min=0)  # (Tq, Tk)
        bd = bd.gather(-1, d.expand(B, H, Tq, Tk))  # now by key: (b) + (d) at i - j
        return bd / math.sqrt(dh)

    def attend(self, q, k, v, mask=None, bias=None, return_weights=False):
        rel = self.relative_bias(q, k)
        bias = rel if bias is None else bias + rel
        qu = q + self.u[:, None]  # (a) + (c): (q + u)ᵀk in the attention's own product
        return super().attend(qu, k, v, mask, bias, return_weights)


class TransformerXL(Model):
    """A decoder-only language model with memory and relative positions.

    ``forward(ids, targets=None, memory=None, mask=None, return_attention=False)``:
    ``ids`` (B, T) is one segment; ``memory`` a :class:`Memory` from
    :meth:`new_memory`, read and then updated in place with this segment's states
    (detached). ``mask`` defaults to ``masks.causal_mask(T, memory=len(memory))``.
    Returns an :class:`~ptlm_lite.output.Output` (logits (B, T, V), mean next-token
    loss when ``targets`` are given, ``attentions`` per layer (B, H, T, M + T)).
    """

    config_cls, config_example = XLConfig, "preset('txl-tiny', vocab_size=...)"

    def __init__(self, config: XLConfig, seed: int | None = None):
        super().__init__(config, seed)
        self.tok = nn.Embedding(config.vocab_size, config.d_model)  # no positions
        self.drop = Dropout(config.dropout)
        self.blocks = Stack(config, attention=RelativeAttention)
        self.head = nn.Linear(config.d_model, config.vocab_size, bias=False)
        if config.tie_weights:
            self.head.weight = self.tok.weight
        self.apply(init_weights)  # the book's one initialiser: N(0, 0.02)

    def new_memory(self, mem_len: int | None = None) -> Memory:
        """An empty memory of ``mem_len`` positions (default ``config.mem_len``)."""
        return Memory(self.config.mem_len if mem_len is None else mem_len)

    def hidden(self, ids, memory=None, mask=None, return_attention=False):
        """The final states (B, T, D) of one segment, and the attentions if asked."""
        check_ids(ids, self.config.vocab_size)
        T, M = ids.shape[1], check_memory(memory, ids)
        if T > self.config.max_len:
            raise ValueError(f"ids: segment of {T} > max_len={self.config.max_len}")
        if mask is None:
            mask = masks.causal_mask(T, memory=M, device=ids.device)
        check_mask(mask, T, M + T)
        out = self.blocks(
            self.drop(self.tok(ids)),
            mask=mask,
            memory=memory,
            return_attention=return_attention,
        )
        return out.last_hidden, out.attentions

    def forward(
        self, ids, targets=None, memory=None, mask=None, return_attention=False
    ) -> Output:
        h, attentions = self.hidden(ids, memory, mask, return_attention)
        logits = self.head(h)  # (B, T, V)
        loss = None if targets is None else cross_entropy(logits, targets)
        return Output(logits, loss, attentions, last_hidden=h)
