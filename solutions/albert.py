"""Solutions for ``chapters/albert.ipynb`` (checked by ``tests/test_exercises.py``)."""

import torch

# The right answer of each of the chapter's questions (the package holds only salted
# hashes of them: scripts/seal_answers.py).
ANSWERS = {
    "what SOP tests that NSP does not": "A",
    "what sharing saves": "B",
}

EXPLANATIONS = {
    "what SOP tests that NSP does not": (
        "A random segment from another document is usually about something else, so "
        "NSP can be solved by comparing topics, which the masked LM already learns. "
        "SOP's two segments come from the same place in the same document: only their "
        "order, which depends on how the text hangs together, separates the classes. "
        "The paper's cross-evaluation shows it: an NSP-trained model is at chance on SOP, "
        "an SOP-trained one does well on NSP. Batch sizes, [CLS] tokens and the masked LM "
        "are the same in both."
    ),
    "what sharing saves": (
        "A shared layer is stored once, so the model has one layer's parameters (and one "
        "layer's gradients and optimizer state), but the forward pass still applies it "
        "24 times: the computation is BERT-large's. That is why ALBERT-xxlarge, with "
        "fewer parameters than BERT-large, is slower to train."
    ),
}


def my_factorised_embedding_params(V, E, H):
    table = V * E  # one E-wide vector per token
    # the E x H projection and its bias; none when the table is already H wide
    return table + (E * H + H if E != H else 0)


def my_ngram_probs(max_n):
    weights = torch.tensor([1.0 / n for n in range(1, max_n + 1)], dtype=torch.float64)
    return weights / weights.sum()  # P(n) proportional to 1/n
