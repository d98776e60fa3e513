"""Solutions for ``chapters/gpt3.ipynb`` (checked by ``tests/test_exercises.py``).

``T`` is the chapter's task, ``SymbolTasks(n_inputs=8, n_labels=8)``.
"""

import torch

from ptlm_lite.icl import SymbolTasks

T = SymbolTasks(n_inputs=8, n_labels=8)


# The right answer of each of the chapter's questions (the package holds only salted
# hashes of them: scripts/seal_answers.py).
ANSWERS = {
    "why no weight stores the answer": "B",
    "what recall accuracy measures": "B",
}

EXPLANATIONS = {
    "why no weight stores the answer": (
        "Each training sequence draws a new mapping from input symbols to labels (a "
        "random lookup table, "
        "or a shift by a random offset). The same query has different answers in "
        "different sequences, so "
        "a weight can only store how to read the demonstrations, not what they say."
    ),
    "what recall accuracy measures": (
        "In a recall task each input's label is drawn at random, so the demonstrations "
        "of other inputs say "
        "nothing about an input not yet shown: the best any reader can do is copy a "
        "demonstrated answer and guess "
        "the rest, which scores share-seen + (1 - share-seen) / 8. A model on that "
        "curve copies perfectly; it "
        "shows nothing about inferring a rule. Only queries that were not "
        "demonstrated, in a family with a rule "
        "(shift, reverse), can show that."
    ),
}


def my_prompt(demos, query):
    ids = [T.BOS]
    for x, y in demos:
        ids += [int(T.query_token(x)), int(T.answer_token(x, y))]
    return torch.tensor(ids + [int(T.query_token(query))])


def my_accuracy(logits, x, y):
    # (B, M) candidate tokens
    answers = T.answer_token(x[:, None], torch.arange(T.n_labels))
    pred = logits.gather(1, answers).argmax(1)  # the best label
    return (pred == y).float().mean().item()
