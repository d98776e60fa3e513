"""ELECTRA's pre-training recipe, and the compute it costs next to BERT's masked LM.

The data are BERT's (:func:`ptlm_lite.recipes.bert.pretraining_batches`: sentence pairs
from the synthetic world and the plays) with ELECTRA's masking: 15% of the tokens, all
replaced by ``[MASK]`` (the generator's input; the discriminator never sees ``[MASK]``),
and no next-sentence labels. :func:`step_flops` counts one step of either model with
:mod:`ptlm_lite.flops` (the benchmarks' convention), so that the chapter can give an
MLM model the same pre-training compute as an ELECTRA model::

    electra step = generator (its blocks + its vocabulary head at the masked 15%)
                 + discriminator (its blocks + a d x d and a d x 1 head at every token)
    MLM step     = encoder (its blocks + the MLM head, d x d and d x V, at the 15%)

Chapter: ``chapters/electra.ipynb``.
"""

from __future__ import annotations

from functools import partial

import numpy as np
import torch

from .. import flops
from ..bert import BertForPreTraining
from ..config import Config
from ..device import device_of, eval_mode, scores_on_device
from ..electra import ElectraConfig, ElectraForPreTraining, generator_config
from . import bert as bert_recipe

__all__ = [
    "MASK_P",
    "PRETRAIN_KW",
    "LR",
    "masking",
    "pretraining_batches",
    "cached",
    "step_flops",
    "matched_steps",
    "pretrain",
    "choice_rows",
    "zero_shot_choice",
]

MASK_P = 0.15  # the share of tokens masked, as BERT's
# each scale's batches and warm-up (both models read the same rows)
PRETRAIN_KW = {
    "tiny": dict(batch_size=32, max_len=32, warmup=20),
    "small": dict(batch_size=64, max_len=64, warmup=50),
}
# each model's peak learning rate. The MLM's are the BERT chapter's (5e-3 gets a tiny
# masked LM past its unigram plateau in a few hundred steps); at that rate the tiny
# discriminator stays at the base rate ("nothing is replaced") for hundreds of steps,
# while at 1e-3 it starts catching replacements after 50-60 steps (pilot runs, seeds
# 0-5: none caught at step 50 in five of them, 8-21% caught from step 60 on in all six)
LR = {
    "tiny": {"electra": 1e-3, "mlm": 5e-3},
    "small": {"electra": 5e-4, "mlm": 1e-3},
}


def masking(tok, p: float = MASK_P):
    """ELECTRA's masking for ``tok``: ``p`` of the tokens, every one -> ``[MASK]``."""
    return bert_recipe.mlm_corruption(tok, p=p, proportions=(1.0, 0.0, 0.0))


def pretraining_batches(tok, *, corrupt=None, corpora=("world",), **kw):
    """``step -> batch`` of ``ids, segments, valid, targets`` (BERT's pairs, no NSP
    labels), masked by :func:`masking` unless ``corrupt`` is given (the MLM baseline
    passes BERT's 80/10/10). ``kw``: ``batch_size``, ``max_len``, ``seed``, ``split``,
    as :func:`ptlm_lite.recipes.bert.pretraining_batches`."""
    batches = bert_recipe.pretraining_batches(
        tok, corrupt=corrupt or masking(tok), corpora=corpora, **kw
    )

    def batch(step: int) -> dict:
        return {k: v for k, v in batches(step).items() if k != "nsp_labels"}

    return batch


def cached(batches):
    """``batches`` (``step -> batch``) keeping every batch it makes, so that a second
    run on the same seed reads the same tensors instead of drawing and masking them
    again (the chapter's ablations re-read the main runs' first steps). Nothing but
    the time changes: a step's batch is fixed by ``(seed, step)`` anyway."""
    if not callable(batches):
        raise TypeError(f"batches must be a function step -> batch, got {batches!r}")
    kept = {}

    def batch(step: int) -> dict:
        if step not in kept:
            kept[step] = batches(step)
        return kept[step]

    return batch


def step_flops(config: Config, batch_size: int, max_len: int, p: float = MASK_P):
    """Training FLOPs of one step of ``batch_size`` rows of ``max_len`` tokens: an
    :class:`~ptlm_lite.electra.ElectraConfig` counts the generator and the
    discriminator, any other config a BERT-style masked LM (its vocabulary head at the
    masked share ``p`` of the tokens)."""
    tokens = batch_size * max_len
    count = partial(flops.total, seq_len=max_len, tokens=tokens)
    d = config.d_model
    if isinstance(config, ElectraConfig):
        gen = generator_config(config)
        E = gen.d_embed or gen.d_model  # its head goes D_gen -> E -> V
        gen_head = gen.d_model * E + E * gen.vocab_size
        return count(gen, head=p * gen_head) + count(config, head=d * d + d)
    return count(config, head=p * (d * d + flops.head_weights(config)))


