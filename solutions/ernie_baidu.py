"""Solutions for ``chapters/ernie_baidu.ipynb`` (checked by ``tests/test_exercises.py``
and ``tests/test_ernie_baidu.py``)."""

import torch


# The right answer of each of the chapter's questions (the package holds only salted
# hashes of them: scripts/seal_answers.py).
ANSWERS = {
    "what entity masking changes": "B",
    "where the dialogue embedding goes": "C",
}

EXPLANATIONS = {
    "what entity masking changes": (
        "Each token is still chosen with probability 0.15, so the number of "
        "predictions per sentence is the same on average. What changes is which tokens "
        "are hidden together: with token masking, a hidden piece of a name usually has "
        "its other pieces in view, and completing the spelling is enough; with entity "
        "masking the whole name is gone, and only the context (the facts around it) "
        "can bring it back. No embedding or architecture changes."
    ),
    "where the dialogue embedding goes": (
        "BERT adds a segment embedding (A or B) to every token. ERNIE's dialogue "
        "embedding takes exactly that place: a small table with one row per role (Q "
        "or R), added to the token and position embeddings, so QRQ, QRR or QQR "
        "conversations of any order fit. The mask and the rest of the model stay "
        "BERT's, and the real-or-fake label is read from [CLS] as NSP's is."
    ),
}


def my_token_units(offsets, spans, level):
    units = [-1] * len(offsets)
    if level == "basic":
        return units
    kept = [s for s in spans if s.label.startswith("phrase:") == (level == "phrase")]
    for u, s in enumerate(sorted(kept, key=lambda s: s.start)):
        for i, (a, b) in enumerate(offsets):
            if a < s.end and b > s.start:  # overlaps the span
                units[i] = u
    return units


def my_select_units(maskable, units, p, generator):
    draw = torch.rand(units.shape, generator=generator)
    B, T = units.shape
    lead = torch.arange(T).repeat(B, 1)  # (B, T): where each token's unit starts
    for b, row in enumerate(units.tolist()):
        first = {}
        for t, u in enumerate(row):
            if u >= 0:  # a span: its first token's draw decides for all of it
                lead[b, t] = first.setdefault(u, t)
    return (draw.gather(1, lead) < p) & maskable
