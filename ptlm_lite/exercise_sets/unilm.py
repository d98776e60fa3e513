"""Exercises and questions of ``chapters/unilm.ipynb``: the seq2seq mask from segment
ids, and the mask of one cached generation step. Solutions: ``solutions/unilm.py``.
"""

from __future__ import annotations

import torch

from ..exercises import register_exercise, register_question


@register_exercise("seq2seq mask from segments", "unilm", "my_seq2seq_mask")
def _seq2seq_mask():
    from .. import masks

    cases = [
        (torch.tensor([[0, 0, 1, 1, 1]]),),
        (torch.tensor([[0, 1]]),),
        (torch.tensor([[0, 0, 0, 0]]),),
        (torch.tensor([[0, 0, 0, 1, 1, 1], [0, 1, 1, 1, 1, 1]]),),
    ]
    return (lambda segments: masks.seq2seq_mask(segments)), cases


@register_exercise("cached generation step mask", "unilm", "my_step_mask")
def _step_mask():
    from .. import masks

    def step_mask(src_valid, t):
        S = src_valid.shape[1]
        keys = torch.cat([src_valid, src_valid.new_ones(len(src_valid), t + 1)], 1)
        return masks.causal_mask(2, memory=S + t - 1) & keys[:, None, :]

    cases = [
        (torch.tensor([[True, True, True]]), 1),
        (torch.tensor([[True, True, False, False]]), 3),
        (torch.tensor([[True, True, True, True], [True, True, True, False]]), 2),
    ]
    return step_mask, cases


register_question(
    "why the source cannot see the target",
    "unilm",
    "In UniLM's seq2seq mask, the source tokens may not attend to the target tokens. "
    "Why not?",
    [
        "When the model generates, the target does not exist yet: a source that "
        "learnt to read the target would be encoded from tokens it cannot have.",
        "The target is predicted left to right, so the source must be read left to "
        "right too.",
        "Attention from the source to the target would double the cost of every "
        "training step.",
        "Without it the segment embeddings could not tell the source from the target.",
    ],
)

register_question(
    "what the bidirectional-only model lacks",
    "unilm",
    "A model pre-trained with the bidirectional mask only is asked to generate under "
    "the seq2seq mask: the [MASK] to fill is the last token it may see. Why would the "
    "paper expect it to do worse than a model that also trained with the seq2seq mask?",
    [
        "Its weights have never seen a [MASK] token, so it cannot fill one.",
        "Every [MASK] it filled in training had words on both sides; it never "
        "learnt to predict from the left context alone.",
        "Its vocabulary has no [SEP] token, so it cannot end a sentence.",
        "Bidirectional attention costs more memory, so it must run with fewer layers.",
    ],
)
