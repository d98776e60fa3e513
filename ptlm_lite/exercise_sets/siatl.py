"""Exercises and questions of ``chapters/siatl.ipynb``: the auxiliary LM weight's
schedule and sequential unfreezing. Solutions: ``solutions/siatl.py``.
"""

from __future__ import annotations

from ..exercises import register_exercise, register_question


@register_exercise("auxiliary weight schedule", "siatl", "my_aux_weight")
def _aux_weight():
    from ..siatl import aux_weight

    cases = [
        (step, total, start, end)
        for total, start, end in ((11, 1.0, 0.01), (30, 0.5, 0.05), (7, 0.2, 0.1))
        for step in sorted({1, 2, total // 2, total - 1, total})
    ]
    return (lambda step, total, start, end: aux_weight(step, total, start, end)), cases


@register_exercise("sequential unfreezing", "siatl", "my_unfrozen_groups")
def _unfrozen():
    from ..siatl import unfrozen_groups

    cases = [
        (step, starts)
        for starts in ((1, 11, 21), (1, 4, 7), (1, 2), (1, 5, 6, 20))
        for step in (1, 2, 3, 4, 5, 6, 7, 10, 11, 12, 20, 21, 30)
    ]
    return (lambda step, starts: unfrozen_groups(step, starts)), cases


register_question(
    "why an auxiliary LM loss",
    "siatl",
    "SiATL adds the language model's next-token loss on the task's own text to the "
    "classification loss while it fine-tunes. What is it for?",
    [
        "It replaces the labels: with the LM loss the classifier needs no labelled "
        "examples at all.",
        "It keeps the pre-trained layers useful as a language model while the new, "
        "random layers' gradients would otherwise pull them anywhere the few labels "
        "allow: less catastrophic forgetting, and a regulariser when labels are few.",
        "It makes each step cheaper, because the decoder shares the embedding.",
        "It teaches the classifier the test set's answers, since the LM reads the "
        "test sentences.",
    ],
)

register_question(
    "why decay the weight",
    "siatl",
    "SiATL's weight γ on the LM loss starts high and decays over training. Why not "
    "keep it constant?",
    [
        "A constant weight would make the loss non-differentiable.",
        "Early on the new layers are random and the LM loss protects the pre-trained "
        "ones; later the task should dominate, or the model keeps optimising a goal "
        "(predicting the next word) that is not the one it is evaluated on.",
        "The LM loss grows during training, so γ must shrink to keep the product "
        "constant.",
        "Decaying γ is what freezes the embedding at the end of training.",
    ],
)
