"""Solutions for ``chapters/mass.ipynb`` (checked by ``tests/test_exercises.py``)."""

import torch

# The right answer of each of the chapter's questions (the package holds only salted
# hashes of them: scripts/seal_answers.py).
ANSWERS = {
    "what k = m leaves the encoder": "C",
    "why the decoder sees only the fragment": "B",
}

EXPLANATIONS = {
    "what k = m leaves the encoder": (
        "With every input token replaced by [MASK], two texts of the same length give "
        "the encoder the same input, so its output can only carry the length (through "
        "the positions). The decoder predicts each token from the tokens before it: "
        "a left-to-right language model, GPT's objective. The chapter checks it: two "
        "texts of the same length give the same encoder output."
    ),
    "why the decoder sees only the fragment": (
        "The paper's argument: if the decoder saw the unmasked tokens too, it could "
        "lean on them and ignore the encoder. Given only the fragment's own earlier "
        "tokens, it must draw the rest of the text from the encoder through "
        "cross-attention, so the encoder learns to understand the unmasked text and "
        "the decoder learns to use it. (Leaving them out also saves computation, "
        "but that is not why the paper masks them.)"
    ),
}


def my_mass_noise(tokens, start, k, mask_id):
    source = tokens[:start] + [mask_id] * k + tokens[start + k :]
    target = tokens[start : start + k]
    return source, target


def my_reads(m, start, k):
    out = torch.ones(k, m, dtype=torch.long)  # outside the fragment: the encoder
    for i in range(k):
        out[i, start : start + i] = 2  # the fragment's earlier tokens: the decoder
        out[i, start + i : start + k] = 0  # itself and the fragment's later tokens
    return out
