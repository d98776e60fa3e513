"""Exercises of ``chapters/ernie_thu.ipynb`` (solutions: ``solutions/ernie_thu.py``).
The checks compare with the package's own :mod:`ptlm_lite.transe` and
:mod:`ptlm_lite.ernie_thu`.
"""

from __future__ import annotations

import torch

from ..exercises import register_exercise, register_question


def _span(start, end, label, entity=None):
    from ..data.world import Span

    return Span(start, end, label, entity)


@register_exercise("transe score", "ernie_thu", "my_transe_score")
def _transe_score():
    from ..transe import TransE

    def reference(h, r, t, p):
        with torch.random.fork_rng():  # the tables' random start is overwritten
            m = TransE(2, 1, dim=len(h), p=p)
        with torch.no_grad():
            m.entity.weight.copy_(torch.tensor([h, t], dtype=torch.float))
            m.relation.weight.copy_(torch.tensor([r], dtype=torch.float))
        return float(m.score(torch.tensor([[0, 0, 1]])).detach()[0])

    cases = [
        ([1.0, 0.0], [0.5, -1.0], [0.0, 1.0], 1),
        ([1.0, 0.0], [0.5, -1.0], [0.0, 1.0], 2),
        ([0.2, 0.3, -0.1], [0.1, 0.1, 0.1], [0.3, 0.4, 0.0], 1),
        ([0.6, 0.8], [0.0, 0.0], [0.6, 0.8], 2),
    ]
    return reference, cases


@register_exercise("entity alignment", "ernie_thu", "my_span_alignment")
def _alignment():
    from ..ernie_thu import span_alignment

    # "Kuzin Vu was born in Shefemo." as the book's WordPiece cuts it
    offsets = [(0, 1), (1, 2), (2, 3), (3, 5), (6, 7), (7, 8), (9, 12), (13, 15)]
    offsets += [(15, 16), (16, 17), (18, 20), (21, 24), (24, 26), (26, 27)]
    offsets += [(27, 28), (28, 29)]
    person, city = _span(0, 8, "person", 4), _span(21, 28, "city", 0)
    age = _span(9, 12, "phrase:age")
    cases = [
        (offsets, (person, city)),
        (offsets, (city, person)),
        (offsets, (person, age)),
        (offsets, ()),
        ([(0, 3), (4, 9)], (_span(20, 25, "city", 2),)),  # no token overlaps it
    ]
    return span_alignment, cases


register_question(
    "what the dEA asks",
    "ernie_thu",
    "In ERNIE's denoising entity auto-encoder, 15% of the token-entity alignments "
    "are masked. What must the model do at such a token?",
    [
        "Predict the token's word piece from the vocabulary, as BERT's masked LM does.",
        "Say which of the sentence's entities the token refers to, from the token's "
        "own output, although no entity vector was given there.",
        "Predict the relation between the two entities of the sentence.",
        "Rebuild the masked entity's TransE vector by regression, so that the graph "
        "embeddings are trained further.",
    ],
)
register_question(
    "where the knowledge comes from",
    "ernie_thu",
    "On the relation task of this chapter, an ERNIE whose Transformer has random "
    "weights, but whose entity table holds the TransE vectors, is fine-tuned like "
    "the others. Where could its knowledge of the test pairs come from?",
    [
        "From the masked-LM pre-training on the world's sentences.",
        "From the fine-tuning examples, which name the same test entities.",
        "From the TransE vectors, trained on the knowledge graph, which the fusion "
        "layers read; fine-tuning teaches only how to read them.",
        "Nowhere: a random-weights model can only reach the majority share.",
    ],
)
