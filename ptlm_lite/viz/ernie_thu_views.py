"""ERNIE (Tsinghua)'s widget: a sentence with its aligned entities and the attention of
a fusion block, token stream above, entity stream below (``chapters/ernie_thu.ipynb``).
Each view is a matplotlib figure, switched in the browser by :func:`stepper`."""

from __future__ import annotations

__all__ = ["fusion_view", "fusion_stepper"]


def fusion_view(tokens, entity_names, w_tok, w_ent, title: str = ""):
    """A figure: the head-mean token attention ``w_tok`` (H, T, T) over ``tokens``, and
    the entity attention ``w_ent`` (H, T, T) among the positions where
    ``entity_names[i]`` is not empty (a label ``token → entity``).
    Chapter: ``chapters/ernie_thu.ipynb``.
    """
    import matplotlib.pyplot as plt
    import numpy as np

    T = len(tokens)
    if len(entity_names) != T or tuple(w_tok.shape[-2:]) != (T, T):
        raise ValueError("tokens, entity_names and the attention maps must agree on T")
    at = [i for i, n in enumerate(entity_names) if n]
    a_tok = np.asarray(w_tok.float().mean(0))
    a_ent = np.asarray(w_ent.float().mean(0))[np.ix_(at, at)]
    labels = [f"{t} ▸ {n}" if n else t for t, n in zip(tokens, entity_names)]
    height = 2.5 + 0.22 * T + 0.35 * len(at)
    fig, (top, bottom) = plt.subplots(
        2, 1, figsize=(6, height), gridspec_kw={"height_ratios": [T, max(1, len(at))]}
    )
    top.imshow(a_tok, cmap="Blues", vmin=0, aspect="auto")
    top.set_yticks(range(T), labels, fontsize=10)
    top.set_xticks(range(T), tokens, fontsize=10, rotation=90)
    top.set_title("token attention (mean of heads)", fontsize=10)
    bottom.imshow(a_ent, cmap="Oranges", vmin=0, aspect="auto")
    names = [entity_names[i] for i in at]
    bottom.set_yticks(range(len(at)), names, fontsize=10)
    bottom.set_xticks(range(len(at)), names, fontsize=10, rotation=30, ha="right")
    bottom.set_title("entity attention", fontsize=10)
    for ax in (top, bottom):
        ax.grid(False)
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig


def fusion_stepper(views: dict, description: str = "sentence"):
    """``{label: (tokens, entity_names, w_tok, w_ent)}`` -> a :func:`stepper` of
    :func:`fusion_view` figures.
    Chapter: ``chapters/ernie_thu.ipynb``.
    """
    from .stepper import stepper

    return stepper(
        {k: fusion_view(*v) for k, v in views.items()}, description=description
    )
