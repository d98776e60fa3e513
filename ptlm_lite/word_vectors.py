"""Static word vectors: one vector per word, learnt from co-occurrence (chapter
``chapters/word_vectors.ipynb``).

Four ways to learn the embedding matrix, the first layer that was ever pre-trained:

    NNLM      Bengio et al. (2003): predict the next word from the n-1 previous ones;
              the lookup table C is a by-product
    SGNS      word2vec (Mikolov et al., 2013): skip-gram (the centre predicts each
              context word) or CBOW (the mean of the context predicts the centre), with
              k negative words drawn from the unigram distribution to the power 3/4
    GloVe     Pennington et al. (2014): weighted least squares on log co-occurrence
              counts, w_i·w~_j + b_i + b~_j ≈ log X_ij, weighted by f(X_ij)
    FastText  Bojanowski et al. (2017): skip-gram where a word's vector is the sum of
              its character n-grams' vectors (hashed into buckets), so a word never seen
              in training still gets one

and the two probes of the chapter: nearest neighbours by cosine, and analogies by vector
arithmetic (b - a + c, excluding the three query words). Every model returns its loss
from ``forward(**batch)``, so ``ptlm_lite.train.train`` trains them all.
"""

from __future__ import annotations

import re
from collections import Counter

import torch
import torch.nn.functional as F
from torch import nn

WORD = re.compile(r"[a-z]+")


