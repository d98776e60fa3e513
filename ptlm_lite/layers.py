"""The shared building blocks: embeddings, positions, the feed-forward and the
Transformer block.

A block is attention and a feed-forward, each wrapped in "Add & Norm". Where the
LayerNorm goes is the one switch between the 2017 Transformer / GPT / BERT (post-LN) and
GPT-2 onwards (pre-LN):

    post-LN:  x = LN(x + Sublayer(x))        pre-LN:  x = x + Sublayer(LN(x))

Introduced in ``chapters/transformer.ipynb``.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

# Dropout: nn.Dropout, cheaper random numbers
from .attention import Dropout, MultiHeadAttention
from .config import Config

__all__ = [
    "init_weights",
    "sinusoidal_positions",
    "check_ids",
    "Embeddings",
    "FeedForward",
    "Block",
    "ACTIVATIONS",
]


def gelu_tanh(x: torch.Tensor) -> torch.Tensor:
    """GELU's tanh approximation (GPT, GPT-2); a named function, so that models pickle
    (:func:`ptlm_lite.pmap` sends them back from its workers)."""
    return F.gelu(x, approximate="tanh")


ACTIVATIONS = {
    "relu": F.relu,
    # BERT: the exact erf form
    "gelu": F.gelu,
    # GPT, GPT-2: the tanh approximation
    "gelu_tanh": gelu_tanh,
}


def init_weights(m: nn.Module) -> None:
    """The book's one initialiser (GPT's and BERT's, as in nanoGPT's
    ``_init_weights``): N(0, 0.02) for every matrix and embedding, zero biases,
    LayerNorm = identity. Apply it with ``model.apply(init_weights)``; a model with its
    own scheme (the 2017 Transformer's Xavier) says so where it is built.
    """
    if isinstance(m, (nn.Linear, nn.Embedding)):
        nn.init.normal_(m.weight, std=0.02)
    if isinstance(m, nn.Linear) and m.bias is not None:
        nn.init.zeros_(m.bias)
    if isinstance(m, nn.LayerNorm):
        nn.init.ones_(m.weight)
        nn.init.zeros_(m.bias)


def sinusoidal_positions(max_len: int, d_model: int) -> torch.Tensor:
    """PE(pos, 2i) = sin(pos / 10000^(2i/d)),  PE(pos, 2i+1) = cos(pos / 10000^(2i/d)).

    Each pair of dimensions is a clock of its own frequency, from 2π to 10000·2π
    positions per turn; PE(pos + k) is a fixed linear function (a rotation) of PE(pos).
    Returns ``(max_len, d_model)``.
    """
    pos = torch.arange(max_len, dtype=torch.float32)[:, None]  # (T, 1)
    # (D/2,)
    freq = torch.exp(-math.log(10000.0) * torch.arange(0, d_model, 2) / d_model)
    pe = torch.zeros(max_len, d_model)
    pe[:, 0::2] = torch.sin(pos * freq)
    pe[:, 1::2] = torch.cos(pos * freq[: d_model // 2])
    return pe


def check_ids(ids, vocab_size: int, name: str = "ids") -> None:
    """A clear error unless ``ids`` is a (B, T) integer tensor of token ids in [0,
    vocab_size).
    """
    if (
        not isinstance(ids, torch.Tensor)
        or ids.dtype not in (torch.int64, torch.int32)
        or ids.dim() != 2
    ):
        raise TypeError(
            f"{name} must be a (B, T) integer tensor of token ids, got "
            + (
                f"{ids.dtype} of shape {tuple(ids.shape)}"
                if isinstance(ids, torch.Tensor)
                else type(ids).__name__
            )
        )
    if ids.shape[1] < 1:
        raise ValueError(
            f"{name} must have at least one position, got shape {tuple(ids.shape)}"
        )
    if ids.numel() and (int(ids.min()) < 0 or int(ids.max()) >= vocab_size):
        raise ValueError(
            f"{name} must be in [0, vocab_size={vocab_size}), got values in "
            f"[{int(ids.min())}, {int(ids.max())}]: was the text encoded "
            f"with another tokenizer?"
        )


class Embeddings(nn.Module):
    """Token + position (+ segment) embeddings, then dropout.

    ``scale=True`` multiplies token embeddings by √d_model, as the 2017 Transformer does
    so that they are not drowned by the fixed-size sinusoids. ``config.d_embed``
    (ALBERT, ELECTRA) makes the tables narrower than the model, ``d_embed < d_model``,
    and adds one projection up to d_model. ``config.pos = "none"`` adds no positions
    (T5 gives them to attention as a bias); ``forward(..., positions=)`` takes each
    token's position explicitly, ``(T,)`` or ``(B, T)``, instead of ``offset + 0..T-1``.
    """

    def __init__(self, config: Config, scale: bool = False):
        super().__init__()
        E = config.d_embed or config.d_model
        self.config, self.scale = config, math.sqrt(E) if scale else 1.0
        self.tok = nn.Embedding(config.vocab_size, E)
        if config.pos == "learned":
            self.pos = nn.Embedding(config.max_len, E)
        elif config.pos == "sinusoidal":
            self.register_buffer(
                "pe", sinusoidal_positions(config.max_len, E), persistent=False
            )
        self.seg = nn.Embedding(config.n_segment, E) if config.n_segment else None
        # factorised: V×E + E×D
        self.proj = nn.Linear(E, config.d_model) if E != config.d_model else None
        self.drop = Dropout(config.dropout)

    def forward(
        self,
        ids: torch.Tensor,
        segments: torch.Tensor | None = None,
        offset: int = 0,
        positions: torch.Tensor | None = None,
    ):
        check_ids(ids, self.config.vocab_size)
        B, T = ids.shape
        if positions is None:
            if offset + T > self.config.max_len:
                raise ValueError(
                    f"sequence of length {offset + T} is longer than "
                    f"max_len={self.config.max_len}: "
                    f"truncate the input or build the model with a larger max_len"
                )
            positions = torch.arange(offset, offset + T, device=ids.device)
        else:
            positions = self._check_positions(positions, ids)
        x = self.tok(ids) * self.scale
        if self.config.pos == "learned":
            x = x + self.pos(positions)
        elif self.config.pos == "sinusoidal":
            x = x + self.pe[positions]
        if self.seg is not None:
            if segments is None:
                segments = torch.zeros_like(ids)
            elif (
                not isinstance(segments, torch.Tensor)
                or segments.dtype not in (torch.int64, torch.int32)
                or segments.shape != ids.shape
            ):
                raise ValueError(
                    f"segments must be an integer tensor of the shape of ids "
                    f"{tuple(ids.shape)}, got "
                    + (
                        f"{segments.dtype} {tuple(segments.shape)}"
                        if isinstance(segments, torch.Tensor)
                        else type(segments).__name__
                    )
                )
            elif segments.numel() and (
                int(segments.min()) < 0 or int(segments.max()) >= self.config.n_segment
            ):
                raise ValueError(
                    f"segments must be in [0, {self.config.n_segment}), got values "
                    f"{sorted(set(segments.unique().tolist()))}"
                )
            x = x + self.seg(segments)
        if self.proj is not None:
            x = self.proj(x)
        return self.drop(x)  # (B, T, D)

    def _check_positions(self, positions, ids):
        ok = isinstance(positions, torch.Tensor) and positions.dtype in (
            torch.int64,
            torch.int32,
        )
        if not ok or positions.shape not in (ids.shape, ids.shape[1:]):
            raise ValueError(
                f"positions must be an integer tensor of shape {tuple(ids.shape[1:])} "
                f"or {tuple(ids.shape)}, got "
                + (
                    f"{positions.dtype} {tuple(positions.shape)}"
                    if isinstance(positions, torch.Tensor)
                    else type(positions).__name__
                )
            )
        if positions.numel() and (
            int(positions.min()) < 0 or int(positions.max()) >= self.config.max_len
        ):
            raise ValueError(
                f"positions must be in [0, max_len={self.config.max_len}), got values "
                f"in [{int(positions.min())}, {int(positions.max())}]"
            )
        return positions.long()


class FeedForward(nn.Module):
    """FFN(x) = act(x W1 + b1) W2 + b2, applied to every position independently (d ->
    d_ff -> d).
    """

    def __init__(self, config: Config):
        super().__init__()
        self.fc1 = nn.Linear(config.d_model, config.d_ff)
        self.fc2 = nn.Linear(config.d_ff, config.d_model)
        self.act = ACTIVATIONS[config.activation]

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


class Block(nn.Module):
    """Self-attention (+ cross-attention in a decoder) + feed-forward, each with Add &
    Norm.

    ``forward(x, mask=None, bias=None, memory=None, context=None, context_mask=None,
    cache=None, return_attention=False)`` returns ``(x, (self_weights,
    cross_weights))``; the weights are None unless asked for.

    * ``memory`` (B, M, D): states that self-attention reads as extra keys and values in
      front of ``x`` (Transformer-XL's previous segment; XLNet's content stream for its
      query stream). The mask then has M + T columns: ``masks.causal_mask(T,
      memory=M)``.
    * ``context`` (B, S, D) and ``context_mask``: what cross-attention reads (the
      encoder output).
    * ``cache``: keys/values kept between generation steps (see
      :class:`MultiHeadAttention`); a decoder block keeps its cross-attention's in
      ``cache["cross"]``.

    The attention, norm and feed-forward classes are arguments: T5 passes
    ``nn.RMSNorm``, Transformer-XL a subclass of :class:`MultiHeadAttention` with
    relative positions, a gated or factorised feed-forward its own ``ff(config)``.
    """

    def __init__(
        self,
        config: Config,
        cross: bool = False,
        attention: type = MultiHeadAttention,
        norm: type = nn.LayerNorm,
        ff: type = FeedForward,
    ):
        super().__init__()
        D, eps = config.d_model, config.ln_eps
        self.pre_norm = config.pre_norm
        self.attn = attention(D, config.n_head, config.dropout)
        self.ln1 = norm(D, eps=eps)
        self.cross = attention(D, config.n_head, config.dropout) if cross else None
        self.ln_cross = norm(D, eps=eps) if cross else None
        self.ff = ff(config)
        self.ln2 = norm(D, eps=eps)
        self.drop = Dropout(config.dropout)

    def sublayer(self, x, norm, f):
        """Add & Norm around one sublayer ``f``: the only place inside a block where
        pre-LN and post-LN differ (a pre-LN model also ends its stack with one more
        LayerNorm).
        """
        if self.pre_norm:
            y, w = f(norm(x))
            return x + self.drop(y), w
        y, w = f(x)
        return norm(x + self.drop(y)), w

    def forward(
        self,
        x,
        mask=None,
        bias=None,
        memory=None,
        context=None,
        context_mask=None,
        cache=None,
        return_attention=False,
    ):
        kv = None
        if memory is not None and cache is not None:
            raise ValueError(
                "pass memory (Transformer-XL's earlier segments) or cache (generation "
                "step by step), not both"
            )
        if memory is not None:  # keys and values: the memory, then x itself
            kv = torch.cat([memory, x], dim=1)  # (B, M + T, D)
            # normalised like the queries
            kv = self.ln1(kv) if self.pre_norm else kv
        x, w_self = self.sublayer(
            x,
            self.ln1,
            lambda h: self.attn(
                h,
                context=kv,
                mask=mask,
                bias=bias,
                return_weights=return_attention,
                cache=cache,
            ),
        )
        w_cross = None
        if self.cross is not None:
            if context is None:
                raise ValueError(
                    "this block has cross-attention: pass context (the encoder output)"
                )
            x, w_cross = self.sublayer(
                x,
                self.ln_cross,
                lambda h: self.cross(
                    h,
                    context=context,
                    mask=context_mask,
                    return_weights=return_attention,
                    # the encoder's keys/values, kept beside the self-attention's
                    cache=None if cache is None else cache.setdefault("cross", {}),
                ),
            )
        x, _ = self.sublayer(x, self.ln2, lambda h: (self.ff(h), None))
        return x, (w_self, w_cross)
