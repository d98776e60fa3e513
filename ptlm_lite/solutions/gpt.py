"""Solutions for ``chapters/gpt.ipynb`` (checked by ``tests/test_exercises.py``)."""
import torch

EXPLANATIONS = {
    "why a causal mask": (
        "The loss at position t is the log-probability of token t + 1. If position t could attend to t + 1, "
        "it could copy the answer, and the model would learn nothing usable for generation, where the "
        "future does not exist yet. The mask keeps training and generation alike: each position sees "
        "only itself and what came before."),
}


def my_top_k(logits, k):
    kth = logits.topk(k, dim=-1).values[:, -1:]               # (B, 1): the k-th largest of each row
    return logits.masked_fill(logits < kth, float("-inf"))


def my_cache_mask(T, past):
    query_pos = past + torch.arange(T)[:, None]               # absolute positions of the new tokens
    key_pos = torch.arange(past + T)[None, :]
    return key_pos <= query_pos
