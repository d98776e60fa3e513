"""Cost against sequence length, measured: one layer of each feature extractor the
source articles compare (LSTM, biLSTM, the Transformer's attention, a sparse local
attention), timed at growing lengths, with the memory autograd keeps for its backward
pass counted tensor by tensor. The articles declare O(n·d²) for the LSTM and O(n²·d)
for attention; these are the exponents this machine gives.

Chapter: ``chapters/synthesis.ipynb`` (the table of feature extractors).
"""

from __future__ import annotations

import torch

__all__ = ["cost_slopes"]


def _extractor_layers(d: int, heads: int, window: int):
    """One layer of each feature extractor of :data:`ptlm_lite.articles.EXTRACTORS`,
    as ``x (1, T, d) -> y``: PyTorch's LSTM (one direction and both), the book's
    attention (:func:`ptlm_lite.attention.attention`, full) and its local attention
    (:func:`ptlm_lite.efficient.local_attention`, a window of ``window``)."""
    from .attention import attention
    from .efficient import local_attention

    g = torch.Generator().manual_seed(0)
    lstm, bilstm = _nn_lstm(d, False), _nn_lstm(d, True)
    # q, k, v projections: weights (Parameters), like the LSTMs'
    w = [torch.nn.Parameter(torch.randn(d, d, generator=g) / d**0.5) for _ in "qkv"]

    def heads_of(x):  # (1, T, d) -> q, k, v: (1, H, T, d / H)
        return [(x @ wi).unflatten(-1, (heads, -1)).transpose(1, 2) for wi in w]

    return {
        "LSTM": lambda x: lstm(x)[0],
        "biLSTM": lambda x: bilstm(x)[0],
        "Transformer": lambda x: attention(*heads_of(x))[0],
        "sparse": lambda x: local_attention(*heads_of(x), window),
    }


def _nn_lstm(d: int, bidirectional: bool):
    """A one-layer ``torch.nn.LSTM`` of width ``d`` (seeded, the global random state
    left as it was), batch first."""
    hidden = d // 2 if bidirectional else d
    with torch.random.fork_rng():
        torch.manual_seed(0)
        return torch.nn.LSTM(d, hidden, batch_first=True, bidirectional=bidirectional)


def _saved_bytes(fn, x) -> int:
    """Bytes of the tensors autograd keeps for the backward pass of ``fn(x)``
    (``torch.autograd.graph.saved_tensors_hooks``): the activation memory a training
    step holds for this layer; weights (saved, but not growing with T) excluded."""
    seen, total = set(), 0

    def pack(t):
        nonlocal total
        if not isinstance(t, torch.nn.Parameter) and t.data_ptr() not in seen:
            seen.add(t.data_ptr())
            total += t.numel() * t.element_size()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        fn(x.requires_grad_())
    return total


def _slope(xs, ys) -> float:
    """The least-squares slope of log y against log x."""
    lx = torch.tensor(xs, dtype=torch.float64).log()
    ly = torch.tensor(ys, dtype=torch.float64).log()
    lx, ly = lx - lx.mean(), ly - ly.mean()
    return float((lx * ly).sum() / (lx * lx).sum())


def cost_slopes(lengths=(512, 1024, 2048, 4096), d: int = 64, heads: int = 4,
                window: int = 64, repeat: int = 5):  # fmt: skip
    """How one layer of each feature extractor costs against the sequence length T:
    forward time (:func:`ptlm_lite.recipes.efficient.measure`: the fastest of at least
    ``repeat`` runs, one sequence, no gradient) and the memory it keeps for the
    backward pass (:func:`_saved_bytes`) at each length, and the exponent k of
    cost ∝ T^k: the slope of log cost against log T (least squares over the lengths;
    long ones, where the fixed costs of a call matter least). A DataFrame, one row per
    extractor.

    Measured, on whatever machine runs it: the book's attention calls PyTorch's fused
    kernel, which does not keep the T × T weights for the backward pass, so its two
    exponents need not agree (the articles' O(n²) counts the arithmetic). Chapter: the
    synthesis (the efficient-attention chapter measures the long-sequence forms)."""
    import pandas as pd

    from .recipes.efficient import measure

    if len(lengths) < 2 or sorted(set(lengths)) != list(lengths) or lengths[0] < 1:
        raise ValueError(f"lengths must be increasing positive lengths, got {lengths}")
    if d < 1 or heads < 1 or d % heads:
        raise ValueError(
            f"d must be a positive multiple of heads, got d={d}, heads={heads}"
        )
    rows = []
    for name, fn in _extractor_layers(d, heads, window).items():
        row = {"extractor": name}
        times, mems = [], []
        for T in lengths:
            x = torch.randn(1, T, d, generator=torch.Generator().manual_seed(T))
            # the efficient chapter's timer: a warm-up, then the fastest of the runs
            best = measure(lambda f=fn, x=x: f(x), repeat=repeat)["seconds"]
            times.append(best)
            mems.append(_saved_bytes(fn, x.clone()))
            row[f"ms at {T}"] = 1e3 * best
        row["time ∝ T^k, k"] = _slope(lengths, times)
        row["memory ∝ T^k, k"] = _slope(lengths, mems)
        row[f"backward memory at {lengths[-1]} (MB)"] = mems[-1] / 2**20
        rows.append(row)
    return pd.DataFrame(rows)
