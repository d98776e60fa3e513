"""Exercises of ``chapters/bert_wwm.ipynb`` (solutions: ``solutions/bert_wwm.py``).
The checks compare with the package's own :mod:`ptlm_lite.wwm`.
"""

from __future__ import annotations

import torch

from ..exercises import register_exercise, register_question

# as the chapter's WordPiece: ids 0..6 are special ([PAD] 0, [CLS] 2, [SEP] 3, ...)
_SPECIAL = tuple(range(7))
_VOCAB = 60


def _packed_batch(seed: int, B: int = 6, T: int = 14):
    """Rows like ``pretraining_batches``'s: ``[CLS] a [SEP] b [SEP]`` then padding, with
    random ordinary ids; a third of the vocabulary are ``##`` continuations, and some
    rows start a segment with one (a word cut by truncation).
    """
    g = torch.Generator().manual_seed(seed)
    continuation = torch.zeros(_VOCAB, dtype=torch.bool)
    continuation[torch.randperm(_VOCAB - 7, generator=g)[:18] + 7] = True
    ids = torch.randint(7, _VOCAB, (B, T), generator=g)
    for r in range(B):
        n = int(torch.randint(6, T + 1, (1,), generator=g))  # real tokens
        cut = int(torch.randint(2, n - 2, (1,), generator=g))  # where A ends
        ids[r, 0], ids[r, cut], ids[r, n - 1] = 2, 3, 3
        ids[r, n:] = 0
    return ids, continuation


@register_exercise("word ids from ##", "bert_wwm", "my_word_ids")
def _word_ids():
    from ..wwm import word_ids

    cases = []
    for seed in (0, 1, 2):
        ids, continuation = _packed_batch(seed)
        cases.append((ids, continuation, _SPECIAL))
    # the chapter's example: [CLS] m ##istress is J ##ul ##ie ##t [SEP] [PAD]
    continuation = torch.zeros(_VOCAB, dtype=torch.bool)
    continuation[[11, 14, 15, 16]] = True
    example = torch.tensor([[2, 10, 11, 12, 13, 14, 15, 16, 3, 0]])
    cases.append((example, continuation, _SPECIAL))
    # a continuation right after [SEP] starts a word of its own
    cases.append((torch.tensor([[2, 10, 3, 11, 14, 12, 3]]), continuation, _SPECIAL))
    return word_ids, cases


@register_exercise("expand to whole words", "bert_wwm", "my_expand_to_words")
def _expand():
    from ..wwm import expand_to_words, word_ids

    cases = []
    for seed in (3, 4, 5):
        ids, continuation = _packed_batch(seed)
        words = word_ids(ids, continuation, _SPECIAL)
        g = torch.Generator().manual_seed(seed)
        selected = (torch.rand(ids.shape, generator=g) < 0.25) & (words >= 0)
        cases.append((selected, words))
    # the chapter's example (row 0: only ##istress chosen), and a short pair (row 1)
    words = torch.tensor(
        [[-1, 0, 0, 1, 2, 2, 2, 2, -1, -1], [-1, 0, 1, 1, -1, 2, 3, 3, 3, -1]]
    )
    selected = torch.zeros(2, 10, dtype=torch.bool)
    selected[0, 2] = selected[1, 5] = True  # "##istress" of row 0; word 2 of row 1
    cases.append((selected, words))
    return expand_to_words, cases


register_question(
    "wwm for Chinese",
    "bert_wwm",
    "Chinese BERT reads one token per character. What does Chinese BERT-WWM change?",
    [
        "Its input becomes the segmenter's words, each with an embedding of its own.",
        "The input stays characters; a word segmenter only decides which characters "
        "are masked together.",
        "Each masked word is predicted as one token from a vocabulary of words.",
        "It masks 15% of the characters as before, but never a word's first character.",
    ],
)
register_question(
    "which 15% to fix",
    "bert_wwm",
    "The chapter's pairs are 32 tokens long. Why does it choose 15% of the words "
    "rather than Google's budget of 15% of the pieces, filled with whole words?",
    [
        "Choosing words is faster to compute than filling a budget of pieces.",
        "A budget of about four pieces rarely fits a long word, so Google's rule would "
        "hide the longest words less often than BERT does: a second change.",
        "A budget of pieces would hide more than 15% of the pieces in every pair.",
        "Google's rule can never hide a word of one piece.",
    ],
)
