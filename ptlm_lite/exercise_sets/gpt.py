"""Exercises and questions of ``chapters/gpt.ipynb``: top-k filtering and the cached
causal mask. Solutions: ``solutions/gpt.py``.
"""

from __future__ import annotations

import torch

from ..exercises import register_exercise, register_question


@register_exercise("top-k filtering", "gpt", "my_top_k")
def _top_k():
    from ..generate import filter_logits

    g = torch.Generator().manual_seed(0)
    cases = [(torch.randn(2, 10, generator=g), k) for k in (1, 3, 10)]
    return (lambda logits, k: filter_logits(logits, top_k=k)), cases


@register_exercise("cached causal mask", "gpt", "my_cache_mask")
def _cache_mask():
    from .. import masks

    return (lambda T, past: masks.causal_mask(T, memory=past)), [
        (1, 0),
        (1, 5),
        (3, 4),
        (4, 0),
    ]


register_question(
    "why a causal mask",
    "gpt",
    "Why does GPT's pre-training use a causal mask?",
    [
        "It halves the memory, since half of the attention scores need not be stored.",
        "It stops the model from attending to the padding at the end of a batch.",
        "Each position predicts the next token, so it must not see that token or "
        "later ones.",
        "The fine-tuning tasks are read left to right, so pre-training must match "
        "them.",
    ],
)

register_question(
    "what a task must need",
    "gpt",
    "Suppose GPT were fine-tuned on sentences such as "
    '"Pibrou is a small city in '
    'Semoria.", labelled person, city, country or organisation. Why could that '
    "task not test the "
    "claim that pre-training helps?",
    [
        "The sentences are too short for attention to matter, so any model does "
        "equally well.",
        "The kind word is in the input, so weights trained on the labelled examples "
        "alone learn it too.",
        "Accuracy cannot be compared with chance when there are four classes.",
        "A single sentence has no [delim] token, so GPT's input transformation does "
        "not apply.",
    ],
)
