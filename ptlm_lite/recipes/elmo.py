"""The runs of ``chapters/elmo.ipynb``, kept apart from the models (``ptlm_lite.elmo``).

* the corpus (:func:`corpus`): the word-vector chapter's sentences about the synthetic
  world (:func:`ptlm_lite.recipes.word_vectors.world_corpus`), some held out of
  pre-training, and every distinct sentence once for the probes; one city is named
  "orange", also a colour; each sentence's template (:func:`relation_of`) and the sense
  of each "orange" (:func:`sense_of`);
* :class:`WordTokenizer`: words (letters only, lower-cased) as tokens, with the special
  tokens :mod:`ptlm_lite.finetune` asks for;
* :func:`train_lm`: ELMo's biLM (or the leaky one-model
  :class:`~ptlm_lite.elmo.BiLSTMLM`)
  on the sentences; :func:`translation_pairs` and :func:`train_cove`: CoVe's synthetic
  translation task, whose target language writes "orange" differently in each sense;
* :func:`token_features`, :func:`sense_scores`, :func:`probe_scores`, :func:`fit_mix`:
  the probes, one score per test token;
* :class:`ELMoClassifier`: frozen features (or the fine-tuned biLM) with a
  :class:`~ptlm_lite.elmo.ScalarMix` and concat pooling, for
  :func:`ptlm_lite.finetune.run`.
"""

from __future__ import annotations

import copy
import random
import re

import numpy as np
import torch
from torch import nn

from ..checks import check_count
from ..data.world import COLOURS, INDUSTRIES, OCCUPATIONS
from ..device import device_of, eval_mode, scores_on_device
from ..elmo import CoVe, ELMo, ELMoConfig, ScalarMix, BiLSTMLM, word_chars
from ..output import IGNORE, Output, cross_entropy
from ..rnn import concat_pool
from ..word_vectors import words
from .word_vectors import POLYSEMOUS, TEMPLATES, world_corpus, world_sentences

__all__ = [
    "POLYSEMOUS",
    "SPECIALS",
    "corpus",
    "relation_of",
    "sense_of",
    "word_class",
    "WordTokenizer",
    "pad_batch",
    "train_lm",
    "translation_pairs",
    "train_cove",
    "token_features",
    "sense_scores",
    "probe_scores",
    "fit_mix",
    "ELMoClassifier",
    "neighbours",
    "heldout_loss",
    "next_word",
    "translate",
]

SPECIALS = ("<pad>", "<unk>", "<cls>", "<sep>", "<bos>")

# the templates, most specific first ("X is a large city in Y" before "X is a Y")
_PATTERNS = sorted(
    (
        (len(re.sub(r"\{\w+\}", "", t)), group, t)
        for group, ts in TEMPLATES.items()
        for t in ts
    ),
    reverse=True,
)
_REGEX = [
    (g, re.compile("^" + re.sub(r"\\\{\w+\\\}", "(.+)", re.escape(t)) + "$"))
    for _, g, t in _PATTERNS
]


def corpus(n_sentences: int, n_heldout: int, seed: int = 0):
    """``(train, heldout, probe, facts)`` from the world of ``seed``.

    The world writes only about 830 distinct sentences (each fact in each of its
    templates: :func:`~ptlm_lite.recipes.word_vectors.world_sentences`), so a draw of
    thousands repeats them and the sentences after a training draw are mostly in it.
    Instead, ``probe`` is every distinct sentence once, in a seeded random order (the
    probes' sentences: no sentence twice, so a probe's fit and test halves share none
    and a left-out "orange" never meets its own copy); ``heldout`` is its first
    ``n_heldout``, which no language model reads (the held-out loss); ``train`` is
    ``n_sentences`` draws from the others, repeats included. ``facts`` is the world's
    (``facts["kind"]``: city, country or colour of a word)."""
    for name, v in (("n_sentences", n_sentences), ("n_heldout", n_heldout)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"{name} must be an integer >= 1, got {v!r}")
    probe = world_sentences(seed)
    random.Random(f"elmo/{seed}").shuffle(probe)
    if n_heldout >= len(probe):
        raise ValueError(
            f"n_heldout must leave sentences to train on: the world has {len(probe)}, "
            f"got n_heldout={n_heldout}"
        )
    heldout = probe[:n_heldout]
    out = {tuple(s) for s in heldout}
    train, facts, n = [], None, 2 * n_sentences
    while len(train) < n_sentences:  # draws of the others, in the word-vector order
        drawn, facts = world_corpus(n, seed)
        train = [s for s in drawn if tuple(s) not in out][:n_sentences]
        n *= 2
    return train, heldout, probe, facts


