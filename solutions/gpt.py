"""Solutions for ``chapters/gpt.ipynb`` (checked by ``tests/test_exercises.py``)."""

import torch


# The right answer of each of the chapter's questions (the package holds only salted
# hashes of them: scripts/seal_answers.py).
ANSWERS = {
    "why a causal mask": "C",
    "what a task must need": "B",
}

EXPLANATIONS = {
    "why a causal mask": (
        "The loss at position t is the log-probability of token t + 1. If position t "
        "could attend to t + 1, "
        "it could copy the answer, and the model would learn nothing usable for "
        "generation, where the "
        "future does not exist yet. The mask keeps training and generation alike: each "
        "position sees "
        "only itself and what came before."
    ),
    "what a task must need": (
        'A test of "pre-training helps" needs a task whose answer the fine-tuning '
        "data cannot teach: "
        "otherwise randomly initialised weights learn it from the labelled examples "
        "and pre-training has "
        'nothing to add. "city", "country", "company" or "-year-old" in the '
        "sentence gives the "
        'class away. (A test set of mostly people would also let a constant "person" '
        "look like learning: "
        "compare with the majority class, not with chance.) The suite's relation_check "
        "asks instead for a "
        "fact that only the pre-training documents state, about entities fine-tuning "
        "never shows."
    ),
}


def my_top_k(logits, k):
    # (B, 1): the k-th largest of each row
    kth = logits.topk(k, dim=-1).values[:, -1:]
    return logits.masked_fill(logits < kth, float("-inf"))


def my_cache_mask(T, past):
    # absolute positions of the new tokens
    query_pos = past + torch.arange(T)[:, None]
    key_pos = torch.arange(past + T)[None, :]
    return key_pos <= query_pos
