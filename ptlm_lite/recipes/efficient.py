"""The efficient-Transformers chapter's experiments, kept apart from the patterns in
:mod:`ptlm_lite.efficient`: a long-range task, a small classifier whose attention is any
of the survey's variants, and a meter for the time and peak memory of one call.

Chapter: ``chapters/efficient.ipynb``.
"""

from __future__ import annotations

import time
import weakref
from dataclasses import dataclass

import torch
from torch import nn
from torch.utils._python_dispatch import TorchDispatchMode

from .. import efficient as E
from ..attention import MultiHeadAttention
from ..config import Config
from ..layers import Embeddings
from ..output import Output, cross_entropy
from ..stack import Model, Stack

__all__ = [
    "Needles",
    "needles",
    "Classifier",
    "variants",
    "reach",
    "PeakMemory",
    "measure",
]

CLS = 0  # the token that is read out; noise ids follow, then the needles


@dataclass
class Needles:
    """``ids`` (N, T): [CLS], then noise with one needle; ``labels`` (N,): which needle;
    ``where`` (N,): its position (1..T-1).
    """

    ids: torch.Tensor
    labels: torch.Tensor
    where: torch.Tensor

    @property
    def batch(self) -> dict:
        return {"ids": self.ids, "labels": self.labels}


def needles(
    n: int, T: int, n_classes: int, generator: torch.Generator, n_noise: int = 16
) -> Needles:
    """A long-range task: ``T`` tokens, [CLS] (id 0) first, then noise (ids 1 ..
    n_noise) with one *needle* (one of ``n_classes`` ids after the noise) at a uniformly
    random position. The label is which needle, read at [CLS]: the needle's identity
    must travel from its position to position 0, and a layer that sees ``w`` tokens on
    each side moves it at most ``w - 1`` positions. Vocabulary: ``1 + n_noise +
    n_classes``.
    """
    for name, v, low in (("n", n, 1), ("T", T, 2), ("n_classes", n_classes, 2)):
        if not isinstance(v, int) or isinstance(v, bool) or v < low:
            raise ValueError(f"{name} must be an integer >= {low}, got {v!r}")
    ids = torch.randint(1, 1 + n_noise, (n, T), generator=generator)
    ids[:, 0] = CLS
    labels = torch.randint(0, n_classes, (n,), generator=generator)
    where = torch.randint(1, T, (n,), generator=generator)
    ids[torch.arange(n), where] = 1 + n_noise + labels
    return Needles(ids, labels, where)


class Classifier(Model):
    """Embeddings -> ``Stack(config, attention=attention)`` under ``mask`` -> LayerNorm
    -> a linear layer on the [CLS] state (position 0). ``forward(ids, labels=None)``.
    """

    def __init__(
        self,
        config: Config,
        n_classes: int,
        mask: torch.Tensor | None = None,
        attention=MultiHeadAttention,
        seed: int | None = None,
    ):
        super().__init__(config, seed)
        self.embed = Embeddings(config)
        # one LayerNorm after the last block, whatever the blocks' norm placement
        self.blocks = Stack(config, attention=attention, final_norm=True)
        self.head = nn.Linear(config.d_model, n_classes)
        self.register_buffer("mask", mask, persistent=False)

    def forward(self, ids, labels=None) -> Output:
        x = self.blocks(self.embed(ids), mask=self.mask).last_hidden  # (B, T, D)
        logits = self.head(x[:, 0])  # (B, n_classes): read at [CLS]
        loss = None if labels is None else cross_entropy(logits, labels, name="labels")
        return Output(logits, loss)


def variants(T: int, n_head: int, window: int, stride: int, rank: int) -> dict:
    """The chapter's conditions: ``{name: dict(mask=..., attention=...)}`` for a
    :class:`Classifier` over ``T`` tokens (names: full, window, blocks, strided,
    global + window, Linformer, linear). The strided pattern is Sparse Transformer's
    factorised form: half of the heads local, half dilated (a (1, H, T, T) mask).
    """
    from functools import partial

    h = n_head // 2
    strided = torch.stack(
        [E.local_mask(T, stride)] * h + [E.dilated_mask(T, stride)] * (n_head - h)
    )[None]
    return {
        "full": {},
        "window": dict(mask=E.local_mask(T, window)),
        "blocks": dict(mask=E.block_mask(T, window)),
        "strided": dict(mask=strided),
        "global + window": dict(mask=E.global_mask(T, 1, window)),
        "Linformer": dict(
            attention=partial(E.LinformerAttention, max_len=T, rank=rank)
        ),
        "linear": dict(attention=E.LinearAttention),
    }


def reach(mask: torch.Tensor, n_layer: int) -> torch.Tensor:
    """Which positions can reach query 0 through ``n_layer`` layers of a (T, T) mask
    (paths of allowed edges), as a (T,) bool tensor."""
    seen = torch.zeros(mask.shape[-1], dtype=torch.bool)
    seen[0] = True
    m = mask.reshape(-1, *mask.shape[-2:]).any(0)  # any head
    for _ in range(n_layer):
        seen = seen | (m[seen].any(0))
    return seen


class PeakMemory(TorchDispatchMode):
    """Peak bytes of the tensors allocated inside the ``with`` block (op by op, storages
    counted once, freed when their last tensor dies). It sees every tensor PyTorch
    returns, not a fused kernel's small internal buffers; the numbers are exact, so
    they do not move with the machine's load.
    """

    def __init__(self):
        super().__init__()
        self.refs, self.live, self.peak = {}, 0, 0

    @classmethod
    def _should_skip_dynamo(cls):  # else defining the class imports torch._dynamo (s)
        return False

    def _free(self, ptr):
        r = self.refs[ptr]
        r[0] -= 1
        if r[0] == 0:
            self.live -= r[1]
            del self.refs[ptr]

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        from torch.utils._pytree import tree_flatten

        out = func(*args, **(kwargs or {}))
        inputs = {
            t.untyped_storage().data_ptr()
            for t in tree_flatten((args, kwargs))[0]
            if isinstance(t, torch.Tensor)
        }
        for t in tree_flatten(out)[0]:
            if not isinstance(t, torch.Tensor):
                continue
            ptr = t.untyped_storage().data_ptr()
            if ptr in self.refs:  # a view of a tensor made in here
                self.refs[ptr][0] += 1
            elif ptr in inputs or ptr == 0:  # a view of an input, or empty
                continue
            else:
                self.refs[ptr] = [1, t.untyped_storage().nbytes()]
                self.live += self.refs[ptr][1]
                self.peak = max(self.peak, self.live)
            weakref.finalize(t, self._free, ptr)
        return out


def measure(fn, repeat: int = 3, min_seconds: float = 0.05) -> dict:
    """Run ``fn()`` under ``no_grad``: ``seconds``, the fastest of at least ``repeat``
    runs after one warm-up (more runs, up to 50, until ``min_seconds`` have passed: the
    minimum of many runs is what survives a busy machine), and ``peak_bytes``
    (:class:`PeakMemory`, one more run).
    """
    with torch.no_grad():
        fn()
        times = []
        while len(times) < repeat or (sum(times) < min_seconds and len(times) < 50):
            t = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t)
        with PeakMemory() as meter:
            fn()
    return {"seconds": min(times), "peak_bytes": meter.peak}
