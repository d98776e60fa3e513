"""Corpora, training runs and probes of ``chapters/word_vectors.ipynb``, kept apart from
the models (``ptlm_lite.word_vectors``).

* :func:`world_corpus`: sentences about the synthetic world (``ptlm_lite.data.world``),
  one fact per sentence, with one city renamed after a colour (a word with two senses);
* :func:`shakespeare_corpus`: sentences of the plays, as words;
* :func:`fit`: any of the chapter's models trained by ``ptlm_lite.train.train``;
* :func:`gensim_vectors`: gensim's word2vec and fastText on the same sentences (the
  reference implementation);
* :func:`analogy_questions`, :func:`analogy_scores`, :func:`misspell`,
  :func:`kind_share`, :func:`group_cosine`: the probes, one score per test example.
"""

from __future__ import annotations

import random

import numpy as np
import torch

from ..data.world import make_world
from ..train import set_seed, train
from ..word_vectors import (
    NNLM,
    SGNS,
    FastText,
    GloVe,
    Vocab,
    context_windows,
    cooccurrence,
    nearest,
    words,
)

__all__ = [
    "POLYSEMOUS",
    "world_corpus",
    "world_sentences",
    "shakespeare_corpus",
    "fit",
    "gensim_vectors",
    "random_vectors",
    "analogy_questions",
    "analogy_scores",
    "misspell",
    "kind_share",
    "group_cosine",
]

POLYSEMOUS = "orange"  # a colour of the world, and (here) the name of a city too

TEMPLATES = {  # one fact per sentence; {x} is the head, {y} the tail
    "city": (
        "{x} is a {size} city in {y}",
        "{x} lies in {y}",
        "the road to {x} runs through {y}",
        "{y} governs the city of {x}",
    ),
    "country": ("{x} is a country in {region}", "the people of {x} live in {region}"),
    "born": ("{x} was born in {y}", "{x} grew up in the city of {y}"),
    "works": ("{x} works for {y}", "{x} is employed by {y}"),
    "job": ("{x} is a {y}", "{x} works as a {y}"),
    "colour": (
        "the favourite colour of {x} is {y}",
        "{x} likes the colour {y}",
        "{x} painted the door {y}",
    ),
    "org": ("{x} is a {industry} company based in {y}", "{x} has its office in {y}"),
}


def world_corpus(n_sentences: int = 6000, seed: int = 0, n_entities: int = 120):
    """``(sentences, facts)``: ``n_sentences`` sentences (lists of words) drawn from
    the world's facts, and the facts as ``{"country_of": {city: country}, "kind":
    {word: kind}}``. The first city is renamed ``POLYSEMOUS`` ("orange"), a colour
    word: its one vector must serve both senses."""
    if (
        isinstance(n_sentences, bool)
        or not isinstance(n_sentences, int)
        or n_sentences < 1
    ):
        raise ValueError(f"n_sentences must be an integer >= 1, got {n_sentences!r}")
    facts, info = _world_facts(seed, n_entities)
    rng = random.Random(f"word_vectors/{seed}")
    sentences = []
    for _ in range(n_sentences):
        group, x, y, extra = rng.choice(facts)
        sentences.append(words(rng.choice(TEMPLATES[group]).format(x=x, y=y, **extra)))
    return sentences, info


def world_sentences(seed: int = 0, n_entities: int = 120) -> list[list[str]]:
    """Every distinct sentence :func:`world_corpus` can draw (each fact in each of its
    templates), once, in a fixed order: the world is small (about 830 sentences at
    120 entities), so a large draw repeats them; ``chapters/elmo.ipynb`` holds some out
    of pre-training and probes each sentence once."""
    facts, _ = _world_facts(seed, n_entities)
    out = {}
    for group, x, y, extra in facts:
        for t in TEMPLATES[group]:
            out.setdefault(tuple(words(t.format(x=x, y=y, **extra))), None)
    return [list(s) for s in out]


