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
import operator
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

KINDS = ("wordpiece", "bpe", "unigram", "char")
CORPORA = ("shakespeare", "world")
BASE_SPECIALS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "[BOS]", "[EOS]")
FORMAT = "ptlm_lite.tokenizer/1"
# Room a learned vocabulary needs beyond the special tokens: byte-level BPE must hold
# all 256 bytes; WordPiece/Unigram need at least the corpus alphabet (about 80
# characters here).
_MIN_LEARNED = {"wordpiece": 100, "bpe": 256 + 1, "unigram": 100, "char": 0}


def sentinel(i: int) -> str:
    """T5's i-th sentinel token string, ``<extra_id_i>``."""
    return f"<extra_id_{i}>"


def special_tokens(n_sentinels: int) -> list[str]:
    return list(BASE_SPECIALS) + [sentinel(i) for i in range(n_sentinels)]


@dataclass(frozen=True)
class Encoded:
    """One text, tokenized: ids plus what whole-word, entity and span masking need.

    ``offsets[i] = (start, end)``: token i covers ``text[start:end]``. ``word_ids[i]``:
    index of the word token i belongs to (None for special tokens); tokens with equal
    word ids form one word, which whole-word masking hides together.
    """

    ids: list[int]
    tokens: list[str]
    offsets: list[tuple[int, int]]
    word_ids: list[int | None]


