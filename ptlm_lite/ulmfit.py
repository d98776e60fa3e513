"""ULMFiT's fine-tuning tricks (Howard & Ruder, 2018), on the LSTM LM of
:mod:`ptlm_lite.rnn`.

Three stages, each with the same network:

1. a general-domain LM (here: Shakespeare);
2. the same LM fine-tuned on the target domain's text (here: the synthetic world's
   documents), with discriminative and slanted triangular learning rates;
3. a classifier on top (concat pooling), fine-tuned with the same two tricks plus
   gradual unfreezing, so that the little labelled data does not wash away the LM.

Every trick is a keyword of :func:`ptlm_lite.train.train`: discriminative rates are
``param_groups`` (one group per layer, each rate the one above divided by 2.6), the
slanted triangular schedule is each group's ``schedule``, and gradual unfreezing is an
``on_step`` hook (the trainer puts every parameter in the optimizer, so a layer unfrozen
mid-run trains from the next step). :func:`train_options` gathers them.

Introduced in ``chapters/ulmfit.ipynb``.
"""

from __future__ import annotations

import math
from typing import Callable

import torch.nn as nn

from .rnn import LSTMClassifier, LSTMLM

__all__ = [
    "stlr",
    "slanted_triangular",
    "discriminative_lrs",
    "layer_groups",
    "param_groups",
    "GradualUnfreezing",
    "train_options",
    "lr_table",
    "FACTOR",
]

FACTOR = 2.6  # the paper's: each layer's rate is the one above it divided by 2.6


def stlr(t: int, total: int, cut_frac: float = 0.1, ratio: float = 32) -> float:
    """The slanted triangular learning rate at iteration ``t`` of ``total``, as a
    fraction of the peak (the paper's eq. 3 divided by η_max)::

        cut = ⌊T · cut_frac⌋
        p   = t / cut                                  if t < cut
              1 − (t − cut) / (cut · (1/cut_frac − 1))  otherwise
        η_t = η_max · (1 + p · (ratio − 1)) / ratio

    A short linear rise to the peak at ``cut``, then a long linear decay back to
    η_max / ratio at ``t = T``. (``cut`` is at least 1, so a very short run still has a
    peak.)
    """
    if not isinstance(total, int) or total < 1:
        raise ValueError(f"total must be a positive integer, got {total!r}")
    if not 0 < cut_frac < 1:
        raise ValueError(f"cut_frac must be in (0, 1), got {cut_frac!r}")
    if not ratio >= 1:
        raise ValueError(f"ratio must be >= 1, got {ratio!r}")
    cut = max(1, math.floor(total * cut_frac))
    if t < cut:
        p = t / cut
    else:
        p = max(0.0, 1 - (t - cut) / (cut * (1 / cut_frac - 1)))
    return (1 + p * (ratio - 1)) / ratio


def slanted_triangular(
    total: int, cut_frac: float = 0.1, ratio: float = 32
) -> Callable[[int], float]:
    """:func:`stlr` as a ``train`` schedule: step (1-based) -> multiple of the peak."""
    stlr(0, total, cut_frac, ratio)  # checks the arguments now, not at step 1
    return lambda step: stlr(step, total, cut_frac, ratio)


def discriminative_lrs(lr: float, n: int, factor: float = FACTOR) -> list[float]:
    """The learning rates of ``n`` layer groups, bottom to top: the top one gets
    ``lr``, each one below it the rate above divided by ``factor``
    (η^(l−1) = η^l / 2.6)."""
    if not (isinstance(lr, (int, float)) and lr > 0):
        raise ValueError(f"lr must be a number > 0, got {lr!r}")
    if not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be a positive integer, got {n!r}")
    if not (isinstance(factor, (int, float)) and factor >= 1):
        raise ValueError(f"factor must be a number >= 1, got {factor!r}")
    return [lr / factor ** (n - 1 - i) for i in range(n)]


def layer_groups(model: nn.Module) -> list[list[nn.Parameter]]:
    """The layer groups of an LSTM LM or classifier, bottom to top: the embedding
    (with the tied decoder), each LSTM layer, then the decoder's bias (an LM) or the
    classifier head. Each group is what one learning rate and one unfreezing step
    apply to."""
    if isinstance(model, LSTMClassifier):
        lm, top = model.lm, list(model.head.parameters())
    elif isinstance(model, LSTMLM):
        lm, top = model, [model.decoder.bias]
    else:
        raise TypeError(
            f"model must be an LSTMLM or an LSTMClassifier, got {type(model).__name__}"
        )
    groups = [[lm.embed.weight]] + [list(layer.parameters()) for layer in lm.layers]
    seen = {id(p) for g in groups + [top] for p in g}
    # the decoder's own weights (untied) go with the top group
    groups.append(top + [p for p in lm.decoder.parameters() if id(p) not in seen])
    return groups


