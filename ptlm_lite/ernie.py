"""ERNIE 1.0 (Baidu): knowledge masking at three levels, and the dialogue LM's input.

BERT hides word pieces one by one, so a half-hidden name gives itself away: with "K",
"##u" and "##in" in view, "##z" is a spelling exercise, not a fact. ERNIE (Sun et al.,
2019) keeps BERT's model and changes only *which* positions are hidden together::

    "Kuzin Vu was born in Shefemo." in word pieces, one draw at each level:
    basic   (a piece)   K ##u [MASK] ##in V ##u was born in She [MASK] ##m ##o .
    entity  (a name)    K ##u ##z ##in V ##u was born in [MASK] [MASK] [MASK] [MASK] .
    phrase  (a phrase)  "The favourite colour of ... is blue." -> ... is [MASK] [MASK] .

A *unit* is a run of tokens that share an id in ``units`` ``(B, T)`` (``-1``: the token
is a unit of its own). Each unit is chosen with probability ``p`` and then masked whole,
as in ERNIE's released code (the draw at the unit's first token decides); every chosen
token then gets BERT's 80/10/10 on its own. So every token is chosen with probability
``p`` at every level: the levels differ only in which tokens are hidden *together*.

The spans come from the data: the synthetic world annotates entity and phrase spans in
characters (:class:`ptlm_lite.data.world.Span`), the plays annotate speakers and names
(:func:`ptlm_lite.data.shakespeare.entities`); :func:`token_units` maps them through the
tokenizer's offsets to token positions.

The dialogue language model (DLM) reads a few turns of a conversation with a *dialogue
embedding* (the role, query Q or response R) where BERT has its segment embedding, and
learns to tell real conversations from ones with a turn swapped for a random sentence:
:func:`dialogue_example`.

Chapter: ``chapters/ernie_baidu.ipynb``.
"""

from __future__ import annotations

from typing import Iterable, Sequence

import torch

from .corrupt import Masked, check_generator, check_corruption_ids, can_mask, mlm_mask
from .corrupt import check_special_ids

__all__ = [
    "LEVELS",
    "span_level",
    "token_units",
    "select_units",
    "knowledge_mask",
    "dialogue_example",
]

LEVELS = ("basic", "phrase", "entity")
# Span labels of the world ("person", "phrase:age", ...) and of the plays ("SPEAKER",
# "PERSON", "PLACE"): a phrase's label starts with "phrase:", any other is an entity.


def span_level(label: str) -> str:
    """``"phrase"`` for an attribute phrase (``"phrase:colour"``), else ``"entity"``."""
    return "phrase" if label.startswith("phrase:") else "entity"


def token_units(offsets: Sequence[tuple[int, int]], spans, level: str) -> list[int]:
    """One unit id per token: the index of the ``level`` span the token overlaps, or -1.

    ``offsets``: ``(start, end)`` characters per token (``Encoded.offsets``); ``spans``:
    objects with ``start``, ``end`` and ``label`` in the same characters. At ``"basic"``
    every token is its own unit (all -1). A token that overlaps a span belongs to it,
    so a span is always hidden with every piece that carries a character of it.
    """
    if level not in LEVELS:
        raise ValueError(f"level must be one of {LEVELS}, got {level!r}")
    units = [-1] * len(offsets)
    if level == "basic":
        return units
    chosen = [s for s in spans if span_level(s.label) == level]
    for u, s in enumerate(sorted(chosen, key=lambda s: s.start)):
        for i, (a, b) in enumerate(offsets):
            if a < s.end and b > s.start:
                units[i] = u
    return units


