"""Tokenizers with one small interface: WordPiece, byte-level BPE, Unigram and
characters.

The three subword algorithms the book's models use are trained offline, in seconds, with
Hugging Face ``tokenizers`` (BERT: WordPiece; GPT-2/RoBERTa: byte-level BPE; T5/ALBERT:
Unigram as in SentencePiece). A pure-Python character tokenizer serves the smallest runs.
Whatever the kind, the same special tokens get the same ids, in this order::

    0 [PAD]  1 [UNK]  2 [CLS]  3 [SEP]  4 [MASK]  5 [BOS]  6 [EOS]  7 <extra_id_0>  8
    <extra_id_1> ...

so masks, corruptions and heads can rely on ``tok.pad_id`` and friends without caring
which tokenizer a chapter chose. ``<extra_id_i>`` are T5's sentinels for span
corruption.

``shakespeare_tokenizer(kind)`` is the book's tokenizer of each kind (1,024 tokens
trained on the training plays). ``get_tokenizer(kind, vocab_size, corpus)`` trains once
and caches the result as one JSON file in ``<cache>/tokenizers/`` (see
:mod:`ptlm_lite.cache`); later calls load it in milliseconds. Training is reproducible:
the same texts give the same tokens with the same ids in every run, process and machine,
whatever the kind (see ``_canonical_ids`` and friends below). Used in every chapter that
tokenizes text.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Iterable

from .vocabulary import (  # re-exported: the tokenizer's whole interface is here
    BASE_SPECIALS,
    CORPORA,
    FORMAT,
    KINDS,
    MIN_LEARNED,
    Encoded,
    Tokenizer,
    check_text,
    sentinel,
    special_tokens,
)


def _check_kind(kind: str) -> None:
    if kind not in KINDS:
        raise ValueError(
            f"unknown tokenizer kind {kind!r}; kind must be one of {KINDS}"
        )


def _check_vocab(kind: str, vocab_size, n_sentinels) -> None:
    if not isinstance(n_sentinels, int) or n_sentinels < 0:
        raise ValueError(f"n_sentinels must be an integer >= 0, got {n_sentinels!r}")
    if kind == "char":
        # a character vocabulary is as large as the alphabet; vocab_size is ignored
        return
    need = len(BASE_SPECIALS) + n_sentinels + MIN_LEARNED[kind]
    if not isinstance(vocab_size, int) or vocab_size < need:
        raise ValueError(
            f"vocab_size={vocab_size!r} is too small for a {kind} tokenizer with "
            f"{len(BASE_SPECIALS) + n_sentinels} special tokens ({n_sentinels} "
            f"sentinels): "
            f"pass vocab_size >= {need}, or fewer n_sentinels"
        )


def train_tokenizer(
    kind: str, texts: Iterable[str], vocab_size: int = 8000, n_sentinels: int = 100
) -> Tokenizer:
    """Train a tokenizer of ``kind`` on ``texts`` (a list of strings). No caching.

    ``kind``: ``"wordpiece"`` (BERT: cased, splits punctuation, ``##`` continuations),
    ``"bpe"`` (GPT-2: byte-level, so no [UNK] ever), ``"unigram"`` (T5/ALBERT:
    SentencePiece's algorithm with ``▁`` marking word starts), ``"char"`` (one id per
    character). Used in the BERT, GPT-2 and T5 chapters (one tokenizer kind each).
    """
    _check_kind(kind)
    _check_vocab(kind, vocab_size, n_sentinels)
    if isinstance(texts, str):
        texts = [texts]
    texts = list(texts)
    for i, t in enumerate(texts):
        check_text(t, f"texts[{i}]")
    if not any(t.strip() for t in texts):
        raise ValueError("texts is empty: pass a non-empty list of strings to train on")
    specials = special_tokens(n_sentinels)

    if kind == "char":
        # "\n" always: corpora are often passed line by line, and a character model
        # must still be able to read and write a line break
        alphabet = sorted(set("".join(texts)) - set(specials) | {"\n"})
        return Tokenizer("char", n_sentinels, chars=specials + alphabet)

    from tokenizers import Tokenizer as HFTokenizer
    from tokenizers import (
        decoders,
        models,
        normalizers,
        pre_tokenizers,
        processors,
        trainers,
    )

    # tokens given to the trainer as specials only to fix their ids (see below)
    seeded = []
    if kind == "wordpiece":
        hf = HFTokenizer(models.WordPiece(unk_token="[UNK]"))
        # cased: Shakespeare's names keep their capitals
        hf.normalizer = normalizers.NFC()
        hf.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
        hf.decoder = decoders.WordPiece()
        seeded = _wordpiece_alphabet(hf, texts)
        trainer = trainers.WordPieceTrainer(
            vocab_size=vocab_size, special_tokens=specials + seeded, show_progress=False
        )
    elif kind == "bpe":
        hf = HFTokenizer(models.BPE())
        hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        hf.decoder = decoders.ByteLevel()
        # Offsets without the leading space, so " Hamlet" maps to exactly "Hamlet".
        hf.post_processor = processors.ByteLevel(trim_offsets=True)
        trainer = trainers.BpeTrainer(
            vocab_size=vocab_size,
            special_tokens=specials,
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
            show_progress=False,
        )
    else:  # unigram
        hf = HFTokenizer(models.Unigram())
        hf.normalizer = normalizers.NFC()
        hf.pre_tokenizer = pre_tokenizers.Metaspace()
        hf.decoder = decoders.Metaspace()
        # Unigram (EM over a large seed vocabulary) is the slowest trainer; these
        # settings halve its time on Shakespeare (~10 s) at no visible cost in quality
        # at 8k.
        trainer = trainers.UnigramTrainer(
            vocab_size=vocab_size,
            special_tokens=specials,
            unk_token="[UNK]",
            show_progress=False,
            max_piece_length=12,
            shrinking_factor=0.5,
            n_sub_iterations=1,
        )
    hf.train_from_iterator(texts, trainer=trainer)
    if seeded:
        hf = _drop_added_tokens(hf, keep=len(specials))
    if kind == "unigram":
        hf = _canonical_unigram(hf, len(specials))
    else:
        hf = _canonical_ids(hf, len(specials))
    return Tokenizer(kind, n_sentinels, hf=hf)


# Same corpus, same ids, in every run and every process. Hugging Face's trainers keep
# their counts in hash maps whose seed is random per process (Rust's, not
# PYTHONHASHSEED), so whatever depends on iteration order changes from run to run:
#
# - BPE and WordPiece number the characters and the "##" continuation forms in hash order, and
#   when two pairs are equally frequent the merge with the smaller ids wins. Byte-level BPE has
#   no "##" forms and its characters are numbered in sorted order, so only its final numbering
#   needs sorting (_canonical_ids). WordPiece's "##" numbering also decides *which* merges win
#   ties, hence which tokens exist: we give the trainer the alphabet and the "##" forms up front,
#   in sorted order, so every run breaks ties alike.
# - Unigram sums its EM statistics in hash order (different rounding in the last digits) and
#   gives the characters EM dropped scores min_score, min_score + 1e-4, ... in hash order. Its
#   pieces come out the same; _canonical_unigram makes their scores and order canonical.


def _wordpiece_alphabet(hf, texts: list[str]) -> list[str]:
    """The characters and ``##c`` continuation forms the WordPiece trainer would create,
    sorted.

    A character continues a word when the pre-tokenizer keeps it together with the
    character before it; that depends on the two characters only (whitespace and
    punctuation split), so checking each distinct adjacent pair is exact, and much
    faster than pre-tokenizing the text.
    """
    text = hf.normalizer.normalize_str("\n".join(texts))

    def word_of(s: str) -> list[str]:
        return [w for w, _ in hf.pre_tokenizer.pre_tokenize_str(s)]

    chars = sorted(c for c in set(text) if word_of(c) == [c])
    continuing = sorted(
        {b for a, b in set(zip(text, text[1:])) if word_of(a + b) == [a + b]}
    )
    return chars + ["##" + c for c in continuing]


def _drop_added_tokens(hf, keep: int):
    """Keep the first ``keep`` added (special) tokens: the rest were only seeded into
    the vocabulary, where they stay as ordinary tokens.
    """
    from tokenizers import Tokenizer as HFTokenizer

    data = json.loads(hf.to_str())
    data["added_tokens"] = [t for t in data["added_tokens"] if t["id"] < keep]
    return HFTokenizer.from_str(json.dumps(data))


def _canonical_unigram(hf, n_special: int, decimals: int = 4):
    """Unigram pieces with canonical scores, ordered by score then string (specials
    first).

    The scores differ between runs by rounding noise (~1e-11) and, for characters that
    EM dropped and the trainer added back, by multiples of 1e-4 assigned in hash order.
    Those characters sit at the bottom of the table, so every score within that band of
    the lowest becomes the lowest; then all scores are rounded to ``decimals`` places
    (log-probabilities this close segment text alike). The pieces themselves are the
    trainer's.
    """
    from tokenizers import Tokenizer as HFTokenizer

    data = json.loads(hf.to_str())
    vocab = data["model"]["vocab"]  # [[piece, score], ...]; ids are positions
    special, learned = vocab[:n_special], vocab[n_special:]
    low = min(score for _, score in learned)
    # room for every character
    band = 1e-4 * (sum(len(piece) == 1 for piece, _ in learned) + 1)
    learned = [
        [piece, round(low if score < low + band else score, decimals)]
        for piece, score in learned
    ]
    learned.sort(key=lambda ps: (-ps[1], ps[0]))
    data["model"]["vocab"] = special + learned
    return HFTokenizer.from_str(json.dumps(data))


def _canonical_ids(hf, n_special: int):
    """Renumber every non-special token in sorted order: the trainers number tokens
    partly in hash-map order, which changes from run to run. WordPiece and BPE look
    tokens up by string, so only the ids change.
    """
    from tokenizers import Tokenizer as HFTokenizer

    data = json.loads(hf.to_str())
    vocab = data["model"]["vocab"]
    special = [
        t for t, i in sorted(vocab.items(), key=lambda kv: kv[1]) if i < n_special
    ]
    rest = sorted(t for t, i in vocab.items() if i >= n_special)
    data["model"]["vocab"] = {t: i for i, t in enumerate(special + rest)}
    return HFTokenizer.from_str(json.dumps(data))


def _corpus_texts(corpus: str) -> list[str]:
    if corpus == "shakespeare":
        from .shakespeare import text_stream

        # Train split only, so nothing leaks. One line per item: the trainers (Unigram
        # above all) are much faster on many short texts than on a few long ones.
        return [line for line in text_stream("train").split("\n") if line.strip()]
    if corpus == "world":
        from .world import make_world

        return [d.text for d in make_world(0).documents]
    raise ValueError(f"unknown corpus {corpus!r}; corpus must be one of {CORPORA}")


# Bumped when a kind's training changes its result, so that no machine keeps loading a
# tokenizer that a fresh training would not reproduce (v2: deterministic WordPiece and
# Unigram; char v2: always has "\n").
_TRAINING_VERSION = {"wordpiece": 2, "unigram": 2, "char": 2}


def tokenizer_path(kind: str, vocab_size: int, corpus: str, n_sentinels: int) -> Path:
    from ..cache import subdir

    size = "chars" if kind == "char" else str(vocab_size)
    version = f"-v{_TRAINING_VERSION[kind]}" if kind in _TRAINING_VERSION else ""
    return subdir("tokenizers") / f"{corpus}-{kind}-{size}-s{n_sentinels}{version}.json"


def get_tokenizer(
    kind: str = "wordpiece",
    vocab_size: int = 8000,
    corpus: str = "shakespeare",
    n_sentinels: int = 100,
) -> Tokenizer:
    """A tokenizer trained on an embedded corpus, trained once and then loaded from the
    cache.

    ``corpus``: ``"shakespeare"`` (the training plays) or ``"world"``
    (``make_world(0)``). Training an 8k WordPiece or BPE on Shakespeare takes about 5 s
    (Unigram ~10 s); loading it, milliseconds. A damaged cache file is retrained (with a
    warning). Used in every chapter that tokenizes.
    """
    _check_kind(kind)
    _check_vocab(kind, vocab_size, n_sentinels)
    if corpus not in CORPORA:
        raise ValueError(f"unknown corpus {corpus!r}; corpus must be one of {CORPORA}")
    from ..cache import lock

    path = tokenizer_path(kind, vocab_size, corpus, n_sentinels)
    with lock(path):  # two processes never train the same tokenizer twice
        if path.exists():
            try:
                return Tokenizer.load(path)
            except Exception as err:
                warnings.warn(
                    f"cached tokenizer {path.name} is damaged ({err}); retraining",
                    RuntimeWarning,
                    stacklevel=2,
                )
        tok = train_tokenizer(kind, _corpus_texts(corpus), vocab_size, n_sentinels)
        tok.save(path)
    return tok


def shakespeare_tokenizer(
    kind: str, vocab_size: int = 1024, n_sentinels: int = 0
) -> Tokenizer:
    """The book's tokenizer of ``kind`` trained on the training plays, cached after the
    first call.

    One factory for every chapter: ``shakespeare_tokenizer("wordpiece")`` is BERT's and
    ``shakespeare_tokenizer("bpe")`` GPT's (1,024 tokens and no sentinels: a small
    vocabulary, so that a tiny model sees every token often). Span corruption needs
    sentinels, e.g. ``shakespeare_tokenizer("unigram", n_sentinels=100)``. ``kind`` is
    one of ``KINDS``; ``vocab_size`` is ignored for ``"char"``. Used in the GPT and BERT
    chapters.
    """
    _check_kind(kind)
    return get_tokenizer(
        kind, vocab_size, corpus="shakespeare", n_sentinels=n_sentinels
    )
