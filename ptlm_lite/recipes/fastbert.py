"""FastBERT's recipe: a backbone, a fine-tuned teacher, self-distilled students, and
the speed-accuracy curve they give.

    backbone(scale)    tiny: the shipped bert-fill (4 layers, ptlm_lite.shipped);
                       small: the book's pre-trained BERT (recipes.bert, d 256)
    teacher(...)       fine-tune a classifier on the last layer (finetune.finetune)
    distil(...)        freeze it, train a student after each other layer on unlabelled
                       inputs (the task's own, labels dropped, and another world's)
    speed_curve(...)   accuracy and FLOPs per example at each speed threshold
    wall_clock(...)    seconds to classify a set, at a speed or with the teacher alone

Chapter: ``chapters/fastbert.ipynb``; the model is :mod:`ptlm_lite.fastbert`.
"""

from __future__ import annotations

import time

import numpy as np
import torch

from .. import fastbert, finetune, flops
from ..device import device_of, scores_on_device, to_device
from ..heads import BertForSequenceClassification

__all__ = [
    "backbone",
    "unlabelled_batch",
    "teacher",
    "distil",
    "speed_curve",
    "planned_exits",
    "teacher_flops",
    "wall_clock",
]


def backbone(scale: str = "tiny"):
    """``(pre-trained BertForPreTraining, tokenizer)`` at ``scale``: ``"tiny"`` loads
    the shipped ``bert-fill`` (no training), ``"small"`` the book's
    ``bert-small-shakespeare`` from the cache (trained on first use)."""
    if scale == "tiny":
        from ..shipped import load

        model, tok, _ = load("bert-fill")
        return model, tok
    if scale == "small":
        from .bert import pretrained_bert, tokenizer

        return pretrained_bert("small"), tokenizer()
    raise ValueError(f"scale must be 'tiny' or 'small', got {scale!r}")


def unlabelled_batch(task, tok, other_world: int = 1, **batch_kw) -> dict:
    """Inputs without labels for self-distillation: ``task``'s training inputs and
    every input of the same task built from ``make_world(other_world)`` (other names;
    no test input of ``task`` among them)."""
    from ..suite import get

    other = get(task.name, world_seed=other_world)
    examples = list(task.train) + list(other.train) + list(other.test)
    batch = finetune.encoder_batch(task, examples, tok, **batch_kw)
    batch.pop("labels")
    return batch


def teacher(task, pretrained, *, steps, lr, batch_size, seed, tok, **kw):
    """A :class:`~ptlm_lite.heads.BertForSequenceClassification` on a copy of
    ``pretrained`` (or random weights of ``pretrained``'s config when it is a Config),
    fine-tuned on ``task``'s training split: the teacher."""
    torch.manual_seed(seed)
    model = finetune.bert_model(task, pretrained)
    train = finetune.encoder_batch(task, "train", tok)
    finetune.finetune(model, train, steps, batch_size, lr, seed, **kw)
    return model.eval()


def distil(teacher_model, unlabelled: dict, *, steps, lr, batch_size, seed, **kw):
    """A :class:`~ptlm_lite.fastbert.FastBert` on ``teacher_model`` (frozen), its
    students trained for ``steps`` to match the teacher on ``unlabelled``; returns it
    in eval mode with ``model.history``."""
    if not isinstance(teacher_model, BertForSequenceClassification):
        raise TypeError(
            "teacher_model must be a BertForSequenceClassification, got "
            f"{type(teacher_model).__name__}"
        )
    model = fastbert.FastBert(teacher_model, seed=seed)
    kw = {"desc": "self-distillation", **kw}
    model.history = fastbert.distill(
        model, unlabelled, steps, batch_size=batch_size, lr=lr, seed=seed, **kw
    )
    return model.eval()


@torch.no_grad()
def _run(model, batch, speed):
    out = model.eval()(batch["ids"], batch.get("segments"), batch["valid"], speed=speed)
    return out