def matched_steps(steps: int, config: Config, other: Config, batch_size, max_len):
    """Steps of ``other`` that cost what ``steps`` steps of ``config`` cost
    (rounded)."""
    ratio = step_flops(config, batch_size, max_len) / step_flops(
        other, batch_size, max_len
    )
    return max(1, round(steps * ratio))


def pretrain(model, *, steps: int, tok, seed: int = 0, batches=None, **kw):
    """Pre-train an :class:`~ptlm_lite.electra.ElectraForPreTraining` or a
    :class:`~ptlm_lite.bert.BertForPreTraining` (MLM only, BERT's 80/10/10) for
    ``steps`` steps with :func:`ptlm_lite.recipes.bert.pretrain` (warm-up, then a
    constant rate); ``kw``: batch_size, max_len, lr, warmup, progress, ... Returns the
    History."""
    if not isinstance(model, (ElectraForPreTraining, BertForPreTraining)):
        raise TypeError(
            "model must be an ElectraForPreTraining or a BertForPreTraining, got "
            f"{type(model).__name__}"
        )
    shape = {k: kw[k] for k in ("batch_size", "max_len") if k in kw}
    if batches is None:
        corrupt = (
            None
            if isinstance(model, ElectraForPreTraining)
            else bert_recipe.mlm_corruption(tok)
        )
        batches = pretraining_batches(tok, corrupt=corrupt, seed=seed, **shape)
    desc = "ELECTRA" if isinstance(model, ElectraForPreTraining) else "MLM"
    kw.setdefault("desc", f"pre-training {desc}")
    return bert_recipe.pretrain(
        model, steps=steps, nsp=False, seed=seed, batches=batches, tok=tok, **kw
    )


def choice_rows(task, tok) -> dict:
    """A choice ``task``'s test questions as the discriminator reads them, made once
    for every model :func:`zero_shot_choice` scores: each ending written into its
    context (``[CLS] context ending . [SEP]``), padded. Returns ``ids`` (rows, T),
    ``ending`` (bool, rows x T: the ending's tokens), ``n_choices`` and ``labels``."""
    if getattr(task, "kind", None) != "choice":
        raise ValueError("task must be a choice task (suite.get('slot_filler'))")
    ids = tok.special_ids
    rows, spans = [], []
    dot = tok.encode(".")
    for e in task.test:
        context = tok.encode(e["context"])
        for ending in e["endings"]:
            end = tok.encode(" " + ending)
            rows.append([ids["cls"], *context, *end, *dot, ids["sep"]])
            spans.append((1 + len(context), 1 + len(context) + len(end)))
    T = max(len(r) for r in rows)
    x = torch.full((len(rows), T), ids["pad"], dtype=torch.long)
    ending = torch.zeros(len(rows), T, dtype=torch.bool)
    for i, (r, (a, b)) in enumerate(zip(rows, spans)):
        x[i, : len(r)] = torch.tensor(r)
        ending[i, a:b] = True
    return {
        "ids": x,
        "ending": ending,
        "n_choices": len(task.test[0]["endings"]),
        "labels": np.array([e["label"] for e in task.test]),
        "pad": ids["pad"],
    }


@scores_on_device  # on the GPU if there is one
@torch.no_grad()
def zero_shot_choice(
    model, task, tok, batch_size: int = 1024, rows: dict | None = None
) -> np.ndarray:
    """Each test question of a choice ``task`` answered by the discriminator alone, with
    no fine-tuning: every ending is written into its context (``context + " " + ending
    + "."``) and the one whose tokens look least *replaced* (lowest mean logit) is the
    answer. Returns 1/0 per test example (a verdict's per-example row).
    ``model``: an :class:`~ptlm_lite.electra.ElectraForPreTraining`; ``rows``:
    :func:`choice_rows` of ``task`` (made here when not given: pass them to score many
    models on one encoding)."""
    if not isinstance(model, ElectraForPreTraining):
        raise TypeError(
            f"model must be an ElectraForPreTraining, got {type(model).__name__}"
        )
    rows = choice_rows(task, tok) if rows is None else rows
    x, ending = rows["ids"], rows["ending"]
    if len(x) != rows["n_choices"] * len(task.test):
        raise ValueError("rows must be choice_rows(task, tok) of this task")
    with eval_mode(model):
        chunks = (x[i : i + batch_size].to(device_of(model))
                  for i in range(0, len(x), batch_size))  # fmt: skip
        logits = torch.cat(
            [model(c, valid=c != rows["pad"]).logits.float().cpu() for c in chunks]
        )
    score = (logits * ending).sum(1) / ending.sum(1)  # mean "replaced" logit
    picked = score.view(len(task.test), rows["n_choices"]).argmin(1).numpy()
    return (picked == rows["labels"]).astype(float)
