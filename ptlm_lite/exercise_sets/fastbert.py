"""Exercises and questions of ``chapters/fastbert.ipynb``: FastBERT's uncertainty and
its self-distillation loss. Solutions: ``solutions/fastbert.py``.
"""

from __future__ import annotations

import math

import torch

from ..exercises import register_exercise, register_question


@register_exercise("normalized entropy", "fastbert", "my_normalized_entropy")
def _normalized_entropy():
    from ..fastbert import normalized_entropy

    g = torch.Generator().manual_seed(0)
    return normalized_entropy, [
        (torch.randn(5, 2, generator=g),),
        (3 * torch.randn(4, 7, generator=g),),
        (torch.tensor([[0.0, 0.0, 0.0], [0.0, 0.0, -1e4], [50.0, 0.0, 0.0]]),),
    ]


@register_exercise("self-distillation loss", "fastbert", "my_distill_loss")
def _distill_loss():
    from ..fastbert import distill_loss

    g = torch.Generator().manual_seed(1)
    return distill_loss, [
        (torch.randn(3, 4, 2, generator=g), torch.randn(4, 2, generator=g)),
        (2 * torch.randn(1, 6, 5, generator=g), torch.randn(6, 5, generator=g)),
        (
            torch.tensor([[[math.log(0.8), math.log(0.2)]]]),
            torch.tensor([[0.0, 0.0]]),
        ),
    ]


register_question(
    "why no labels",
    "fastbert",
    "FastBERT trains its students on unlabelled text. Why is that enough?",
    [
        "The students learn the task from the text itself, as a language model does.",
        "Their target is the teacher's output distribution, which the frozen teacher "
        "gives for any input; the labels were needed once, to fine-tune the teacher.",
        "Unlabelled text is used only to warm up the students; their real training "
        "uses the labelled examples.",
        "The students copy the teacher's weights, so they need no data at all.",
    ],
)

register_question(
    "where the speed-up comes from",
    "fastbert",
    "At a speed threshold where half of the examples stop after layer 1 of 4, why "
    "can the wall-clock time fall by less than the FLOPs do?",
    [
        "FLOPs are counted for the backward pass too, which inference does not run.",
        "Early exit makes the remaining layers more expensive per example.",
        "Each layer now also runs a student and a test, and a smaller batch keeps the "
        "processor less busy: fixed costs per layer do not shrink with the batch.",
        "The teacher has to run on every example anyway, to check the students.",
    ],
)
