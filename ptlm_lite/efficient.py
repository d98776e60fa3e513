"""Efficient Transformers: the survey's families as masks, chunks and ``attend``
overrides.

Full attention scores every query against every key: O(T²). Tay et al. (2020) sort
the ways around it into families; one member of each is here:

    fixed patterns    local_mask, dilated_mask, strided_mask (Sparse Transformer),
                      block_mask; fast: local_attention, strided_attention,
                      block_attention
    global tokens     global_mask (Longformer, Star); fast: local_attention(n_global=)
    learned patterns  bucket_mask of lsh_buckets (Reformer's hashing)
    low rank          LinformerAttention: keys and values projected to k rows
    kernels           LinearAttention: φ(Q) (φ(K)ᵀ V), never the T×T matrix
    recurrence        masks.causal_mask(T, memory=M): Transformer-XL's own chapter

A mask changes who sees whom, not the cost: the T×T scores are still computed. The
fast forms skip the masked blocks; each equals :func:`ptlm_lite.attention.attention`
under its mask (``tests/test_efficient.py``). Chapter: ``chapters/efficient.ipynb``.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from .attention import MultiHeadAttention, check_qkv, attention

__all__ = [
    "local_mask", "dilated_mask", "strided_mask", "block_mask", "global_mask",
    "lsh_buckets", "bucket_mask", "local_attention", "strided_attention",
    "block_attention", "LinformerAttention", "feature_map", "linear_attention",
    "quadratic_attention", "LinearAttention",
]  # fmt: skip


def _int(name, value, low=1):
    if not isinstance(value, int) or isinstance(value, bool) or value < low:
        raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
    return value


def _global(n_global, T):
    """n_global global tokens among T: more than T cannot be (an all-True mask)."""
    if _int("n_global", n_global, 0) > T:
        raise ValueError(f"n_global must be in [0, T={T}], got {n_global}")
    return n_global


def _causal(causal):
    if not isinstance(causal, bool):
        raise TypeError(f"causal must be True or False, got {causal!r}")
    return causal


def _offsets(T, causal):  # (T, T) query minus key, and which keys are not in the future
    i = torch.arange(_int("T", T))
    d = i[:, None] - i[None, :]
    return d, (d >= 0) if _causal(causal) else torch.ones_like(d, dtype=torch.bool)


def local_mask(T: int, window: int, causal: bool = False) -> torch.Tensor:
    """Sliding window (Longformer): ``|i − j| < window``; causal ``0 ≤ i − j < window``.

    ``local_mask(5, 2)``::

        ■ ■ · · ·
        ■ ■ ■ · ·
        · ■ ■ ■ ·
        · · ■ ■ ■
        · · · ■ ■
    """
    d, past = _offsets(T, causal)
    return past & (d.abs() < _int("window", window))


def dilated_mask(T: int, stride: int, causal: bool = False) -> torch.Tensor:
    """Every ``stride``-th key: (i − j) mod stride = 0.

    ``dilated_mask(5, 2)``::

        ■ · ■ · ■
        · ■ · ■ ·
        ■ · ■ · ■
        · ■ · ■ ·
        ■ · ■ · ■
    """
    d, past = _offsets(T, causal)
    return past & (d % _int("stride", stride) == 0)


def strided_mask(T: int, stride: int, causal: bool = True) -> torch.Tensor:
    """Sparse Transformer (Child et al., 2019), both halves in one head: the last
    ``stride`` keys and every ``stride``-th one before. ``strided_mask(6, 2)``::

        ■ · · · · ·
        ■ ■ · · · ·
        ■ ■ ■ · · ·
        · ■ ■ ■ · ·
        ■ · ■ ■ ■ ·
        · ■ · ■ ■ ■
    """
    s = _int("stride", stride)
    return local_mask(T, s, causal) | dilated_mask(T, s, causal)


def block_mask(T: int, block: int, causal: bool = False) -> torch.Tensor:
    """Blockwise (Qiu et al., 2019): i sees j when both sit in the same block.

    ``block_mask(5, 2)``::

        ■ ■ · · ·
        ■ ■ · · ·
        · · ■ ■ ·
        · · ■ ■ ·
        · · · · ■
    """
    b = torch.arange(_int("T", T)) // _int("block", block)
    return _offsets(T, causal)[1] & (b[:, None] == b[None, :])


def global_mask(T: int, n_global: int, window: int) -> torch.Tensor:
    """Longformer/BigBird (without random keys): the first ``n_global`` tokens see all
    and are seen by all; the rest see a window. Star-Transformer is ``global_mask(T,
    1, 2)``: one relay token and two neighbours. ``global_mask(5, 1, 2)``::

        ■ ■ ■ ■ ■
        ■ ■ ■ · ·
        ■ ■ ■ ■ ·
        ■ · ■ ■ ■
        ■ · · ■ ■
    """
    g = torch.arange(_int("T", T)) < _global(n_global, T)
    return local_mask(T, window) | g[:, None] | g[None, :]


def lsh_buckets(x: torch.Tensor, n_buckets: int, generator: torch.Generator):
    """Reformer's angular hash: bucket = argmax([xR; −xR]) for a random R (d,
    n_buckets/2): vectors at a small angle tend to share one. (..., T, d) -> (..., T):
    :func:`ptlm_lite.reformer.hash_buckets` with one head and one round.
    """
    if _int("n_buckets", n_buckets, 2) % 2:
        raise ValueError(f"n_buckets must be even, got {n_buckets}")
    from .reformer import hash_buckets  # the one LSH function: one head, one round

    if not isinstance(x, torch.Tensor) or x.dim() < 2 or not x.is_floating_point():
        raise ValueError(
            "x must be a float tensor (..., T, d), got "
            + (f"{x.dtype} of shape {tuple(x.shape)}" if isinstance(x, torch.Tensor)
               else type(x).__name__)
        )  # fmt: skip
    *lead, T, d = x.shape
    return hash_buckets(x.reshape(-1, 1, T, d), n_buckets, 1, generator).reshape(
        *lead, T
    )


def bucket_mask(buckets: torch.Tensor, causal: bool = False) -> torch.Tensor:
    """A learned, content-based pattern: i sees j when they share a bucket (sorted by
    bucket, it is block-diagonal). ``bucket_mask(torch.tensor([0, 1, 0, 1, 1]))``::

        ■ · ■ · ·
        · ■ · ■ ■
        ■ · ■ · ·
        · ■ · ■ ■
        · ■ · ■ ■
    """
    if (
        not isinstance(buckets, torch.Tensor)
        or buckets.dim() != 1
        or buckets.dtype not in (torch.int64, torch.int32)
        or not len(buckets)
    ):
        raise ValueError(
            "buckets must be a non-empty 1-D integer tensor of bucket ids, one per "
            "token, got "
            + (f"{buckets.dtype} of shape {tuple(buckets.shape)}"
               if isinstance(buckets, torch.Tensor) else type(buckets).__name__)
        )  # fmt: skip
    return _offsets(len(buckets), causal)[1] & (buckets[:, None] == buckets[None, :])


def _length(q, k, v):  # the fast forms are self-attention: q, k, v all (B, H, T, d)
    check_qkv(q, k, v)
    if q.shape[2] != k.shape[2]:
        raise ValueError(f"q has {q.shape[2]} positions but k {k.shape[2]}")
    return q.shape[2]


def _chunks(x, size):  # (B, H, T, d) -> (B, H, n, size, d), zero-padded at the end
    return F.pad(x, (0, 0, 0, -x.shape[2] % size)).unflatten(2, (-1, size))


def _attend_chunks(q, k, v, ok, T):
    """One small attention per chunk, through the one attention function. q (B, H, n,
    c, d); k, v (B, H, n, c', d); ok (n, c, c') -> (B, H, T, d)."""
    H, n = q.shape[1:3]
    ok = ok.repeat(H, 1, 1)[None]  # (1, H·n, c, c'): the chunks ride along as heads
    out, _ = attention(q.flatten(1, 2), k.flatten(1, 2), v.flatten(1, 2), mask=ok)
    return out.unflatten(1, (H, n)).flatten(2, 3)[:, :, :T]


def block_attention(q, k, v, block: int):
    """:func:`block_mask` block by block: T/b attentions of b × b keys, O(T·b)."""
    T = _length(q, k, v)
    real = torch.arange(-T % _int("block", block) + T, device=q.device) < T
    qc, kc, vc = (_chunks(t, block) for t in (q, k, v))  # (B, H, n, b, d)
    return _attend_chunks(qc, kc, vc, real.view(-1, 1, block).expand(-1, block, -1), T)


def local_attention(q, k, v, window: int, causal: bool = False, n_global: int = 0):
    """:func:`local_mask` (with ``n_global``, :func:`global_mask`) by chunks of
    ``window`` queries, each reading its own chunk, its neighbours and the global keys:
    O(T·(window + n_global)) instead of O(T²). q, k, v: (B, H, T, d)."""
    T, w = _length(q, k, v), _int("window", window)
    g = _global(n_global, T)
    if g and causal:
        raise ValueError("global tokens see the whole sequence: causal must be False")
    qc, kc, vc = (_chunks(t, w) for t in (q, k, v))  # (B, H, n, w, d)
    n, dev = qc.shape[2], q.device
    around = [-1, 0] if causal else [-1, 0, 1]  # which chunks each chunk reads

    def near(x):  # (B, H, n, w, d) -> (B, H, n, len(around)·w, d)
        x = F.pad(x, (0, 0, 0, 0, 1, 1))  # an empty chunk at each end
        return torch.cat([x[:, :, 1 + o : 1 + o + n] for o in around], 3)

    kn, vn = near(kc), near(vc)
    offset = torch.tensor(around, device=dev)[:, None] * w  # chunk start - own start
    offset = (offset + torch.arange(w, device=dev)).flatten()  # key - own chunk start
    d = torch.arange(w, device=dev)[:, None] - offset  # query - key, in any chunk
    band = (d.abs() < w) & ((d >= 0) if causal else True)  # (w, len(around)·w)
    kpos = torch.arange(n, device=dev)[:, None] * w + offset  # (n, len(around)·w)
    ok = band & ((kpos >= g) & (kpos < T))[:, None, :]  # (n, w, len(around)·w)
    if g:  # the global keys in front of every chunk (their local copies masked above)
        kn = torch.cat([k[:, :, None, :g].expand(-1, -1, n, -1, -1), kn], 3)
        vn = torch.cat([v[:, :, None, :g].expand(-1, -1, n, -1, -1), vn], 3)
        ok = torch.cat([ok.new_ones(n, w, g), ok], 2)
    out = _attend_chunks(qc, kn, vn, ok, T)
    if g:  # the global queries read everything: g × T, still linear in T
        out = torch.cat([attention(q[:, :, :g], k, v)[0], out[:, :, g:]], 2)
    return out


def strided_attention(q, k, v, stride: int, causal: bool = True):
    """Sparse Transformer's factorised heads: the first half of the heads read the
    last ``stride`` keys (by chunks), the others every ``stride``-th key (the residue
    classes i mod stride, as chunks of the transposed sequence). stride ≈ √T: O(T√T).
    """
    T, s, h = _length(q, k, v), _int("stride", stride), q.shape[1] // 2
    near = local_attention(q[:, :h], k[:, :h], v[:, :h], s, causal)
    qc, kc, vc = (_chunks(t[:, h:], s).transpose(2, 3) for t in (q, k, v))
    pos = torch.arange(-T % s + T, device=q.device).view(-1, s).T[:, :, None]
    ok = (pos.mT < T) & ((pos >= pos.mT) if causal else True)  # (s, n, n)
    far = _attend_chunks(qc, kc, vc, ok, pos.numel())  # (B, H-h, s·n, d)
    far = far.unflatten(2, (s, -1)).transpose(2, 3).flatten(2, 3)[:, :, :T]
    return torch.cat([near, far], 1)


class LinformerAttention(MultiHeadAttention):
    """Low rank (Wang et al., 2020): softmax(Q (E K)ᵀ / √d) (F V), keys and values
    projected along the sequence to ``rank`` rows by E, F (rank, max_len), learned and
    shared by the heads: O(T·rank). Each row mixes every position, so no mask can
    apply. ``Stack(config, attention=partial(LinformerAttention, max_len=, rank=))``.
    """

    def __init__(self, d_model, n_head, dropout=0.0, bias=True, *, max_len, rank):
        super().__init__(d_model, n_head, dropout, bias)
        n, r = _int("max_len", max_len), _int("rank", rank)
        self.E = nn.Parameter(torch.randn(r, n) / math.sqrt(n))  # (rank, max_len)
        self.F = nn.Parameter(torch.randn(r, n) / math.sqrt(n))

    def attend(self, q, k, v, mask=None, bias=None, return_weights=False):
        T = k.shape[2]
        if mask is not None:
            raise ValueError("Linformer mixes all positions: mask must be None")
        if T > self.E.shape[1]:
            raise ValueError(f"{T} keys, longer than max_len={self.E.shape[1]}")
        k, v = self.E[:, :T] @ k, self.F[:, :T] @ v  # (B, H, rank, dh)
        return super().attend(q, k, v, bias=bias, return_weights=return_weights)


def feature_map(x: torch.Tensor) -> torch.Tensor:
    """φ(x) = elu(x) + 1 > 0: φ(q)·φ(k) stands in for exp(q·k) (Katharopoulos et al.,
    2020; Performer uses positive random features instead)."""
    return F.elu(x) + 1


def linear_attention(q, k, v, causal: bool = False):
    """The kernel trick: (φ(Q) φ(K)ᵀ) V = φ(Q) (φ(K)ᵀ V), divided by φ(Q) φ(K)ᵀ 1.
    Multiplied right to left, the T×T matrix never exists: O(T·d²). Causal: query t
    reads prefix sums over keys s ≤ t (a (B, H, T, d, d) cumulative sum)."""
    _length(q, k, v)
    q, k = feature_map(q), feature_map(k)
    if causal:
        kv = (k[..., :, None] * v[..., None, :]).cumsum(2)  # Σ_{s≤t} φ(k_s) v_sᵀ
        return (q[..., None] * kv).sum(-2) / (q * k.cumsum(2)).sum(-1, keepdim=True)
    return (q @ (k.mT @ v)) / (q @ k.sum(2)[..., None])  # (d × d) in the middle


def quadratic_attention(q, k, v, causal: bool = False):
    """The same weights written out, A = φ(Q) φ(K)ᵀ normalised by row: O(T²).

    Returns ``(A V, A)``."""
    a = feature_map(q) @ feature_map(k).mT  # (B, H, T, T)
    a = a.tril() if causal else a
    a = a / a.sum(-1, keepdim=True)
    return a @ v, a


class LinearAttention(MultiHeadAttention):
    """Kernelised attention as the layer's ``attend``. There is no T×T matrix to mask:
    set ``layer.causal = True`` for a left-to-right model instead."""

    causal = False

    def attend(self, q, k, v, mask=None, bias=None, return_weights=False):
        if mask is not None or bias is not None:
            raise ValueError("linear attention takes no mask or bias (see .causal)")
        if return_weights:  # for pictures: the O(T²) form
            return quadratic_attention(q, k, v, self.causal)
        return linear_attention(q, k, v, self.causal), None
