"""Solutions for ``chapters/fastbert.ipynb`` (checked by ``tests/test_exercises.py``)."""

import math

import torch
import torch.nn.functional as F

ANSWERS = {
    "why no labels": "B",
    "where the speed-up comes from": "C",
}

EXPLANATIONS = {
    "why no labels": (
        "A student's target is not a label but the teacher's distribution over the "
        "labels, and the frozen, fine-tuned teacher produces one for any input. The "
        "labelled examples were needed once, to fine-tune the teacher; after that, "
        "any in-domain text teaches the students to predict what the teacher would "
        "say, including how sure it would be."
    ),
    "where the speed-up comes from": (
        "FLOPs count only the matrix products. A real forward pass also pays fixed "
        "costs per layer (launching the operations, Python, the student classifier "
        "and the exit test, gathering the examples that go on), and a batch that "
        "shrinks layer by layer uses the processor less efficiently. On a model this "
        "small those fixed costs are a large share of the time, so the clock saves "
        "less than the FLOPs; on a wide model they are a small share."
    ),
}


def my_normalized_entropy(logits):
    # entr(p) = -p log p, and 0 where p = 0
    n = logits.shape[-1]
    return torch.special.entr(logits.softmax(-1)).sum(-1) / math.log(n)


def my_distill_loss(student_logits, teacher_logits):
    # kl_div(input=log q, target=log p) = p (log p - log q), elementwise
    log_t = teacher_logits.log_softmax(-1).expand_as(student_logits)
    kl = F.kl_div(
        student_logits.log_softmax(-1), log_t, log_target=True, reduction="none"
    )
    return kl.sum(-1).mean(-1).sum()  # (S, B, N) -> (S, B) -> (S,) -> one number
