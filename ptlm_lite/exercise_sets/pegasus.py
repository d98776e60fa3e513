"""Exercises and questions of ``chapters/pegasus.ipynb``: a gap-sentence pair from
chosen sentences, and ROUGE-1 F1 on token ids. Solutions: ``solutions/pegasus.py``.
"""

from __future__ import annotations

from ..exercises import register_exercise, register_question


@register_exercise("gap-sentence pair", "pegasus", "my_gap_pair")
def _gap_pair():
    def gap_pair(doc, gaps, mask_id):
        source, target = [], []
        for i, sentence in enumerate(doc):
            if i in set(gaps):
                source.append(mask_id)
                target.extend(sentence)
            else:
                source.extend(sentence)
        return source, target

    cases = [
        ([[1, 2], [3], [4, 5]], [0], 9),
        ([[1, 2], [3], [4, 5]], [2, 1], 9),
        ([[7, 7, 7], [8], [9, 9], [10]], [1, 3], 4),
        ([[5]], [0], 4),
    ]
    return gap_pair, cases


@register_exercise("ROUGE-1 F1 of token ids", "pegasus", "my_rouge1")
def _rouge1():
    from ..seq2seq import rouge

    def rouge1(a, b):
        words = [" ".join(map(str, a))], [" ".join(map(str, b))]
        return float(rouge(*words, types=("rouge1",))["rouge1"][0])

    cases = [
        ([1, 2, 3], [1, 2, 4, 5]),
        ([1, 2, 4, 5], [1, 2, 3, 4, 5, 6, 7, 8]),
        ([7, 8], [1, 2, 3]),
        ([4, 4, 4, 5], [4, 5, 5]),
        ([3], [3]),
    ]
    return rouge1, cases


register_question(
    "why principal sentences",
    "pegasus",
    "PEGASUS removes the sentences with the highest ROUGE-1 against the rest of the "
    "document and asks the decoder to write them. Why does that make a better "
    "pre-training for summarisation than removing random sentences?",
    [
        "Principal sentences are shorter, so the decoder has fewer tokens to write "
        "and trains faster.",
        "A sentence that shares many words with the rest is the kind of text a "
        "summary is: writing it from the rest of the document practises gathering "
        "what the document says in one place, close to the downstream task.",
        "Random sentences cannot be removed without breaking the sentence order, "
        "which the encoder needs.",
        "ROUGE-1 selection makes the target unique, so the loss has no ambiguity.",
    ],
)

register_question(
    "why only the gaps are the target",
    "pegasus",
    "BART's decoder rewrites the whole document; PEGASUS's writes only the removed "
    "sentences. What does PEGASUS gain by that?",
    [
        "Nothing: the two objectives are the same up to a constant.",
        "Its encoder can be smaller, because it reads less.",
        "Its decoder never copies a sentence it can read in the source: every target "
        "token must be generated from elsewhere, as in a summary, and the target is "
        "short, so a step costs less.",
        "It does not need a [MASK] token.",
    ],
)
