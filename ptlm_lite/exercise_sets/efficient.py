"""Exercises of ``chapters/efficient.ipynb``: a sliding-window mask, blockwise attention
computed block by block, causal linear attention, and three questions. Solutions:
``solutions/efficient.py``.
"""

from __future__ import annotations

import torch

from ..exercises import register_exercise, register_question


@register_exercise("local window mask", "efficient", "my_local_mask")
def _local_mask():
    from ..efficient import local_mask

    return local_mask, [
        (5, 2, False),
        (6, 3, True),
        (7, 1, False),
        (4, 9, True),
        (9, 3, False),
        (1, 2, True),
    ]


def _qkv(seed, B, H, T, d):
    g = torch.Generator().manual_seed(seed)
    return tuple(torch.randn(B, H, T, d, generator=g) for _ in range(3))


@register_exercise("attention by blocks", "efficient", "my_block_attention")
def _block_attention():
    from ..efficient import block_attention

    # T is a multiple of the block in every case: no padding needed
    return block_attention, [
        (*_qkv(0, 1, 1, 6, 4), 2),
        (*_qkv(1, 2, 3, 12, 8), 4),
        (*_qkv(2, 1, 2, 8, 4), 8),
        (*_qkv(3, 2, 1, 9, 3), 1),
    ]


@register_exercise("causal linear attention", "efficient", "my_causal_linear_attention")
def _causal_linear():
    from ..efficient import linear_attention

    return (lambda q, k, v: linear_attention(q, k, v, causal=True)), [
        _qkv(4, 1, 1, 5, 4),
        _qkv(5, 2, 3, 16, 8),
        _qkv(6, 1, 2, 33, 16),
    ]


register_question(
    "what a mask saves",
    "efficient",
    "Longformer's sliding window can be written as a boolean mask passed to full "
    "attention. At T = 4,096 tokens, what does that mask save?",
    [
        "Time and memory both drop to O(T·w): masked scores are never computed.",
        "Nothing in cost: the T×T scores are still computed, then masked; it changes "
        "who sees whom, not how much work is done.",
        "Memory but not time: masked scores are computed but never stored.",
        "Time but not memory: the softmax skips masked entries but they are stored.",
    ],
)
register_question(
    "why Linformer is not causal",
    "efficient",
    "Why can Linformer's projection not be used as it is in a left-to-right "
    "language model?",
    [
        "A projection with k rows has too few parameters to model language.",
        "Each projected key and value mixes every position, later ones included, so "
        "any query would read the future through them.",
        "The softmax cannot be taken over k projected rows instead of T keys.",
        "It only works when the sequence length is a power of two.",
    ],
)
register_question(
    "how far a window reaches",
    "efficient",
    "A 2-layer model whose attention is local_mask(T, 4) (|i − j| < 4) reads its "
    "answer at position 0. What is the farthest position whose token can change "
    "that answer?",
    ["3", "4", "6", "8"],
)
