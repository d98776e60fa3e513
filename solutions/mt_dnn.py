"""Solutions for ``chapters/mt_dnn.ipynb`` (checked by ``tests/test_exercises.py``)."""

import math

import torch

ANSWERS = {
    "why sample one task per batch": "B",
    "what the per-task fine-tuning is for": "C",
}

EXPLANATIONS = {
    "why sample one task per batch": (
        "Drawing tasks in proportion to their data is the same as shuffling every "
        "task's mini-batches together and going through them once per epoch (MT-DNN's "
        "loop): each example is seen equally often, so a task's share of the updates "
        "is its share of the data, 60 / 460 = 13% here. A small task then moves the "
        "shared encoder little; a temperature above 1 (p ∝ n^(1/T)) raises its share."
    ),
    "what the per-task fine-tuning is for": (
        "Both arms start from the same pre-trained encoder and end with the same "
        "fine-tuning on the task; the multi-task arm has one extra stage in between. "
        "Any difference is what that stage (training the encoder with the other tasks) "
        "did, plus its extra steps: the chapter says so when it reads the result."
    ),
}


def my_task_probabilities(sizes, temperature):
    w = {
        t: (n ** (1 / temperature) if math.isfinite(temperature) else 1.0)
        for t, n in sizes.items()
    }
    total = sum(w.values())
    return {t: x / total for t, x in w.items()}


def my_listwise_loss(scores, labels):
    # -log softmax(scores)[right], averaged over the queries
    log_p = scores - torch.logsumexp(scores, dim=1, keepdim=True)
    return -log_p.gather(1, labels[:, None]).mean()
