"""Exercises of ``chapters/reformer.ipynb``: the LSH mask of one round, undoing a
reversible block, and two questions. Solutions: ``solutions/reformer.py``.
"""

from __future__ import annotations

import torch

from ..exercises import register_exercise, register_question


@register_exercise("lsh mask", "reformer", "my_lsh_mask")
def _lsh_mask():
    from ..reformer import lsh_mask

    def reference(buckets, chunk):
        return lsh_mask(buckets[None], chunk)

    g = torch.Generator().manual_seed(0)
    cases = [
        (torch.tensor([0, 1, 0, 1, 1, 0]), 2),  # the docstring's example
        (torch.tensor([2, 2, 2, 2]), 4),  # one bucket, one chunk: all but oneself
        (torch.tensor([0, 1, 2, 3]), 1),  # every token alone: itself
        (torch.tensor([3, 1, 3, 0, 1, 3, 1, 0]), 3),  # a short last chunk
        (torch.randint(0, 4, (16,), generator=g), 4),
        (torch.randint(0, 2, (12,), generator=g), 2),
    ]
    return reference, cases


def _reverse_case(seed, B, T, D):
    g = torch.Generator().manual_seed(seed)
    W1, W2 = torch.randn(D, D, generator=g), torch.randn(D, D, generator=g)
    y1, y2 = torch.randn(B, T, D, generator=g), torch.randn(B, T, D, generator=g)
    return y1, y2, _Layer(W1), _Layer(W2)


class _Layer:
    """F or G of a case: x -> tanh(x W), a plain function of its input."""

    def __init__(self, W):
        self.W = W

    def __call__(self, x):
        return torch.tanh(x @ self.W)


@register_exercise("undo a reversible block", "reformer", "my_reverse")
def _reverse():
    def reference(y1, y2, f, g):
        x2 = y2 - g(y1)
        return y1 - f(x2), x2

    cases = [_reverse_case(s, B, T, D) for s, B, T, D in ((0, 1, 3, 4), (1, 2, 5, 8))]
    return reference, cases


register_question(
    "why not attend to oneself",
    "reformer",
    "In LSH attention the keys are the queries, normalised (shared QK). Why does the "
    "Reformer forbid a token to attend to itself, unless nothing else is allowed?",
    [
        "To save the memory of the diagonal of the attention matrix.",
        "Its own key points the same way as its query, so its score would nearly always "
        "be the largest and the token would mostly attend to itself.",
        "Because the causal mask already removes the diagonal.",
        "So that each bucket holds an even number of tokens.",
    ],
)
register_question(
    "what reversible layers cost",
    "reformer",
    "A reversible Transformer keeps only the last layer's output during the forward "
    "pass. What does it pay for the memory it saves?",
    [
        "Nothing: the backward pass is the same as usual.",
        "Twice as many parameters, one copy for each half of the state.",
        "The backward pass recomputes every layer's forward pass: about one extra "
        "forward pass of compute per training step.",
        "The model can no longer use attention, only feed-forward layers.",
    ],
)
