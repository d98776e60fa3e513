"""Exercises of ``chapters/ernie_baidu.ipynb`` (solutions: ``solutions/ernie_baidu.py``).
The checks compare with the package's own :mod:`ptlm_lite.ernie`.
"""

from __future__ import annotations

import torch

from ..exercises import register_exercise, is_stub_value, register_question, describe


def _span(start, end, label):
    from ..data.world import Span

    return Span(start, end, label)


@register_exercise("token units", "ernie_baidu", "my_token_units")
def _token_units():
    from ..ernie import token_units

    # "Kuzin Vu was born in Shefemo." as the book's WordPiece cuts it
    text_offsets = [
        (0, 1),
        (1, 2),
        (2, 3),
        (3, 5),
        (6, 7),
        (7, 8),
        (9, 12),
        (13, 15),
        (15, 16),
        (16, 17),
        (18, 20),
        (21, 24),
        (24, 26),
        (26, 27),
        (27, 28),
        (28, 29),
    ]
    spans = (_span(0, 8, "person"), _span(21, 28, "city"))
    # "a 23-year-old pilot"; the made-up piece (10, 14) runs past the phrase's end at
    # 13 and still belongs to it
    phrase_offsets = [(0, 1), (2, 4), (4, 5), (5, 9), (9, 10), (10, 14), (14, 19)]
    phrase_spans = (_span(2, 13, "phrase:age"), _span(14, 19, "phrase:occupation"))
    cases = [
        (text_offsets, spans, "entity"),
        (text_offsets, spans, "phrase"),
        (text_offsets, spans, "basic"),
        (phrase_offsets, phrase_spans, "phrase"),
        (phrase_offsets, phrase_spans + (_span(0, 1, "city"),), "entity"),
        (
            [(0, 3), (4, 9), (10, 12)],
            (_span(10, 12, "PERSON"), _span(0, 3, "SPEAKER")),
            "entity",
        ),
    ]
    return token_units, cases


# A batch like the chapter's: [CLS] ... [SEP] then padding; units are spans of 1 to 5
# tokens. Large, so that the fractions below move by about 0.003 between draws.
def _unit_batch(seed: int, B: int = 2000, T: int = 48):
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(8, T + 1, (B,), generator=g)  # [CLS] ... [SEP]
    pos = torch.arange(T)
    maskable = (pos > 0) & (pos < lengths[:, None] - 1)  # not [CLS], [SEP], padding
    units = torch.full((B, T), -1, dtype=torch.long)
    start = torch.randint(1, 6, (B,), generator=g)  # (B,): where the next span starts
    alive = torch.ones(B, dtype=torch.bool)
    for u in range(T):  # span u of every row at once
        n = torch.randint(1, 6, (B,), generator=g)
        alive &= start + n <= lengths - 1
        inside = alive[:, None] & (pos >= start[:, None]) & (pos < (start + n)[:, None])
        units[inside] = u
        start = start + n + torch.randint(0, 4, (B,), generator=g)
    return maskable, units


def _selection_stats(select, seed):
    """What a unit selection did: the share of maskable tokens chosen, the share of
    units chosen, how many units were chosen only in part, how many special or padding
    positions were chosen, and whether the arguments were left alone."""
    maskable, units = _unit_batch(seed)
    m_given, u_given = maskable.clone(), units.clone()
    out = select(m_given, u_given, 0.15, torch.Generator().manual_seed(seed + 100))
    if is_stub_value(out):
        return out
    stats = dict.fromkeys(
        [
            "output",
            "tokens chosen",
            "units chosen",
            "units chosen in part",
            "special or padding chosen",
            "arguments untouched",
        ]
    )
    stats["output"] = describe(out)
    if not isinstance(out, torch.Tensor) or out.shape != maskable.shape:
        return stats
    out = out.bool()
    B, T = units.shape
    key = (torch.arange(B)[:, None] * T + units)[units >= 0]  # one key per unit
    picked = out[units >= 0].float()
    n_units = torch.zeros(B * T).index_add_(0, key, torch.ones_like(picked))
    n_picked = torch.zeros(B * T).index_add_(0, key, picked)
    present = n_units > 0
    return {
        **stats,
        "tokens chosen": int(out[maskable].sum()) / int(maskable.sum()),
        "units chosen": float((n_picked[present] == n_units[present]).float().mean()),
        "units chosen in part": int(
            ((n_picked > 0) & (n_picked < n_units))[present].sum()
        ),
        "special or padding chosen": int((out & ~maskable).sum()),
        "arguments untouched": bool(
            torch.equal(m_given, maskable) and torch.equal(u_given, units)
        ),
    }


@register_exercise(
    "unit selection",
    "ernie_baidu",
    "my_select_units",
    atol=0.015,
    call=_selection_stats,
)
def _unit_selection():
    from ..ernie import select_units

    def reference(maskable, units, p, generator):
        return select_units(maskable, units, p, generator=generator)

    return reference, [(0,), (1,)]


register_question(
    "what entity masking changes",
    "ernie_baidu",
    "In this chapter every token is chosen with probability 0.15 at all three levels. "
    "What does entity-level masking change for a name of four word pieces?",
    [
        "It hides more tokens per sentence, so each step trains on more predictions.",
        "Its pieces are hidden together, so the model must recall the name from the "
        "context instead of completing its spelling from the other pieces.",
        "The name gets an entity embedding of its own, added to the token embeddings.",
        "The hidden pieces are always replaced by [MASK], never by random tokens.",
    ],
)
register_question(
    "where the dialogue embedding goes",
    "ernie_baidu",
    "ERNIE's dialogue language model marks each turn as a query (Q) or a response "
    "(R). In a BERT-shaped model, where does that role go?",
    [
        "Into the position embeddings: Q turns get even positions, R turns odd ones.",
        "Into the attention mask: Q tokens may not attend to R tokens.",
        "Where BERT puts the segment ids: a table with one row per role, added to "
        "the token and position embeddings.",
        "Into the vocabulary, as two new special tokens written before each turn.",
    ],
)
