"""Solutions for ``chapters/t5.ipynb`` (checked by ``tests/test_exercises.py``)."""

import math

import torch

# The right answer of each of the chapter's questions (the package holds only salted
# hashes of them: scripts/seal_answers.py).
ANSWERS = {
    "why sentinels shorten the target": "A",
    "why one bias table serves every length": "B",
}

EXPLANATIONS = {
    "why sentinels shorten the target": (
        "Both objectives corrupt 15% of the tokens. The BERT-style target is the whole "
        "original text, so the decoder spends most of its steps copying tokens it can "
        "see in the source. Span corruption's target holds only what was removed, each "
        "span behind its sentinel: 15 tokens plus about 5 sentinels for 100 tokens of "
        "text, a fifth of the decoder's work."
    ),
    "why one bias table serves every length": (
        "The bias is looked up from the bucket of key - query. Buckets are exact for "
        "small distances and logarithmic up to max_distance, where they stop growing, "
        "so every distance of any input has a bucket, and the same few learned "
        "scalars per head are reused at every position and in every layer. A table of "
        "absolute positions has one row per position and none past its length."
    ),
}


def my_bucket(relative_position, bidirectional, n_buckets, max_distance):
    bucket = torch.zeros_like(relative_position)
    n = n_buckets
    if bidirectional:
        n //= 2
        bucket = bucket + (relative_position > 0).long() * n  # keys after the query
        distance = relative_position.abs()
    else:
        distance = (-relative_position).clamp(min=0)  # only keys before count
    exact = n // 2
    log = torch.log(distance.float() / exact) / math.log(max_distance / exact)
    large = (exact + (log * (n - exact)).long()).clamp(max=n - 1)
    return bucket + torch.where(distance < exact, distance, large)


def my_span_pair(tokens, mask, sentinel_ids):
    source, target, k = [], [], 0
    for i, (t, noisy) in enumerate(zip(tokens, mask)):
        starts = noisy and (i == 0 or not mask[i - 1])
        if starts:  # one sentinel for the whole span, in both sequences
            source.append(sentinel_ids[k])
            target.append(sentinel_ids[k])
            k += 1
        if noisy:
            target.append(t)
        else:
            source.append(t)
    return source, target
