"""Solutions for ``chapters/ulmfit.ipynb`` (checked by ``tests/test_exercises.py``)."""

import math

# The right answer of each of the chapter's questions (the package holds only salted
# hashes of them: scripts/seal_answers.py).
ANSWERS = {
    "why unfreeze gradually": "B",
    "what random weights show": "C",
}

EXPLANATIONS = {
    "why unfreeze gradually": (
        "The classifier's head starts from random weights, so its first gradients are "
        "large and carry no information about language. Let them reach every layer at "
        "once and they overwrite what language modelling put into the lower, more "
        "general layers: catastrophic forgetting. Unfreezing from the top lets the head "
        "settle first; each lower layer joins later, when the signal reaching it is "
        "about the task. (It also saves a little compute, but that is not the point.)"
    ),
    "what random weights show": (
        "A task that the labelled examples alone can teach is solved by random weights "
        "too: pre-training then has nothing to add and the comparison says nothing "
        "about it. Only a task that random weights of the same shape fail can show "
        "that what the language model learnt is what the classifier uses."
    ),
}


def my_stlr(t, T, cut_frac, ratio):
    cut = max(1, math.floor(T * cut_frac))
    if t < cut:
        p = t / cut
    else:
        p = max(0.0, 1 - (t - cut) / (cut * (1 / cut_frac - 1)))
    return (1 + p * (ratio - 1)) / ratio


def my_discriminative_lrs(lr, n):
    # bottom to top: the top group gets lr, each one below it the rate above / 2.6
    return [lr / 2.6 ** (n - 1 - i) for i in range(n)]
