"""Solutions for ``chapters/transformer_xl.ipynb`` (checked by
``tests/test_exercises.py`` and ``tests/test_transformer_xl.py``).
"""

import torch


# The right answer of each of the chapter's questions (the package holds only salted
# hashes of them: scripts/seal_answers.py).
ANSWERS = {
    "longest dependency": "C",
    "why detach the memory": "B",
}

EXPLANATIONS = {
    "longest dependency": (
        "Layer n at position t reads layer n - 1 at positions t - 149 .. t, some of "
        "them from the memory. Those states were themselves computed from layer n - 2 "
        "up to 149 positions further back, and so on down to the embeddings: 16 layers "
        "reach 16 × 149 = 2,384 tokens back, O(N·L). Beyond that the output cannot "
        "move (the chapter's perturbation probe measures exactly this). It is not "
        "unbounded, because each layer reads its memory only 149 positions deep."
    ),
    "why detach the memory": (
        "The memory's states are functions of the weights and of the earlier segments; "
        "without the stop-gradient the loss of segment τ would "
        "backpropagate into segment τ - 1, and through its memory into τ - 2, ... "
        "(back-propagation through time over the whole text). Every activation of "
        "every earlier segment would have to be kept. Detached, a step costs the same "
        "whatever was read before; the memory still extends the context in the "
        "forward pass."
    ),
}


def my_window_mask(T, memory, window):
    q = torch.arange(T)[:, None] + memory  # the query's own key column
    k = torch.arange(memory + T)[None, :]
    return (k <= q) & (k > q - window)


def my_relative_scores(q, k, R, W_r, u, v):
    Tq, Tk = q.shape[0], k.shape[0]
    i = torch.arange(Tq)[:, None] + (Tk - Tq)  # query positions (after the memory)
    j = torch.arange(Tk)[None, :]
    dist = i - j  # (Tq, Tk)
    r = R @ W_r.T  # (Tk, d): W_r R_d for every distance d
    content = (q + u) @ k.T  # (a) + (c)
    position = ((q + v) @ r.T).gather(1, dist.clamp(min=0))  # (b) + (d) at d = i - j
    return (content + position).masked_fill(dist < 0, float("-inf"))
