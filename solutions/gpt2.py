"""Solutions for ``chapters/gpt2.ipynb`` (checked by ``tests/test_exercises.py``)."""

# The right answer of each of the chapter's questions (the package holds only salted
# hashes of them: scripts/seal_answers.py).
ANSWERS = {
    "what pre-LN changes": "C",
    "a zero-shot score at the majority share": "B",
}

EXPLANATIONS = {
    "what pre-LN changes": (
        "Post-LN computes norm(x + f(x)): every block normalises the residual stream, "
        "so the path from the "
        "loss back to the first layer passes through a LayerNorm per block. Pre-LN "
        "computes x + f(norm(x)): "
        "the stream itself is a plain sum of the blocks' outputs, gradients reach "
        "early layers through the "
        "identity, and a final LayerNorm after the last block does the normalising "
        "once."
    ),
    "a zero-shot score at the majority share": (
        "A constant answer scores exactly the share of its class. 53% on a test set "
        "that is 53% 'person' is what "
        "'always person' gets, so the number alone cannot tell an ability from a "
        "prior. The per-class accuracies "
        "(or macro-F1, or a balanced test set) show it: a constant predictor is 100% "
        "on one class and 0% on the "
        "others. Calibration changes which answer wins; it may help or not, and must "
        "be measured."
    ),
}


def my_gpt2_params(vocab_size, max_len, d_model, n_layer, d_ff):
    D = d_model
    block = 4 * (D * D + D) + (D * d_ff + d_ff) + (d_ff * D + D) + 2 * 2 * D
    return vocab_size * D + max_len * D + n_layer * block + 2 * D


def my_pre_ln(x, norm, f):
    return x + f(norm(x))  # post-LN would be norm(x + f(x))
