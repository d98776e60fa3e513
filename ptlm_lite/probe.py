"""The context a model actually uses, found by perturbation, not declared (the synthesis
chapter's model table; each family's chapter declares its context in prose, this
measures it).

Change the token at position j, run the model again, and see which outputs moved: the
boolean matrix ``D[i, j]`` ("the output at i depends on the token at j") is the model's
context, whatever its masks, memories or orders claim. Its shape names the kind:

- **left-to-right** (GPT): ``D`` is lower-triangular and every earlier token counts;
- **right-to-left**: the mirror image;
- **bidirectional** (BERT): every output depends on every token;
- **prefix** (UniLM's seq2seq mask, a prefix LM): a first block that sees itself
  whole, then left-to-right;
- **permutation** (XLNet under a factorisation order): no triangle in position order,
  but one in some other order (each pair of positions is ordered one way);
- **segment-recurrent** (Transformer-XL): left-to-right across a sequence that the
  model was fed in segments of ``window`` tokens, with outputs depending on tokens of
  an earlier segment, which reach it only through the memory.

>>> import torch
>>> run = lambda ids: ids.cumsum(1).float()[..., None]  # left-to-right by arithmetic
>>> context(run, torch.tensor([[1, 2, 3, 4]]), vocab_size=10).kind
'left-to-right'
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch

from .checks import check_count, check_number

__all__ = ["Context", "KINDS", "context", "dependence", "kind_of"]

KINDS = (
    "left-to-right",
    "right-to-left",
    "bidirectional",
    "prefix",
    "permutation",
    "segment-recurrent",
    "other",
)


@dataclass
class Context:
    """What :func:`context` found: ``D[i, j]`` (output i depends on token j), its
    ``kind`` (one of :data:`KINDS`), and the prefix length or segment window where the
    kind has one."""

    D: torch.Tensor
    kind: str
    prefix: int | None = None
    window: int | None = None


@torch.no_grad()
def dependence(
    run: Callable[[torch.Tensor], torch.Tensor],
    ids: torch.Tensor,
    vocab_size: int,
    *,
    low: int = 0,
    tol: float = 1e-6,
) -> torch.Tensor:
    """``D`` (T, T) bool: ``D[i, j]`` when changing the token at j (in every row of the
    batch, to another id in ``[low, vocab_size)``) moves the output at i by more than
    ``tol`` times the outputs' scale. ``run(ids)`` returns (B, T, ...) outputs; put the
    model in eval mode first (dropout would move everything). Chapter: the synthesis.
    """
    if not isinstance(ids, torch.Tensor) or ids.dim() != 2 or ids.is_floating_point():
        raise ValueError(f"ids must be a (B, T) integer tensor, got {ids!r:.60}")
    vocab_size = check_count("vocab_size", vocab_size, 2)
    tol = check_number("tol", tol, 0.0)  # a negative tol would call every output moved
    if not 0 <= low < vocab_size - 1:
        raise ValueError(
            f"low must be in [0, vocab_size - 1) = [0, {vocab_size - 1}), got {low}"
        )
    base = run(ids)
    if not isinstance(base, torch.Tensor) or base.shape[:2] != ids.shape:
        raise ValueError(
            f"run(ids) must return a tensor of shape (B, T, ...) = {tuple(ids.shape)} "
            f"+ ..., got {getattr(base, 'shape', type(base).__name__)}"
        )
    base = base.float()
    scale = tol * max(float(base.abs().max()), 1.0)
    T, span = ids.shape[1], vocab_size - low
    D = torch.zeros(T, T, dtype=torch.bool)
    for j in range(T):
        moved = ids.clone()
        moved[:, j] = (ids[:, j] - low + 1 + j % (span - 1)) % span + low
        delta = (run(moved).float() - base).abs()
        D[:, j] = delta.reshape(*ids.shape, -1).amax(dim=(0, 2)) > scale  # (B, T) too
    return D


def kind_of(D: torch.Tensor, window: int | None = None) -> Context:
    """Name the context that ``D`` shows (see the module's list). ``window``: the
    segment length the sequence was fed in, for a model with memory. Chapter: the
    synthesis."""
    if not isinstance(D, torch.Tensor) or D.dtype != torch.bool or D.dim() != 2:
        raise ValueError(f"D must be a (T, T) bool tensor, got {D!r:.60}")
    T = D.shape[0]
    if D.shape != (T, T) or T < 2:
        raise ValueError(f"D must be square with T >= 2, got {tuple(D.shape)}")
    ones = torch.ones(T, T, dtype=torch.bool)
    off = ~torch.eye(T, dtype=torch.bool)
    below, above = torch.tril(ones, -1), torch.triu(ones, 1)
    seen = D & off
    if torch.equal(seen, below):
        if window is not None:
            window = check_count("window", window)
            i, j = torch.nonzero(seen, as_tuple=True)
            if bool((i // window > j // window).any()):
                return Context(D, "segment-recurrent", window=window)
        return Context(D, "left-to-right")
    if torch.equal(seen, above):
        return Context(D, "right-to-left")
    if torch.equal(seen, off):
        return Context(D, "bidirectional")
    for p in range(2, T):
        want = below.clone()
        want[:p, :p] = True
        if torch.equal(seen, want & off):
            return Context(D, "prefix", prefix=p)
    # a total order other than position order: each pair seen one way, no cycle
    if torch.equal(seen ^ seen.T, off):
        rank = seen.sum(1)  # how many each position sees: 0, 1, ..., T-1 in order
        if torch.equal(rank.sort().values, torch.arange(T)):
            return Context(D, "permutation")
    return Context(D, "other")


def context(run, ids, vocab_size: int, *, window=None, low: int = 0) -> Context:
    """:func:`dependence` then :func:`kind_of`: the context a model uses. Chapter: the
    synthesis (the model table's "context" column)."""
    return kind_of(dependence(run, ids, vocab_size, low=low), window)
