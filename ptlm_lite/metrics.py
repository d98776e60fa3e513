"""Scores that expose a constant predictor: accuracy, macro-F1 (scikit-learn's
definition) and whether every prediction is the same class.

A model that always answers the most frequent class scores the majority share in
accuracy; macro-F1 (the mean over classes of each class's F1) gives it one class's F1
divided by the number of classes, and :func:`scores` says ``constant`` outright. Used by
:mod:`ptlm_lite.finetune` (``chapters/bert.ipynb``, ``chapters/gpt.ipynb``) and the
suite's surface baselines.
"""

from __future__ import annotations

import numpy as np

__all__ = ["is_constant", "macro_f1", "scores"]


def is_constant(predictions) -> bool:
    """True if every prediction is the same class: the model learned the label
    frequencies only.
    """
    values = np.asarray(predictions).ravel()
    return len(values) > 0 and bool((values == values[0]).all())


def macro_f1(predictions, labels) -> float:
    """The mean over classes of each class's F1 (the harmonic mean of its precision and
    recall), over the classes that occur in ``labels`` or ``predictions``: exactly
    ``sklearn.metrics.f1_score(average="macro", zero_division=0)`` (a class never
    predicted has F1 = 0; ``tests/test_finetune.py`` checks the two agree bit for bit).
    Written with NumPy because importing scikit-learn takes about 1.4 s, and every
    fine-tuning worker scores with it. A constant predictor on K balanced classes gets
    2 / (K + 1) / K.
    """
    p, y = np.asarray(predictions).ravel(), np.asarray(labels).ravel()
    if p.shape != y.shape or len(y) == 0:
        raise ValueError(
            f"predictions and labels must be non-empty and of one length, got "
            f"{p.shape}, {y.shape}"
        )
    classes = np.union1d(p, y)[:, None]  # (K, 1)
    predicted, true = p == classes, y == classes  # (K, N) each
    tp = (predicted & true).sum(1)
    # F1 = 2 tp / (2 tp + fp + fn) = 2 tp / (true + predicted), as scikit-learn
    # computes it; every class occurs, so no denominator is 0
    return float(np.mean(2.0 * tp / (true.sum(1) + predicted.sum(1)).astype(float)))


def scores(predictions, labels, n_labels: int | None = None) -> dict:
    """``{"accuracy", "macro_f1", "constant"}`` of ``predictions`` against
    ``labels``: two 1-D sequences of class ids of the same length, in ``[0,
    n_labels)`` when ``n_labels`` is given."""
    p, y = np.asarray(predictions), np.asarray(labels)
    for name, a in (("predictions", p), ("labels", y)):
        if a.ndim != 1:
            raise ValueError(
                f"{name} must be 1-D (one class id per example), got shape {a.shape}"
            )
        if n_labels is not None and len(a) and (a.min() < 0 or a.max() >= n_labels):
            raise ValueError(
                f"{name} must be in [0, {n_labels}), got values in [{a.min()}, "
                f"{a.max()}]"
            )
    if len(p) != len(y):
        raise ValueError(
            f"predictions and labels must have one entry per example each, got "
            f"{len(p)} and {len(y)}"
        )
    return {
        "accuracy": float(np.mean(p == y)),
        "macro_f1": macro_f1(p, y),
        "constant": is_constant(p),
    }
