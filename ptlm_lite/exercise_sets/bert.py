"""Exercises and questions of ``chapters/bert.ipynb``: BERT's 80/10/10 replacement and
the best answer span. Solutions: ``solutions/bert.py``.
"""

from __future__ import annotations

import torch

from ..exercises import register_exercise, is_stub_value, register_question, describe

# as the chapter's WordPiece: ids 0..6 are special
BERT_VOCAB, BERT_MASK, BERT_FIRST_ORDINARY = 1024, 4, 7


def _replacement_stats(replace, seed):
    """What a replacement function did to the 15% selected of 160,000 positions: the
    fraction of the selected that became [MASK], the fraction that became another
    ordinary token, and checks that nothing else moved. Fractions are compared within
    0.015 (the sampling noise is about 0.003).
    """
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(BERT_FIRST_ORDINARY, BERT_VOCAB, (400, 400), generator=g)
    sel = torch.rand(ids.shape, generator=g) < 0.15
    given = ids.clone()
    out = replace(given, sel, g, mask_id=BERT_MASK, vocab_size=BERT_VOCAB)
    if is_stub_value(out):
        return out
    stats = dict.fromkeys(
        [
            "output",
            "fraction [MASK]",
            "fraction random",
            "unselected unchanged",
            "random tokens are ordinary",
            "ids left untouched",
        ]
    )
    stats["output"] = describe(out)
    if not isinstance(out, torch.Tensor) or out.shape != ids.shape:
        # differs in "output" (and the rest)
        return stats
    n = int(sel.sum())
    random = (out != ids) & (out != BERT_MASK)
    return {
        **stats,
        "fraction [MASK]": int((out[sel] == BERT_MASK).sum()) / n,
        "fraction random": int(random[sel].sum()) / n,
        "unselected unchanged": bool((out[~sel] == ids[~sel]).all()),
        "random tokens are ordinary": bool((out[random] >= BERT_FIRST_ORDINARY).all()),
        "ids left untouched": bool(torch.equal(given, ids)),
    }


@register_exercise(
    "80/10/10 replacement", "bert", "my_replace", atol=0.015, call=_replacement_stats
)
def _replace():
    def reference(ids, selected, generator, mask_id, vocab_size):
        from ..corrupt import replace_selected

        return replace_selected(
            ids,
            selected,
            mask_id=mask_id,
            vocab_size=vocab_size,
            generator=generator,
            random_ids=range(BERT_FIRST_ORDINARY, vocab_size),
        ).inputs

    return reference, [(0,), (1,), (2,)]


@register_exercise("best span", "bert", "my_best_span")
def _best_span():
    from ..heads import best_span

    g = torch.Generator().manual_seed(0)
    return (
        (lambda s, e, L: best_span(s, e, L)),
        [
            (torch.randn(3, 12, generator=g), torch.randn(3, 12, generator=g), L)
            for L in (1, 3, 12)
        ],
    )


register_question(
    "why not always [MASK]",
    "bert",
    "Why does BERT turn only 80% of the selected tokens into [MASK] (10% random, "
    "10% unchanged)?",
    [
        "[MASK] never appears in fine-tuning, so every real token must be represented "
        "well too.",
        "Replacing fewer tokens by [MASK] makes each pre-training step faster to "
        "compute.",
        "Masking every selected token would leave too little context to predict "
        "them from.",
        "Random and unchanged tokens make next-sentence prediction harder to learn.",
    ],
)
