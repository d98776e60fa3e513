"""Small sequence-to-sequence tasks whose answers are known exactly.

``DateTask`` rewrites dates written the way people write them ("April 5, 2023", "5 Apr
2023", "05.04.2023") into ISO 8601 ("2023-04-05"). A model must learn to read month
names, reorder fields and pad days with zeros: long enough to need attention over the
whole source, small enough to learn in a minute on a CPU. Characters are the tokens.

Chapter: ``chapters/transformer.ipynb``.
"""

from __future__ import annotations

import datetime as dt
import random

import torch

from .device import eval_mode, scores_on_device
from .output import IGNORE

__all__ = ["CharVocab", "DateTask"]

MONTHS = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
]
FORMATS = {
    # April 5, 2023
    "long": lambda d: f"{MONTHS[d.month - 1]} {d.day}, {d.year}",
    # 5 April 2023
    "british": lambda d: f"{d.day} {MONTHS[d.month - 1]} {d.year}",
    # 5 Apr 2023
    "short": lambda d: f"{d.day} {MONTHS[d.month - 1][:3]} {d.year}",
    # 05.04.2023
    "dotted": lambda d: f"{d.day:02d}.{d.month:02d}.{d.year}",
}


class CharVocab:
    """Characters as tokens, with <pad>=0, <bos>=1, <eos>=2 first."""

    specials = ("<pad>", "<bos>", "<eos>")

    def __init__(self, chars: str):
        if not chars:
            raise ValueError(
                "chars must be a non-empty string of the characters to model"
            )
        self.itos = list(self.specials) + sorted(set(chars))
        self.stoi = {s: i for i, s in enumerate(self.itos)}
        self.pad_id, self.bos_id, self.eos_id = 0, 1, 2

    def __len__(self):
        return len(self.itos)

    def encode(self, text: str) -> list[int]:
        unknown = sorted(set(text) - set(self.stoi))
        if unknown:
            raise ValueError(f"characters {unknown} are not in the vocabulary")
        return [self.stoi[c] for c in text]

    def decode(self, ids) -> str:
        out = []
        for i in ids.tolist() if isinstance(ids, torch.Tensor) else ids:
            if i == self.eos_id:
                break
            if i >= len(self.specials):
                out.append(self.itos[i])
        return "".join(out)


class DateTask:
    """Pairs (human-written date, ISO date) drawn from 1900-2099, seeded.

    Every tenth day (counted from 1 January 1900) belongs to the test split and is never
    drawn for training, so test accuracy measures dates the model has not seen in any
    format. ``batch(n, rng)`` returns dict(src, tgt_in, tgt_out) of padded LongTensors,
    the input format a :class:`ptlm_lite.transformer.Transformer` takes.
    """

    def __init__(self, formats=tuple(FORMATS)):
        bad = [f for f in formats if f not in FORMATS]
        if bad or not formats:
            raise ValueError(
                f"formats must be a non-empty subset of {list(FORMATS)}, got "
                f"{list(formats)}"
            )
        self.formats = tuple(formats)
        chars = "".join(MONTHS) + "0123456789 ,.-"
        self.vocab = CharVocab(chars)
        # longest
        self.src_len = max(len(FORMATS[f](dt.date(2000, 9, 30))) for f in self.formats)
        self.tgt_len = len("2000-09-30") + 1  # + EOS

    def sample(self, rng: random.Random, split: str = "train") -> tuple[str, str]:
        if split not in ("train", "test"):
            raise ValueError(f"split must be 'train' or 'test', got {split!r}")
        while True:
            day = rng.randrange(200 * 365)
            if (day % 10 == 0) == (split == "test"):
                break
        d = dt.date(1900, 1, 1) + dt.timedelta(days=day)
        return FORMATS[rng.choice(self.formats)](d), d.isoformat()

    def encode_pairs(self, pairs) -> dict:
        v, pad = self.vocab, self.vocab.pad_id
        src_rows, tgt_rows = [], []
        for s, t in pairs:  # padded as lists, made into tensors once
            s_ids, t_ids = v.encode(s), [v.bos_id] + v.encode(t) + [v.eos_id]
            src_rows.append(s_ids + [pad] * (self.src_len - len(s_ids)))
            tgt_rows.append(t_ids + [pad] * (self.tgt_len + 1 - len(t_ids)))
        n = len(pairs)
        src = torch.tensor(src_rows, dtype=torch.long).view(n, self.src_len)
        tgt = torch.tensor(tgt_rows, dtype=torch.long).view(n, self.tgt_len + 1)
        # padding does not count
        tgt_out = tgt[:, 1:].masked_fill(tgt[:, 1:] == v.pad_id, IGNORE)
        return {"src": src, "tgt_in": tgt[:, :-1], "tgt_out": tgt_out}

    def batch(self, n: int, rng: random.Random, split: str = "train") -> dict:
        return self.encode_pairs([self.sample(rng, split) for _ in range(n)])

    @scores_on_device  # on the GPU if there is one
    @torch.no_grad()
    def exact_match(self, model, pairs) -> float:
        """Fraction of sources the model rewrites exactly right with greedy decoding."""
        with eval_mode(model):
            device = next(model.parameters()).device
            src = self.encode_pairs(pairs)["src"].to(device)
            out = model.generate(
                src, self.vocab.bos_id, self.vocab.eos_id, max_new_tokens=self.tgt_len
            )
        return sum(self.vocab.decode(o) == t for o, (_, t) in zip(out, pairs)) / len(
            pairs
        )
