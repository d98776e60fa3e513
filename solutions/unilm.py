"""Solutions for ``chapters/unilm.ipynb`` (checked by ``tests/test_exercises.py``)."""

import torch

# The right answer of each of the chapter's questions (the package holds only salted
# hashes of them: scripts/seal_answers.py).
ANSWERS = {
    "why the source cannot see the target": "A",
    "what the bidirectional-only model lacks": "B",
}

EXPLANATIONS = {
    "why the source cannot see the target": (
        "Generation starts from the source alone and adds target tokens one by one. "
        "If the source positions had attended to the target in training, their "
        "representations would depend on words that do not exist yet at generation "
        "time. Because they cannot, the source is encoded once, its keys and values "
        "are cached, and every step only adds target positions."
    ),
    "what the bidirectional-only model lacks": (
        "The cloze is the same objective under every mask, so the bidirectional model "
        "has filled many [MASK]s, but always with the words after them in view. "
        "Under the seq2seq mask the [MASK] is the last token it may see: a context it "
        "never trained on. UniLM trains that context too, by switching the mask."
    ),
}


def my_seq2seq_mask(segments):
    target = segments.bool()  # (B, T): True in segment 1
    T = segments.shape[1]
    causal = torch.ones(T, T, dtype=torch.bool).tril()  # key j <= query i
    q, k = target[:, :, None], target[:, None, :]
    # a source key is seen by everyone; a target key by the target queries at or
    # after it
    return ~k | (q & causal)


def my_step_mask(src_valid, t):
    B, S = src_valid.shape
    # keys: the source, the t - 1 tokens chosen before, then the two new positions
    keys = torch.cat([src_valid, torch.ones(B, t + 1, dtype=torch.bool)], 1)
    query_pos = S + t - 1 + torch.arange(2)[:, None]  # the last choice, the [MASK]
    key_pos = torch.arange(S + t + 1)[None, :]
    return (key_pos <= query_pos)[None] & keys[:, None, :]