def _world_facts(seed: int, n_entities: int):
    """The world's facts as ``(template group, x, y, extra fields)`` and the
    ``{"country_of", "kind"}`` dictionary of :func:`world_corpus`."""
    world = make_world(seed, n_entities)
    name = {e.id: e.name.lower() for e in world.entities}
    cities = world.of_kind("city")
    name[cities[0].id] = POLYSEMOUS
    first = {e.id: words(e.name)[0] for e in world.of_kind("person")}
    facts = []  # (template group, x, y, extra fields)
    for c in cities:
        facts.append(
            (
                "city",
                name[c.id],
                name[world.one(c, "located_in").id],
                dict(size=c.attributes["size"]),
            )
        )
    for y in world.of_kind("country"):
        facts.append(("country", name[y.id], "", dict(region=y.attributes["region"])))
    for o in world.of_kind("organisation"):
        facts.append(
            (
                "org",
                name[o.id],
                name[world.one(o, "located_in").id],
                dict(industry=o.attributes["industry"]),
            )
        )
    for p in world.of_kind("person"):
        a = p.attributes
        facts += [
            ("born", first[p.id], name[world.one(p, "born_in").id], {}),
            ("works", first[p.id], name[world.one(p, "works_for").id], {}),
            ("job", first[p.id], a["occupation"], {}),
            ("colour", first[p.id], a["colour"], {}),
        ]
    kind = {name[e.id]: e.kind for e in world.entities if e.kind in ("city", "country")}
    kind.update(
        {
            w: "colour"
            for w in (
                "red",
                "blue",
                "green",
                "yellow",
                "purple",
                "orange",
                "white",
                "black",
            )
        }
    )
    kind[POLYSEMOUS] = "city and colour"
    country_of = {f[1]: f[2] for f in facts if f[0] == "city"}
    return facts, {"country_of": country_of, "kind": kind}


def shakespeare_corpus(max_sentences: int = 20000) -> list[list[str]]:
    """Sentences of the training plays as lower-cased words (at most
    ``max_sentences``)."""
    from ..data.shakespeare import documents

    out = [words(s) for doc in documents("train") for s in doc]
    return [s for s in out if len(s) > 1][:max_sentences]


def fit(
    kind: str,
    sentences,
    vocab: Vocab,
    *,
    seed: int,
    steps: int,
    dim: int = 32,
    window: int = 2,
    batch: int = 256,
    lr: float = 0.01,
    progress=False,
    callback=None,
    **options,
):
    """Train one model of the chapter (``kind``: "skipgram", "cbow", "fasttext",
    "glove" or "nnlm") with ``ptlm_lite.train.train``; returns ``(model, history)``.
    Batches are drawn at random from the corpus's windows with a generator seeded by
    ``seed``, which also fixes the initial weights."""
    ids = [vocab.encode(s) for s in sentences]
    g = torch.Generator().manual_seed(seed)
    set_seed(seed)
    if kind in ("skipgram", "cbow"):
        model = SGNS(vocab.counts, dim, mode=kind, **options)
    elif kind == "fasttext":
        model = FastText(vocab, dim, **options)
    elif kind == "glove":
        model = GloVe(len(vocab), dim)
    elif kind == "nnlm":
        model = NNLM(len(vocab), window, dim, **options)
    else:
        raise ValueError(
            f"kind must be skipgram, cbow, fasttext, glove or nnlm, got {kind!r}"
        )
    if kind == "glove":  # the non-zero entries of X, in random batches
        X = cooccurrence(ids, len(vocab), window)
        i, j = X.nonzero(as_tuple=True)
        data = dict(i=i, j=j, x=X[i, j])
    elif kind == "nnlm":  # the `window` previous words predict the next
        rows = [s[t - window : t + 1] for s in ids for t in range(window, len(s))]
        rows = torch.tensor(rows).view(-1, window + 1)
        data = dict(context=rows[:, :-1], target=rows[:, -1])
    else:
        centre, context, valid = context_windows(ids, window)
        data = dict(centre=centre, context=context, valid=valid)
    n = len(next(iter(data.values())))

    def batches(step):
        pick = torch.randint(0, n, (batch,), generator=g)
        return {k: v[pick] for k, v in data.items()}

    history = train(
        model,
        batches,
        steps=steps,
        lr=lr,
        weight_decay=0.0,
        seed=seed,
        loss_fn=lambda m, b: m(**b),
        progress=progress,
        callback=callback,
        desc=kind,
    )
    return model.eval(), history


