"""The tokenizer every chapter holds: one small interface over WordPiece, byte-level
BPE, Unigram and characters, with the same special tokens at the same ids whatever the
kind::

    0 [PAD]  1 [UNK]  2 [CLS]  3 [SEP]  4 [MASK]  5 [BOS]  6 [EOS]  7 <extra_id_0> ...

Training and the on-disk cache are :mod:`ptlm_lite.data.tokenizer`, which also exports
everything here. Used in every chapter that tokenizes text.
"""

from __future__ import annotations

import json
import operator
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

KINDS = ("wordpiece", "bpe", "unigram", "char")
CORPORA = ("shakespeare", "world")
BASE_SPECIALS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "[BOS]", "[EOS]")
FORMAT = "ptlm_lite.tokenizer/1"
# Room a learned vocabulary needs beyond the special tokens: byte-level BPE must hold
# all 256 bytes; WordPiece/Unigram need at least the corpus alphabet (about 80
# characters here).
MIN_LEARNED = {"wordpiece": 100, "bpe": 256 + 1, "unigram": 100, "char": 0}


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
        check_text(text, "text")
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
        check_text(text, "text")
        if self._hf is not None:
            return self._hf.encode(text, add_special_tokens=False).ids
        return [self._stoi.get(ch, self.unk_id) for ch in text]

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        if isinstance(texts, str) or not isinstance(texts, (list, tuple)):
            raise TypeError(
                f"texts must be a list of strings, got {type(texts).__name__}"
            )
        for i, t in enumerate(texts):
            check_text(t, f"texts[{i}]")
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


def check_text(text, name: str) -> None:
    """A str that is valid Unicode text: a lone surrogate (half of a UTF-16 pair,
    e.g. from a badly decoded file) cannot be encoded as UTF-8 and has no token."""
    if not isinstance(text, str):
        raise TypeError(f"{name} must be a str, got {type(text).__name__}")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as e:
        raise ValueError(
            f"{name} holds a lone surrogate {text[e.start]!r} at character {e.start}: "
            f"it must be valid Unicode text (decode the file with errors='replace')"
        ) from None


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
