"""Exercises and questions of ``chapters/mass.ipynb``: MASS's noise for a given
fragment, and what each prediction may read. Solutions: ``solutions/mass.py``.
"""

from __future__ import annotations

import torch

from ..exercises import register_exercise, register_question


@register_exercise("mass noise at a given start", "mass", "my_mass_noise")
def _mass_noise():
    from ..mass import mass_noise

    def noise(tokens, start, k, mask_id):
        p = mass_noise([tokens], torch.Generator(), mask_id=mask_id, k=k, start=start)
        return p.source, p.target

    cases = [
        ([11, 12, 13, 14, 15, 16], 2, 3, 4),
        ([11, 12, 13, 14, 15, 16], 0, 1, 4),
        ([11, 12, 13, 14, 15, 16], 0, 6, 4),
        ([21, 22, 23, 24, 25], 4, 1, 103),
        ([7, 7, 8, 9], 1, 2, 4),
    ]
    return noise, cases


@register_exercise("what each MASS prediction reads", "mass", "my_reads")
def _reads():
    from ..mass import reads

    cases = [(7, 2, 3), (6, 3, 1), (5, 0, 5), (8, 0, 4), (8, 5, 3), (1, 0, 1)]
    return reads, cases


register_question(
    "what k = m leaves the encoder",
    "mass",
    "MASS with k = m masks every token of the text in the encoder's input. What can "
    "the encoder still tell the decoder?",
    [
        "The text's tokens in both directions, as BERT's encoder does.",
        "The tokens to the left of each position, as a GPT would.",
        "Only how long the text is: every input is [MASK], so its output is the same "
        "for every text of that length.",
        "Nothing at all: the decoder's cross-attention is switched off when k = m.",
    ],
)

register_question(
    "why the decoder sees only the fragment",
    "mass",
    "MASS's decoder reads the fragment's earlier tokens but none of the unmasked "
    "tokens of the text. Why leave those out of the decoder's input?",
    [
        "To save memory: the decoder's input would otherwise be as long as the text.",
        "So that the decoder must take the rest of the text from the encoder, through "
        "cross-attention: encoder, attention and decoder learn together.",
        "Because the decoder has no position embeddings for the unmasked tokens.",
        "So that the decoder cannot attend to [MASK] tokens, which carry no meaning.",
    ],
)
