"""Exercises and questions of ``chapters/mt_dnn.ipynb``: the task mixture and the
listwise ranking loss. Solutions: ``solutions/mt_dnn.py``.
"""

from __future__ import annotations

import math

from ..exercises import register_exercise, register_question


@register_exercise("task sampling probabilities", "mt_dnn", "my_task_probabilities")
def _probabilities():
    from ..mt_dnn import task_probabilities

    sizes = [
        {"a": 100, "b": 300},
        {"nli": 3920, "sts": 57, "rank": 1050, "single": 85},
        {"only": 7},
        {"x": 1, "y": 4, "z": 9},
    ]
    cases = [(s, t) for s in sizes for t in (1.0, 2.0, 3.5, math.inf)]
    return (lambda sizes, temperature: task_probabilities(sizes, temperature)), cases


@register_exercise("listwise ranking loss", "mt_dnn", "my_listwise_loss")
def _listwise():
    import torch

    from ..mt_dnn import ranking_loss

    g = torch.Generator().manual_seed(0)
    cases = [
        (torch.tensor([[1.0, 0.0, -1.0]]), torch.tensor([0])),
        (torch.tensor([[1.0, 0.0, -1.0]]), torch.tensor([2])),
        (torch.zeros(3, 4), torch.tensor([0, 1, 3])),
        (torch.randn(5, 2, generator=g) * 3, torch.tensor([0, 1, 1, 0, 1])),
        (torch.randn(4, 6, generator=g), torch.tensor([5, 0, 2, 2])),
    ]
    return (lambda scores, labels: ranking_loss(scores, labels)), cases


register_question(
    "why sample one task per batch",
    "mt_dnn",
    "MT-DNN draws one task per mini-batch with probability proportional to the task's "
    "training set. With tasks of 400 and 60 examples, what does that rule do to the "
    "small task?",
    [
        "Nothing: every task gets the same number of mini-batches.",
        "Its examples are seen about as often as the large task's examples (every "
        "example equally often), so it gets only about 13% of the updates to the "
        "shared encoder.",
        "It is never drawn until the large task is finished.",
        "Its learning rate is scaled up to make up for its size.",
    ],
)

register_question(
    "what the per-task fine-tuning is for",
    "mt_dnn",
    "After the multi-task stage, MT-DNN fine-tunes a copy of the model on each task "
    "alone. Why compare the result with fine-tuning BERT on that task alone, from the "
    "same pre-trained weights?",
    [
        "Because the multi-task model has fewer parameters than BERT.",
        "To measure the speed-up of multi-task training.",
        "The only difference between the two is then the multi-task stage (what the "
        "other tasks taught the shared encoder), so the comparison measures that.",
        "Because fine-tuning BERT alone is the paper's upper bound.",
    ],
)