def relation_of(sentence: list[str]) -> str:
    """The template group a sentence was written from ("born", "colour", "city",
    ...): what the sentence is about, the probes' meaning-like label."""
    text = " ".join(sentence)
    for group, rx in _REGEX:
        if rx.match(text):
            return group
    raise ValueError(f"sentence matches no template: {text!r}")


def sense_of(sentence: list[str]) -> str:
    """ "colour" or "city": the sense of "orange" in a sentence that has it."""
    return "colour" if relation_of(sentence) == "colour" else "city"


_CLASSES = {
    "function": "the a of in to through by for as its up".split(),
    "verb": "is lies runs governs live was born grew works employed likes painted has"
    " based".split(),
    "noun": "city road country people colour door company office".split()
    + list(OCCUPATIONS),
    "adjective": ["favourite", "small", "large", "busy", "quiet", "north", "south"]
    + ["east", "west"]
    + list(COLOURS)
    + list(INDUSTRIES),
}
_CLASS_OF = {w: c for c, ws in _CLASSES.items() for w in ws}


def word_class(sentence: list[str]) -> list[str]:
    """A part of speech per word (function word, verb, noun, adjective, name): the
    probes' syntax-like label. "orange" is a name as a city, an adjective as a
    colour."""
    out = [_CLASS_OF.get(w, "name") for w in sentence]
    if POLYSEMOUS in sentence:
        sense = "adjective" if sense_of(sentence) == "colour" else "name"
        out = [sense if w == POLYSEMOUS else c for w, c in zip(sentence, out)]
    return out


class WordTokenizer:
    """Words as tokens: ``encode(text)`` -> ids (unknown words -> ``<unk>``), with
    ``special_ids`` (pad, unk, cls, sep, bos) for :mod:`ptlm_lite.finetune`. ``itos``:
    the specials, then every word of ``sentences`` and of ``texts``."""

    def __init__(self, sentences, texts=()):
        seen = dict.fromkeys(w for s in sentences for w in s)
        seen.update(dict.fromkeys(w for t in texts for w in words(t)))
        self.itos = list(SPECIALS) + [w for w in seen if w not in SPECIALS]
        self.stoi = {w: i for i, w in enumerate(self.itos)}
        self.special_ids = {s[1:-1]: i for i, s in enumerate(SPECIALS)}

    @property
    def vocab_size(self) -> int:
        return len(self.itos)

    def chars(self, width: int = 12) -> torch.Tensor:
        return word_chars(self.itos, width)

    def encode(self, text) -> list[int]:
        ws = words(text) if isinstance(text, str) else text
        return [self.stoi.get(w, 1) for w in ws]

    def encode_batch(self, texts) -> list[list[int]]:
        return [self.encode(t) for t in texts]


def pad_batch(rows: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor]:
    """``(ids, valid)``, (N, T) each, padded on the right with 0."""
    T = max(map(len, rows))
    ids = torch.zeros(len(rows), T, dtype=torch.long)
    for i, r in enumerate(rows):
        ids[i, : len(r)] = torch.tensor(r)
    return ids, ids != 0


def _sampler(data: dict, batch: int, seed: int):
    g = torch.Generator().manual_seed(seed)
    n = len(next(iter(data.values())))

    def get(step):
        pick = torch.randint(n, (batch,), generator=g)
        return {k: v[pick] for k, v in data.items()}

    return get