def teacher_flops(config, n_tokens, n_labels: int) -> np.ndarray:
    """FLOPs per example of the fine-tuned BERT alone (every layer, one classifier):
    the baseline FastBERT saves against."""
    w = fastbert.classifier_weights(config, n_labels)
    return np.array(
        [
            flops.per_token(config, t, head=w / t, train=False) * t
            for t in torch.as_tensor(n_tokens).tolist()
        ]
    )


def speed_curve(model, batch: dict, speeds) -> tuple:
    """``(table, per_example)`` for every ``speed`` in ``speeds``: the table has one
    row per speed (accuracy, mean FLOPs, its fraction of the teacher's, the share of
    examples leaving at each layer; accuracy NaN when ``batch`` has no ``labels``);
    ``per_example[speed]`` holds (B,) arrays
    ``correct``, ``exit_layer``, ``flops``, ``uncertainty`` and ``prediction``."""
    import pandas as pd

    labels = batch.get("labels")  # None: FLOPs and exits only (unlabelled text)
    n_tokens = batch["valid"].sum(1)
    n_labels, L = model.teacher.n_labels, model.config.n_layer
    base = teacher_flops(model.config, n_tokens, n_labels)
    rows, per = [], {}
    for speed in speeds:
        out = _run(model, batch, float(speed))
        exit_layer = out.extra["exit_layer"].cpu()
        spent = fastbert.flops_spent(model.config, n_tokens, exit_layer, n_labels)
        pred = out.logits.argmax(-1).cpu()
        correct = np.full(len(pred), np.nan) if labels is None else (pred == labels)
        per[speed] = {
            "correct": np.asarray(correct, dtype=float),
            "exit_layer": exit_layer.numpy(),
            "flops": spent.numpy(),
            "uncertainty": out.extra["uncertainty"].cpu().numpy(),
            "prediction": pred.numpy(),
        }
        rows.append(
            {
                "speed": speed,
                "accuracy": per[speed]["correct"].mean(),
                "FLOPs per example": float(spent.mean()),
                "FLOPs / full BERT": float(spent.sum() / base.sum()),
                **{
                    f"exit at {k}": float((exit_layer == k).float().mean())
                    for k in range(1, L + 1)
                },
            }
        )
    return pd.DataFrame(rows), per


@scores_on_device  # on the GPU if there is one
@torch.no_grad()
def planned_exits(model, batch: dict, speeds) -> dict:
    """``{speed: (B,) exit layers}`` from one pass with every student: an example
    stops at the first student whose uncertainty is below ``speed`` (layer L if
    none), the layers that running ``model(..., speed=speed)`` gives (a test checks),
    for every speed at the cost of one pass. Used to pick a speed on unlabelled text."""
    batch = to_device(batch, device_of(model))
    out = model.eval()(batch["ids"], batch.get("segments"), batch["valid"])
    u = fastbert.normalized_entropy(out.extra["students"]).cpu()  # (L-1, B)
    exits = {}
    for speed in speeds:
        below = torch.cat([u < speed, torch.ones(1, u.shape[1], dtype=torch.bool)])
        exits[speed] = below.float().argmax(0) + 1  # the first layer that stops
    return exits


@torch.no_grad()
def wall_clock(model, batch: dict, speed=None, repeats: int = 5, chunk: int = 64):
    """The fastest of ``repeats`` timings (seconds) of classifying ``batch`` in chunks
    of ``chunk``: with early exit at ``speed``, or (``speed=None``) by the teacher
    alone, the fine-tuned BERT without students."""
    teacher_model = model.teacher.eval()
    n = len(batch["ids"])
    parts = [
        {k: batch[k][i : i + chunk] for k in ("ids", "segments", "valid")}
        for i in range(0, n, chunk)
    ]
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        for p in parts:
            if speed is None:
                teacher_model(p["ids"], p["segments"], p["valid"])
            else:
                model(p["ids"], p["segments"], p["valid"], speed=speed)
        best = min(best, time.perf_counter() - start)
    return best
