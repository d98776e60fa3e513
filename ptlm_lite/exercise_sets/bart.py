"""Exercises and questions of ``chapters/bart.ipynb``: text infilling from its spans,
and finding what token deletion removed. Solutions: ``solutions/bart.py``.
"""

from __future__ import annotations

from ..exercises import register_exercise, register_question


@register_exercise("text infilling from spans", "bart", "my_fill_spans")
def _fill_spans():
    from ..noising import fill_spans

    cases = [
        ([10, 11, 12, 13, 14, 15], [(1, 2), (4, 1)], 4),
        ([10, 11, 12], [(0, 0)], 4),  # a length-0 span: an inserted [MASK]
        ([10, 11, 12], [(3, 0)], 4),  # ... at the very end
        ([10, 11, 12, 13], [(0, 4)], 4),  # the whole document: one [MASK]
        ([10, 11, 12, 13, 14], [(0, 1), (2, 0), (3, 2)], 9),
        ([10, 11], [], 4),
    ]
    return fill_spans, cases


@register_exercise("what deletion removed", "bart", "my_deleted_positions")
def _deleted():
    def deleted(source, target):
        kept, j = set(), 0
        for i, t in enumerate(target):
            if j < len(source) and source[j] == t:
                kept.add(i)
                j += 1
        return [i for i in range(len(target)) if i not in kept]

    cases = [
        ([10, 12, 13], [10, 11, 12, 13]),
        ([11, 12], [10, 11, 12, 13]),
        ([10, 11, 12, 13], [10, 11, 12, 13]),
        ([], [10, 11]),
        ([20, 22, 25], [20, 21, 22, 23, 24, 25, 26]),
    ]
    return deleted, cases


register_question(
    "what infilling teaches that masking does not",
    "bart",
    "Text infilling replaces a span of any length (0 included) by a single [MASK]; "
    "token masking replaces each chosen token by its own [MASK]. What must a model "
    "trained with infilling learn that one trained with masking is told?",
    [
        "Which vocabulary the [MASK] token belongs to.",
        "How many tokens each [MASK] stands for, zero included: the source no longer "
        "shows the length of what is missing.",
        "Where the document starts.",
        "The order of the sentences.",
    ],
)

register_question(
    "why rotation teaches little",
    "bart",
    "In the paper, document rotation was the weakest noise on its own. Which reason "
    "fits best?",
    [
        "A rotated document is longer than the original, so it does not fit the "
        "encoder.",
        "Rotation needs a [MASK] token that the decoder never sees.",
        "Apart from one cut, the source is the document in order: the decoder can copy "
        "almost everything, and finding the start is a narrow skill that says little "
        "about language.",
        "Rotation changes the tokens' identities, so the embeddings cannot be shared.",
    ],
)
