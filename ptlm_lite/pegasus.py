"""PEGASUS (Zhang, Zhao, Saleh and Liu, 2020): pre-train an encoder-decoder for
summarisation by removing whole sentences and generating them.

    document   s1  s2  s3  s4  s5             gap sentences: s2 and s4 (ratio 0.4)
    source     s1  [MASK]  s3  [MASK]  s5     one [MASK] per removed sentence
    target     s2  s4                         the removed sentences, in order

The objective is a **noise** under the seq2seq noising contract
(:mod:`ptlm_lite.seq2seq`): :func:`gap_sentences` takes one document (a list of
sentences of token ids) and returns a ``Pair(source, target)``. What the paper varies
is *which* sentences go:

* ``"principal"``: the ``m`` sentences that look most like the rest of the document,
  each scored alone (the paper's "Ind-Orig"): ROUGE-1 F1 of the sentence against the
  document without it (:func:`sentence_scores`), top ``m`` kept;
* ``"random"``: ``m`` sentences drawn uniformly (the generator's);
* ``"lead"``: the first ``m``.

``m`` is the gap-sentence ratio times the number of sentences, rounded half up, at
least 1 and (in a document of two or more sentences) at most all but one
(:func:`n_gaps`).

The model is the 2017 encoder-decoder (:class:`~ptlm_lite.transformer.Transformer`)
with the choices PEGASUS (and Hugging Face's ``PegasusForConditionalGeneration``) make:
pre-LN blocks with a final LayerNorm on each side, token embeddings scaled by √d_model,
and sinusoidal positions laid out as all the sines, then all the cosines, instead of
interleaved. :class:`Pegasus` changes only the last; the rest is
``config.pre_norm=True`` (preset ``pegasus-tiny``) and the Transformer's own code, so
the house's :func:`~ptlm_lite.seq2seq.greedy` and
:func:`~ptlm_lite.seq2seq.beam_search` decode it with their cache.

Chapter: ``chapters/pegasus.ipynb``.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import torch

from .config import PRESETS, Config, register_preset
from .seq2seq import Pair, check_document, check_generator, rouge
from .transformer import Transformer

__all__ = [
    "STRATEGIES",
    "n_gaps",
    "sentence_scores",
    "select_gaps",
    "gap_sentences",
    "pegasus_positions",
    "Pegasus",
]

STRATEGIES = ("principal", "random", "lead")

# the book's scales as PEGASUS: pre-LN (a final norm on each side), relu, no dropout
# (runs of a few hundred steps on fresh noise do not overfit)
PEGASUS_FIELDS = dict(pre_norm=True, activation="relu", dropout=0.0)
register_preset(
    "pegasus-tiny",
    **{**PRESETS["tiny"], **PEGASUS_FIELDS, "n_layer": 1, "d_ff": 128, "max_len": 128},
)
register_preset("pegasus-small", **{**PRESETS["small"], **PEGASUS_FIELDS})
# the paper's PEGASUS-Large (568 M weights; 16 layers a side, a 96k SentencePiece
# vocabulary, inputs of 512 tokens), for counting only (the synthesis chapter)
register_preset(
    "pegasus-large", **{**PEGASUS_FIELDS, "vocab_size": 96103, "d_model": 1024,
                        "n_layer": 16, "n_head": 16, "d_ff": 4096, "max_len": 512,
                        "dropout": 0.1},
)  # fmt: skip


def n_gaps(n_sentences: int, ratio: float) -> int:
    """How many sentences a document of ``n_sentences`` loses at gap-sentence ratio
    ``ratio``: ``round(ratio · n)`` (half up), at least 1, at most ``n - 1`` when
    ``n >= 2`` (a source keeps one sentence to read). The paper's best ratio was 30%.

    >>> [n_gaps(n, 0.3) for n in range(1, 9)]
    [1, 1, 1, 1, 2, 2, 2, 2]
    """
    if isinstance(ratio, bool) or not isinstance(ratio, (int, float)):
        raise TypeError(f"ratio must be a number in (0, 1), got {ratio!r}")
    if not 0 < ratio < 1:
        raise ValueError(f"ratio must be in (0, 1), got {ratio!r}")
    if isinstance(n_sentences, bool) or not isinstance(n_sentences, int):
        raise TypeError(f"n_sentences must be an int >= 1, got {n_sentences!r}")
    if n_sentences < 1:
        raise ValueError(f"n_sentences must be >= 1, got {n_sentences}")
    m = max(1, math.floor(ratio * n_sentences + 0.5))
    return min(m, max(1, n_sentences - 1))


@functools.lru_cache(maxsize=8192)
def _scores(doc: tuple) -> tuple:
    # a sentence's token ids as "words" for rouge-score: ROUGE-1 over tokens
    words = [" ".join(map(str, s)) for s in doc]
    rest = [" ".join(w for j, w in enumerate(words) if j != i) for i in range(len(doc))]
    return tuple(rouge(words, rest, types=("rouge1",))["rouge1"].tolist())


def sentence_scores(doc) -> np.ndarray:
    """Each sentence's ROUGE-1 F1 against the rest of the document (PEGASUS's
    principal score, "Ind-Orig"): ``(n,)``.

        score(s_i) = ROUGE-1-F1(s_i, D \\ {s_i})

    Computed by the house's :func:`~ptlm_lite.seq2seq.rouge` (Google's
    ``rouge-score``) on token ids, each id a word, so it counts shared tokens; a
    sentence that repeats the names and words the others use scores high. Memoised per
    document (pure: the same document, the same scores)."""
    return _sentence_scores(check_document(doc))


def _sentence_scores(doc: list[list[int]]) -> np.ndarray:
    if len(doc) == 1:
        return np.zeros(1)
    return np.array(_scores(tuple(map(tuple, doc))))


def select_gaps(doc, strategy: str, ratio: float, generator=None) -> list[int]:
    """The indices (ascending) of the sentences ``strategy`` removes at ``ratio``:
    ``"principal"`` the top :func:`n_gaps` by :func:`sentence_scores` (ties: the
    earlier sentence), ``"random"`` a uniform draw from ``generator``, ``"lead"`` the
    first ones."""
    return _select_gaps(check_document(doc), strategy, ratio, generator)


def _select_gaps(doc: list[list[int]], strategy, ratio, generator) -> list[int]:
    m = n_gaps(len(doc), ratio)
    if strategy == "principal":
        scores = _sentence_scores(doc)
        # stable sort on -score: equal scores keep document order
        chosen = np.argsort(-scores, kind="stable")[:m].tolist()
    elif strategy == "random":
        g = check_generator(generator)
        chosen = torch.randperm(len(doc), generator=g)[:m].tolist()
    elif strategy == "lead":
        chosen = list(range(m))
    else:
        raise ValueError(f"strategy must be one of {STRATEGIES}, got {strategy!r}")
    return sorted(int(i) for i in chosen)


def gap_sentences(
    doc,
    generator: torch.Generator,
    *,
    mask_id: int,
    strategy: str = "principal",
    ratio: float = 0.3,
) -> Pair:
    """Gap-sentence generation, a noise of the seq2seq contract: the chosen sentences
    leave the source, one ``mask_id`` in the place of each, and become the target, in
    document order. ``doc`` is not modified; the same generator state gives the same
    pair (only ``"random"`` draws from it).

    >>> g = torch.Generator().manual_seed(0)
    >>> gap_sentences([[1, 2], [3], [4, 5]], g, mask_id=9, strategy="lead", ratio=0.3)
    Pair(source=[9, 3, 4, 5], target=[1, 2])
    """
    check_generator(generator)
    if isinstance(mask_id, bool) or not isinstance(mask_id, int) or mask_id < 0:
        raise ValueError(
            f"mask_id must be a non-negative int token id, got {mask_id!r}"
        )
    doc = check_document(doc)  # a copy: the caller's lists are never touched
    gaps = set(_select_gaps(doc, strategy, ratio, generator))
    source, target = [], []
    for i, sentence in enumerate(doc):
        if i in gaps:
            source.append(mask_id)
            target.extend(sentence)
        else:
            source.extend(sentence)
    return Pair(source, target)


def pegasus_positions(max_len: int, d_model: int) -> torch.Tensor:
    """Sinusoidal positions as PEGASUS (and Hugging Face) lay them out: the sines of
    every frequency first, then the cosines (the Transformer interleaves them):

        PE[pos, i]         = sin(pos / 10000^(2i/d))     i < d/2
        PE[pos, d/2 + i]   = cos(pos / 10000^(2i/d))

    The same functions in another order of dimensions, so the same model up to a
    permutation; the order matters only to load weights trained with it. Computed in
    float64 as Hugging Face does. ``(max_len, d_model)``, d_model even.
    """
    if d_model % 2:
        raise ValueError(f"d_model must be even, got {d_model}")
    pos = torch.arange(max_len, dtype=torch.float64)[:, None]
    freq = 10000.0 ** (-torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)
    return torch.cat([torch.sin(pos * freq), torch.cos(pos * freq)], dim=1).float()


class Pegasus(Transformer):
    """The PEGASUS encoder-decoder: :class:`~ptlm_lite.transformer.Transformer` with
    pre-LN blocks and final norms (``config.pre_norm`` must be True), √d_model-scaled
    embeddings (the Transformer's) and :func:`pegasus_positions`. Everything else,
    ``encode``, ``decode`` (with its cache), ``forward`` and the loss, is the
    Transformer's, unchanged."""

    config_example = "preset('pegasus-tiny', vocab_size=...)"

    def __init__(self, config: Config, seed: int | None = None):
        if isinstance(config, Config) and not config.pre_norm:
            raise ValueError(
                "config must be a pre-LN Config (pre_norm=True), e.g. "
                f"{self.config_example}"
            )
        if isinstance(config, Config) and (
            config.pos != "sinusoidal" or config.d_embed not in (0, config.d_model)
        ):
            raise ValueError(
                "config.pos must be 'sinusoidal' and d_embed 0: PEGASUS adds fixed "
                "sinusoids to full-width embeddings"
            )
        super().__init__(config, seed)
        # the one change: sines first, then cosines
        self.embed.register_buffer(
            "pe", pegasus_positions(config.max_len, config.d_model), persistent=False
        )
