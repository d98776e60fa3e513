"""Solutions for ``chapters/gpt2.ipynb`` (checked by ``tests/test_exercises.py``)."""

EXPLANATIONS = {
    "what pre-LN changes": (
        "Post-LN computes norm(x + f(x)): every block normalises the residual stream, so the path from the "
        "loss back to the first layer passes through a LayerNorm per block. Pre-LN computes x + f(norm(x)): "
        "the stream itself is a plain sum of the blocks' outputs, gradients reach early layers through the "
        "identity, and a final LayerNorm after the last block does the normalising once."),
}


def my_gpt2_params(vocab_size, max_len, d_model, n_layer, d_ff):
    D = d_model
    block = 4 * (D * D + D) + (D * d_ff + d_ff) + (d_ff * D + D) + 2 * 2 * D
    return vocab_size * D + max_len * D + n_layer * block + 2 * D


def my_pre_ln(x, norm, f):
    return x + f(norm(x))        # post-LN would be norm(x + f(x))
