"""Solutions for ``chapters/word_vectors.ipynb`` (checked by
``tests/test_exercises.py``).
"""

import torch

# The right answer of each of the chapter's questions (the package holds only salted
# hashes of them: scripts/seal_answers.py).
ANSWERS = {
    "why the 3/4 power": "B",
    "one vector per word": "C",
}

EXPLANATIONS = {
    "why the 3/4 power": (
        "Raising counts to 3/4 shrinks the gap between frequent and rare words: a word "
        "1000 times as frequent as another is drawn only 1000^0.75 ≈ 178 times as often. "
        "Negatives then include rarer words, which carry more information than yet "
        "another 'the', while frequent words are still drawn most. Mikolov et al. found "
        "3/4 better than both the unigram (power 1) and the uniform (power 0) "
        "distributions."
    ),
    "one vector per word": (
        "A static method has one row per word type. Every context of 'orange', colour "
        "or city, pushes the same row, so it ends between the two clusters: more "
        "colour-like than any city and more city-like than any colour, but less close to "
        "the colours than a plain colour is. Telling the senses apart needs a vector "
        "that depends on the sentence: contextual vectors (CoVe, ELMo, and then BERT)."
    ),
}


def my_noise_distribution(counts):
    p = counts.float() ** 0.75
    return p / p.sum()


def my_glove_weight(x):
    x = x.float()
    return torch.clamp(x / 100.0, max=1.0) ** 0.75


def my_char_ngrams(word, n):
    w = f"<{word}>"
    grams = [w[i : i + n] for i in range(len(w) - n + 1)]
    return [g for g in grams if g != w]
