"""Corruptions as pure functions: tokens in, a training batch out, the argument
untouched.

A masked language model is trained on inputs someone has damaged. *How* they are damaged
is the main thing BERT's successors change, so it lives here, apart from the model, in
two steps:

1. **select** which positions the model must predict (a ``(B, T)`` bool tensor). BERT:
   15% of the tokens, uniformly (:func:`select_tokens`). Whole-word, n-gram, span and
   entity masking (BERT-WWM, ALBERT, SpanBERT, ERNIE) are other selections of the same
   shape.
2. **replace** the selected positions (:func:`replace_selected`). BERT: 80% become
   ``[MASK]``, 10% a random token, 10% stay as they are, so the model cannot assume that
   an unmasked token is always right, and still sees real words where fine-tuning data
   has no ``[MASK]``.

:func:`mlm_mask` chains the two (pass ``selected=`` to use another selection). Static vs
dynamic masking (RoBERTa) is only *when* you call it: once per example, stored, or
afresh every batch.

Every function takes an explicit ``torch.Generator``: same seed, same corruption.

Next-sentence prediction data (:func:`nsp_pairs`, :func:`pack_pairs`) is here too: it is
the other corruption BERT trains on (half of the second segments are swapped for random
ones).

Chapter: ``chapters/bert.ipynb``; reused by the WWM, ERNIE, SpanBERT, RoBERTa, ALBERT
and ELECTRA chapters.
"""

from __future__ import annotations

import math
import numbers
import operator
from dataclasses import dataclass
from typing import Iterable, Sequence

import torch

from .checks import check_count, check_generator
from .data.batching import encode_pair
from .output import IGNORE  # the book's one ignore index (-100)

__all__ = [
    "Masked",
    "can_mask",
    "select_tokens",
    "replace_selected",
    "mlm_mask",
    "UNSELECTED",
    "MASKED",
    "RANDOM",
    "UNCHANGED",
    "Pair",
    "nsp_pairs",
    "pack_pairs",
]

# What happened to each position (Masked.action): not selected, or selected and then ...
UNSELECTED, MASKED, RANDOM, UNCHANGED = 0, 1, 2, 3


@dataclass(frozen=True)
class Masked:
    """One MLM batch.

    * ``inputs``   ``(B, T)`` the corrupted ids the model reads;
    * ``targets``  ``(B, T)`` the original id where ``selected``, ``-100`` elsewhere
      (ignored);
    * ``selected`` ``(B, T)`` bool: the positions whose prediction counts in the loss;
    * ``action``   ``(B, T)`` what was done: ``UNSELECTED`` (not selected),
      ``MASKED`` ([MASK]), ``RANDOM`` (a random token) or ``UNCHANGED`` (selected but
      left as it was).
    """

    inputs: torch.Tensor
    targets: torch.Tensor
    selected: torch.Tensor
    action: torch.Tensor


def _index(name: str, value, what: str) -> int:
    """``value`` as an int (ints, NumPy ints, 0-d integer tensors; no bools, no
    floats), or a TypeError naming ``name``."""
    if isinstance(value, bool) or (
        isinstance(value, torch.Tensor) and value.dtype == torch.bool
    ):
        raise TypeError(f"{name} must be {what}, got the bool {value!r}")
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(
            f"{name} must be {what}, got {type(value).__name__} {value!r}"
        ) from None


def check_vocab_size(vocab_size) -> int:
    v = _index("vocab_size", vocab_size, "a positive integer")
    if v < 1:
        raise ValueError(f"vocab_size must be a positive integer, got {vocab_size!r}")
    return v


def check_token_id(name: str, value, vocab_size: int) -> int:
    """A clear error unless ``value`` is an integer token id in [0, vocab_size)."""
    value = _index(name, value, "an integer token id")
    if not 0 <= value < vocab_size:
        raise ValueError(f"{name} must be in [0, vocab_size={vocab_size}), got {value}")
    return value