def train_lm(model, tok: WordTokenizer, sentences, steps, batch, lr, seed, **kw):
    """Pre-train ``model`` (ELMo's biLM or the leaky biLSTM) on ``sentences``, batches
    of ``batch`` sentences drawn at random (seeded). Returns the History."""
    from ..train import train

    ids, valid = pad_batch(tok.encode_batch(sentences))
    return train(
        model,
        _sampler({"ids": ids, "valid": valid}, batch, seed),
        steps=steps,
        lr=lr,
        warmup=steps // 10,
        schedule="cosine",
        seed=seed,
        **kw,
    )


def translation_pairs(sentences) -> list[tuple[list[str], list[str]]]:
    """CoVe's synthetic translation task: each English sentence and its "translation",
    every word spelt backwards in the same order ("city" -> "ytic"), except "orange",
    which the target language writes "naranja" for the colour and "egnaro" for the
    city: translating it needs its sense."""
    out = []
    for s in sentences:
        sense = sense_of(s) if POLYSEMOUS in s else None
        tgt = [
            ("naranja" if sense == "colour" else w[::-1])
            if w == POLYSEMOUS
            else w[::-1]
            for w in s
        ]
        out.append((s, tgt))
    return out


def train_cove(pairs, src: WordTokenizer, d, steps, batch, lr, seed, **kw):
    """Train :class:`~ptlm_lite.elmo.CoVe` on ``pairs`` (teacher forcing, the target
    after ``<bos>``). Returns ``(model, target tokenizer, History)``."""
    from ..train import train

    tgt = WordTokenizer([t for _, t in pairs])
    s_ids, s_valid = pad_batch(src.encode_batch([s for s, _ in pairs]))
    t_ids, t_valid = pad_batch([[4] + tgt.encode(t) for _, t in pairs])
    out = torch.cat([t_ids[:, 1:], torch.zeros_like(t_ids[:, :1])], 1)
    out = out.masked_fill(out == 0, IGNORE)
    data = {"src": s_ids, "src_valid": s_valid, "tgt_in": t_ids, "tgt_out": out}
    model = CoVe(src.vocab_size, tgt.vocab_size, d, seed=seed)
    history = train(
        model, _sampler(data, batch, seed), steps=steps, lr=lr, seed=seed, **kw
    )
    return model, tgt, history


@scores_on_device  # on the GPU if there is one
@torch.no_grad()
def token_features(model, tok: WordTokenizer, sentences) -> np.ndarray:
    """(N tokens, L, D): every layer's vector of every word of ``sentences`` in
    reading order (ELMo: L + 1 layers of [h→; h←]; CoVe: one layer, its encoder)."""
    with eval_mode(model):
        ids, valid = pad_batch(tok.encode_batch(sentences))
        ids, valid = ids.to(device_of(model)), valid.to(device_of(model))
        if isinstance(model, CoVe):
            layers = [model.encode(ids, valid)]
        else:
            layers = model.layers(ids, valid)
    h = torch.stack(layers, 2)  # (B, T, L, D)
    return h[valid].cpu().numpy()


def _unit(x):
    return x / np.maximum(np.linalg.norm(x, axis=-1, keepdims=True), 1e-12)


def sense_scores(features: np.ndarray, sentences) -> np.ndarray:
    """One score per occurrence of "orange" in ``sentences`` (``features``: (N words,
    D), one layer, a row per word in reading order): leave the occurrence out, take
    the centres (mean unit vectors) of the other occurrences of each sense, and score
    1 if its vector is nearer (cosine) to its own sense's centre, 0 if nearer to the
    other's, 0.5 on a tie. A static vector ties every time: 0.5."""
    flat = [(w, s) for s in sentences for w in s]
    if len(flat) != len(features):
        raise ValueError(f"features must have one row per word ({len(flat)})")
    idx = [i for i, (w, _) in enumerate(flat) if w == POLYSEMOUS]
    sense = np.array([sense_of(flat[i][1]) for i in idx])
    kinds, n = np.unique(sense, return_counts=True)
    if len(kinds) != 2 or n.min() < 2:
        raise ValueError(
            f"sentences must hold at least two occurrences of each of the two senses "
            f"of {POLYSEMOUS!r} (a left-out occurrence needs the others of its sense), "
            f"got {dict(zip(kinds.tolist(), n.tolist()))}"
        )
    u = _unit(np.asarray(features, dtype=np.float64)[idx])
    out = []
    for k in range(len(idx)):
        rest = np.arange(len(idx)) != k
        same = _unit(u[rest & (sense == sense[k])].mean(0))
        other = _unit(u[rest & (sense != sense[k])].mean(0))
        d = u[k] @ same - u[k] @ other
        out.append(0.5 if abs(d) < 1e-9 else float(d > 0))
    return np.array(out)


