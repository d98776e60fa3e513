"""Solutions for ``chapters/transformer.ipynb`` (checked by
``tests/test_exercises.py``).
"""

import math

import torch


# The right answer of each of the chapter's questions (the package holds only salted
# hashes of them: scripts/seal_answers.py).
ANSWERS = {
    "why divide by √d": "B",
    "what teacher forcing feeds": "B",
}

EXPLANATIONS = {
    "why divide by √d": (
        "If the entries of q and k have mean 0 and variance 1, q·k is a sum of d such "
        "products and has "
        "variance d. For d = 64 the scores have a standard deviation of 8, the softmax "
        "puts almost all its weight on "
        "one key, and its gradients almost vanish. Dividing by √d brings the variance "
        "back to 1, whatever d."
    ),
    "what teacher forcing feeds": (
        "tgt_in is the target shifted one place right behind <bos>: position t reads "
        "the true characters "
        "before t (the causal mask hides the rest) and is scored on character t. "
        "Reading the truth lets one "
        "forward pass train every position at once, and an early mistake cannot derail "
        "the rest of the "
        "sequence. The price is exposure bias: at test time (greedy decoding) the "
        "model reads its own "
        "guesses, which it never did in training."
    ),
}


def my_causal_mask(T):
    i = torch.arange(T)
    return i[None, :] <= i[:, None]  # key index <= query index


def my_attention_weights(q, k, mask):
    scores = q @ k.T / math.sqrt(q.shape[-1])  # (Tq, Tk)
    return scores.masked_fill(~mask, float("-inf")).softmax(-1)
