"""Exercises of ``chapters/spanbert.ipynb`` (solutions: ``solutions/spanbert.py``). The checks compare with the package's own :mod:`ptlm_lite.spanbert`."""

from __future__ import annotations

import torch

from ..exercises import register_exercise, register_question


@register_exercise("span length distribution", "spanbert", "my_span_length_probs")
def _span_length_probs():
    from ..spanbert import span_length_probs

    def reference(p, max_span):  # float32 or float64 answers are both fine
        return span_length_probs(p, max_span).float()

    cases = [(0.2, 10), (0.5, 4), (0.2, 1), (0.05, 30), (1.0, 3)]
    return reference, cases


def _selected(seed: int, B: int = 5, T: int = 16) -> torch.Tensor:
    """Random runs of selected positions, never at a row's first or last position (the
    [CLS] and [SEP] of a real row), so every span has a token on each side.
    """
    g = torch.Generator().manual_seed(seed)
    selected = torch.rand(B, T, generator=g) < 0.35
    selected[:, 0] = selected[:, -1] = False
    return selected


@register_exercise("span boundaries", "spanbert", "my_span_boundaries")
def _span_boundaries():
    from ..spanbert import span_boundaries

    def reference(selected):
        left, right, rel = span_boundaries(selected)
        return left[selected], right[selected], rel[selected]

    # the chapter's picture: "born in She ##fem ##o" hidden, "was" and "and" outside
    picture = torch.zeros(1, 12, dtype=torch.bool)
    picture[0, 4:9] = True
    two_spans = torch.tensor([[False, True, True, False, True, False]])
    touching = torch.tensor([[False, True, False, True, True, True, False]])
    cases = [(picture,), (two_spans,), (touching,)]
    cases += [(_selected(seed),) for seed in (0, 1, 2)]
    return reference, cases


register_question(
    "what the SBO makes the boundary states hold",
    "spanbert",
    "The span boundary objective predicts every token of a hidden span from the two "
    "tokens just outside it (and the token's position in the span). What does that "
    "train the model to do?",
    [
        "To store, in the states of the tokens around a span, what the span holds: "
        "the vectors a start/end span extractor reads.",
        "To predict the span's length, so that span masking can do without the "
        "geometric distribution.",
        "To copy the hidden tokens into the boundary tokens' inputs, which makes the "
        "masked-LM loss easier.",
        "To tell real text from text with a random span, as next-sentence prediction "
        "did.",
    ],
)
