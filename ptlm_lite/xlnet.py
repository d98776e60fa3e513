"""XLNet: permutation language modelling with two-stream attention (Yang et al., 2019).

    order z (a permutation of 0..T-1) ──► content mask (z_≤t), query mask (z_<t)
    ids ──► embedding ──► h (content stream) ─┐ the same layers and weights;
    mask_emb at every position ──► g (query) ─┴► keys/values always from h
    g at the predicted positions ──► logits of x_{z_t}

Three things are new, and each is a mask or more query rows of the one attention:

1. **Permutation LM.** Pick an order z and predict x_{z_t} from x_{z<t}. Any order is
   allowed (T! of them), the tokens stay where they are: only the mask changes. The
   content stream at z_t may see z_≤t (itself included); the query stream only z_<t.
2. **Two streams.** g at position z_t knows *where* it predicts (relative positions of
   its queries) but not *what* is there (it starts from one learned vector); h knows
   both and is what the other positions read. Both streams go through the same
   attention module, in one call (their rows stacked), with the same keys and values
   [memory ; h]; only the queries and masks differ.
3. **Partial prediction.** Only the last T/K positions of each order are predicted:
   they have a long context; the first ones would be guessed from almost nothing.
   ``predict_at`` (XLNet's ``target_mapping``) runs g, and the last layer, only there.

Relative positions and the memory are Transformer-XL's
(:mod:`ptlm_lite.transformer_xl`); XLNet is
bidirectional, so distances are signed (a key can lie after its query).

Chapter: ``chapters/xlnet.ipynb``; training loops in :mod:`ptlm_lite.recipes.xlnet`.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import torch
from torch import nn

from .attention import Dropout, check_mask
from .config import register_preset
from .layers import Block, check_ids, init_weights
from .masks import permutation_masks  # XLNet's two masks: the one function, in masks
from .output import Output, cross_entropy
from .stack import Memory, Model, check_memory
from .transformer_xl import RelativeAttention, XLConfig

__all__ = [
    "TwoStreamBlock", "XLNet", "XLNetAttention", "XLNetConfig",
    "partial_prediction", "sample_order",
]  # fmt: skip


@dataclass
class XLNetConfig(XLConfig):
    mem_len: int = 0  # the chapter trains on single segments


register_preset(
    "xlnet-tiny", config_cls=XLNetConfig, d_model=64, n_layer=2, n_head=4, d_ff=256,
    max_len=512, mem_len=0, dropout=0.0, activation="gelu", ln_eps=1e-12,
)  # fmt: skip


def _check_order(order) -> torch.Tensor:
    if not isinstance(order, torch.Tensor) or order.dim() not in (1, 2):
        raise ValueError("order must be a (T,) or (B, T) tensor of a permutation")
    T = order.shape[-1]
    if not torch.equal(order.sort(-1).values, torch.arange(T).expand_as(order)):
        raise ValueError(f"order must be a permutation of 0..{T - 1}, got {order}")
    return order


def partial_prediction(order, K: float) -> torch.Tensor:
    """Which positions are predicted: the last ⌊T/K⌋ of the order (at least one).

    ``partial_prediction(tensor([2, 0, 3, 1]), K=2)`` -> ``[False, True, False, True]``
    (z_3 = 3 and z_4 = 1). Returns a bool tensor shaped like ``order``.
    """
    order = _check_order(order)
    if isinstance(K, bool) or not isinstance(K, (int, float)) or not K >= 1:
        raise ValueError(f"K must be a number >= 1, got {K!r}")
    T = order.shape[-1]
    n = max(1, int(T / K))
    return order.argsort(-1) >= T - n


def sample_order(B: int, T: int, generator: torch.Generator) -> torch.Tensor:
    """B factorisation orders of T positions, uniformly at random: (B, T)."""
    if not isinstance(generator, torch.Generator):
        raise TypeError("generator must be a torch.Generator (never the global RNG)")
    return torch.stack([torch.randperm(T, generator=generator) for _ in range(B)])


@functools.lru_cache(maxsize=32)
def _sinusoids(Tk: int, D: int, dtype, device) -> torch.Tensor:
    """R_d for d from Tk - 1 down to 1 - Tk: (2Tk - 1, D), all sines then all cosines
    (once per shape; never an inference tensor, which training could not use)."""
    with torch.inference_mode(False):
        d = torch.arange(Tk - 1, -Tk, -1, device=device, dtype=dtype)[:, None]
        f = torch.exp(-math.log(10000.0) * torch.arange(0, D, 2) / D).to(device, dtype)
        return torch.cat([(d * f).sin(), (d * f).cos()], -1)


class XLNetAttention(RelativeAttention):
    """Transformer-XL's relative attention with signed distances, as in XLNet.

    Key j is d = a_i - j positions behind query i, a_i its place among the keys (by
    default the last Tq keys: a_i = i + Tk - Tq; ``forward(..., at=)`` (B, Tq) puts
    the queries elsewhere: XLNet's target mapping); d < 0 is a key after the query,
    which a bidirectional model may see. R_d = [sin(d·f) ; cos(d·f)], the layout of
    XLNet's released code (and Hugging Face's), for d from Tk - 1 down to 1 - Tk.

    Only the distances change: terms (a) + (c) are still one product, (q_i + u)ᵀk_j,
    made by the attention (the query moved by u, in ``RelativeAttention.attend``), and
    ``relative_bias`` is (b) + (d).
    """

    at = None  # (B, Tq) or None: where this call's queries sit among the keys

    def forward(self, x, context=None, mask=None, at=None, **kwargs):
        self.at = at  # read by relative_bias, within this call only
        try:
            return super().forward(x, context, mask, **kwargs)
        finally:
            self.at = None  # no tensor kept on the module after the call

    def relative_bias(self, q, k):
        """Terms (b) + (d), (q_i + v)ᵀ W_R R_d at d = a_i - j, divided by √d_head."""
        (B, H, Tq, dh), Tk = q.shape, k.shape[-2]
        R = _sinusoids(Tk, self.d_model, q.dtype, q.device)  # (2Tk-1, D)
        r = self.split(self.r(R)[None])[0]  # (H, 2Tk-1, dh)
        bd = torch.einsum("bhqd,hkd->bhqk", q + self.v[:, None], r)  # (B, H, Tq, 2Tk-1)
        at = self.at
        if at is None:  # the queries are the last Tq keys
            at = torch.arange(Tk - Tq, Tk, device=q.device).expand(B, -1)
        col = (Tk - 1 - at)[..., None] + torch.arange(Tk, device=q.device)  # d at col
        bd = bd.gather(-1, col[:, None].expand(B, H, Tq, Tk))  # (b) + (d), by key
        return bd / math.sqrt(dh)


class TwoStreamBlock(Block):
    """One XLNet layer run on both streams with the same weights (post-LN).

    ``forward(h, g, content_mask, query_mask, memory=None, at=None, content=True)``:
    keys and values are [memory ; h] for both; h attends with ``content_mask``, g with
    ``query_mask``. g may be None (content stream only: fine-tuning, or MLM on the same
    network), or hold only some positions: ``at`` (B, P), their places among the keys.
    ``content=False``: h's own update is skipped (None), for a last layer whose h
    nobody reads.

    The two streams go through the layer as one: the rows of h, then those of g, each
    with its own mask row and its own place among the keys. A row's result depends on
    its query, its mask row and its place alone, so this is two calls' numbers (up to
    float rounding) in half the calls (on the CPU, small models are bound by the
    number of calls; measured in ``benchmarks/README.md``).
    """

    def forward(
        self, h, g, content_mask, query_mask, memory=None, weights=False, at=None,
        content=True,
    ):  # fmt: skip
        if g is None and not content:
            raise ValueError(
                "g: give the query stream, or content=True (nothing to do)"
            )
        kv = h if memory is None else torch.cat([memory, h], dim=1)
        (B, T, _), Tk = h.shape, kv.shape[1]
        x, mask, places = (h, content_mask, None) if content else (g, query_mask, at)
        if content and g is not None:  # both: the rows of h, then those of g
            here = torch.arange(Tk - T, Tk, device=h.device).expand(B, T)  # h's places
            P = g.shape[1]
            x = torch.cat([h, g], 1)  # (B, T + P, D)
            mask = torch.cat(
                [content_mask.expand(B, T, Tk), query_mask.expand(B, P, Tk)], 1
            )
            places = torch.cat([here, here if at is None else at], 1)
        f = lambda y: self.attn(y, kv, mask, at=places, return_weights=weights)
        x, w = self.sublayer(x, self.ln1, f)
        x = self.sublayer(x, self.ln2, lambda y: (self.ff(y), None))[0]
        if not content:
            return None, x, (None, w)
        if g is None:
            return x, None, (w, None)
        h2, g2 = x.split([T, P], 1)
        w_h, w_g = (None, None) if w is None else w.split([T, P], 2)
        return h2, g2, (w_h, w_g)


class XLNet(Model):
    """The XLNet language model (bidirectional attention type "bi", no segments).

    ``forward(ids, order=None, targets=None, content_mask=None, query_mask=None,
    memory=None, two_stream=True, predict_at=None)``. Give an ``order`` ((T,) or (B,
    T)) or both masks ((B, T, M + T), True = may attend); with neither, every position
    sees every position (content stream only, as in fine-tuning or MLM). ``logits`` (B,
    T, V) come from g when ``two_stream`` and from h otherwise; ``targets`` (B, T) uses
    -100 for positions not predicted. ``predict_at`` (B, P): logits only at these
    positions (XLNet's ``target_mapping``, as indices), the same numbers computed for
    P rows instead of T: g only there, and the last layer's queries only there (the
    content stream's last h is then None, or (B, P, D) with ``two_stream=False``):
    logits (B, P, V), targets (B, P). ``extra`` holds ``"h"`` and ``"g"``.
    """

    config_cls, config_example = XLNetConfig, "preset('xlnet-tiny')"

    def __init__(self, config: XLNetConfig, seed: int | None = None):
        super().__init__(config, seed)
        if config.pre_norm:
            raise TypeError("config.pre_norm must be False: XLNet is post-LN")
        if config.share_layers or not config.tie_weights:
            raise TypeError(
                "XLNet ties its head to the embedding and shares no layer: config "
                "needs tie_weights=True, share_layers=False"
            )
        D = config.d_model
        self.tok = nn.Embedding(config.vocab_size, D)
        self.mask_emb = nn.Parameter(torch.zeros(1, 1, D))  # g's start: no content
        self.drop = Dropout(config.dropout)
        self.blocks = nn.ModuleList(
            TwoStreamBlock(config, attention=XLNetAttention)
            for _ in range(config.n_layer)
        )
        self.head = nn.Linear(D, config.vocab_size)
        self.head.weight = self.tok.weight  # tied, as in XLNet
        self.apply(init_weights)  # the book's one initialiser: N(0, 0.02)
        nn.init.normal_(self.mask_emb, std=0.02)

    def new_memory(self, mem_len: int | None = None) -> Memory:
        return Memory(self.config.mem_len if mem_len is None else mem_len)

    def forward(
        self, ids, order=None, targets=None, content_mask=None, query_mask=None,
        memory=None, two_stream=True, return_attention=False, predict_at=None,
    ):  # fmt: skip
        check_ids(ids, self.config.vocab_size)
        (B, T), M = ids.shape, check_memory(memory, ids)
        if order is not None:
            if content_mask is not None or query_mask is not None:
                raise ValueError("give order or content_mask/query_mask, not both")
            order = torch.as_tensor(order, device=ids.device)
            if (
                order.dim() not in (1, 2)
                or order.shape[-1] != T
                or (order.dim() == 2 and order.shape[0] != B)
            ):
                raise ValueError(
                    f"order must be (T,) or (B, T) = {(B, T)} (a permutation of "
                    f"range({T}) per row), got shape {tuple(order.shape)}"
                )
            content_mask, query_mask = permutation_masks(order, M)
        elif content_mask is None:
            if query_mask is not None:
                raise ValueError("content_mask: give it with query_mask (or an order)")
            content_mask = query_mask = torch.ones(T, M + T, dtype=torch.bool)
        elif query_mask is None:
            raise ValueError("query_mask: give it with content_mask (or an order)")
        for name, m in (("content_mask", content_mask), ("query_mask", query_mask)):
            check_mask(m, T, M + T, name)
        idx = None if predict_at is None else torch.as_tensor(predict_at).to(ids.device)
        if idx is not None and (  # logits only there: g, and the last layer's queries
            idx.dim() != 2 or len(idx) != B or idx.is_floating_point()
            or not ((0 <= idx) & (idx < T)).all()
        ):  # fmt: skip
            raise ValueError(f"predict_at must be (B, P) positions in 0..{T - 1}")

        def rows(x):  # x (B, T, ·) or (T, ·) at the predicted positions: (B, P, ·)
            x = x.expand(B, T, x.shape[-1])
            return x.gather(1, idx[..., None].expand(-1, -1, x.shape[-1]))

        at = None if idx is None else idx + M  # their places among the keys
        query_mask = rows(query_mask) if two_stream and at is not None else query_mask
        h = self.drop(self.tok(ids))
        P = T if at is None else at.shape[1]
        g = self.drop(self.mask_emb.expand(B, P, -1)) if two_stream else None
        hidden, attentions = [], []
        for i, block in enumerate(self.blocks):
            hidden.append(h)
            mem = None if memory is None else memory[i]
            # the last layer: queries only where predicted (nothing reads the rest)
            last = at is not None and i == len(self.blocks) - 1
            if last and not two_stream:  # the content stream's, as g's
                g, query_mask = rows(h), rows(content_mask)
            h, g, w = block(
                h, g, content_mask, query_mask, mem, return_attention, at, not last
            )
            h, g = (g, None) if last and not two_stream else (h, g)
            attentions.append(w)
        if memory is not None:
            memory.update(hidden)
        logits = self.head(self.drop(g if two_stream else h))
        loss = None if targets is None else cross_entropy(logits, targets)
        return Output(logits, loss, attentions if return_attention else None,
                      {"h": h, "g": g})  # fmt: skip
