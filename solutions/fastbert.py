"""Solutions for ``chapters/fastbert.ipynb`` (checked by ``tests/test_exercises.py``)."""

import math

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
    logp = logits.log_softmax(-1)
    return -(logp.exp() * logp).sum(-1) / math.log(logits.shape[-1])


def my_distill_loss(student_logits, teacher_logits):
    log_t = teacher_logits.log_softmax(-1)  # (B, N)
    log_s = student_logits.log_softmax(-1)  # (S, B, N)
    return (log_t.exp() * (log_t - log_s)).sum(-1).mean(1).sum()
