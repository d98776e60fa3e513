"""SiATL (Chronopoulou, Baziotis and Potamianos, 2019): transfer in one step, with an
auxiliary language-modelling loss and sequential unfreezing.

ULMFiT fine-tunes the LM on the target domain, then the classifier. SiATL trains one
model once: the pre-trained LSTM LM, a new task LSTM and a head on top, and the loss

    L = L_task + γ_t · L_LM          (γ_t decays over training)

where L_LM is the LM's next-token loss on the task's own text. Early on, while the new
layers are random and their gradients are noise, the LM loss holds the pre-trained
layers near a language model (less catastrophic forgetting); as γ_t decays the task
takes over. The layers are unfrozen in sequence: first the new ones (task LSTM and
head), then the pre-trained LSTMs, then the embedding::

    ids ─► embedding ─► LSTM 1..L ─┬─► decoder (tied) ─► L_LM   (× γ_t)
                                   └─► task LSTM ─► concat pool ─► head ─► L_task
    steps:  new layers ──► + pre-trained LSTMs ──► + embedding

Both schedules are pure functions of the step (:func:`aux_weight`,
:func:`unfrozen_groups`); :class:`SiATLSchedule` applies them as a ``train(on_step=)``
hook. Introduced in ``chapters/siatl.ipynb``.
"""

from __future__ import annotations

import math

import torch
import torch.nn as nn

from .output import IGNORE, Output, cross_entropy
from .rnn import LSTMClassifier, LSTMConfig, LSTMLM, concat_pool

__all__ = [
    "aux_weight",
    "unfrozen_groups",
    "SiATLClassifier",
    "siatl_groups",
    "SiATLSchedule",
    "sequential_starts",
    "train_options",
    "schedule_table",
    "GROUP_NAMES",
]

GROUP_NAMES = ("embedding", "pre-trained LSTMs", "new layers")  # bottom to top


def aux_weight(step: int, total: int, start: float = 1.0, end: float = 0.1) -> float:
    """γ at ``step`` (1-based) of ``total``: an exponential decay from ``start`` at the
    first step to ``end`` at the last (``end=start``: a constant weight; ``start=0``:
    no auxiliary loss)::

        γ_t = start · (end / start) ** ((t − 1) / (total − 1))
    """
    if not isinstance(total, int) or isinstance(total, bool) or total < 1:
        raise ValueError(f"total must be a positive integer, got {total!r}")
    if not isinstance(step, int) or isinstance(step, bool) or not 1 <= step <= total:
        raise ValueError(f"step must be an integer in [1, {total}], got {step!r}")
    for name, v in (("start", start), ("end", end)):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not v >= 0:
            raise ValueError(f"{name} must be a number >= 0, got {v!r}")
    if start == 0:
        if end != 0:
            raise ValueError(f"end must be 0 when start is 0, got {end!r}")
        return 0.0
    if end == 0:
        raise ValueError("end must be > 0 for an exponential decay (or start = 0)")
    frac = 0.0 if total == 1 else (step - 1) / (total - 1)
    return start * math.exp(frac * math.log(end / start))


def unfrozen_groups(step: int, starts: tuple[int, ...]) -> int:
    """How many layer groups, counted from the top, train at ``step`` (1-based):
    group i (top first) trains from step ``starts[i]`` on. ``starts`` must begin at 1
    and increase: ``(1, 11, 21)`` trains the new layers alone for 10 steps, then the
    pre-trained LSTMs too, then the embedding too (sequential unfreezing)."""
    if not isinstance(step, int) or step < 1:
        raise ValueError(f"step must be a positive integer, got {step!r}")
    starts = tuple(starts)
    if not starts or starts[0] != 1 or any(b <= a for a, b in zip(starts, starts[1:])):
        raise ValueError(
            f"starts must be increasing step numbers beginning at 1, got {starts!r}"
        )
    return sum(step >= s for s in starts)


class SiATLClassifier(LSTMClassifier):
    """The pre-trained LSTM LM with SiATL's new layers: a task LSTM on its top layer,
    concat pooling and ULMFiT's two-layer head. ``source``: a trained
    :class:`~ptlm_lite.rnn.LSTMLM` (copied) or an :class:`~ptlm_lite.rnn.LSTMConfig`
    (random weights). With ``labels``, the loss is L_task + ``aux_weight`` · L_LM, the
    LM's next-token loss on the labelled text (in ``mode="choice"``: the context with
    its right ending); ``extra`` holds both losses. :class:`SiATLSchedule` sets
    ``aux_weight`` at every step.
    """

    def __init__(self, source: LSTMLM | LSTMConfig, n_labels: int = 2, **kw):
        super().__init__(source, n_labels, **kw)
        D = self.lm.d_out
        self.task_lstm = nn.LSTM(D, D, batch_first=True)  # new, random
        self.aux_weight = 0.0

    def forward(self, ids, last=None, valid=None, labels=None) -> Output:
        shape = ids.shape
        if ids.dim() != 3 and not (self.mode == "classify" and ids.dim() == 2):
            raise ValueError(f"ids must be (B, T) or (B, C, T), got {tuple(shape)}")
        flat = ids.reshape(-1, shape[-1])  # (B·C, T)
        t = torch.arange(shape[-1], device=ids.device)
        if last is not None:  # positions up to `last` are real
            valid = t <= last.reshape(-1, 1)
        valid = (
            torch.ones_like(flat, dtype=torch.bool)
            if valid is None
            else valid.reshape(flat.shape)
        )
        top = self.lm.encode(flat)[-1]  # (B·C, T, D): the pre-trained LM's top layer
        x, _ = self.task_lstm(top)  # (B·C, T, D): the new layer
        logits = self.head(concat_pool(x, valid)).view(shape[0], -1)  # (B, C or K)
        if labels is None:
            return Output(logits, None)
        task_loss = cross_entropy(logits, labels, "labels")
        # L_LM on the labelled text: the next token where both are real tokens
        targets = flat.roll(-1, 1).masked_fill(~(valid & valid.roll(-1, 1)), IGNORE)
        targets[:, -1] = IGNORE
        if self.mode == "choice":  # only the right ending's sequence is true text
            C = shape[1]
            right = torch.arange(C, device=ids.device) == labels[:, None]  # (B, C)
            targets = targets.masked_fill(~right.reshape(-1, 1), IGNORE)
        lm_loss = cross_entropy(self.lm.decoder(top), targets)
        loss = task_loss + self.aux_weight * lm_loss
        return Output(logits, loss, extra={"task_loss": task_loss, "lm_loss": lm_loss})


