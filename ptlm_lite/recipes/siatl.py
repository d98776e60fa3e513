"""SiATL's runs in ``chapters/siatl.ipynb``: the classifier conditions, on the LSTM LMs
of ULMFiT's recipe (:mod:`ptlm_lite.recipes.ulmfit`).

Every condition fine-tunes on the same task, batches, steps and seeds through
:func:`ptlm_lite.finetune.run`:

* **SiATL**: the target-domain LM with SiATL's new layers, L_task + γ_t · L_LM and
  sequential unfreezing (:mod:`ptlm_lite.siatl`);
* **SiATL without the LM loss**: the same model and unfreezing, γ = 0;
* **ULMFiT**: ULMFiT's classifier stage on the same LM (discriminative and slanted
  triangular rates, gradual unfreezing, :func:`ptlm_lite.ulmfit.train_options`);
* **from scratch**: SiATL's model and recipe from random weights (the control).
"""

from __future__ import annotations

import torch

from .. import siatl, ulmfit
from ..device import eval_mode
from ..rnn import LSTMClassifier, LSTMConfig, LSTMLM
from .ulmfit import lm_for_seed

# γ decays exponentially from START to END over the run (our choice: the LM loss
# weighs as much as the task's at first and a tenth of it at the end)
GAMMA = dict(start=1.0, end=0.1)

# name: (which LM, which recipe): an LM named in ``lms`` ("target": ULMFiT's stage 2;
# ("general", "siatl") would be the paper's single step from stage 1), or None: random
# weights
PLANS = {
    "SiATL": ("target", "siatl"),
    "SiATL without LM loss": ("target", "no aux"),
    "ULMFiT": ("target", "ulmfit"),
    "from scratch": (None, "siatl"),
}


def conditions(task, lms: dict, config: LSTMConfig, steps: int, lr: float, built=None):
    """``(make_model, train_kw)`` for :func:`ptlm_lite.finetune.run`, one entry per
    condition of :data:`PLANS`. ``lms``: the LMs the plans name, e.g. ``{"target":
    stage-2 LM}``, or ``{"target": {seed: stage-2 LM}}``: each seed's runs start from
    their own LM. ``built``: a dict that collects each condition's fine-tuned models
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
            lm = lm_for_seed(lms, src, seed) if src else config
            model = cls(lm, task.n_labels, mode=mode)
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
    if split not in ("train", "test"):
        raise ValueError(f"split must be 'train' or 'test', got {split!r}")
    if task.kind != "choice":
        raise ValueError(f"task must be a choice task, got kind {task.kind!r}")
    examples = getattr(task, split)
    rows, spans = [], []  # one sequence per (example, ending); the ending's positions
    for e in examples:
        ctx = tokenizer.encode(" " + e["context"])
        for ending in e["endings"]:
            rows.append(ctx + tokenizer.encode(" " + ending))
            spans.append((len(ctx), len(rows[-1])))
    T = max(map(len, rows))
    ids = torch.zeros(len(rows), T, dtype=torch.long)  # right padding: never read
    for i, r in enumerate(rows):
        ids[i, : len(r)] = torch.tensor(r)
    with eval_mode(lm):
        logp = lm(ids[:, :-1]).logits.log_softmax(-1)  # (N·C, T - 1, V)
    nxt = logp.gather(-1, ids[:, 1:, None])[..., 0]  # (N·C, T - 1): log p(token t + 1)
    t = torch.arange(T - 1)
    start, end = (torch.tensor(x)[:, None] for x in zip(*spans))
    in_ending = (t >= start - 1) & (t < end - 1)  # predicting the ending's tokens
    score = (nxt * in_ending).sum(1) / in_ending.sum(1)  # mean log-prob per token
    C = len(examples[0]["endings"])
    pred = score.view(len(examples), C).argmax(1)
    return (pred == torch.tensor([e["label"] for e in examples])).int().numpy()