def labels(sentences) -> dict[str, list[str]]:
    """Per word of ``sentences`` in reading order: ``"word class"`` (syntax-like) and
    ``"relation"`` (meaning-like: the sentence's template group)."""
    return {
        "word class": [c for s in sentences for c in word_class(s)],
        "relation": [relation_of(s) for s in sentences for _ in s],
    }


def probe_scores(train_x, train_y, test_x, test_y) -> np.ndarray:
    """A linear probe (scikit-learn's logistic regression) fitted on one layer's
    vectors; 1/0 per test word."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler
    from threadpoolctl import threadpool_limits

    # one BLAS thread: on a busy 2-core machine OpenBLAS's own threads made each fit
    # ~80 times slower (measured)
    with threadpool_limits(1):
        scale = StandardScaler().fit(train_x)
        probe = LogisticRegression(max_iter=300).fit(scale.transform(train_x), train_y)
        guess = probe.predict(scale.transform(test_x))
    return (guess == np.asarray(test_y)).astype(float)


def fit_mix(train_x, train_y, test_x, test_y, steps: int = 200, seed: int = 0):
    """A :class:`~ptlm_lite.elmo.ScalarMix` and a linear layer trained together on
    frozen features (N, L, D) for one label: ``(softmax weights (L,), test
    accuracy)``. Which layers a task leans on."""
    classes = sorted(set(train_y))
    y = torch.tensor([classes.index(c) for c in train_y])
    x = torch.as_tensor(train_x)
    if x.dim() != 3 or len(x) < 2 or len(x) != len(y) or len(classes) < 2:
        raise ValueError(
            "train_x must be (N, L, D) features with N >= 2 rows, one label each in "
            f"train_y, of at least 2 classes: got shape {tuple(x.shape)}, "
            f"{len(y)} labels, classes {classes}"
        )
    if not torch.isfinite(x).all():
        raise ValueError("train_x holds NaN or inf: features must be finite")
    mean, std = x.mean((0,), keepdim=True), x.std((0,), keepdim=True) + 1e-6
    torch.manual_seed(seed)
    mix, head = ScalarMix(x.shape[1]), nn.Linear(x.shape[2], len(classes))
    opt = torch.optim.Adam([*mix.parameters(), *head.parameters()], lr=0.05)
    xs = (x - mean) / std
    for _ in range(steps):
        loss = cross_entropy(head(mix(xs.unbind(1))), y, "labels")
        opt.zero_grad()
        loss.backward()
        opt.step()
    with torch.no_grad():
        xt = (torch.as_tensor(test_x) - mean) / std
        pred = head(mix(xt.unbind(1))).argmax(-1).numpy()
    acc = np.mean([classes[p] == t for p, t in zip(pred, test_y)])
    return mix.weights.detach().numpy(), float(acc)


class ELMoClassifier(nn.Module):
    """ELMo for a task: the biLM's layers mixed by a :class:`~ptlm_lite.elmo.ScalarMix`,
    concat pooling (:func:`ptlm_lite.rnn.concat_pool`) and a linear layer. ``freeze``:
    the biLM stays as pre-trained (ELMo's features) or trains with the head
    (fine-tuning). ``source``: an :class:`~ptlm_lite.elmo.ELMo` (deep-copied) or
    ``(config, chars)`` (random weights). Takes
    :func:`ptlm_lite.finetune.decoder_batch`'s inputs (``mode="choice"``: ``ids`` (N,
    C, T), one score per candidate)."""

    def __init__(self, source, n_labels: int = 2, mode: str = "classify", freeze=True):
        super().__init__()
        if mode not in ("classify", "choice"):
            raise ValueError(f"mode must be 'classify' or 'choice', got {mode!r}")
        if isinstance(source, ELMo):
            self.elmo = copy.deepcopy(source)
        elif isinstance(source, tuple) and isinstance(source[0], ELMoConfig):
            self.elmo = ELMo(*source)
        else:
            raise TypeError("source must be an ELMo or a (ELMoConfig, chars) pair")
        self.config, self.mode, self.freeze = self.elmo.config, mode, freeze
        self.elmo.requires_grad_(not freeze)
        self.mix = ScalarMix(self.config.n_layer + 1)
        self.head = nn.Linear(
            6 * self.config.d_model, 1 if mode == "choice" else n_labels
        )

    def forward(self, ids, last=None, valid=None, labels=None) -> Output:
        shape = ids.shape
        flat = ids.reshape(-1, shape[-1])  # (B, T), B = N·C for choices
        if last is not None:  # positions up to `last` are real
            valid = torch.arange(shape[-1], device=ids.device) <= last.reshape(-1, 1)
        valid = flat != 0 if valid is None else valid.reshape(flat.shape)
        if self.freeze:
            self.elmo.eval()  # features: no dropout inside the frozen biLM
        h = self.mix(self.elmo.layers(flat, valid))  # (B, T, 2D)
        logits = self.head(concat_pool(h, valid)).view(shape[0], -1)
        loss = None if labels is None else cross_entropy(logits, labels, "labels")
        return Output(logits, loss)


def neighbours(features: np.ndarray, sentences, query: int, k: int = 5):
    """The ``k`` word occurrences nearest (cosine) to occurrence ``query`` of the
    flattened ``sentences``, other occurrences of the same word left out: ``[(word,
    sentence, cosine)]``."""
    flat = [(w, s) for s in sentences for w in s]
    u = _unit(features)
    cos = u @ u[query]
    order = [i for i in np.argsort(-cos) if flat[i][0] != flat[query][0]][:k]
    return [(flat[i][0], " ".join(flat[i][1]), float(cos[i])) for i in order]


@scores_on_device
@torch.no_grad()
def heldout_loss(model, tok: WordTokenizer, sentences) -> float:
    """The model's mean loss (nats per word, both directions) on ``sentences``."""
    with eval_mode(model):
        ids, valid = pad_batch(tok.encode_batch(sentences))
        loss = model(ids.to(device_of(model)), valid.to(device_of(model))).loss.item()
    return loss


