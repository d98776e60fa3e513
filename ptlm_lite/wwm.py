"""BERT-WWM: whole-word masking, a new *selection* for BERT's masked LM.

WordPiece cuts a rare word into pieces (``mistress`` → ``m ##istress``). BERT chooses
15% of the *pieces*, so a word is often half hidden and its visible half gives the rest
away (``m [MASK]``). Whole-word masking chooses *words* and hides every piece of each;
the replacement (80/10/10, per piece) and the loss (each piece predicted on its own)
stay BERT's. No new layer, no new head.

The words come from the tokenizer (``Encoded.word_ids``), but a packed ``[CLS] A [SEP]
B [SEP]`` batch holds only ids. WordPiece marks each piece that continues a word with
``##``, so the words can be read back from the ids (Chinese BERT-WWM, Cui et al. 2019,
reads characters and finds words with a segmenter; here ``##`` is the segmenter)::

    ids       [CLS]  m  ##istress  is  J  ##ul  ##ie  ##t  [SEP]
    ##?         -    .     ##      .   .   ##    ##   ##     -
    word_ids   -1    0      0      1   2    2     2    2    -1

Which fraction is fixed (``unit``): Google fills a budget of 15% of the *pieces* with
whole words; at our 32-token length that budget (about 4) rarely fits a long word. The
chapter fixes 15% of the *words* instead, so every piece keeps BERT's 15% chance.

Chapter: ``chapters/bert_wwm.ipynb``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import partial

import torch

from .corrupt import (
    Masked,
    check_generator,
    check_corruption_ids,
    can_mask,
    mlm_mask,
    select_tokens,
)

__all__ = [
    "continuation_table",
    "expand_to_words",
    "select_whole_words",
    "whole_word_mask",
    "word_ids",
    "wwm_corruption",
]


def continuation_table(tok) -> torch.Tensor:
    """``(V,)`` bool: True for the WordPiece tokens that continue a word (``##...``).
    Chapter: ``chapters/bert_wwm.ipynb``."""
    if getattr(tok, "kind", None) != "wordpiece":
        raise ValueError(
            f"tok must be a WordPiece tokenizer (its continuation pieces start with "
            f"'##'), got kind={getattr(tok, 'kind', None)!r}"
        )
    pieces = [tok.id_to_token(i) or "" for i in range(tok.vocab_size)]
    return torch.tensor([p.startswith("##") and len(p) > 2 for p in pieces])


def word_ids(
    ids: torch.Tensor, continuation: torch.Tensor, special_ids: Iterable[int]
) -> torch.Tensor:
    """``(B, T)`` long: the word each token belongs to, counted 0, 1, ... from the left
    of each row, and -1 for special tokens and padding (they belong to no word).

    A word starts at every ordinary token that is not a ``##`` continuation, and also at
    a continuation that follows a special token (a word cut by truncation).
    ``continuation``: :func:`continuation_table`. Chapter: ``chapters/bert_wwm.ipynb``.
    """
    ids = check_corruption_ids(ids)
    if (
        not isinstance(continuation, torch.Tensor)
        or continuation.dtype != torch.bool
        or continuation.dim() != 1
        or (ids.numel() and int(ids.max()) >= len(continuation))
    ):
        raise ValueError(
            "continuation must be a (vocab_size,) bool tensor covering every id "
            "(continuation_table(tok))"
        )
    ordinary = can_mask(ids, special_ids)  # (B, T)
    after_ordinary = torch.nn.functional.pad(ordinary[:, :-1], (1, 0))  # (B, T)
    starts = ordinary & ~(continuation[ids] & after_ordinary)
    words = starts.long().cumsum(1) - 1
    return torch.where(ordinary, words, torch.full_like(words, -1))


def select_whole_words(
    words: torch.Tensor,
    p: float = 0.15,
    *,
    unit: str = "words",
    generator: torch.Generator,
) -> torch.Tensor:
    """Choose whole words; return ``(B, T)`` bool, True on every piece of each chosen
    word. ``words``: ``(B, T)`` word ids, -1 where a token is in no word; a word is a
    run of equal ids. ``unit`` says which fraction is fixed, per row:

    * ``"words"``: ``round(p · m)`` of the row's ``m`` words (at least one when
      ``p > 0``), uniformly: BERT's :func:`~ptlm_lite.corrupt.select_tokens` applied to
      the words' first pieces. Every piece then has about BERT's chance ``p`` whatever
      the length of its word; only the grouping changes.
    * ``"tokens"``, Google's ``create_pretraining_data.py``: a budget of
      ``round(p · n)`` of the row's ``n`` word pieces (Google counts [CLS] and [SEP]
      in ``n`` too and caps the budget at ``max_predictions_per_seq``; this counts
      word pieces only, with no cap), filled with words in random order, skipping a
      word that would overflow it. Never more than the budget, and exactly it
      whenever the row has enough one-piece words. In a short row a long word rarely
      fits: in 32 tokens (a budget of about 4) a 5-piece word never does.

    Chapter: ``chapters/bert_wwm.ipynb``."""
    check_generator(generator)
    if not isinstance(p, (int, float)) or not 0.0 <= p <= 1.0:
        raise ValueError(f"p (the masking probability) must be in [0, 1], got {p!r}")
    if unit not in ("words", "tokens"):
        raise ValueError(f"unit must be 'words' or 'tokens', got {unit!r}")
    if (
        not isinstance(words, torch.Tensor)
        or words.dtype not in (torch.int64, torch.int32)
        or words.dim() != 2
    ):
        raise TypeError("words must be a (B, T) integer tensor of word ids")
    B, T = words.shape
    in_word = words >= 0
    same_as_left = torch.zeros_like(in_word)
    same_as_left[:, 1:] = in_word[:, :-1] & (words[:, 1:] == words[:, :-1])
    start = in_word & ~same_as_left  # (B, T) a word's first piece
    where = torch.arange(T).expand(B, T)
    first = torch.where(start, where, 0).cummax(1).values  # (B, T) its word's start
    if unit == "words":
        chosen = select_tokens(start, p, generator=generator)  # (B, T) at starts
    else:
        size = torch.zeros_like(words).scatter_add(1, first, in_word.long())
        chosen = _fill_budget(start, size, p, generator)
    return chosen.gather(1, first) & in_word  # spread to every piece of the word


def expand_to_words(selected: torch.Tensor, words: torch.Tensor) -> torch.Tensor:
    """``(B, T)`` bool: every piece of each word that has a ``selected`` piece (the
    method as often summed up: "if a piece is masked, mask its whole word"). Run on
    BERT's 15% of pieces it masks more than 15%: long words are hit more often.
    ``words`` as :func:`word_ids` gives them (each word's id unique in its row).
    Chapter: ``chapters/bert_wwm.ipynb``.
    """
    same = (words[:, :, None] == words[:, None, :]) & (words[:, :, None] >= 0)
    return (same & selected[:, None, :]).any(-1)  # (B, T, T): same row, same word


def _fill_budget(start, size, p, generator) -> torch.Tensor:
    """Google's greedy fill: ``(B, T)`` bool at the chosen words' first pieces."""
    n = size.sum(1)  # (B,) word pieces in the row
    budget = torch.where(
        n > 0, (n.double() * p).round().long().clamp(min=1 if p > 0 else 0), 0
    )
    key = torch.rand(start.shape, generator=generator).masked_fill(~start, 2.0)
    order = key.argsort(1)  # the words in random order, then the rest (size 0)
    size_in_order = size.gather(1, order)
    take = torch.zeros_like(start)
    left = budget.clone()
    for j in range(start.shape[1]):
        s = size_in_order[:, j]
        take[:, j] = (s > 0) & (s <= left)  # a word that would overflow is skipped
        left -= torch.where(take[:, j], s, 0)
    return torch.zeros_like(take).scatter(1, order, take)


def whole_word_mask(
    ids: torch.Tensor,
    *,
    special_ids: Iterable[int],
    mask_id: int,
    vocab_size: int,
    continuation: torch.Tensor,
    p: float = 0.15,
    unit: str = "words",
    proportions=(0.8, 0.1, 0.1),
    generator: torch.Generator,
) -> Masked:
    """BERT-WWM's corruption of a ``(B, T)`` batch: whole words chosen
    (:func:`select_whole_words` on :func:`word_ids`), then BERT's 80/10/10 on each
    chosen piece (:func:`ptlm_lite.corrupt.mlm_mask`). Same contract as ``mlm_mask``:
    returns a :class:`~ptlm_lite.corrupt.Masked`, leaves ``ids`` untouched, draws only
    from ``generator``. Chapter: ``chapters/bert_wwm.ipynb``.
    """
    check_generator(generator)
    ids = check_corruption_ids(ids, vocab_size)
    special = sorted({int(i) for i in special_ids})
    if len(continuation) != vocab_size:
        raise ValueError(
            f"continuation must have vocab_size={vocab_size} entries, got "
            f"{len(continuation)}"
        )
    selected = select_whole_words(
        word_ids(ids, continuation, special), p, unit=unit, generator=generator
    )
    return mlm_mask(
        ids,
        special_ids=special,
        mask_id=mask_id,
        vocab_size=vocab_size,
        proportions=proportions,
        generator=generator,
        selected=selected,
    )


def wwm_corruption(
    tok, p: float = 0.15, unit: str = "words", proportions=(0.8, 0.1, 0.1)
) -> Callable:
    """Whole-word masking for ``tok`` as ``(ids, generator) -> Masked``, to pass as
    ``recipes.bert.pretraining_batches(tok, corrupt=wwm_corruption(tok))``; the
    counterpart of ``recipes.bert.mlm_corruption``. Chapter:
    ``chapters/bert_wwm.ipynb``.
    """
    return partial(
        whole_word_mask,
        special_ids=tok.all_special_ids,
        mask_id=tok.special_ids["mask"],
        vocab_size=tok.vocab_size,
        continuation=continuation_table(tok),
        p=p,
        unit=unit,
        proportions=proportions,
    )
