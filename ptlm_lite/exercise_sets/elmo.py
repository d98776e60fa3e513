"""Exercises and questions of ``chapters/elmo.ipynb``: ELMo's scalar mix and the
backward LM's targets. Solutions: ``solutions/elmo.py``.
"""

from __future__ import annotations

import torch

from ..exercises import register_exercise, register_question


@register_exercise("scalar mix", "elmo", "my_scalar_mix")
def _scalar_mix():
    def reference(layers, w, gamma):
        return gamma * sum(p * h for p, h in zip(torch.softmax(w, 0), layers))

    g = torch.Generator().manual_seed(0)
    cases = [
        ([torch.ones(2, 3), 2 * torch.ones(2, 3)], torch.zeros(2), 1.0),
        (
            [torch.randn(2, 4, 5, generator=g) for _ in range(3)],
            torch.tensor([0.5, -1.0, 2.0]),
            0.7,
        ),
        ([torch.randn(3, generator=g)], torch.tensor([3.0]), 2.0),
        (
            [torch.randn(1, 2, generator=g) for _ in range(4)],
            torch.tensor([1.0, 1.0, 1.0, 5.0]),
            1.5,
        ),
    ]
    return reference, cases


@register_exercise("backward targets", "elmo", "my_backward_targets")
def _backward_targets():
    from ..elmo import lm_targets

    ids = torch.tensor([[5, 6, 7, 8], [9, 10, 0, 0]])
    cases = [
        (ids, ids != 0),
        (torch.tensor([[3, 4, 5]]), torch.tensor([[True, True, True]])),
        (torch.tensor([[3]]), torch.tensor([[True]])),
        (
            torch.tensor([[1, 2, 3, 4, 0]]),
            torch.tensor([[True, True, True, True, False]]),
        ),
    ]
    return (lambda ids, valid: lm_targets(ids, valid)[1]), cases


register_question(
    "why two language models",
    "elmo",
    "ELMo trains a forward and a backward LSTM language model separately and only "
    "concatenates their states afterwards. Why not one bidirectional LSTM trained to "
    "predict each next word from its state?",
    [
        "Two models have twice the parameters, and size is what makes ELMo work.",
        "A bidirectional LSTM cannot be run on a GPU.",
        "The backward half of that state has already read the next word: the model "
        "would copy the answer instead of learning the language, and its loss would "
        "fall far below a real language model's.",
        "The two directions need different vocabularies.",
    ],
)

register_question(
    "what layer 0 can tell",
    "elmo",
    "In the chapter's sense probe, each occurrence of 'orange' is compared with the "
    "centres of the other occurrences of each sense. Why does ELMo's layer 0 (the "
    "character CNN) score exactly 0.5, a tie, on every occurrence?",
    [
        "Its vectors are too short.",
        "It computes a word's vector from the word's characters alone, so every "
        "occurrence of 'orange' gets the same vector and the same answer.",
        "It was not trained.",
        "Characters cannot tell colours from cities in any word.",
    ],
)
