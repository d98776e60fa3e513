"""SiATL's runs in ``chapters/siatl.ipynb``: the classifier conditions, on the LSTM LMs
of ULMFiT's recipe (:mod:`ptlm_lite.recipes.ulmfit`).

Every condition fine-tunes on the same task, batches, steps and seeds through
:func:`ptlm_lite.finetune.run`:

* **SiATL**: the target-domain LM with SiATL's new layers, L_task + γ_t · L_LM and
  sequential unfreezing (:mod:`ptlm_lite.siatl`);
* **SiATL without the LM loss**: the same model and unfreezing, γ = 0;
* **ULMFiT**: ULMFiT's classifier stage on the same LM (discriminative and slanted
  triangular rates, gradual unfreezing, :func:`ptlm_lite.ulmfit.train_options`);
* **SiATL from the general LM**: the paper's single step, with no target-domain LM;
* **from scratch**: SiATL's model and recipe from random weights (the control).
"""

from __future__ import annotations

import torch

from .. import siatl, ulmfit
from ..rnn import LSTMClassifier, LSTMConfig, LSTMLM

# γ decays exponentially from START to END over the run (our choice: the LM loss
# weighs as much as the task's at first and a tenth of it at the end)
GAMMA = dict(start=1.0, end=0.1)

# name: (which LM, which recipe); the LM "target" is ULMFiT's stage 2, "general" its
# stage 1, None random weights
PLANS = {
    "SiATL": ("target", "siatl"),
    "SiATL without LM loss": ("target", "no aux"),
    "ULMFiT": ("target", "ulmfit"),
    "SiATL from the general LM": ("general", "siatl"),
    "from scratch": (None, "siatl"),
}


def conditions(task, lms: dict, config: LSTMConfig, steps: int, lr: float, built=None):
    """``(make_model, train_kw)`` for :func:`ptlm_lite.finetune.run`, one entry per
    condition of :data:`PLANS`. ``lms``: ``{"target": stage-2 LM, "general": stage-1
    LM}``. ``built``: a dict that collects each condition's fine-tuned models
    (``{name: [model per seed]}``), to measure their LMs after (forgetting).
    """
    if not isinstance(steps, int) or steps < 1:
        raise ValueError(f"steps must be a positive integer, got {steps!r}")
    missing = {src for src, _ in PLANS.values() if src} - set(lms)
    if missing:
        raise ValueError(f"lms must hold the LMs {sorted(missing)}, got {sorted(lms)}")
    mode = "choice" if task.kind == "choice" else "classify"

    def make(name):
        def build(seed):
            src, how = PLANS[name]
            cls = LSTMClassifier if how == "ulmfit" else siatl.SiATLClassifier
            model = cls(lms[src] if src else config, task.n_labels, mode=mode)
            if built is not None:
                built.setdefault(name, []).append(model)
            return model

        return build

    def train_kw(name, model):
        how = PLANS[name][1]
        if how == "ulmfit":  # the ULMFiT chapter's classifier stage
            return ulmfit.train_options(
                model, steps, lr, unfreeze_every=max(1, steps // 10)
            )
        return siatl.train_options(model, steps, aux=how == "siatl", **GAMMA)

    return {name: make(name) for name in PLANS}, train_kw


@torch.no_grad()
def lm_choice(lm: LSTMLM, task, tokenizer, split: str = "test"):
    """The LM alone answers a choice task, zero-shot: each ending's mean log-probability
    per token after its context, the highest wins. Returns 1/0 per example (a NumPy
    array): how much of the task the LM itself knows, with no head and no labels."""
    import numpy as np

    if split not in ("train", "test"):
        raise ValueError(f"split must be 'train' or 'test', got {split!r}")
    if task.kind != "choice":
        raise ValueError(f"task must be a choice task, got kind {task.kind!r}")
    was = lm.training
    lm.eval()
    right = []
    for e in getattr(task, split):
        ctx = tokenizer.encode(" " + e["context"])
        scores = []
        for ending in e["endings"]:
            ids = torch.tensor([ctx + tokenizer.encode(" " + ending)])
            logp = lm(ids[:, :-1]).logits[0].log_softmax(-1)  # (T - 1, V)
            t = torch.arange(len(ctx) - 1, ids.shape[1] - 1)  # the ending's tokens
            scores.append(logp[t, ids[0, t + 1]].mean().item())
        right.append(int(np.argmax(scores) == e["label"]))
    lm.train(was)
    return np.array(right)