def gensim_vectors(
    kind: str,
    sentences,
    vocab: Vocab,
    *,
    seed: int,
    dim: int = 32,
    window: int = 2,
    epochs: int = 5,
) -> torch.Tensor:
    """gensim's skip-gram (``kind="skipgram"``) or fastText (``"fasttext"``) trained on
    the same sentences, as a (V, D) tensor in ``vocab``'s order (one worker: the same
    seed gives the same vectors)."""
    from gensim.models import FastText as GFastText
    from gensim.models import Word2Vec

    cls = {"skipgram": Word2Vec, "fasttext": GFastText}.get(kind)
    if cls is None:
        raise ValueError(f"kind must be 'skipgram' or 'fasttext', got {kind!r}")
    model = cls(
        sentences,
        vector_size=dim,
        window=window,
        min_count=1,
        sg=1,
        negative=5,
        workers=1,
        seed=seed,
        epochs=epochs,
    )
    return torch.tensor(np.stack([model.wv[w] for w in vocab.itos]))


def random_vectors(vocab: Vocab, dim: int, seed: int) -> torch.Tensor:
    """The baseline: one random Gaussian vector per word (nothing learnt)."""
    return torch.randn(len(vocab), dim, generator=torch.Generator().manual_seed(seed))


def analogy_questions(facts: dict, n: int = 200, seed: int = 0) -> list[tuple]:
    """``n`` questions city1 : country1 :: city2 : country2, with two different
    countries (the polysemous city left out)."""
    pairs = [(c, y) for c, y in sorted(facts["country_of"].items()) if c != POLYSEMOUS]
    rng = random.Random(f"analogies/{seed}")
    out = []
    while len(out) < n:
        (a, b), (c, d) = rng.sample(pairs, 2)
        if b != d:
            out.append((a, b, c, d))
    return out


def analogy_scores(vectors, vocab: Vocab, questions) -> np.ndarray:
    """1/0 per question: is the word nearest to b - a + c (query words excluded) d?
    The same answers as :func:`~ptlm_lite.word_vectors.analogy`, all questions at once.
    """
    v = torch.nn.functional.normalize(torch.as_tensor(vectors).float(), dim=-1)
    idx = torch.tensor([[vocab.stoi[w] for w in q] for q in questions])  # (Q, 4)
    query = v[idx[:, 1]] - v[idx[:, 0]] + v[idx[:, 2]]
    cos = torch.nn.functional.normalize(query, dim=-1) @ v.T  # (Q, V)
    cos.scatter_(1, idx[:, :3], -2.0)  # the query words are never the answer
    return (cos.argmax(1) == idx[:, 3]).float().numpy()


def misspell(word: str, rng: random.Random) -> str:
    """``word`` with one inner letter replaced by another (never the same word)."""
    if len(word) < 3:
        raise ValueError(f"word must have at least 3 letters, got {word!r}")
    i = rng.randrange(1, len(word) - 1)
    letter = rng.choice([ch for ch in "aeioulnrst" if ch != word[i]])
    return word[:i] + letter + word[i + 1 :]


def kind_share(
    vectors, vocab: Vocab, query, kind: dict, want: str, k: int = 5, exclude=()
) -> float:
    """The share of ``query``'s ``k`` nearest neighbours whose kind is ``want``."""
    near = nearest(vectors, vocab.itos, query, k, exclude)
    return sum(kind.get(w) == want for w, _ in near) / k


def group_cosine(vectors, vocab: Vocab, word: str, group) -> float:
    """Cosine between ``word`` and the mean direction of ``group``'s unit vectors
    (``word`` itself left out of the group): how much ``word`` looks like that kind."""
    v = torch.nn.functional.normalize(torch.as_tensor(vectors).float(), dim=-1)
    rows = [vocab.stoi[w] for w in group if w != word and w in vocab.stoi]
    if not rows:
        raise ValueError(f"group has no vocabulary word other than {word!r}")
    centre = torch.nn.functional.normalize(v[rows].mean(0), dim=0)
    return float(v[vocab.stoi[word]] @ centre)
