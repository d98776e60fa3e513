"""Exercises and questions of ``chapters/ulmfit.ipynb``: the slanted triangular
learning rate and the discriminative rates. Solutions: ``solutions/ulmfit.py``.
"""

from __future__ import annotations

from ..exercises import register_exercise, register_question


@register_exercise("slanted triangular learning rate", "ulmfit", "my_stlr")
def _stlr():
    from ..ulmfit import stlr

    cases = [
        (t, T, cut_frac, ratio)
        for T, cut_frac, ratio in ((100, 0.1, 32), (1000, 0.2, 10), (55, 0.1, 32))
        for t in (0, 1, int(T * cut_frac) // 2, int(T * cut_frac), T // 2, T - 1, T)
    ]
    return (lambda t, T, cut_frac, ratio: stlr(t, T, cut_frac, ratio)), cases


@register_exercise("discriminative learning rates", "ulmfit", "my_discriminative_lrs")
def _discriminative():
    from ..ulmfit import discriminative_lrs

    cases = [(0.01, 1), (0.01, 4), (0.004, 5), (1.0, 3)]
    return (lambda lr, n: discriminative_lrs(lr, n)), cases


register_question(
    "why unfreeze gradually",
    "ulmfit",
    "ULMFiT fine-tunes the classifier by unfreezing the top layer first, then one more "
    "layer per epoch. What is this for?",
    [
        "It makes each step cheaper, and saving time is the reason the paper gives.",
        "The new head starts random: training only the top first keeps its large, "
        "noisy early gradients from overwriting what the lower layers learnt as a "
        "language model (catastrophic forgetting).",
        "Frozen layers act as dropout, which is what regularises the classifier.",
        "The lower layers would otherwise get a larger learning rate than the top one.",
    ],
)

register_question(
    "what random weights show",
    "ulmfit",
    "The chapter reports the classifier trained from random weights next to ULMFiT. "
    "Why must the task be one that random weights fail?",
    [
        "Because random weights train faster, so they would win on time.",
        "Otherwise the comparison would be unfair to ULMFiT's smaller learning rates.",
        "If the labelled examples alone teach the task, pre-training has nothing to "
        "add, and the task cannot show that it helps.",
        "Because a random-weights LSTM cannot represent padding.",
    ],
)
