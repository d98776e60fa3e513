"""Exercises of ``chapters/transformer_xl.ipynb``: the same-length memory mask, the four
terms of relative attention, and two questions. Solutions:
``solutions/transformer_xl.py``.
"""

from __future__ import annotations

import math

import torch

from ..exercises import register_exercise, register_question


@register_exercise("same-length memory mask", "transformer_xl", "my_window_mask")
def _window_mask():
    from ..transformer_xl import window_mask

    cases = [(3, 3, 3), (4, 0, 2), (2, 5, 3), (5, 2, 10), (6, 4, 1), (1, 7, 4)]
    return window_mask, cases


def _relative_case(seed, Tq, Tk, d):
    from ..layers import sinusoidal_positions

    g = torch.Generator().manual_seed(seed)
    q, k = torch.randn(Tq, d, generator=g), torch.randn(Tk, d, generator=g)
    W_r = torch.randn(d, d, generator=g) / math.sqrt(d)
    u, v = torch.randn(d, generator=g), torch.randn(d, generator=g)
    return q, k, sinusoidal_positions(Tk, d), W_r, u, v


@register_exercise("relative attention scores", "transformer_xl", "my_relative_scores")
def _relative_scores():
    from .. import masks
    from ..transformer_xl import RelativeAttention

    @torch.no_grad()
    def reference(q, k, R, W_r, u, v):
        (Tq, d), Tk = q.shape, k.shape[0]
        with torch.random.fork_rng():  # its initial weights are overwritten anyway
            att = RelativeAttention(d, 1)  # one head: d_head = d
        att.r.weight.copy_(W_r)
        att.u.copy_(u[None])
        att.v.copy_(v[None])
        # (b) + (d), divided by √d as the package adds it to (q + u)·k / √d
        bias = att.relative_bias(q[None, None], k[None, None])[0, 0] * math.sqrt(d)
        scores = (q + u) @ k.T + bias  # + (a) + (c)
        return scores.masked_fill(~masks.causal_mask(Tq, memory=Tk - Tq), float("-inf"))

    cases = [
        _relative_case(0, 3, 3, 4),  # no memory
        _relative_case(1, 3, 5, 4),  # two memory positions
        _relative_case(2, 4, 10, 8),
        _relative_case(3, 1, 6, 2),
    ]
    return reference, cases


register_question(
    "longest dependency",
    "transformer_xl",
    "A Transformer-XL with 16 layers evaluates with the same-length mask and a window "
    "of 150 tokens: every token sees itself and the 149 before it, in every layer. How "
    "far back can the last token's output depend on the text?",
    [
        "149 tokens: the window, as for a model without memory.",
        "150 tokens: the window plus the memory of one segment.",
        "16 × 149 = 2,384 tokens: each layer reaches 149 positions further back.",
        "Arbitrarily far: the memory is recurrent, like an RNN's state.",
    ],
)
register_question(
    "why detach the memory",
    "transformer_xl",
    "Transformer-XL reads the previous segment's states as keys and values but stops "
    "the gradient at them. What would change without the stop-gradient?",
    [
        "Nothing: the memory's states carry no gradient anyway.",
        "The backward pass would run through every earlier segment, so the memory and "
        "time of one training step would grow with the length of the text read so far.",
        "The model could see future tokens through the memory.",
        "The relative positions would become absolute ones.",
    ],
)