def check_special_ids(special_ids) -> list[int]:
    """``special_ids`` (the ids never corrupted: [CLS], [SEP], [PAD], ...) as a sorted
    list of ints, or a TypeError naming the argument."""
    if isinstance(special_ids, (str, bytes)) or not hasattr(special_ids, "__iter__"):
        raise TypeError(
            f"special_ids must be a collection of token ids, e.g. [0, 1, 2]; got "
            f"{special_ids!r}"
        )
    return sorted({_index("special_ids", i, "token ids") for i in special_ids})


def check_corruption_ids(ids, vocab_size=None) -> torch.Tensor:
    if (
        not isinstance(ids, torch.Tensor)
        or ids.dtype not in (torch.int64, torch.int32)
        or ids.dim() != 2
    ):
        raise TypeError(
            "ids must be a (B, T) integer tensor, got "
            + (
                f"{ids.dtype} of shape {tuple(ids.shape)}"
                if isinstance(ids, torch.Tensor)
                else type(ids).__name__
            )
        )
    if (
        vocab_size is not None
        and ids.numel()
        and (int(ids.min()) < 0 or int(ids.max()) >= vocab_size)
    ):
        raise ValueError(
            f"ids must be in [0, vocab_size={vocab_size}), got values in "
            f"[{int(ids.min())}, {int(ids.max())}]"
        )
    return ids


def can_mask(ids: torch.Tensor, special_ids: Iterable[int]) -> torch.Tensor:
    """``(B, T)`` bool: True where the token may be chosen (not [CLS], [SEP], [PAD],
    ...).
    """
    ids = check_corruption_ids(ids)
    special = torch.tensor(check_special_ids(special_ids), dtype=ids.dtype)
    return ~torch.isin(ids, special)


def select_tokens(
    maskable: torch.Tensor, p: float = 0.15, *, generator: torch.Generator
) -> torch.Tensor:
    """Choose ``round(p · n)`` of the ``n`` maskable positions of each row, uniformly at
    random (at least one when ``p > 0`` and the row has any), as Google's
    ``create_pretraining_data.py``.

    ``maskable``: ``(B, T)`` bool. Returns ``(B, T)`` bool, a subset of ``maskable``.
    """
    check_generator(generator)
    if isinstance(p, bool) or not isinstance(p, numbers.Real) or not 0.0 <= p <= 1.0:
        raise ValueError(f"p (the masking probability) must be in [0, 1], got {p!r}")
    p = float(p)  # a NumPy number as Python's
    if (
        not isinstance(maskable, torch.Tensor)
        or maskable.dtype != torch.bool
        or maskable.dim() != 2
    ):
        raise TypeError("maskable must be a (B, T) bool tensor")
    n = maskable.sum(1)  # (B,)
    k = torch.where(
        n > 0, (n.double() * p).round().long().clamp(min=1 if p > 0 else 0), 0
    )
    scores = torch.rand(maskable.shape, generator=generator).masked_fill(~maskable, 2.0)
    # 0 = the lowest score
    rank = scores.argsort(dim=1).argsort(dim=1)
    # unmaskable positions rank last
    return rank < k[:, None]