class Tokenizer:
    """A trained tokenizer of any kind behind one interface. Build with
    :func:`train_tokenizer`, :func:`get_tokenizer` or :meth:`Tokenizer.load`.
    """

    def __init__(
        self, kind: str, n_sentinels: int, hf=None, chars: Sequence[str] | None = None
    ):
        self.kind = kind
        self.n_sentinels = n_sentinels
        self._hf = hf  # a tokenizers.Tokenizer, or None for kind="char"
        if kind == "char":
            self._itos = list(chars)
            self._stoi = {s: i for i, s in enumerate(self._itos)}
        # Special ids are fixed by construction; check rather than trust it.
        for i, tok in enumerate(special_tokens(n_sentinels)):
            if self.token_to_id(tok) != i:
                raise RuntimeError(
                    f"special token {tok} has id {self.token_to_id(tok)}, expected {i}"
                )
        (
            self.pad_id,
            self.unk_id,
            self.cls_id,
            self.sep_id,
            self.mask_id,
            self.bos_id,
            self.eos_id,
        ) = range(7)

    # -- vocabulary
    # ----------------------------------------------------------------------------

    @property
    def vocab_size(self) -> int:
        return len(self._itos) if self._hf is None else self._hf.get_vocab_size()

    def token_to_id(self, token: str) -> int | None:
        if self._hf is None:
            return self._stoi.get(token)
        return self._hf.token_to_id(token)

    def id_to_token(self, i: int) -> str | None:
        if self._hf is None:
            return self._itos[i] if 0 <= i < len(self._itos) else None
        return self._hf.id_to_token(i)

    @property
    def special_ids(self) -> dict[str, int]:
        """``{"pad": 0, "unk": 1, "cls": 2, "sep": 3, "mask": 4, "bos": 5, "eos": 6}``."""
        return dict(zip(("pad", "unk", "cls", "sep", "mask", "bos", "eos"), range(7)))

    @property
    def sentinel_ids(self) -> list[int]:
        """Ids of ``<extra_id_0>``, ``<extra_id_1>``, ... (T5 span corruption)."""
        return list(range(7, 7 + self.n_sentinels))

    @property
    def all_special_ids(self) -> set[int]:
        return set(range(7 + self.n_sentinels))

    # -- encoding
    # ------------------------------------------------------------------------------

    def encode_with_offsets(self, text: str) -> Encoded:
        """Ids, token strings, character offsets and word ids (no special tokens added)."""
        _check_text(text, "text")
        if self._hf is not None:
            enc = self._hf.encode(text, add_special_tokens=False)
            return Encoded(
                list(enc.ids),
                list(enc.tokens),
                [tuple(o) for o in enc.offsets],
                list(enc.word_ids),
            )
        ids, offsets, word_ids = [], [], []
        word, in_word = -1, False
        for i, ch in enumerate(text):
            if ch.isspace():
                in_word = False
                # whitespace belongs to no word: never masked as part of one
                word_id = None
            else:
                if not in_word:
                    word, in_word = word + 1, True
                word_id = word
            ids.append(self._stoi.get(ch, self.unk_id))
            offsets.append((i, i + 1))
            word_ids.append(word_id)
        return Encoded(ids, [self._itos[i] for i in ids], offsets, word_ids)

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text`` (no [CLS]/[SEP]: batching adds those where a model
        wants them).

        An empty string encodes to ``[]``."""
        _check_text(text, "text")
        if self._hf is not None:
            return self._hf.encode(text, add_special_tokens=False).ids
        return [self._stoi.get(ch, self.unk_id) for ch in text]

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        if isinstance(texts, str) or not isinstance(texts, (list, tuple)):
            raise TypeError(
                f"texts must be a list of strings, got {type(texts).__name__}"
            )
        for t in texts:
            _check_text(t, "texts[i]")
        if self._hf is not None:  # the Rust side batches in parallel
            return [
                e.ids
                for e in self._hf.encode_batch(list(texts), add_special_tokens=False)
            ]
        return [self.encode(t) for t in texts]

    def decode(self, ids: Sequence[int], skip_special_tokens: bool = True) -> str:
        """The text of ``ids`` (a list or a 1-D tensor of ints in ``[0, vocab_size)``);
        special tokens are left out unless ``skip_special_tokens=False``.
        """
        ids = _check_ids(ids, self.vocab_size)
        if self._hf is not None:
            return self._hf.decode(ids, skip_special_tokens=skip_special_tokens)
        skip = self.all_special_ids if skip_special_tokens else set()
        return "".join(self._itos[i] for i in ids if i not in skip)

    def __call__(self, text: str) -> list[int]:
        return self.encode(text)

    def __repr__(self) -> str:
        return f"Tokenizer(kind={self.kind!r}, vocab_size={self.vocab_size}, n_sentinels={self.n_sentinels})"

    # -- saving
    # --------------------------------------------------------------------------------

    def to_json(self) -> str:
        data = {"format": FORMAT, "kind": self.kind, "n_sentinels": self.n_sentinels}
        if self._hf is None:
            data["chars"] = self._itos
        else:
            data["hf"] = json.loads(self._hf.to_str())
        return json.dumps(data, ensure_ascii=False)

    def save(self, path: str | Path) -> None:
        """Write one JSON file, atomically (a crash never leaves half a tokenizer)."""
        from ..cache import atomic_write_text

        atomic_write_text(Path(path), self.to_json())

    @classmethod
    def load(cls, path: str | Path) -> "Tokenizer":
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
            if data.get("format") != FORMAT:
                raise ValueError(f"not in format {FORMAT}")
        except (OSError, ValueError, AttributeError) as err:
            raise RuntimeError(
                f"cannot load a tokenizer from {str(path)!r}: {err}; "
                f"save one with Tokenizer.save(path)"
            ) from err
        if data["kind"] == "char":
            return cls("char", data["n_sentinels"], chars=data["chars"])
        from tokenizers import Tokenizer as HFTokenizer

        return cls(
            data["kind"],
            data["n_sentinels"],
            hf=HFTokenizer.from_str(json.dumps(data["hf"])),
        )


def _check_text(text, name: str) -> None:
    if not isinstance(text, str):
        raise TypeError(f"{name} must be a str, got {type(text).__name__}")


def _check_ids(ids, vocab_size: int) -> list[int]:
    """``ids`` as a list of ints, each in ``[0, vocab_size)``, or a clear error saying
    which is not.
    """
    if isinstance(ids, (str, bytes)) or not hasattr(ids, "__iter__"):
        raise TypeError(
            f"ids must be a list or a 1-D tensor of token ids, got {type(ids).__name__}"
        )
    try:
        # ints, numpy ints, 0-d integer tensors; no floats
        ids = [operator.index(i) for i in ids]
    except TypeError:
        raise TypeError(
            "ids must be a list or a 1-D tensor of integer token ids"
        ) from None
    for pos, i in enumerate(ids):
        if not 0 <= i < vocab_size:
            raise ValueError(
                f"ids[{pos}] = {i} is not a token id: ids must be in "
                f"[0, vocab_size) = [0, {vocab_size})"
            )
    return ids


# ----------------------------------------------------------------------------------
# Training


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
    need = len(BASE_SPECIALS) + n_sentinels + _MIN_LEARNED[kind]
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
    for t in texts:
        _check_text(t, "texts[i]")
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