@scores_on_device
@torch.no_grad()
def next_word(model, tok: WordTokenizer, sentence, t: int, k: int = 3):
    """The ``k`` likeliest words at position ``t + 1`` of ``sentence`` by the model's
    forward (next-word) logits at ``t``: ``[(word, probability)]`` (``t`` the last
    position: the word after the sentence)."""
    check_count("t", t, low=0)
    encoded = tok.encode(sentence)  # a string or a list of words
    if t >= len(encoded):
        raise ValueError(f"t must be < the sentence's {len(encoded)} words, got {t}")
    with eval_mode(model):
        ids = torch.tensor([encoded], device=device_of(model))
        p = model(ids).logits[0, t].softmax(-1).cpu()
    top = p.topk(k)
    return [(tok.itos[i], float(q)) for q, i in zip(top.values, top.indices)]


@scores_on_device
@torch.no_grad()
def translate(model: CoVe, src: WordTokenizer, tgt: WordTokenizer, sentence, n=None):
    """Greedy decoding of one sentence (a list of words) by CoVe's translation model:
    as many target words as source words unless ``n`` says otherwise."""
    with eval_mode(model):
        dev = device_of(model)
        s = torch.tensor([src.encode(sentence)], device=dev)
        out = [4]  # <bos>
        for _ in range(n or len(sentence)):
            logits = model(s, s != 0, torch.tensor([out], device=dev)).logits
            out.append(int(logits[0, -1].argmax()))
    return [tgt.itos[i] for i in out[1:]]
