"""MT-DNN's recipe on the book's suite: the task mixture, its data as tensors, the
multi-task model on a copy of the pre-trained BERT, and each task's score.

The mixture has one task of each of the paper's four kinds, all from the synthetic
world (:mod:`ptlm_lite.suite`)::

    kind_from_name      single-sentence classification  140 examples  surface
    slot_fit            pairwise classification         418           surface
    kind_similarity     pairwise similarity (regression) 420          surface
    slot_filler         relevance ranking (2 candidates)  60          needs pre-training

The chapter's new task for domain adaptation, ``kind_from_sentence``, stays out of it.

Chapter: ``chapters/mt_dnn.ipynb``.
"""

from __future__ import annotations

import copy

import numpy as np
import torch

from ..device import device_of, eval_mode, scores_on_device
from ..mt_dnn import mt_dnn

__all__ = ["TASK_HEADS", "tasks", "task_data", "multitask_model", "task_scores"]

# the head of each task of the mixture (mt_dnn.mt_dnn's spec)
TASK_HEADS = {
    "kind_from_name": ("classify", 4),
    "slot_fit": ("classify", 2),
    "kind_similarity": "similarity",
    "slot_filler": "rank",
}


def tasks(names=tuple(TASK_HEADS)) -> dict:
    """``{name: suite Task}`` of the mixture (world 0, the one BERT read)."""
    from .. import suite
    from ..suite import multitask

    mine = [n for n in names if n in multitask.MT_TASKS]
    built = suite.tasks(0, [n for n in names if n not in mine])
    built.update({n: multitask.get(n) for n in mine})
    return {n: built[n] for n in names}


def task_data(tasks: dict, tok, split: str = "train", heads=None) -> dict:
    """``{task: batch dict}`` of ``split`` for every task: BERT's inputs
    (:func:`ptlm_lite.finetune.encoder_batch`), with ``scores = label / (levels - 1)``
    in place of ``labels`` for a similarity head.
    """
    from ..finetune import encoder_batch

    heads = TASK_HEADS if heads is None else heads
    out = {}
    for name, task in tasks.items():
        b = encoder_batch(task, split, tok)
        if heads[name] == "similarity":
            b["scores"] = b.pop("labels").float() / (task.n_labels - 1)
        out[name] = b
    return out


def multitask_model(pretrained, heads=None):
    """MT-DNN's model: a fresh head per task on a *copy* of ``pretrained``'s encoder
    (the pre-trained model stays as it was)."""
    heads = TASK_HEADS if heads is None else heads
    return mt_dnn(copy.deepcopy(pretrained.bert), heads)


@scores_on_device  # on the GPU if there is one
@torch.no_grad()
def task_scores(model, test: dict) -> dict:
    """Each task's test score under ``model`` (a MultiTask): accuracy for a classifier
    or a ranker, Pearson's r between prediction and target for a similarity head."""
    with eval_mode(model):
        device = device_of(model)
        out = {}
        for name, batch in test.items():
            inputs = {
                k: v.to(device)
                for k, v in batch.items()
                if k not in ("labels", "scores")
            }
            pred = model(name, **inputs).logits.cpu()
            if "scores" in batch:
                out[name] = float(
                    np.corrcoef(pred.numpy(), batch["scores"].numpy())[0, 1]
                )
            else:
                out[name] = float((pred.argmax(-1) == batch["labels"]).float().mean())
    return out