def replace_selected(
    ids,
    selected,
    *,
    mask_id: int,
    vocab_size: int,
    proportions=(0.8, 0.1, 0.1),
    generator: torch.Generator,
    random_ids: Sequence[int] | torch.Tensor | None = None,
):
    """Corrupt the ``selected`` positions of ``ids``: each independently becomes
    ``[MASK]``, a random token or itself with probabilities ``proportions``. Returns a
    :class:`Masked`.

    ``random_ids``: the tokens a random replacement is drawn from (default: the whole
    vocabulary; :func:`mlm_mask` passes the non-special tokens, so a stray [PAD] never
    appears mid-sentence).
    """
    check_generator(generator)
    check_vocab_size(vocab_size)
    ids = check_corruption_ids(ids, vocab_size)
    if (
        not isinstance(selected, torch.Tensor)
        or selected.dtype != torch.bool
        or selected.shape != ids.shape
    ):
        raise TypeError(
            f"selected must be a bool tensor of the shape of ids {tuple(ids.shape)}"
        )
    proportions = tuple(float(x) for x in proportions)
    if (
        len(proportions) != 3
        or min(proportions) < 0
        or not math.isclose(sum(proportions), 1.0, abs_tol=1e-6)
    ):
        raise ValueError(
            f"proportions must be three non-negative numbers ([MASK], random, "
            f"unchanged) "
            f"that sum to 1, got {proportions}"
        )
    check_token_id("mask_id", mask_id, vocab_size)
    if random_ids is None:
        pool = torch.arange(vocab_size)
    else:
        pool = torch.as_tensor(random_ids)
        if pool.dim() != 1 or pool.dtype not in (torch.int64, torch.int32):
            raise TypeError(
                f"random_ids must be a 1-D sequence of integer token ids, got "
                f"{pool.dtype} of shape {tuple(pool.shape)}"
            )
        pool = pool.long()
        if pool.numel() and (int(pool.min()) < 0 or int(pool.max()) >= vocab_size):
            raise ValueError(
                f"random_ids must be in [0, vocab_size={vocab_size}), got values in "
                f"[{int(pool.min())}, {int(pool.max())}]"
            )
    if pool.numel() == 0:
        raise ValueError("random_ids must hold at least one token id")

    u = torch.rand(ids.shape, generator=generator)
    p_mask, p_random, _ = proportions
    action = torch.full_like(ids, UNSELECTED, dtype=torch.long)
    action[selected & (u < p_mask)] = MASKED
    action[selected & (u >= p_mask) & (u < p_mask + p_random)] = RANDOM
    action[selected & (u >= p_mask + p_random)] = UNCHANGED
    random_tokens = pool[
        torch.randint(pool.numel(), ids.shape, generator=generator)
    ].to(ids.dtype)

    inputs = ids.clone()  # never modify the caller's tensor
    inputs[action == MASKED] = mask_id
    inputs[action == RANDOM] = random_tokens[action == RANDOM]
    # int64 whatever the ids' type: what cross-entropy takes as targets
    targets = torch.where(selected, ids.long(), IGNORE)
    return Masked(inputs, targets, selected.clone(), action)


def mlm_mask(
    ids,
    *,
    special_ids: Iterable[int],
    mask_id: int,
    vocab_size: int,
    p: float = 0.15,
    proportions=(0.8, 0.1, 0.1),
    generator: torch.Generator,
    selected=None,
) -> Masked:
    """BERT's masked-LM corruption of a ``(B, T)`` batch of ids.

    Choose 15% (``p``) of the tokens that are not special (``special_ids``: [CLS],
    [SEP], [PAD], ...); of those, 80/10/10 (``proportions``) become [MASK] / a random
    token / stay unchanged. Pass ``selected`` (a ``(B, T)`` bool) to keep this
    replacement but choose positions another way (whole words, spans, entities); special
    tokens are never selected either way.
    """
    check_vocab_size(vocab_size)
    check_token_id("mask_id", mask_id, vocab_size)
    ids = check_corruption_ids(ids, vocab_size)
    special = check_special_ids(special_ids)
    maskable = can_mask(ids, special)
    if not bool(maskable.any()):
        raise ValueError(
            "ids has no maskable token: every position is special or padding "
            f"(special_ids={special})"
        )
    if selected is None:
        selected = select_tokens(maskable, p, generator=generator)
    elif (
        not isinstance(selected, torch.Tensor)
        or selected.dtype != torch.bool
        or selected.shape != ids.shape
    ):
        raise TypeError(
            f"selected must be a bool tensor of the shape of ids {tuple(ids.shape)}"
        )
    else:
        selected = selected & maskable
    never = set(special) | {mask_id}
    random_ids = [i for i in range(vocab_size) if i not in never]
    return replace_selected(
        ids,
        selected,
        mask_id=mask_id,
        vocab_size=vocab_size,
        proportions=proportions,
        generator=generator,
        random_ids=random_ids,
    )


# ----------------------------------------------------------------------------------
# Next-sentence prediction


