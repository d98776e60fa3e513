"""Exercises and questions of ``chapters/transformer.ipynb``: the causal mask and the
attention weights. Solutions: ``solutions/transformer.py``.
"""

from __future__ import annotations

import torch

from ..exercises import register_exercise, register_question


@register_exercise("causal mask", "transformer", "my_causal_mask")
def _causal_mask():
    from .. import masks

    return masks.causal_mask, [(1,), (2,), (5,), (9,)]


@register_exercise("attention weights", "transformer", "my_attention_weights")
def _attention_weights():
    from .. import masks
    from ..attention import attention

    # q (Tq, d), k (Tk, d) -> (Tq, Tk), through the package's attention
    def reference(q, k, mask):
        return attention(
            q[None, None], k[None, None], k[None, None], mask=mask, return_weights=True
        )[1][0, 0]

    g = torch.Generator().manual_seed(1)
    cases = [
        (
            torch.randn(4, 8, generator=g),
            torch.randn(4, 8, generator=g),
            masks.causal_mask(4),
        ),
        (
            torch.randn(3, 16, generator=g),
            torch.randn(5, 16, generator=g),
            torch.ones(3, 5, dtype=torch.bool),
        ),
        (
            torch.randn(5, 4, generator=g),
            torch.randn(5, 4, generator=g),
            masks.prefix_mask(5, 2),
        ),
    ]
    return reference, cases


register_question(
    "why divide by √d",
    "transformer",
    "Why are the attention scores q·k divided by √d before the softmax?",
    [
        "It makes the attention scores cheaper to compute when d is large.",
        "It keeps the variance of the scores near 1 whatever d, so the softmax does "
        "not saturate.",
        "It makes each row of attention weights sum to one, like a distribution.",
        "It stops a query from attending to positions later than its own.",
    ],
)

register_question(
    "what teacher forcing feeds",
    "transformer",
    "When the date model trains with teacher forcing, what does the decoder read "
    "at target position t?",
    [
        "Its own prediction from position t − 1, as it will at test time.",
        "The true target characters before position t: the target shifted one place "
        "right behind <bos>.",
        "The whole true target, the character at t included; only the loss hides it.",
        "Nothing but the encoder's output: the target enters through the loss alone.",
    ],
)
