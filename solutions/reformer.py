"""Solutions for ``chapters/reformer.ipynb`` (checked by ``tests/test_exercises.py``
and ``tests/test_reformer.py``).
"""

import torch


# The right answer of each of the chapter's questions (the package holds only salted
# hashes of them: scripts/seal_answers.py).
ANSWERS = {
    "why not attend to oneself": "B",
    "what reversible layers cost": "C",
}

EXPLANATIONS = {
    "why not attend to oneself": (
        "With shared QK the key of token i is its own query at unit length, so q_i·k_i "
        "= ‖q_i‖, the largest dot product q_i can have with any unit vector. Left in, "
        "the diagonal would win almost every softmax and the layer would copy tokens "
        "to themselves. The paper masks it, except where a token has nothing else to "
        "look at (the first token of a causal model), where attending to oneself is "
        "better than attending to nothing."
    ),
    "what reversible layers cost": (
        "X₂ = Y₂ − G(Y₁) and X₁ = Y₁ − F(X₂) recompute each layer's inputs, and to "
        "backpropagate through F and G their forward passes are run again with "
        "gradients on. The paper counts this as a modest extra cost in compute; the "
        "activation memory no longer grows with the number of layers."
    ),
}


def my_lsh_mask(buckets, chunk):
    T = len(buckets)
    pos = torch.arange(T)
    order = (buckets * T + pos).argsort()  # sorted by bucket, then by position
    c = order.argsort() // chunk  # each token's chunk after sorting
    ok = (buckets[:, None] == buckets[None, :]) & (pos[:, None] != pos[None, :])
    ok &= (c[None, :] == c[:, None]) | (c[None, :] == c[:, None] - 1)
    alone = ~ok.any(-1, keepdim=True)
    return ok | (alone & (pos[:, None] == pos[None, :]))


def my_reverse(y1, y2, f, g):
    x2 = y2 - g(y1)
    x1 = y1 - f(x2)
    return x1, x2