def siatl_groups(model: SiATLClassifier) -> list[list[nn.Parameter]]:
    """The three groups that sequential unfreezing thaws, bottom to top
    (:data:`GROUP_NAMES`): the embedding (tied to the decoder), the pre-trained LSTMs
    with the decoder's bias, and the new layers (task LSTM and head)."""
    if not isinstance(model, SiATLClassifier):
        raise TypeError(f"model must be a SiATLClassifier, got {type(model).__name__}")
    lm = model.lm
    lstms = [p for layer in lm.layers for p in layer.parameters()]
    lstms += [p for p in lm.decoder.parameters() if p is not lm.embed.weight]
    new = list(model.task_lstm.parameters()) + list(model.head.parameters())
    return [[lm.embed.weight], lstms, new]


class SiATLSchedule:
    """SiATL's two schedules as one ``train(on_step=...)`` hook: before each step it
    sets ``model.aux_weight`` to :func:`aux_weight` and lets only the top
    :func:`unfrozen_groups` groups of :func:`siatl_groups` train. ``starts``: the step
    at which each group (top first) starts to train (None: all from step 1). Building
    it sets step 1's state.
    """

    def __init__(self, model, total: int, starts=None, start=1.0, end=0.1):
        self.model, self.groups = model, siatl_groups(model)
        if starts is not None and len(tuple(starts)) != len(self.groups):
            raise ValueError(
                f"starts must give one step per group ({len(self.groups)}), "
                f"got {starts!r}"
            )
        self.total, self.starts, self.gamma = total, starts, (start, end)
        self.apply(1)

    def apply(self, step: int) -> None:
        """The state of ``step``: γ, and which groups train."""
        self.model.aux_weight = aux_weight(step, self.total, *self.gamma)
        n = len(self.groups)
        if self.starts is not None:
            n = unfrozen_groups(step, self.starts)
        for i, g in enumerate(self.groups):
            for p in g:
                p.requires_grad_(i >= len(self.groups) - n)

    def __call__(self, step: int, **_) -> None:
        if step < self.total:  # after step s: set up step s + 1
            self.apply(step + 1)


def sequential_starts(steps: int, n_groups: int = 3) -> tuple[int, ...]:
    """Sequential unfreezing in equal parts of ``steps``: the step at which each of
    ``n_groups`` groups (top first) starts to train, e.g. ``(1, 11, 21)`` for 30."""
    if not isinstance(steps, int) or steps < 1:
        raise ValueError(f"steps must be a positive integer, got {steps!r}")
    part = max(1, steps // n_groups)
    return tuple(1 + i * part for i in range(n_groups))


def train_options(
    model: SiATLClassifier,
    steps: int,
    aux: bool = True,
    sequential: bool = True,
    start: float = 1.0,
    end: float = 0.1,
) -> dict:
    """The keywords of :func:`ptlm_lite.train.train` for SiATL: the auxiliary weight
    decaying from ``start`` to ``end`` (``aux=False``: γ = 0, the task loss alone) and
    sequential unfreezing in thirds of the run (``sequential=False``: every layer
    trains from the start)."""
    starts = sequential_starts(steps) if sequential else None
    gamma = (start, end) if aux else (0.0, 0.0)
    return {"on_step": SiATLSchedule(model, steps, starts, *gamma)}


def schedule_table(steps: int, starts, start: float = 1.0, end: float = 0.1):
    """γ and the unfrozen groups at every step: ``(gamma (steps,), trains (3,
    steps) bool)``, bottom group first (the widget of ``chapters/siatl.ipynb``)."""
    import numpy as np

    gamma = np.array([aux_weight(s, steps, start, end) for s in range(1, steps + 1)])
    n = np.array([unfrozen_groups(s, starts) for s in range(1, steps + 1)])
    k = len(tuple(starts))
    trains = np.array([[n[j] >= k - i for j in range(steps)] for i in range(k)])
    return gamma, trains
