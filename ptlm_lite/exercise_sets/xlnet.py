"""Exercises of ``chapters/xlnet.ipynb``: the two masks of a factorisation order,
partial prediction, and a question on the query stream. Solutions:
``solutions/xlnet.py``.
"""

from __future__ import annotations

import torch

from ..exercises import register_exercise, register_question


def _orders(seed, Ts):
    g = torch.Generator().manual_seed(seed)
    return [torch.randperm(T, generator=g) for T in Ts]


@register_exercise("permutation masks", "xlnet", "my_permutation_masks")
def _permutation_masks():
    from ..masks import permutation_masks

    def reference(order):
        return permutation_masks(order)

    cases = [(o,) for o in [torch.tensor([2, 0, 1]), torch.arange(4)]]
    cases += [(o,) for o in _orders(0, [1, 5, 7, 10])]
    return reference, cases


@register_exercise("partial prediction", "xlnet", "my_partial_prediction")
def _partial_prediction():
    from ..xlnet import partial_prediction

    orders = _orders(1, [4, 6, 7, 10, 3])
    cases = [(o, K) for o, K in zip(orders, [2, 3, 2, 6, 7])]
    return partial_prediction, cases + [(torch.tensor([2, 0, 3, 1]), 2)]


register_question(
    "why a query stream",
    "xlnet",
    "The order 我, 爱 has been read; the next position of the order is either 生 (third "
    "place) or 活 (fourth place). A permutation LM that predicts from h(x_{z<t}) alone, "
    "as GPT does, gives what for the two cases?",
    [
        "Two different distributions, because the tokens 生 and 活 differ.",
        (
            "The same distribution: h(x_{z<t}) does not say which position is "
            "predicted, so it cannot tell the third place from the fourth."
        ),
        "A uniform distribution, because the order is random.",
        "It cannot be computed: a permutation LM needs [MASK] tokens.",
    ],
)