def words(text: str) -> list[str]:
    """Lower-cased words of ``text`` (letters only). Chapter word_vectors."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    return WORD.findall(text.lower())


class Vocab:
    """Words seen at least ``min_count`` times, most frequent first, with their counts.

    Chapter word_vectors. ``encode(sentence)`` drops unknown words (word2vec's habit).
    """

    def __init__(self, sentences: list[list[str]], min_count: int = 1):
        if not isinstance(min_count, int) or min_count < 1:
            raise ValueError(f"min_count must be an integer >= 1, got {min_count!r}")
        counts = Counter(w for s in sentences for w in s)
        kept = sorted(
            (w for w, c in counts.items() if c >= min_count),
            key=lambda w: (-counts[w], w),
        )
        if not kept:
            raise ValueError("sentences hold no word seen min_count times")
        self.itos = kept
        self.stoi = {w: i for i, w in enumerate(kept)}
        self.counts = torch.tensor([counts[w] for w in kept], dtype=torch.float)

    def __len__(self) -> int:
        return len(self.itos)

    def encode(self, sentence: list[str]) -> list[int]:
        return [self.stoi[w] for w in sentence if w in self.stoi]


def noise_distribution(counts, power: float = 0.75) -> torch.Tensor:
    """word2vec's distribution of negative words: P(w) ∝ count(w)^0.75 (chapter
    word_vectors). The power flattens Zipf's law: rare words are drawn more often than
    their frequency, "the" less."""
    counts = torch.as_tensor(counts, dtype=torch.float)
    if counts.ndim != 1 or counts.numel() == 0 or (counts < 0).any():
        raise ValueError("counts must be a non-empty 1-D sequence of counts >= 0")
    if not 0 <= power <= 1:
        raise ValueError(f"power must be in [0, 1], got {power!r}")
    p = counts**power
    return p / p.sum()


def context_windows(ids: list[list[int]], window: int) -> tuple[torch.Tensor, ...]:
    """Every position of every sentence as ``(centre (N,), context (N, 2·window),
    valid (N, 2·window))``: skip-gram's pairs are ``(centre, context[valid])``, CBOW's
    examples the whole rows. Chapter word_vectors."""
    if not isinstance(window, int) or window < 1:
        raise ValueError(f"window must be an integer >= 1, got {window!r}")
    centres, contexts = [], []
    for s in ids:
        padded = [-1] * window + list(s) + [-1] * window
        for t, w in enumerate(s):
            centres.append(w)
            contexts.append(
                padded[t : t + window] + padded[t + window + 1 : t + 2 * window + 1]
            )
    context = torch.tensor(contexts, dtype=torch.long).view(-1, 2 * window)
    return torch.tensor(centres, dtype=torch.long), context.clamp(min=0), context >= 0


class SGNS(nn.Module):
    """word2vec with negative sampling: ``mode="skipgram"`` or ``"cbow"``.

    For a true pair (centre c, context o) and k noise words n_1..n_k ~ P(w)^0.75:

        loss = -log σ(u_o · v_c) - Σ_i log σ(-u_{n_i} · v_c)

    where v is the input table (the word vectors kept afterwards) and u the output
    table. CBOW swaps the roles: v_c becomes the mean of the context's input vectors,
    and o the centre word. Chapter word_vectors.
    """

    def __init__(self, counts, dim: int = 32, negatives: int = 5, mode="skipgram"):
        super().__init__()
        if mode not in ("skipgram", "cbow"):
            raise ValueError(f"mode must be 'skipgram' or 'cbow', got {mode!r}")
        if not isinstance(negatives, int) or negatives < 1:
            raise ValueError(f"negatives must be an integer >= 1, got {negatives!r}")
        self.mode, self.negatives = mode, negatives
        self.register_buffer("noise", noise_distribution(counts))
        V = len(self.noise)
        self.inp = nn.Embedding(V, dim)  # v: the word vectors
        self.out = nn.Embedding(V, dim)  # u: the context vectors, zero at the start
        nn.init.uniform_(self.inp.weight, -0.5 / dim, 0.5 / dim)
        nn.init.zeros_(self.out.weight)

    def embed(self, ids: torch.Tensor) -> torch.Tensor:
        return self.inp(ids)

    def forward(self, centre, context, valid):  # (B,), (B, 2w), (B, 2w)
        if self.mode == "cbow":  # the mean of the context predicts the centre
            h = (self.embed(context) * valid[..., None]).sum(1)
            h, targets = h / valid.sum(1, keepdim=True).clamp(min=1), centre[:, None]
            keep = valid.any(1, keepdim=True)
        else:  # the centre predicts each context word
            h, targets, keep = self.embed(centre), context, valid
        h = h[:, None, :]  # (B, 1, D)
        pos = (self.out(targets) * h).sum(-1)  # (B, P)
        draws = torch.multinomial(self.noise, targets.numel() * self.negatives, True)
        neg = self.out(draws.view(*targets.shape, self.negatives))  # (B, P, k, D)
        neg = (neg * h[:, :, None, :]).sum(-1)  # (B, P, k)
        loss = -F.logsigmoid(pos) - F.logsigmoid(-neg).sum(-1)
        return (loss * keep).sum() / keep.sum()

    def vectors(self) -> torch.Tensor:
        """The word vectors, one row per vocabulary word (V, D)."""
        return self.embed(torch.arange(len(self.noise), device=self.noise.device))


def char_ngrams(word: str, n_min: int = 3, n_max: int = 6) -> list[str]:
    """fastText's character n-grams of ``word`` between ``<`` and ``>`` (chapter
    word_vectors): ``char_ngrams("where", 3, 3)`` is ``['<wh', 'whe', 'her', 'ere',
    're>']``; the whole ``<where>`` is kept apart (a vocabulary word's own vector)."""
    if not isinstance(word, str) or not word:
        raise ValueError(f"word must be a non-empty str, got {word!r}")
    if not (isinstance(n_min, int) and isinstance(n_max, int) and 1 <= n_min <= n_max):
        raise ValueError(
            f"n_min, n_max must be integers 1 <= n_min <= n_max, "
            f"got {n_min!r}, {n_max!r}"
        )
    w = f"<{word}>"
    grams = [
        w[i : i + n] for n in range(n_min, n_max + 1) for i in range(len(w) - n + 1)
    ]
    return [g for g in grams if g != w]


def ngram_bucket(gram: str, buckets: int) -> int:
    """The bucket of an n-gram: fastText's FNV-1a hash modulo ``buckets`` (stable from
    run to run, unlike Python's ``hash``). Chapter word_vectors."""
    h = 2166136261
    for byte in gram.encode("utf-8"):
        h = ((h ^ byte) * 16777619) % 2**32
    return h % buckets


class FastText(SGNS):
    """Skip-gram whose input vector of word w is a sum over its pieces:

        v_w = z_w + Σ_{g ∈ n-grams(w)} z_g      (z_g: the row of g's hash bucket)

    A word outside the vocabulary has no z_w, but its n-grams still have rows, so
    :meth:`vector` gives it a vector. Chapter word_vectors.
    """

    def __init__(self, vocab: Vocab, dim=32, negatives=5, buckets=2000, n=(3, 6)):
        super().__init__(vocab.counts, dim, negatives, "skipgram")
        if not isinstance(buckets, int) or buckets < 1:
            raise ValueError(f"buckets must be an integer >= 1, got {buckets!r}")
        self.buckets, self.n = buckets, n
        V = len(vocab)
        self.inp = nn.Embedding(V + buckets, dim)  # rows: words, then buckets
        nn.init.uniform_(self.inp.weight, -0.5 / dim, 0.5 / dim)
        pieces = [[i] + self.bucket_rows(w) for i, w in enumerate(vocab.itos)]
        width = max(map(len, pieces))
        self.register_buffer(
            "pieces", torch.tensor([p + [0] * (width - len(p)) for p in pieces])
        )
        self.register_buffer(
            "filled",
            torch.tensor([[1.0] * len(p) + [0.0] * (width - len(p)) for p in pieces]),
        )

    def bucket_rows(self, word: str) -> list[int]:
        grams = char_ngrams(word, *self.n)
        return [self.words_offset + ngram_bucket(g, self.buckets) for g in grams]

    @property
    def words_offset(self) -> int:
        return self.inp.num_embeddings - self.buckets

    def embed(self, ids):  # (...,) -> (..., D): the sum of each word's pieces
        rows = self.inp(self.pieces[ids])  # (..., P, D)
        return (rows * self.filled[ids][..., None]).sum(-2)

    def vector(self, word: str) -> torch.Tensor:
        """The vector of a word never seen in training: its n-grams' rows summed (a
        vocabulary word's row in :meth:`vectors` adds its own row z_w)."""
        rows = torch.tensor(self.bucket_rows(word), device=self.noise.device)
        return self.inp(rows).sum(0)


def glove_weight(x, x_max: float = 100.0, alpha: float = 0.75) -> torch.Tensor:
    """GloVe's f(x) = (x / x_max)^α below x_max, 1 above (chapter word_vectors): rare
    pairs count less, frequent ones are capped. f(0) = 0, so absent pairs cost
    nothing."""
    if not x_max > 0:
        raise ValueError(f"x_max must be > 0, got {x_max!r}")
    x = torch.as_tensor(x, dtype=torch.float)
    return torch.where(x < x_max, (x / x_max) ** alpha, torch.ones_like(x))


def cooccurrence(ids: list[list[int]], size: int, window: int) -> torch.Tensor:
    """GloVe's co-occurrence matrix X (size, size): each pair within ``window`` words
    adds 1/distance, both ways. Chapter word_vectors."""
    centre, context, valid = context_windows(ids, window)
    dist = torch.tensor(list(range(window, 0, -1)) + list(range(1, window + 1)))
    X = torch.zeros(size, size)
    X.index_put_(
        (centre[:, None].expand_as(context)[valid], context[valid]),
        (1.0 / dist).expand_as(context)[valid],
        accumulate=True,
    )
    return X


class GloVe(nn.Module):
    """GloVe: minimise Σ_ij f(X_ij) (w_i·w~_j + b_i + b~_j - log X_ij)² over the
    non-zero entries of X; the word vectors are w + w~. Chapter word_vectors."""

    def __init__(self, size: int, dim: int = 32):
        super().__init__()
        self.w, self.w_ctx = nn.Embedding(size, dim), nn.Embedding(size, dim)
        self.b, self.b_ctx = nn.Embedding(size, 1), nn.Embedding(size, 1)
        for e in (self.w, self.w_ctx):
            nn.init.uniform_(e.weight, -0.5 / dim, 0.5 / dim)
        for e in (self.b, self.b_ctx):
            nn.init.zeros_(e.weight)

    def forward(self, i, j, x):  # (B,), (B,), (B,) counts > 0
        fit = (
            (self.w(i) * self.w_ctx(j)).sum(-1) + self.b(i)[:, 0] + self.b_ctx(j)[:, 0]
        )
        return (glove_weight(x) * (fit - x.log()) ** 2).mean()

    def vectors(self) -> torch.Tensor:
        return self.w.weight + self.w_ctx.weight


class NNLM(nn.Module):
    """Bengio et al.'s neural language model: the n-1 previous words' rows of the table
    C, concatenated, through a tanh layer, then a softmax over the vocabulary:

        y = b + W x + U tanh(d + H x),   x = [C(w_{t-1}), ..., C(w_{t-n+1})]

    C is the word vectors. Chapter word_vectors.
    """

    def __init__(self, size: int, context: int = 3, dim: int = 32, hidden: int = 64):
        super().__init__()
        self.C = nn.Embedding(size, dim)
        self.H = nn.Linear(context * dim, hidden)
        self.U = nn.Linear(hidden, size)
        self.W = nn.Linear(context * dim, size, bias=False)  # the direct connection

    def forward(self, context, target):  # (B, n-1), (B,)
        x = self.C(context).flatten(1)  # (B, (n-1)·D)
        return F.cross_entropy(self.W(x) + self.U(torch.tanh(self.H(x))), target)

    def vectors(self) -> torch.Tensor:
        return self.C.weight


def nearest(vectors, itos: list[str], query, k: int = 5, exclude=()) -> list[tuple]:
    """The ``k`` words whose vectors have the highest cosine with ``query`` (a word of
    ``itos`` or a vector), as ``(word, cosine)``; the query word itself and ``exclude``
    are left out. Chapter word_vectors."""
    if not isinstance(k, int) or k < 1:
        raise ValueError(f"k must be an integer >= 1, got {k!r}")
    vectors = torch.as_tensor(vectors, dtype=torch.float)
    if isinstance(query, str):
        if query not in itos:
            raise ValueError(f"query {query!r} is not in the vocabulary")
        exclude = (*exclude, query)
        query = vectors[itos.index(query)]
    cos = F.normalize(vectors, dim=-1) @ F.normalize(
        torch.as_tensor(query).float(), dim=0
    )
    for w in exclude:
        if w in itos:
            cos[itos.index(w)] = -2.0
    top = cos.topk(min(k, len(itos))).indices.tolist()
    return [(itos[i], cos[i].item()) for i in top if cos[i] > -2]


def analogy(vectors, itos: list[str], a: str, b: str, c: str, k: int = 1) -> list[str]:
    """a : b :: c : ?, answered by the words nearest to b - a + c (3CosAdd), the three
    query words excluded (else the answer is nearly always b or c). Chapter
    word_vectors."""
    for name, w in (("a", a), ("b", b), ("c", c)):
        if w not in itos:
            raise ValueError(f"{name} ({w!r}) is not in the vocabulary")
    v = F.normalize(torch.as_tensor(vectors, dtype=torch.float), dim=-1)
    at = lambda w: v[itos.index(w)]
    return [w for w, _ in nearest(v, itos, at(b) - at(a) + at(c), k, (a, b, c))]
