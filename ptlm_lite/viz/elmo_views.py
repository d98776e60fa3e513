"""ELMo's widget (``from ptlm_lite.viz.elmo_views import elmo_explorer``): the
scalar-mix weights each task learnt over the biLM's layers, and a word's contextual
neighbours in different sentences.

Introduced in ``chapters/elmo.ipynb``. Every view is rendered in advance and switched
in the browser (:func:`~ptlm_lite.viz.stepper`), so it works in the static book.
"""

from __future__ import annotations

from typing import Mapping, Sequence

from ._html import esc, new_figure
from .stepper import stepper
from .word_views import stepper_view

ELMO_CLASS = "ptlm-elmo"  # the browser tests find the explorer by this


def _mix_figure(task: str, weights, layer_names: Sequence[str]):
    import numpy as np

    w = np.atleast_2d(np.asarray(weights, dtype=float))  # (seeds, L)
    if w.shape[1] != len(layer_names):
        raise ValueError(
            f"weights of {task!r} must have one column per layer ({len(layer_names)}), "
            f"got shape {w.shape}"
        )
    fig = new_figure((5.0, 2.8))
    ax = fig.add_subplot()
    x = np.arange(len(layer_names))
    ax.bar(x, w.mean(0), color="#2f6db5", alpha=0.8)
    for row in w:  # one dot per seed
        ax.scatter(x, row, s=14, color="#333", zorder=3)
    ax.axhline(1 / len(layer_names), color="#999", ls="--", lw=1)
    ax.set_xticks(x, layer_names)
    ax.set_ylim(0, 1)
    ax.set_ylabel("softmax weight")
    ax.set_title(f"{task}: the mix over layers")
    fig.tight_layout()
    return fig, w.mean(0)


def elmo_explorer(
    weights: Mapping[str, object],
    layer_names: Sequence[str],
    neighbours: Mapping[str, Sequence[tuple]],
    *,
    description: str = "view",
):
    """One stepper with a view per task (``weights``: {task: (seeds, L) softmax
    weights}, bars = mean, dots = seeds, dashed line = equal weights) and a view per
    occurrence of a word (``neighbours``: {label: (its sentence, [(word, sentence,
    cosine), ...])}, its nearest occurrences of other words). Each view's caption
    starts with "view: <label>". Returns the stepper, CSS class ``ptlm-elmo``."""
    if not isinstance(weights, Mapping) or not weights:
        raise ValueError("weights must be a non-empty dict {task: (seeds, L) weights}")
    if not isinstance(neighbours, Mapping):
        raise ValueError(
            "neighbours must be a dict {label: (sentence, [(word, sentence, cos)])}"
        )
    views = {}
    for task, w in weights.items():
        fig, mean = _mix_figure(task, w, layer_names)
        text = ", ".join(f"{n} {m:.2f}" for n, m in zip(layer_names, mean))
        label = f"mix: {task}"
        caption = f"<div>view: {esc(label)}; mean weights: {esc(text)}</div>"
        views[label] = stepper_view(fig, caption)
    for label, (sentence, rows) in neighbours.items():
        items = "".join(
            f"<li><b>{esc(w)}</b> in “{esc(s)}”: {c:.2f}</li>" for w, s, c in rows
        )
        views[label] = (
            f"<div><div>view: {esc(label)}</div><div>in “{esc(sentence)}”, the "
            f"nearest occurrences of other words (cosine):</div>"
            f"<ol style='margin:2px 0'>{items}</ol></div>"
        )
    box = stepper(views, description=description)
    box.add_class(ELMO_CLASS)
    return box
