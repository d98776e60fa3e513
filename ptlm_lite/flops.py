"""Compute counted the book's one way: FLOPs per token (PaLM's convention, Chowdhery et
al. 2022, appendix B), used by the chapters that compare models at equal compute
(ELECTRA, FastBERT, the synthesis) and by ``benchmarks/bench_train.py``.

Training one token costs ``6 * N + 12 * L * T * d``: N counts the weights of every
matrix multiply the token goes through (the blocks' ``4 d^2 + 2 d d_ff`` each, the
vocabulary head ``d * V``, the factorised embedding's ``E * d`` projection; embedding
lookups are free), and ``12 * L * T * d`` is the attention products QKᵀ and AV over a
context of T positions, forward and backward. A forward pass alone is a third of it:
``2 * N + 4 * L * T * d``. The causal half that a left-to-right model could skip is not
subtracted, and biases, norms and softmaxes are left out (they are small beside the
products).

>>> from ptlm_lite.config import preset
>>> c = preset("tiny", vocab_size=100)
>>> per_token(c, 16, head=False, train=False) == 2 * c.n_layer * (
...     4 * c.d_model**2 + 2 * c.d_model * c.d_ff
... ) + 4 * c.n_layer * 16 * c.d_model
True
"""

from __future__ import annotations

from numbers import Integral, Real

__all__ = ["block_weights", "head_weights", "per_token", "seq2seq_per_token", "total"]


def _count(name: str, value, minimum: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, Integral) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def block_weights(config) -> int:
    """Matrix-multiply weights of one Transformer block: Q, K, V and the output
    projection (``4 d^2``) and the feed-forward's two matrices (``2 d d_ff``).
    Chapters: ELECTRA, FastBERT."""
    d, f = config.d_model, config.d_ff
    return 4 * d * d + 2 * d * f


def head_weights(config) -> int:
    """Weights of the vocabulary head: ``d * V``, or ``d * E + E * V`` through a
    factorised embedding of width ``E = config.d_embed`` (ALBERT), which also costs
    ``E * d`` on the way in. Chapters: ELECTRA, ALBERT."""
    d, v, e = config.d_model, config.vocab_size, getattr(config, "d_embed", 0) or 0
    return d * v if not e else d * e + e * v


def per_token(config, seq_len: int, *, layers=None, head=True, train=True) -> float:
    """FLOPs one token costs in a model of ``config`` over a context of ``seq_len``.

    ``layers``: the blocks it goes through (default ``config.n_layer``; FastBERT's
    early exit passes fewer); ``head``: ``True`` counts the vocabulary head
    (:func:`head_weights`), ``False`` none, an integer that many weights (a small
    classifier; a fraction of a head's weights for a head applied at that fraction
    of positions, as BERT's MLM head at the masked 15%); ``train``: forward and
    backward (3x the forward), else forward only.
    Chapters: ELECTRA (equal pre-training compute), FastBERT (FLOPs spent per example).
    """
    seq_len = _count("seq_len", seq_len, 1)
    n_layer = config.n_layer if layers is None else _count("layers", layers)
    if n_layer > config.n_layer:
        raise ValueError(
            f"layers must be at most config.n_layer = {config.n_layer}, got {n_layer}"
        )
    if head is True:
        extra = head_weights(config)
    elif head is False:
        extra = 0
    elif isinstance(head, Real) and not isinstance(head, bool) and head >= 0:
        extra = head  # may be fractional: a head applied at a fraction of positions
    else:
        accepted = "True, False or a number of weights >= 0"
        raise ValueError(f"head must be {accepted}, got {head!r}")
    e = getattr(config, "d_embed", 0) or 0
    n = n_layer * block_weights(config) + extra + e * config.d_model
    forward = 2 * n + 4 * n_layer * seq_len * config.d_model
    return float(3 * forward if train else forward)


def seq2seq_per_token(
    config, src_len: int, tgt_len: int, *, train: bool = True
) -> tuple[float, float]:
    """FLOPs of one source token and of one target token of an encoder-decoder with
    ``config.n_layer`` blocks a side: a source token goes through the encoder; a target
    token through the decoder's blocks, its cross-attention (four ``d × d`` matrices a
    layer, and the products over the ``src_len`` source positions) and the head.
    Chapters: T5 (pre-training objectives at equal compute), the synthesis."""
    L, d = config.n_layer, config.d_model
    cross = 2 * L * 4 * d * d + 4 * L * _count("src_len", src_len, 1) * d  # forward
    encoder = per_token(config, src_len, head=False, train=train)
    decoder = per_token(config, tgt_len, train=train) + (3 if train else 1) * cross
    return encoder, decoder


def total(config, seq_len: int, tokens: int, **kw) -> float:
    """FLOPs for ``tokens`` tokens: :func:`per_token` times ``tokens`` (keywords as
    there). Chapters: ELECTRA, FastBERT."""
    return per_token(config, seq_len, **kw) * _count("tokens", tokens)
