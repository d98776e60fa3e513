"""Exercises and questions of ``chapters/word_vectors.ipynb``: word2vec's noise
distribution, GloVe's weighting and fastText's n-grams. Solutions:
``solutions/word_vectors.py``.
"""

from __future__ import annotations

import torch

from ..exercises import register_exercise, register_question


@register_exercise("noise distribution", "word_vectors", "my_noise_distribution")
def _noise_distribution():
    from ..word_vectors import noise_distribution

    cases = [
        (torch.tensor([10.0, 1.0]),),
        (torch.tensor([1000.0, 100.0, 10.0, 1.0]),),
        (torch.tensor([3.0, 3.0, 3.0]),),
        (torch.tensor([500.0, 0.0, 20.0, 7.0, 1.0]),),
    ]
    return noise_distribution, cases


@register_exercise("glove weight", "word_vectors", "my_glove_weight")
def _glove_weight():
    from ..word_vectors import glove_weight

    cases = [
        (torch.tensor([0.0, 1.0, 10.0, 50.0, 99.0]),),
        (torch.tensor([100.0, 150.0, 1e4]),),
        (torch.tensor([[2.0, 300.0], [0.5, 100.0]]),),
    ]
    return glove_weight, cases


@register_exercise("character n-grams", "word_vectors", "my_char_ngrams")
def _char_ngrams():
    from ..word_vectors import char_ngrams

    def reference(word, n):
        return char_ngrams(word, n, n)

    return reference, [("where", 3), ("where", 4), ("orange", 3), ("at", 4), ("a", 2)]


register_question(
    "why the 3/4 power",
    "word_vectors",
    "word2vec draws its negative words from the unigram distribution raised to the "
    "power 3/4 (and renormalised). What does the power do?",
    [
        "It makes sampling faster, because the distribution has fewer distinct values.",
        "It flattens the distribution: rare words are drawn more often than their "
        "frequency and the most frequent words less often.",
        "It sharpens the distribution, so nearly every negative is a frequent word "
        "such as 'the'.",
        "It removes the words of the current window from the negatives.",
    ],
)

register_question(
    "one vector per word",
    "word_vectors",
    "In this chapter's corpus 'orange' is both a colour and a city. What does a static "
    "method (word2vec, GloVe, fastText) learn for it?",
    [
        "Two vectors, one per sense, chosen at test time by the surrounding words.",
        "The vector of its more frequent sense only; the other sense is ignored.",
        "One vector fitted to all its contexts at once, pulled towards both senses and "
        "close to neither as tightly as an unambiguous word is to its own kind.",
        "No vector: words that appear in two kinds of context are dropped from the "
        "vocabulary.",
    ],
)
