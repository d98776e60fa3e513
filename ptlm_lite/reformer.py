"""Reformer: hashed attention, reversible layers and chunking (Kitaev et al., 2020).

    ids ──► embeddings ──► [x ; x] ──► reversible blocks × L ──► LN(2D) ──► logits
                                       Y₁ = X₁ + Attention(LN(X₂))
                                       Y₂ = X₂ + FeedForward(LN(Y₁))

Three changes to a Transformer language model, all aimed at memory:

1. **LSH attention.** The softmax is dominated by the largest scores, so a query needs
   only the keys nearest to it. Queries and keys are shared (k = q / ‖q‖), hashed by a
   random rotation R into buckets, h(x) = argmax([xR ; −xR]); the tokens are sorted by
   bucket, cut into chunks of m, and each chunk attends within itself and to the chunk
   before, inside its bucket. A token never attends to itself (its own score would win)
   unless nothing else is allowed. With n rounds of hashing, P_i = ∪ᵣ P_i⁽ʳ⁾, and a key
   found in several rounds counts once per round (as in Hugging Face's code):

       softmax over j ∈ P_i of  q_i·k_j / √d + log N_ij,  N_ij = #{r : j ∈ P_i⁽ʳ⁾}

   Here that is a boolean mask (:func:`lsh_mask`) and the bias log N
   (:func:`lsh_counts`) on the package's one attention function;
   :func:`lsh_attention` is the sorted, chunked form whose cost grows as T·m, not T².
2. **Reversible layers.** A block's inputs can be recomputed from its outputs,
   X₂ = Y₂ − G(Y₁), X₁ = Y₁ − F(X₂), so the backward pass rebuilds each layer's
   activations instead of keeping them (:class:`Reversible`): memory flat in depth.
3. **Chunked feed-forward.** Positions are independent, so G runs on ``ff_chunk``
   positions at a time and its (T, d_ff) activation never exists at once.

Chapter: ``chapters/reformer.ipynb``; training and measurements in
:mod:`ptlm_lite.recipes.reformer`.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import torch
from torch import nn

from . import masks
from .attention import MultiHeadAttention, attention, check_mask, check_qkv
from .config import Config, register_preset
from .layers import Embeddings, FeedForward, check_ids, init_weights
from .output import Output, cross_entropy
from .stack import Model, Stack

__all__ = [
    "LSHAttention",
    "Reformer",
    "ReformerConfig",
    "Reversible",
    "ReversibleBlock",
    "hash_buckets",
    "lsh_attention",
    "lsh_counts",
    "lsh_mask",
]  # fmt: skip


@dataclass
class ReformerConfig(Config):
    # buckets per round, even (argmax over [xR ; −xR]); 1 = no hashing
    n_buckets: int = 8
    n_hashes: int = 2  # rounds of hashing, each with its own rotation
    chunk: int = 32  # m: queries per sorted chunk (each reads the one before too)
    ff_chunk: int = 0  # positions per feed-forward chunk; 0: all at once
    reversible: bool = True  # False: the same blocks, activations kept (the baseline)
    hash_seed: int = -1  # >= 0: the same rotations at every call (HF's hash_seed)

    RANGES = {
        **Config.RANGES, "n_buckets": ">= 1", "n_hashes": ">= 1", "chunk": ">= 1",
        "hash_seed": ">= -1",
    }  # fmt: skip

    def validate(self) -> None:
        super().validate()
        if self.n_buckets > 1 and self.n_buckets % 2:
            raise ValueError(f"n_buckets must be 1 or even, got {self.n_buckets}")


# Learned positions, no tied head (it reads 2·d_model), no dropout (short runs).
_SHARED = dict(pos="learned", tie_weights=False, pre_norm=True, dropout=0.0)
register_preset(
    "reformer-tiny", config_cls=ReformerConfig, d_model=64, n_layer=2, n_head=4,
    d_ff=256, max_len=1024, n_buckets=8, n_hashes=2, chunk=32, ff_chunk=64, **_SHARED,
)  # fmt: skip
register_preset(
    "reformer-small", config_cls=ReformerConfig, d_model=256, n_layer=6, n_head=8,
    d_ff=1024, max_len=4096, n_buckets=32, n_hashes=4, chunk=64, ff_chunk=256,
    **_SHARED,
)  # fmt: skip


def _positive(name, value):
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
    return value


def _check_buckets(buckets, dims=(2, 3, 4)):
    if (
        not isinstance(buckets, torch.Tensor)
        or buckets.dtype not in (torch.int64, torch.int32)
        or buckets.dim() not in dims
        or not buckets.shape[-1]
    ):
        raise ValueError(
            f"buckets must be an integer tensor of bucket ids with {dims} dimensions, "
            "the last one T >= 1, got "
            + (f"{buckets.dtype} of shape {tuple(buckets.shape)}"
               if isinstance(buckets, torch.Tensor) else type(buckets).__name__)
        )  # fmt: skip


def hash_buckets(x, n_buckets: int, n_hashes: int, generator=None) -> torch.Tensor:
    """Angular LSH, one random rotation R (d, n_buckets/2) per head and round:
    h(x) = argmax([xR ; −xR]). Vectors at a small angle tend to share a bucket.
    ``x`` (B, H, T, d) -> (B, H, n_hashes, T); one bucket: all zeros."""
    _positive("n_buckets", n_buckets)
    _positive("n_hashes", n_hashes)
    if n_buckets > 1 and n_buckets % 2:
        raise ValueError(f"n_buckets must be 1 or even, got {n_buckets}")
    if not isinstance(x, torch.Tensor) or x.dim() != 4 or not x.is_floating_point():
        raise ValueError(
            "x must be a float tensor (B, H, T, d), got "
            + (f"{x.dtype} of shape {tuple(x.shape)}" if isinstance(x, torch.Tensor)
               else type(x).__name__)
        )  # fmt: skip
    B, H, T, d = x.shape
    if n_buckets == 1:
        return torch.zeros(B, H, n_hashes, T, dtype=torch.long, device=x.device)
    shape = (H, d, n_hashes, n_buckets // 2)  # Hugging Face's order of random numbers
    R = torch.randn(shape, generator=generator, dtype=x.dtype, device=x.device)
    xr = torch.einsum("bhtd,hdrn->bhrtn", x.detach(), R)
    return torch.cat([xr, -xr], dim=-1).argmax(-1)


def lsh_counts(buckets: torch.Tensor, chunk: int, mask=None) -> torch.Tensor:
    """N_ij: in how many rounds query i may attend to key j. ``buckets`` (..., R, T);
    ``mask`` (T, T), e.g. causal, applies first. Returns (..., T, T) floats."""
    _check_buckets(buckets)
    _positive("chunk", chunk)
    T = buckets.shape[-1]
    if mask is not None:
        mask = check_mask(mask, T, T)[..., None, :, :]  # (..., 1 round, T, T)
    pos = torch.arange(T, device=buckets.device)
    order = (buckets * T + pos).argsort(-1)  # sort by bucket, then by position
    c = order.argsort(-1) // chunk  # (..., R, T): each token's chunk after sorting
    same = buckets[..., :, None] == buckets[..., None, :]
    near = (c[..., None, :] == c[..., :, None]) | (
        c[..., None, :] == c[..., :, None] - 1
    )
    ok = same & near & (pos[:, None] != pos[None, :])  # never oneself...
    n = (ok if mask is None else ok & mask).sum(-3).float()  # (..., T, T)
    alone = n.sum(-1, keepdim=True) == 0  # ...unless nothing else is allowed
    return n + (alone & (pos[:, None] == pos[None, :]))


def lsh_mask(buckets: torch.Tensor, chunk: int, mask=None) -> torch.Tensor:
    """Who may see whom under LSH attention: ``lsh_counts(...) > 0``.

    Six tokens in buckets 0 1 0 1 1 0, one round, chunks of 2. Sorted by bucket the
    order is 0 2 5 1 3 4, cut into chunks (0 2) (5 1) (3 4). Tokens 3 and 4 look back
    and find 1; token 1 looks back into a chunk of bucket 0 and finds no one, so it
    attends to itself. ``lsh_mask(torch.tensor([[0, 1, 0, 1, 1, 0]]), chunk=2)``::

        · · ■ · · ·
        · ■ · · · ·
        ■ · · · · ·
        · ■ · · ■ ·
        · ■ · ■ · ·
        ■ · ■ · · ·
    """
    return lsh_counts(buckets, chunk, mask) > 0


def lsh_attention(q, k, v, buckets, chunk: int, causal: bool = False):
    """One round of :func:`lsh_mask` attention in its sorted, chunked form: sort by
    bucket, cut into T/m chunks of m queries, attend to 2m keys each: O(T·m) memory.
    q, k, v (B, H, T, d); buckets (B, H, T); T a multiple of ``chunk``."""
    check_qkv(q, k, v)
    _positive("chunk", chunk)
    _check_buckets(buckets, dims=(3,))
    H, T = q.shape[1:3]
    if buckets.shape != q.shape[:3] or k.shape[2] != T:
        raise ValueError(
            f"buckets must be (B, H, T) = {tuple(q.shape[:3])} and k, v have T={T} "
            f"positions, got buckets {tuple(buckets.shape)}, k {tuple(k.shape)}"
        )
    if T % chunk:
        raise ValueError(f"T={T} must be a multiple of chunk={chunk}")
    order = (buckets * T + torch.arange(T, device=q.device)).argsort(-1)  # (B, H, T)

    def sort(x):  # (B, H, T, ...) -> sorted, cut into chunks (B, H, n, m, ...)
        idx = order if x.dim() == 3 else order[..., None].expand_as(x)
        return x.gather(2, idx).unflatten(2, (-1, chunk))

    def back(x):  # (B, H, n, m, ...) -> the chunk before, then the chunk itself
        return torch.cat([x.roll(1, dims=2), x], dim=3)

    qs, bq, pq = (
        sort(q),
        sort(buckets),
        order.unflatten(2, (-1, chunk)),
    )  # pq: positions
    ks, vs, pk, bk = back(sort(k)), back(sort(v)), back(pq), back(bq)
    first = torch.arange(2 * chunk, device=q.device) < chunk  # the rolled-in chunk...
    ok = (bq[..., :, None] == bk[..., None, :]) & (pq[..., :, None] != pk[..., None, :])
    ok[:, :, 0] &= ~first  # ...is not before chunk 0
    if causal:
        ok &= pk[..., None, :] <= pq[..., :, None]
    alone = ~ok.any(-1, keepdim=True)  # nothing else allowed: oneself
    ok |= alone & (pq[..., :, None] == pk[..., None, :]) & ~first
    out, _ = attention(*(x.flatten(1, 2) for x in (qs, ks, vs)), mask=ok.flatten(1, 2))
    out = out.unflatten(1, (H, -1)).flatten(2, 3)  # (B, H, T, d), sorted
    return torch.empty_like(out).scatter_(2, order[..., None].expand_as(out), out)


class LSHAttention(MultiHeadAttention):
    """Shared-QK attention over hashed buckets. One projection makes queries and keys
    (``qkv`` is W_QK ; W_V); a key is its query rescaled to length √d_head, so that
    after the attention's usual 1/√d the score is q·k̂, k̂ the key at unit length (as
    Hugging Face's ``LSHSelfAttention`` computes it). ``attend`` hashes q, counts the
    rounds with :meth:`counts` and calls :func:`attention` with mask N > 0 and bias
    log N."""

    def __init__(self, d_model, n_head, dropout=0.0, bias=False, *, n_buckets=8,
                 n_hashes=2, chunk=32, hash_seed=-1):  # fmt: skip
        super().__init__(d_model, n_head, dropout, bias)
        self.qkv = nn.Linear(d_model, 2 * d_model, bias=bias)  # W_QK ; W_V
        if n_buckets > 1 and _positive("n_buckets", n_buckets) % 2:
            raise ValueError(f"n_buckets must be 1 or even, got {n_buckets}")
        _positive("n_hashes", n_hashes)
        _positive("chunk", chunk)
        self.n_buckets, self.n_hashes, self.chunk = n_buckets, n_hashes, chunk
        self.hash_seed = hash_seed

    def project(self, x, context=None):
        if context is not None:
            raise ValueError("LSH attention is self-attention: context must be None")
        qk, v = self.qkv(x).split(self.d_model, dim=-1)
        q, v = self.split(qk), self.split(v)  # (B, H, T, dh)
        k = q * torch.rsqrt(q.pow(2).mean(-1, keepdim=True) + 1e-6)  # length √dh
        return q, k, v

    def counts(self, buckets, mask=None):
        """N_ij from the buckets (B, H, R, T): the one method a variant overrides."""
        return lsh_counts(buckets, self.chunk, mask)

    def attend(self, q, k, v, mask=None, bias=None, return_weights=False):
        g = None
        if self.hash_seed >= 0:
            g = torch.Generator(q.device).manual_seed(self.hash_seed)
        n = self.counts(hash_buckets(q, self.n_buckets, self.n_hashes, g), mask).to(q)
        log_n = n.log() if bias is None else bias + n.log()
        return super().attend(q, k, v, n > 0, log_n, return_weights)


class ReversibleBlock(nn.Module):
    """Y₁ = X₁ + F(X₂), Y₂ = X₂ + G(Y₁) on x = [X₁ ; X₂] (B, T, 2D), with
    F = attention(LN(·)) and G = feed-forward(LN(·)) over chunks of positions. Built
    by :class:`~ptlm_lite.stack.Stack` (``block=ReversibleBlock``)."""

    def __init__(self, config, cross=False, attention=LSHAttention, norm=nn.LayerNorm):
        super().__init__()
        D, eps = config.d_model, config.ln_eps
        self.ln1, self.attn = (
            norm(D, eps=eps),
            attention(D, config.n_head, config.dropout),
        )
        self.ln2, self.ff, self.ff_chunk = norm(D, eps=eps), FeedForward(config), 0
        self.ff_chunk = getattr(config, "ff_chunk", 0)

    def f(self, x2, mask=None, return_attention=False):
        return self.attn(self.ln1(x2), mask=mask, return_weights=return_attention)

    def g(self, y1):
        parts = y1.split(self.ff_chunk or y1.shape[1], dim=1)
        return torch.cat([self.ff(self.ln2(p)) for p in parts], dim=1)

    def forward(self, x, mask=None, return_attention=False, **unused):
        x1, x2 = x.chunk(2, dim=-1)
        a, w = self.f(x2, mask, return_attention)
        y1 = x1 + a
        return torch.cat([y1, x2 + self.g(y1)], dim=-1), (w, None)


class Reversible(torch.autograd.Function):
    """Run the blocks without keeping activations; in the backward pass rebuild each
    block's input from its output, last block first, and backpropagate through it.
    The random state before each block is kept, so hashing replays exactly."""

    @staticmethod
    def _rng(x):  # the generator that hashing draws from: the CPU's or x's GPU's
        cuda = x.device.type == "cuda"
        return torch.cuda.get_rng_state(x.device) if cuda else torch.get_rng_state()

    @staticmethod
    def forward(ctx, x, blocks, mask):
        ctx.blocks, ctx.mask, ctx.rng = blocks, mask, []
        for block in blocks:
            ctx.rng.append(Reversible._rng(x))
            x = block(x, mask=mask)[0]
        ctx.save_for_backward(x)  # the only activation kept: the last output
        return x

    @staticmethod
    def backward(ctx, dy):
        (y,) = ctx.saved_tensors
        for block, rng in zip(reversed(ctx.blocks), reversed(ctx.rng)):
            (y1, y2), (dy1, dy2) = y.chunk(2, -1), dy.chunk(2, -1)
            with torch.enable_grad():
                y1 = y1.detach().requires_grad_()
                g = block.g(y1)
                g.backward(dy2)  # parameters of G, and y1.grad
            x2, dx1 = y2 - g.detach(), dy1 + y1.grad
            cuda = [y.device] if y.device.type == "cuda" else []
            with torch.enable_grad(), torch.random.fork_rng(devices=cuda):
                if cuda:
                    torch.cuda.set_rng_state(rng, y.device)
                else:
                    torch.set_rng_state(rng)
                x2 = x2.requires_grad_()
                f = block.f(x2, ctx.mask)[0]
                f.backward(dx1)  # parameters of F, and x2.grad
            y = torch.cat([y1.detach() - f.detach(), x2.detach()], dim=-1)  # X₁, X₂
            dy = torch.cat([dx1, dy2 + x2.grad], dim=-1)
        return dy, None, None


class Reformer(Model):
    """A causal Reformer language model: ``forward(ids, targets=None, mask=None,
    return_attention=False)`` -> :class:`~ptlm_lite.output.Output` (logits (B, T, V)).
    ``mask`` defaults to ``masks.causal_mask(T)``; LSH narrows it further. With
    ``config.reversible`` and gradients on, the blocks run through :class:`Reversible`;
    otherwise through the ordinary :class:`~ptlm_lite.stack.Stack` loop."""

    attention = LSHAttention  # a variant swaps the attention class (ptlm_lite.hf)
    config_cls = ReformerConfig
    config_example = "preset('reformer-tiny', vocab_size=...)"

    def __init__(self, config: ReformerConfig, seed: int | None = None):
        super().__init__(config, seed)
        if config.share_layers:  # the reversible pass runs each block it holds once
            raise TypeError("config.share_layers must be False for the Reformer")
        c, D = config, config.d_model
        self.embed = Embeddings(config)  # tokens + learned positions
        attn = partial(
            self.attention, n_buckets=c.n_buckets, n_hashes=c.n_hashes, chunk=c.chunk,
            hash_seed=c.hash_seed,
        )  # fmt: skip
        # no final norm in the Stack: the Reformer's is over both streams, [Y₁ ; Y₂]
        self.blocks = Stack(
            config, attention=attn, block=ReversibleBlock, final_norm=False
        )
        self.ln_f = nn.LayerNorm(2 * D, eps=c.ln_eps)
        self.head = nn.Linear(2 * D, c.vocab_size)
        self.apply(init_weights)  # the book's one initialiser: N(0, 0.02)

    def forward(self, ids, targets=None, mask=None, return_attention=False) -> Output:
        check_ids(ids, self.config.vocab_size)
        if mask is not None:
            check_mask(mask, ids.shape[1], ids.shape[1])
        x = self.embed(ids)
        x = torch.cat([x, x], dim=-1)  # X₁ = X₂ = the embeddings
        if mask is None:
            mask = masks.causal_mask(ids.shape[1], device=ids.device)
        attentions = None
        if self.config.reversible and torch.is_grad_enabled() and not return_attention:
            x = Reversible.apply(x, self.blocks, mask)
        else:
            out = self.blocks(x, mask=mask, return_attention=return_attention)
            x, attentions = out.last_hidden, out.attentions
        logits = self.head(self.ln_f(x))
        loss = None if targets is None else cross_entropy(logits, targets)
        return Output(logits, loss, attentions)
