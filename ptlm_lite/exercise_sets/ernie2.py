"""Exercises and questions of ``chapters/ernie2.ipynb``: the continual schedule's
shares and sentence reordering's label. Solutions: ``solutions/ernie2.py``.
"""

from __future__ import annotations

from ..exercises import register_exercise, register_question


@register_exercise("continual stage shares", "ernie2", "my_stage_shares")
def _shares():
    from ..ernie2 import continual_schedule

    cases = [
        ([["mlm"]],),
        ([["mlm"], ["caps"], ["order"]],),
        ([["a", "b"], ["c"], ["d", "e", "f"]],),
        ([["knowledge_masking"], ["capitalisation", "token_document"]],),
    ]
    return (lambda stages: [s.shares for s in continual_schedule(stages, 1)]), cases


@register_exercise("sentence reordering label", "ernie2", "my_reorder_label")
def _reorder():
    import itertools

    from ..ernie2 import PERMUTATIONS

    cases = [(p,) for m in (1, 2, 3) for p in itertools.permutations(range(m))]
    return (lambda order: PERMUTATIONS.index(tuple(order))), cases


register_question(
    "why keep training earlier tasks",
    "ernie2",
    "ERNIE 2.0's stage 3 trains tasks 1, 2 and 3 together instead of task 3 alone. "
    "What does keeping tasks 1 and 2 in the mixture prevent?",
    [
        "It makes each step cheaper, since the earlier tasks are already learned.",
        "It prevents the new task from being learned too fast.",
        "Updates for the new task alone move the shared encoder away from what the "
        "earlier tasks need, and nothing pulls it back: their skill is forgotten. "
        "Training them in every later stage keeps pulling it back.",
        "It lets the model skip the task embedding.",
    ],
)

register_question(
    "what the task embedding does",
    "ernie2",
    "ERNIE 2.0 adds an embedding of the task id to every input token. What does it "
    "give the shared encoder?",
    [
        "A way to tell which task a batch is for, so it can compute somewhat different "
        "features for tasks whose inputs look alike (a lowercased sentence for "
        "capitalisation, a sentence for masking), while the weights stay shared.",
        "A separate set of encoder weights for each task.",
        "The labels of the task, which makes the task easier.",
        "Nothing at training time; it is only used at inference.",
    ],
)