def select_units(
    maskable: torch.Tensor, units: torch.Tensor, p: float = 0.15, *, generator
) -> torch.Tensor:
    """Choose each unit with probability ``p``; return the ``(B, T)`` bool selection.

    ``maskable`` ``(B, T)`` bool (False on special tokens and padding); ``units``
    ``(B, T)`` integer: equal ids ``>= 0`` in a row form one unit, ``-1`` marks a token
    that is a unit alone. A unit must not cover an unmaskable position. The draw at a
    unit's first token decides for all of it, so a unit is never half chosen.
    """
    check_generator(generator)
    if not isinstance(p, (int, float)) or not 0.0 <= p <= 1.0:
        raise ValueError(f"p (the masking probability) must be in [0, 1], got {p!r}")
    if not isinstance(maskable, torch.Tensor) or maskable.dtype != torch.bool:
        raise TypeError("maskable must be a (B, T) bool tensor")
    if (
        not isinstance(units, torch.Tensor)
        or units.dtype not in (torch.int64, torch.int32)
        or units.shape != maskable.shape
        or units.dim() != 2
    ):
        raise TypeError(
            f"units must be an integer tensor of the shape of maskable "
            f"{tuple(maskable.shape)}, got {getattr(units, 'shape', type(units))}"
        )
    B, T = units.shape
    if units.numel() and (int(units.min()) < -1 or int(units.max()) >= T):
        raise ValueError(f"units must hold -1 or unit ids in [0, T={T})")
    if bool((units >= 0)[~maskable].any()):
        raise ValueError(
            "units covers a special token or padding: spans must hold ordinary tokens "
            "only"
        )
    pos = torch.arange(T).expand(B, T)
    key = torch.where(units >= 0, units.long(), T + pos)  # (B, T): unique per unit
    first = torch.full((B, 2 * T), T, dtype=torch.long)
    first = first.scatter_reduce(1, key, pos, reduce="amin")  # unit -> first position
    draw = torch.rand((B, T), generator=generator)
    chosen = draw.gather(1, first.gather(1, key)) < p  # (B, T): its unit's draw
    return chosen & maskable


def knowledge_mask(
    ids,
    units,
    *,
    special_ids: Iterable[int],
    mask_id: int,
    vocab_size: int,
    p: float = 0.15,
    proportions=(0.8, 0.1, 0.1),
    generator: torch.Generator,
) -> Masked:
    """ERNIE's masked-LM corruption: :func:`select_units`, then BERT's 80/10/10.

    ``units`` all -1 is the basic level (every token chosen alone, with probability
    ``p``); phrase or entity ids from :func:`token_units` give the other two. Returns a
    :class:`~ptlm_lite.corrupt.Masked`; ``ids`` and ``units`` are never modified.
    """
    ids = check_corruption_ids(ids, vocab_size)
    special = check_special_ids(special_ids)
    selected = select_units(can_mask(ids, special), units, p, generator=generator)
    return mlm_mask(
        ids,
        special_ids=special,
        mask_id=mask_id,
        vocab_size=vocab_size,
        proportions=proportions,
        generator=generator,
        selected=selected,
    )


def dialogue_example(
    turns: Sequence[Sequence[int]],
    speakers: Sequence[str],
    pool: Sequence[Sequence[int]],
    *,
    cls_id: int,
    sep_id: int,
    generator: torch.Generator,
    p_fake: float = 0.5,
) -> dict:
    """One DLM example: ``[CLS] t1 [SEP] t2 [SEP] t3 [SEP]`` with roles and a label.

    ``turns``: the tokenized turns of a conversation, in order; ``speakers``: who says
    each. The first speaker's turns are queries (role 0, Q), everyone else's responses
    (role 1, R), so three turns read QRQ, QRR or QQR as in the paper. With probability
    ``p_fake`` one turn is replaced by a random sentence from ``pool`` (label 1, fake;
    0 = real). The roles go where BERT puts segment ids: the dialogue embedding *is* a
    segment table with a role per row. Returns ``ids``, ``roles`` (lists) and ``label``.
    """
    check_generator(generator)
    if len(turns) < 2 or len(turns) != len(speakers):
        raise ValueError(
            f"turns and speakers must have the same length, at least 2; got "
            f"{len(turns)} turns and {len(speakers)} speakers"
        )
    if not pool:
        raise ValueError("pool must hold at least one sentence to swap in")
    turns = [list(t) for t in turns]
    label = int(float(torch.rand(1, generator=generator)) < p_fake)
    if label:
        k = int(torch.randint(len(turns), (1,), generator=generator))
        turns[k] = list(pool[int(torch.randint(len(pool), (1,), generator=generator))])
    ids, roles = [cls_id], [0]
    for turn, who in zip(turns, speakers):
        role = 0 if who == speakers[0] else 1
        ids += turn + [sep_id]
        roles += [role] * (len(turn) + 1)
    return {"ids": ids, "roles": roles, "label": label}
