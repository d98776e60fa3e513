"""Exercises of ``chapters/roberta.ipynb``: RoBERTa's positions, FULL-SENTENCES packing,
and two questions. Solutions: ``solutions/roberta.py``.
"""

from __future__ import annotations

import torch

from ..exercises import register_exercise, register_question

# as the chapter's WordPiece: [PAD] = 0, [CLS] = 2, [SEP] = 3
CLS, SEP = 2, 3


@register_exercise("RoBERTa positions", "roberta", "my_positions")
def _positions():
    from ..roberta import roberta_positions

    g = torch.Generator().manual_seed(0)
    right = torch.randint(5, 50, (3, 9), generator=g)
    right[1, 6:] = 0  # right padding
    right[2, 2:] = 0
    left = torch.randint(5, 50, (2, 7), generator=g)
    left[0, :3] = 0  # left padding
    # pad_id 1, as roberta-base: id 0 is a real token there
    other = torch.randint(0, 50, (2, 8), generator=g)
    other[other == 1] = 7
    other[0, 5:] = 1
    return roberta_positions, [(right, 0), (left, 0), (other, 1)]


def _rows(documents, max_len):
    """The package's FULL-SENTENCES rows as lists of ids (no padding)."""
    from ..recipes.roberta import full_sentences

    packed = full_sentences(documents, max_len, cls_id=CLS, sep_id=SEP, pad_id=0)
    return [r[v].tolist() for r, v in zip(packed["ids"], packed["valid"])]


def _documents(seed, n_docs, max_sentences, max_words):
    g = torch.Generator().manual_seed(seed)

    def rand(lo, hi):
        return int(torch.randint(lo, hi + 1, (1,), generator=g))

    return [
        [
            [rand(7, 99) for _ in range(rand(1, max_words))]
            for _ in range(rand(1, max_sentences))
        ]
        for _ in range(n_docs)
    ]


@register_exercise(
    "full-sentences packing",
    "roberta",
    "my_pack",
    call=lambda f, docs, max_len: f(docs, max_len, CLS, SEP),
)
def _pack():
    def reference(documents, max_len, cls_id, sep_id):
        return _rows(documents, max_len)

    cases = [
        ([[[10, 11, 12], [13, 14]], [[20, 21]]], 10),  # one row: [SEP] between docs
        ([[[10, 11, 12], [13, 14]], [[20, 21, 22]]], 10),  # the [SEP] would not fit
        ([[list(range(10, 25))]], 7),  # a sentence longer than a row is cut
        (_documents(1, 6, 4, 6), 12),
        (_documents(2, 10, 5, 9), 16),
    ]
    return reference, cases


register_question(
    "why 514 positions",
    "roberta",
    "roberta-base reads at most 512 tokens, yet its position table has 514 rows. Why?",
    [
        "Two rows are reserved for the <s> and </s> tokens, which get fixed positions.",
        (
            "Positions start at pad_id + 1 = 2 and padding uses row pad_id = 1, so 512 "
            "tokens use rows 2 to 513."
        ),
        "One extra row per segment type, so that A and B are numbered apart.",
        "The table is rounded up to an even size for faster matrix products.",
    ],
)
register_question(
    "how often a static mask repeats",
    "roberta",
    "BERT wrote its training data with 10 differently masked copies and trained for "
    "40 epochs. How many times did the model read each sequence with one and the same "
    "mask?",
    ["Once.", "4 times.", "10 times.", "40 times."],
)
