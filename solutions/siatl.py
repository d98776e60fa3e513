"""Solutions for ``chapters/siatl.ipynb`` (checked by ``tests/test_exercises.py``)."""

import math

# The right answer of each of the chapter's questions (the package holds only salted
# hashes of them: scripts/seal_answers.py).
ANSWERS = {
    "why an auxiliary LM loss": "B",
    "why decay the weight": "B",
}

EXPLANATIONS = {
    "why an auxiliary LM loss": (
        "With a few hundred labels, the classification loss alone can move the "
        "pre-trained layers anywhere that fits those labels, and the new layers start "
        "random, so their first gradients are noise. The LM loss on the same text "
        "keeps pulling the pre-trained layers towards predicting the next word, which "
        "is what made them worth transferring: it limits catastrophic forgetting and "
        "acts as a regulariser. It uses the task's training text only, never the test "
        "set, and it does not replace the labels."
    ),
    "why decay the weight": (
        "The auxiliary loss matters most at the start, when the new layers are random "
        "and would otherwise drag the pre-trained ones. Later, the model should serve "
        "the task: a large constant γ keeps spending capacity on next-word prediction, "
        "which is not what is evaluated. An exponential decay gives the LM loss a "
        "strong voice early and a faint one at the end."
    ),
}


def my_aux_weight(step, total, start, end):
    # an exponential decay: start at step 1, end at step total
    if total == 1:
        return start
    return start * (end / start) ** ((step - 1) / (total - 1))


def my_unfrozen_groups(step, starts):
    # group i (top first) trains from step starts[i] on
    return sum(step >= s for s in starts)
