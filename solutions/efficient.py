"""Solutions for ``chapters/efficient.ipynb`` (checked by ``tests/test_exercises.py``
and ``tests/test_efficient.py``).
"""

import math

import torch
import torch.nn.functional as F


# The right answer of each of the chapter's questions (the package holds only salted
# hashes of them: scripts/seal_answers.py).
ANSWERS = {
    "what a mask saves": "B",
    "why Linformer is not causal": "B",
    "how far a window reaches": "C",
}

EXPLANATIONS = {
    "what a mask saves": (
        "A mask only sets some scores to −∞ before the softmax: the product Q Kᵀ is "
        "still computed for all T² pairs (and a boolean mask is itself T² entries). "
        "The saving needs a computation that never forms the masked blocks, such as "
        "local_attention, which attends chunk by chunk: O(T·w)."
    ),
    "why Linformer is not causal": (
        "Linformer's E K sums the keys of all T positions into each of its k rows, and "
        "F V does the same for the values. A query at position t that reads any row "
        "reads positions after t too. A causal mask cannot remove them, because the "
        "mixing happens before attention, so the projection leaks the future."
    ),
    "how far a window reaches": (
        "One layer moves information at most w − 1 = 3 positions: position 0 sees "
        "positions 0 to 3 in layer 2, and each of those saw up to 3 further in layer "
        "1, so position 6 is the farthest. In general the reach is n_layer × (w − 1), "
        "which is why a stack of windows needs depth, or global tokens, for long "
        "range."
    ),
}


def my_local_mask(T, window, causal):
    i = torch.arange(T)
    d = i[:, None] - i[None, :]  # query minus key
    m = d.abs() < window
    return m & (d >= 0) if causal else m


def my_block_attention(q, k, v, block):
    B, H, T, d = q.shape
    qb, kb, vb = (t.reshape(B, H, T // block, block, d) for t in (q, k, v))
    w = (qb @ kb.transpose(-2, -1) / math.sqrt(d)).softmax(-1)  # (B, H, n, b, b)
    return (w @ vb).reshape(B, H, T, d)


def my_causal_linear_attention(q, k, v):
    q, k = F.elu(q) + 1, F.elu(k) + 1
    kv = torch.einsum("bhtd,bhte->bhtde", k, v).cumsum(2)  # Σ_{s≤t} φ(k_s) v_sᵀ
    num = torch.einsum("bhtd,bhtde->bhte", q, kv)
    den = torch.einsum("bhtd,bhtd->bht", q, k.cumsum(2))[..., None]
    return num / den
