"""Solutions for ``chapters/ernie_thu.ipynb`` (checked by ``tests/test_exercises.py``)."""

ANSWERS = {"what the dEA asks": "B", "where the knowledge comes from": "C"}

EXPLANATIONS = {
    "what the dEA asks": (
        "The dEA is an entity-level masked LM: where the alignment is masked the "
        "token gets no entity vector, and its output must still pick the right "
        "entity among the sentence's candidates (a dot product with their vectors). "
        "It makes the token stream carry which entity a mention is, so the fused "
        "representation and the graph's vectors line up. The TransE vectors stay "
        "frozen; no relation is predicted."
    ),
    "where the knowledge comes from": (
        "The test entities never occur in fine-tuning, and masked-LM pre-training "
        "is exactly what this model lacks. The TransE vectors were trained on the "
        "whole graph, test entities included, so they encode which pairs are "
        "related; fine-tuning can only teach the model how to read them, which is "
        "the paper's point: knowledge arrives with the entity embeddings."
    ),
}


def my_transe_score(h, r, t, p):
    return -(sum(abs(a + b - c) ** p for a, b, c in zip(h, r, t)) ** (1 / p))


def my_span_alignment(offsets, spans):
    out = [0] * len(offsets)
    for s in spans:
        if s.entity is None:
            continue
        for i, (a, b) in enumerate(offsets):
            if a < s.end and b > s.start:  # the first token that overlaps it
                out[i] = s.entity + 1
                break
    return out
