"""Attention maps: per-layer heatmaps (a stepper of small images). The bridge to bertviz
is :mod:`ptlm_lite.viz.bertviz_views`.

Introduced in ``chapters/transformer.ipynb``; every model's ``forward(...,
return_attention=True)`` gives ``attentions``, a list over layers of ``(B, H, Tq, Tk)``
tensors, which is what these take.
"""

from __future__ import annotations

from typing import Sequence

from ._html import esc, figure_to_html, new_figure
from .stepper import stepper

# The width of the book's text column at a 1280 px window: figures are drawn no wider.
PAGE_PX = 680


def attention_layers(attentions, batch: int = 0) -> list:
    """Normalise attentions to a list over layers of numpy (H, Tq, Tk) float arrays
    (the heatmaps' and the bertviz views' input check)."""
    import numpy as np
    import torch

    if isinstance(attentions, torch.Tensor) or isinstance(attentions, np.ndarray):
        if attentions.ndim != 3:
            raise ValueError(
                "pass attentions as a list over layers of (B, H, Tq, Tk) or (H, Tq, "
                "Tk) "
                f"tensors (or one (H, Tq, Tk) tensor); got a tensor of "
                f"shape {tuple(attentions.shape)}"
            )
        attentions = [attentions]
    if isinstance(attentions, dict) or not isinstance(attentions, (list, tuple)):
        raise TypeError(
            "attentions must be a list over layers of (B, H, Tq, Tk) or (H, Tq, Tk) "
            "tensors, "
            f"got {type(attentions).__name__}"
        )
    if not attentions:
        raise ValueError("attentions is empty: give at least one layer")
    out = []
    for i, a in enumerate(attentions):
        if isinstance(a, torch.Tensor):
            a = a.detach().float().cpu().numpy()
        elif not isinstance(a, np.ndarray):
            raise TypeError(f"attentions[{i}] must be a tensor, got {type(a).__name__}")
        if a.ndim == 4:
            if not 0 <= batch < a.shape[0]:
                raise ValueError(
                    f"batch={batch} is out of range for attentions[{i}] with batch "
                    f"size {a.shape[0]}"
                )
            a = a[batch]
        if a.ndim != 3:
            raise ValueError(
                f"attentions[{i}] must be (B, H, Tq, Tk) or (H, Tq, Tk), got shape "
                f"{tuple(a.shape)}"
            )
        if out and a.shape != out[0].shape:
            raise ValueError(
                f"every layer must have the same (H, Tq, Tk); layer 0 is "
                f"{out[0].shape}, "
                f"layer {i} is {a.shape}"
            )
        out.append(a.astype("float32"))
    return out


def check_labels(name, labels, n) -> None:
    """A clear error unless ``labels`` is a list of ``n`` token labels."""
    if isinstance(labels, str) or not isinstance(labels, Sequence):
        raise TypeError(
            f"{name} must be a list of token labels (str), got {type(labels).__name__}"
        )
    if len(labels) != n:
        raise ValueError(
            f"{name} must have {n} labels (one per position of the attention), got "
            f"{len(labels)}"
        )


def attention_heatmaps(
    attentions,
    tokens: Sequence[str],
    key_tokens: Sequence[str] | None = None,
    *,
    batch: int = 0,
    layers: Sequence[int] | None = None,
    heads: Sequence[int] | None = None,
    per: str = "layer",
    dpi: int = 72,
    cmap: str = "Blues",
    control: str = "auto",
):
    """Attention probabilities as heatmaps, one view per layer (all heads side by side)
    or per head.

    ``attentions``: a list over layers of ``(B, H, Tq, Tk)`` (the models' output;
    ``batch`` picks the example) or ``(H, Tq, Tk)`` tensors. Rows are queries
    (``tokens``), columns keys (``key_tokens``, default ``tokens``). Each view is a
    small embedded PNG, switched in the browser (a stepper).
    """
    L = attention_layers(attentions, batch)
    H, Tq, Tk = L[0].shape
    check_labels("tokens", tokens, Tq)
    key_tokens = tokens if key_tokens is None else key_tokens
    check_labels("key_tokens", key_tokens, Tk)
    layers = list(range(len(L))) if layers is None else list(layers)
    heads = list(range(H)) if heads is None else list(heads)
    for li in layers:
        if not 0 <= li < len(L):
            raise ValueError(f"layer {li} does not exist: there are {len(L)} layers")
    for h in heads:
        if not 0 <= h < H:
            raise ValueError(f"head {h} does not exist: there are {H} heads")
    if per not in ("layer", "head"):
        raise ValueError(f"per must be 'layer' or 'head', got {per!r}")

    # Sized for the page: a figure at most PAGE_PX wide at ``dpi``, so it is never
    # scaled down, and tick labels of 10 pt (>= 10 px at dpi >= 72). Heads wrap into
    # rows, at least two to a row; with more than ~24 tokens the cells are too small for
    # labels and there are none.
    width_in = PAGE_PX / dpi
    per_row = 2 if per == "layer" and len(heads) > 1 else 1  # heads side by side
    cell = min(0.22, max(0.05, (width_in / per_row - 0.95) / max(Tq, Tk)))
    ticks = cell * dpi >= 11
    side_w, side_h = 0.9 + Tk * cell, 0.6 + Tq * cell

    def draw(ax, a, title, ylabels=True):
        ax.imshow(a, cmap=cmap, vmin=0.0, vmax=1.0, interpolation="nearest")
        ax.set_title(title, fontsize=10)
        if ticks:
            ax.set_xticks(range(Tk))
            ax.set_xticklabels([str(t) for t in key_tokens], rotation=90, fontsize=10)
            ax.set_yticks(range(Tq))
            ax.set_yticklabels([str(t) for t in tokens] if ylabels else [], fontsize=10)
        else:
            ax.set_xticks([])
            ax.set_yticks([])
        ax.tick_params(length=0)

    views = {}
    if per == "layer":
        cols = max(1, min(len(heads), int(width_in // side_w)))
        rows = -(-len(heads) // cols)
        for li in layers:
            fig = new_figure((cols * side_w, rows * (side_h + 0.5) + 0.4))
            axes = fig.subplots(rows, cols, squeeze=False).ravel()
            for k, (ax, h) in enumerate(zip(axes, heads)):
                draw(ax, L[li][h], f"head {h}", ylabels=(k % cols == 0))
            for ax in axes[len(heads) :]:
                ax.set_visible(False)
            fig.suptitle(
                f"layer {li}: rows = queries, columns = keys, darker = more attention",
                fontsize=10,
            )
            fig.tight_layout()
            views[f"layer {li}"] = figure_to_html(
                fig, dpi=dpi, alt=f"attention, layer {li}"
            )
    else:
        for li in layers:
            for h in heads:
                fig = new_figure((side_w + 0.4, side_h + 0.4))
                draw(fig.add_subplot(111), L[li][h], f"layer {li}, head {h}")
                views[f"L{li} H{h}"] = figure_to_html(
                    fig, dpi=dpi, alt=f"attention, layer {li}, head {h}"
                )
    return stepper(
        views, control=control, description="layer" if per == "layer" else "head"
    )
