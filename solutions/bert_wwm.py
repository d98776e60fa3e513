"""Solutions for ``chapters/bert_wwm.ipynb`` (checked by ``tests/test_exercises.py``
and ``tests/test_bert_wwm.py``).
"""

import torch


# The right answer of each of the chapter's questions (the package holds only salted
# hashes of them: scripts/seal_answers.py).
ANSWERS = {
    "wwm for Chinese": "B",
    "which 15% to fix": "B",
}

EXPLANATIONS = {
    "wwm for Chinese": (
        "Chinese BERT keeps one token per character: a character vocabulary is small "
        "and has almost no unknown tokens, where a word vocabulary would be huge and "
        "still meet unseen words. Whole-word masking changes only the pre-training "
        "task: a segmenter (LTP in Cui et al.) says which characters form a word, and "
        "all of them are masked together, so a word can no longer be guessed from its "
        "own visible characters. The model still reads and predicts characters."
    ),
    "which 15% to fix": (
        "Google fills a budget of round(0.15 n) pieces with whole words in random "
        "order and skips a word that would overflow it. In a 32-token pair the budget "
        "is about four pieces, so a word of four or more pieces almost never fits and "
        "one-piece words fill the budget instead (section 2.2 measured it). Compared "
        "with BERT, that changes which words get hidden, not only how they are grouped. "
        "Choosing 15% of the words gives every piece BERT's 15% chance whatever the "
        "length of its word, so grouping is the only change. Google's segments of 128 "
        "or 512 tokens have budgets of 19 or 77 pieces, where long words fit easily."
    ),
}


def my_word_ids(ids, continuation, special_ids):
    special = torch.tensor(sorted(special_ids))
    ordinary = ~torch.isin(ids, special)  # (B, T)
    after_ordinary = torch.zeros_like(ordinary)
    after_ordinary[:, 1:] = ordinary[:, :-1]
    # a new word: an ordinary token that does not continue an ordinary token
    starts = ordinary & ~(continuation[ids] & after_ordinary)
    words = starts.long().cumsum(1) - 1
    return torch.where(ordinary, words, torch.full_like(words, -1))


def my_expand_to_words(selected, words):
    out = torch.zeros_like(selected)
    for r in range(words.shape[0]):
        hit = words[r][selected[r] & (words[r] >= 0)].unique()
        out[r] = torch.isin(words[r], hit) & (words[r] >= 0)
    return out
