"""Exercises and questions of ``chapters/t5.ipynb``: the bucket of a query-key
distance, and the (source, target) pair of span corruption from a noise mask.
Solutions: ``solutions/t5.py``.
"""

from __future__ import annotations

import torch

from ..exercises import register_exercise, register_question


@register_exercise("relative position bucket", "t5", "my_bucket")
def _bucket():
    from ..t5 import relative_position_bucket

    rel = torch.arange(-150, 151)
    cases = [
        (rel, True, 32, 128),
        (rel, False, 32, 128),
        (rel, True, 16, 64),
        (torch.arange(-20, 21)[:, None] - torch.arange(0, 5)[None], False, 8, 16),
    ]
    return relative_position_bucket, cases


@register_exercise("span corruption from a mask", "t5", "my_span_pair")
def _span_pair():
    def span_pair(tokens, mask, sentinel_ids):
        source, target, span = [], [], -1
        for i, (t, m) in enumerate(zip(tokens, mask)):
            if m and (i == 0 or not mask[i - 1]):
                span += 1
                source.append(sentinel_ids[span])
                target.append(sentinel_ids[span])
            (target if m else source).append(t)
        return source, target

    sentinels = [100, 101, 102, 103]
    cases = [
        ([10, 11, 12, 13, 14, 15], [False, True, True, False, False, True], sentinels),
        ([10, 11, 12, 13], [True, False, False, True], sentinels),
        ([10, 11, 12, 13, 14], [False, True, False, True, False], sentinels),
        (list(range(20, 30)), [False] * 4 + [True] * 3 + [False] * 3, sentinels),
    ]
    return span_pair, cases


register_question(
    "why sentinels shorten the target",
    "t5",
    "With 15% of a 100-token text corrupted in spans of mean length 3, span "
    "corruption's target is about 20 tokens long; the BERT-style objective's is 100. "
    "Where does the difference come from?",
    [
        "Span corruption drops the uncorrupted tokens from the target: the decoder "
        "writes only the 15 corrupted tokens and one sentinel per span (about 5), "
        "while the BERT-style target repeats the whole text.",
        "Span corruption uses a Unigram tokenizer, which cuts text into fewer pieces "
        "than WordPiece.",
        "The sentinels are longer tokens than [MASK], so fewer of them are needed.",
        "Span corruption corrupts fewer tokens than the BERT-style objective.",
    ],
)

register_question(
    "why one bias table serves every length",
    "t5",
    "T5 gives positions to attention as a learned bias per bucket of the distance "
    "key - query, shared by every layer. What does that buy over a learned table of "
    "absolute positions added to the input?",
    [
        "It makes attention cheaper: the bias replaces the q·k product.",
        "The bias depends only on the distance, bucketed logarithmically and capped at "
        "max_distance, so a longer input than any seen in training uses the same "
        "buckets; an absolute table has no row for a position past its end.",
        "It lets the encoder see the future and the decoder the past.",
        "It removes the need for a causal mask in the decoder.",
    ],
)
