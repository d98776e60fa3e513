"""Solutions for ``chapters/synthesis.ipynb`` (checked by ``tests/test_exercises.py``)."""

import torch

ANSWERS = {"why a stand-in is enough": "B"}

EXPLANATIONS = {
    "why a stand-in is enough": (
        "An output at position i can only move when token j changes if some path of "
        "attention (or recurrence) leads from j to i, and the masks, the memory and "
        "the factorisation order decide which paths exist. Weights only decide how "
        "much each path counts: with random weights every allowed path still carries "
        "a little signal, so the probe sees the architecture's context. Whether the "
        "outputs are any good, which is what a verdict measures, is the training's "
        "doing, so only trained models can answer it."
    ),
}


def my_is_left_to_right(D):
    T = D.shape[0]
    off = ~torch.eye(T, dtype=torch.bool)
    return bool(
        torch.equal(D & off, torch.tril(torch.ones(T, T, dtype=torch.bool), -1))
    )


def my_prefix_length(D):
    T = D.shape[0]
    off = ~torch.eye(T, dtype=torch.bool)
    below = torch.tril(torch.ones(T, T, dtype=torch.bool), -1)
    for p in range(2, T):
        want = below.clone()
        want[:p, :p] = True
        if torch.equal(D & off, want & off):
            return p
    return None
