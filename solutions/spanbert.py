"""Solutions for ``chapters/spanbert.ipynb`` (checked by ``tests/test_exercises.py``
and ``tests/test_spanbert.py``)."""

import torch


# The right answer of each of the chapter's questions (the package holds only salted
# hashes of them: scripts/seal_answers.py).
ANSWERS = {
    "what the SBO makes the boundary states hold": "A",
}

EXPLANATIONS = {
    "what the SBO makes the boundary states hold": (
        "The SBO sees nothing of the span but the states of its two outside neighbours "
        "and a position. To predict each hidden token from those, the encoder must put "
        "a summary of the span into the neighbours' states. A span extractor (SQuAD's "
        "start and end scores) reads exactly such per-token states at the span's "
        "edges, which is why the paper expects the SBO to help span selection tasks. "
        "It has nothing to do with choosing span lengths or telling real text from "
        "random text (SpanBERT drops NSP altogether)."
    ),
}


def my_span_length_probs(p, max_span):
    k = torch.arange(1, max_span + 1, dtype=torch.float64)
    w = p * (1 - p) ** (k - 1)
    return w / w.sum()  # lengths above max_span are never drawn: renormalise


def my_span_boundaries(selected):
    B, T = selected.shape
    left, right, rel = [], [], []
    for b in range(B):
        row = selected[b].tolist()
        t = 0
        while t < T:
            if not row[t]:
                t += 1
                continue
            s = t
            while t < T and row[t]:
                t += 1
            for i in range(s, t):  # the run s .. t-1: outside neighbours s-1 and t
                left.append(s - 1)
                right.append(t)
                rel.append(i - s)
    as_long = lambda x: torch.tensor(x, dtype=torch.long)  # noqa: E731
    return as_long(left), as_long(right), as_long(rel)