def param_groups(
    model: nn.Module,
    lr: float,
    factor: float = FACTOR,
    schedule: Callable[[int], float] | None = None,
) -> list[dict]:
    """``train(param_groups=...)`` for discriminative fine-tuning: one group per layer
    group of :func:`layer_groups`, the top one at ``lr`` and each one below divided by
    ``factor`` (``factor=1``: one rate for all), each with ``schedule``."""
    groups = layer_groups(model)
    lrs = discriminative_lrs(lr, len(groups), factor)
    return [
        {"params": g, "lr": r, **({"schedule": schedule} if schedule else {})}
        for g, r in zip(groups, lrs)
    ]


class GradualUnfreezing:
    """ULMFiT's gradual unfreezing as a ``train(on_step=...)`` hook: at the start only
    the top group trains; every ``every`` steps one more group, going down, is
    unfrozen, until all train. ``groups`` bottom to top (:func:`layer_groups`).

    ``unfrozen(step)`` is how many groups (from the top) train at a step (1-based).
    Building the hook freezes all but the top group.
    """

    def __init__(self, groups: list[list[nn.Parameter]], every: int):
        if not isinstance(every, int) or every < 1:
            raise ValueError(
                f"every must be a positive integer of steps, got {every!r}"
            )
        if len(groups) < 1:
            raise ValueError("groups must hold at least one group of parameters")
        self.groups, self.every = groups, every
        self.thaw(1)

    def unfrozen(self, step: int) -> int:
        return min(len(self.groups), 1 + (step - 1) // self.every)

    def thaw(self, n: int) -> None:
        """Let the top ``n`` groups train and freeze the rest."""
        for i, g in enumerate(self.groups):
            for p in g:
                p.requires_grad_(i >= len(self.groups) - n)

    def __call__(self, step: int, **_) -> None:
        # after step s: the next step (s + 1) trains unfrozen(s + 1) groups
        self.thaw(self.unfrozen(step + 1))


def train_options(
    model: nn.Module,
    steps: int,
    lr: float,
    discriminative: bool = True,
    slanted: bool = True,
    unfreeze_every: int | None = None,
    factor: float = FACTOR,
    cut_frac: float = 0.1,
    ratio: float = 32,
) -> dict:
    """The keywords of :func:`ptlm_lite.train.train` for one ULMFiT stage:
    discriminative rates (``factor`` per group; else one rate), the slanted triangular
    schedule (else the trainer's ``schedule="linear"`` with a tenth of warm-up: BERT's)
    and, with ``unfreeze_every`` steps, gradual unfreezing. Turn one off for an
    ablation.
    """
    if not isinstance(steps, int) or steps < 1:
        raise ValueError(f"steps must be a positive integer, got {steps!r}")
    schedule = slanted_triangular(steps, cut_frac, ratio) if slanted else None
    opts = {"lr": lr, "schedule": "linear", "warmup": steps // 10}
    opts["param_groups"] = param_groups(
        model, lr, factor if discriminative else 1.0, schedule
    )
    if unfreeze_every is not None:
        opts["on_step"] = GradualUnfreezing(layer_groups(model), unfreeze_every)
    else:
        for p in model.parameters():
            p.requires_grad_(True)
    return opts


def lr_table(
    steps: int,
    lr: float,
    n_groups: int,
    factor: float = FACTOR,
    cut_frac: float = 0.1,
    ratio: float = 32,
    unfreeze_every: int | None = None,
):
    """The learning rate of each layer group at each step, as ``train`` applies it:
    an ``(n_groups, steps)`` array, bottom group first, 0 where a group is still frozen
    (the widget of ``chapters/ulmfit.ipynb`` draws it)."""
    import numpy as np

    rates = discriminative_lrs(lr, n_groups, factor)
    shape = [stlr(s, steps, cut_frac, ratio) for s in range(1, steps + 1)]
    table = np.outer(rates, shape)  # (groups, steps)
    if unfreeze_every is not None:
        thaw = GradualUnfreezing([[] for _ in range(n_groups)], unfreeze_every)
        for s in range(1, steps + 1):  # the top `unfrozen(s)` groups train at step s
            table[: n_groups - thaw.unfrozen(s), s - 1] = 0.0
    return table