@dataclass(frozen=True)
class Pair:
    """Two segments and whether ``b`` was drawn at random (label 1, "NotNext") or really
    follows ``a`` in its document (label 0, "IsNext")."""

    a: list
    b: list
    is_random: bool

    @property
    def label(self) -> int:
        return int(self.is_random)


def nsp_pairs(
    documents: Sequence[Sequence[Sequence[int]]],
    n: int,
    *,
    generator: torch.Generator,
    p_random: float = 0.5,
) -> list[Pair]:
    """``n`` sentence pairs from ``documents`` (each an ordered list of tokenized
    segments).

    With probability ``1 - p_random`` segment B is the segment that follows A in the
    same document; otherwise it is a random segment from a *different* document (BERT's
    recipe; the ALBERT chapter argues this makes NSP mostly a topic test).
    """
    check_generator(generator)
    if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 1:
        raise ValueError(f"n must be a positive integer, got {n!r}")
    n = int(n)
    if (
        isinstance(p_random, bool)
        or not isinstance(p_random, numbers.Real)
        or not 0.0 <= p_random <= 1.0
    ):
        raise ValueError(f"p_random must be in [0, 1], got {p_random!r}")
    with_next = [d for d, doc in enumerate(documents) if len(doc) >= 2]
    if not with_next or len(documents) < 2:
        raise ValueError(
            "documents must hold at least two documents, one of them with two or more "
            "segments"
        )

    def rand(k: int) -> int:
        return int(torch.randint(k, (1,), generator=generator))

    pairs = []
    for _ in range(n):
        d = with_next[rand(len(with_next))]
        i = rand(len(documents[d]) - 1)
        a = list(documents[d][i])
        if float(torch.rand(1, generator=generator)) < p_random:
            other = rand(len(documents) - 1)
            other += other >= d  # any document but d
            doc = documents[other]
            if not doc:
                raise ValueError(f"documents[{other}] is empty")
            pairs.append(Pair(a, list(doc[rand(len(doc))]), True))
        else:
            pairs.append(Pair(a, list(documents[d][i + 1]), False))
    return pairs


def pack_pairs(
    pairs: Sequence[Pair], *, cls_id: int, sep_id: int, pad_id: int, max_len: int
) -> dict:
    """``[CLS] a [SEP] b [SEP]`` for each pair, padded to the longest, as model inputs.

    Longer pairs are cut to ``max_len`` by trimming the longer segment first (BERT's
    ``truncate_seq_pair``, in :func:`ptlm_lite.data.batching.encode_pair`). Returns a
    dict of tensors: ``ids``, ``segments`` (0 for [CLS], A and its [SEP]; 1 for B and
    its [SEP]; 0 on padding), ``valid`` (True for real tokens) and ``nsp_labels`` (1 =
    random B).
    """
    if not isinstance(max_len, int) or max_len < 5:
        raise ValueError(
            f"max_len must be an integer >= 5 ([CLS] a [SEP] b [SEP]), got {max_len!r}"
        )
    if not pairs:
        raise ValueError("pairs must not be empty")
    for name, v in (("cls_id", cls_id), ("sep_id", sep_id), ("pad_id", pad_id)):
        check_count(name, v, low=0)  # a token id: an int >= 0
    rows, segs = [], []
    for pair in pairs:
        if not len(pair.a) or not len(pair.b):
            raise ValueError("every pair needs two non-empty segments")
        # the longer side is cut first
        row, seg = encode_pair(pair.a, pair.b, cls_id, sep_id, max_len)
        rows.append(row)
        segs.append(seg)
    T = max(len(r) for r in rows)
    pad = [T - len(r) for r in rows]  # right-padded in Python: one tensor each
    ids = torch.tensor([r + [pad_id] * n for r, n in zip(rows, pad)], dtype=torch.long)
    segments = torch.tensor([g + [0] * n for g, n in zip(segs, pad)], dtype=torch.long)
    lengths = torch.tensor([len(r) for r in rows])
    valid = torch.arange(T) < lengths[:, None]
    return {
        "ids": ids,
        "segments": segments,
        "valid": valid,
        "nsp_labels": torch.tensor([p.label for p in pairs], dtype=torch.long),
    }
