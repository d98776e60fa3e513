"""Exercises and questions of ``chapters/synthesis.ipynb``: naming the context a
dependence matrix shows. Solutions: ``solutions/synthesis.py``.
"""

from __future__ import annotations

import torch

from ..exercises import register_exercise, register_question


@register_exercise("is left-to-right", "synthesis", "my_is_left_to_right")
def _is_left_to_right():
    from .. import probe

    def reference(D):
        return probe.kind_of(D).kind == "left-to-right"

    lower = torch.tril(torch.ones(5, 5, dtype=torch.bool))
    sparse = lower.clone()
    sparse[4, 0] = False  # one earlier token not seen: a window, not left-to-right
    prefix = lower.clone()
    prefix[:2, :2] = True
    no_self = lower & ~torch.eye(5, dtype=torch.bool)  # the diagonal does not count
    cases = [(lower,), (lower.T.clone(),), (sparse,), (prefix,), (no_self,)]
    cases += [(torch.ones(4, 4, dtype=torch.bool),), (torch.eye(3, dtype=torch.bool),)]
    return reference, cases


@register_exercise("prefix length", "synthesis", "my_prefix_length")
def _prefix_length():
    from .. import masks, probe

    def reference(D):
        found = probe.kind_of(D)
        return found.prefix if found.kind == "prefix" else None

    cases = [(masks.prefix_mask(6, p),) for p in (2, 3, 5)]
    cases += [(masks.causal_mask(6),), (torch.ones(5, 5, dtype=torch.bool),)]
    odd = masks.prefix_mask(6, 3).clone()
    odd[5, 0] = False  # one token of the prefix not seen: no prefix LM
    cases.append((odd,))
    return reference, cases


register_question(
    "why a stand-in is enough",
    "synthesis",
    "The context column is measured on random-weights stand-ins for most chapters, "
    "while the scoreboard only reports what the trained models did. Why is a "
    "stand-in enough for the first and not for the second?",
    [
        "Random weights make the probe faster, and speed is all the column needs.",
        "Which tokens an output can depend on is fixed by the masks, memories and "
        "orders of the architecture, whatever the weights; how good the outputs are "
        "depends on the training.",
        "The trained models are not bidirectional any more after fine-tuning.",
        "The stand-ins have more parameters than the trained models.",
    ],
)
