"""Exercises and questions of ``chapters/gpt3.ipynb``: the k-shot prompt and the
accuracy at the query. Solutions: ``solutions/gpt3.py``.
"""

from __future__ import annotations

import torch

from ..exercises import register_exercise, register_question


def _gpt3_task():
    from ..icl import SymbolTasks

    return SymbolTasks(n_inputs=8, n_labels=8)  # the chapter's T


@register_exercise("k-shot prompt", "gpt3", "my_prompt")
def _prompt():
    return _gpt3_task().prompt, [([], 3), ([(0, 1)], 0), ([(2, 5), (7, 7), (2, 5)], 4)]


@register_exercise("accuracy at the query", "gpt3", "my_accuracy")
def _accuracy():
    T = _gpt3_task()

    def reference(logits, x, y):
        return (T.label_logits(logits, x).argmax(-1) == y).float().mean().item()

    g = torch.Generator().manual_seed(3)
    return reference, [
        (
            torch.randn(n, T.vocab_size, generator=g),
            torch.randint(8, (n,), generator=g),
            torch.randint(8, (n,), generator=g),
        )
        for n in (1, 5, 64)
    ]


register_question(
    "why no weight stores the answer",
    "gpt3",
    "In this chapter's in-context tasks, why can no weight of the model store "
    "the answers?",
    [
        "The model is too small to memorise all the mappings it is trained on.",
        "The mapping x → y is drawn afresh for every sequence, so only the context "
        "tells it.",
        "The answer tokens are left out of the loss during training.",
        "The embeddings are frozen, so the answers cannot be stored in them.",
    ],
)

register_question(
    "what recall accuracy measures",
    "gpt3",
    "On the recall family (a random mapping per sequence), 8-shot accuracy "
    "equals the share of queries "
    "already shown among the demonstrations, plus chance on the others. What "
    "does it measure?",
    [
        "How well the model infers the mapping's rule from the demonstrations.",
        "Copying: a random mapping gives no clue to an unseen query, so this is the "
        "ceiling of any reader.",
        "How many of the mappings the model memorised during training.",
        "Nothing: accuracy above chance at 8 shots is noise.",
    ],
)
