"""Exercises of ``chapters/electra.ipynb``: the replaced-token labels, an MLM step's
FLOPs, and two questions. Solutions: ``solutions/electra.py``.
"""

from __future__ import annotations

import torch

from ..exercises import register_exercise, register_question


@register_exercise("replaced-token labels", "electra", "my_replaced_labels")
def _labels():
    from ..electra import replaced_labels

    g = torch.Generator().manual_seed(0)
    cases = []
    for B, T, V in ((2, 7, 5), (4, 12, 3), (3, 20, 50)):
        original = torch.randint(0, V, (B, T), generator=g)
        # a small vocabulary: many samples equal the original ("original", label 0)
        corrupted = torch.where(
            torch.rand(B, T, generator=g) < 0.4,
            torch.randint(0, V, (B, T), generator=g),
            original,
        )
        valid = torch.ones(B, T, dtype=torch.bool)
        valid[0, T - 2 :] = False  # padding, where a change is never a replacement
        corrupted[0, T - 1] = (original[0, T - 1] + 1) % V
        cases.append((original, corrupted, valid))
    return replaced_labels, cases


@register_exercise("MLM step FLOPs", "electra", "my_mlm_step_flops")
def _mlm_flops():
    from ..config import preset
    from ..recipes.electra import step_flops

    def reference(config, batch_size, max_len, p=0.15):
        return step_flops(config, batch_size, max_len, p) / 1e9  # GFLOPs

    cases = [
        (preset("bert-tiny", vocab_size=1024), 32, 32),
        (preset("bert-tiny", vocab_size=1024), 16, 64, 0.3),
        (preset("bert-base"), 256, 128),
        (preset("bert-large"), 8, 512, 0.15),
    ]
    return reference, cases


register_question(
    "why the generator is not adversarial",
    "electra",
    "ELECTRA's generator is trained by its own MLM loss only; the discriminator's loss "
    "does not reach it. Why?",
    [
        "The paper found the generator must be frozen after a warm-up phase.",
        (
            "Its output reaches the discriminator as a sampled token, a discrete "
            "choice with no gradient; training it to fool the discriminator would need "
            "reinforcement learning, which the paper tried and found worse."
        ),
        "The two networks have different widths, so the gradients have the wrong shape.",
        "The discriminator's loss is multiplied by λ = 50, which would make it unstable.",
    ],
)
register_question(
    "a sampled token equal to the original",
    "electra",
    "At a masked position the generator samples exactly the original token. What is "
    "the discriminator's label there, and why?",
    [
        "Replaced (1): the position was masked, so it counts as corrupted.",
        "It is left out of the loss, like the unmasked positions in BERT.",
        (
            "Original (0): the discriminator reads the very token of the original "
            "text, so nothing in its input was replaced."
        ),
        "Either, at random, so that the discriminator cannot learn which positions "
        "were masked.",
    ],
)
