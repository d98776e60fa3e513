"""SpanBERT (Joshi et al., 2019): hide whole spans, and predict them from their edges.

    ids       [CLS] Kuzin Vu was  born in  She ##fem ##o and works [SEP]
    selected    ·     ·    ·   ·    ■   ■   ■    ■    ■   ·    ·     ·
    SBO                        ↑ x_left                   ↑ x_right
    span token "She" (p_3) = f(h_was, h_and, p_3)

* **span masking** (a new *selection*): draw a length in words from a geometric
  distribution (p = 0.2, never above 10 words: mean 3.8), an anchor token, back it up
  to its word's start and hide that many whole words; repeat until 15% of the row's
  *word pieces* are hidden (exactly ``round(0.15 · n)``, as
  :func:`ptlm_lite.corrupt.select_tokens`; the last span stops at the budget, even
  inside a word, as in SpanBERT's code). 80/10/10 is drawn once per span.
* **the span boundary objective** (SBO, a new *head*): each hidden ``x_i`` of a span
  ``(s, e)`` is also predicted from the two tokens just *outside* it and its position:
  ``y_i = f(h_{s-1}, h_{e+1}, p_{i-s+1})``, ``f`` a 2-layer FFN with GELU and
  LayerNorm; loss = MLM + SBO. The boundary states must summarise the span.
* **no NSP**: one contiguous segment per row (:mod:`ptlm_lite.recipes.spanbert`).

Chapter: ``chapters/spanbert.ipynb``.
"""

from __future__ import annotations

import bisect

import torch
import torch.nn.functional as F
from torch import nn

from .bert import BertForPreTraining, init_weights
from .corrupt import MASKED, RANDOM, UNCHANGED, UNSELECTED, Masked, can_mask
from .corrupt import check_generator, check_corruption_ids, check_special_ids
from .layers import ACTIVATIONS
from .output import IGNORE, cross_entropy

__all__ = [
    "span_length_probs",
    "word_starts",
    "select_spans",
    "replace_spans",
    "span_mask",
    "span_boundaries",
    "SpanBoundaryHead",
    "SpanBertForPreTraining",
]


def span_length_probs(p: float = 0.2, max_span: int = 10) -> torch.Tensor:
    """``(max_span,)``: P(length = 1, 2, ..., max_span words), the geometric
    ``p(1-p)^(k-1)`` renormalised over ``1..max_span`` (longer spans are never drawn):
    mean 3.8 words at the paper's p = 0.2. Chapter: ``chapters/spanbert.ipynb``.
    """
    if not 0 < p <= 1 or not isinstance(max_span, int) or max_span < 1:
        raise ValueError(f"need 0 < p <= 1 and max_span >= 1, got {p!r}, {max_span!r}")
    w = p * (1 - p) ** torch.arange(max_span, dtype=torch.float64)
    return w / w.sum()


def word_starts(ids, starts_word, special_ids) -> torch.Tensor:
    """``(B, T)`` bool: True where a word begins. ``starts_word`` ``(V,)`` bool says
    which tokens begin a word (WordPiece: every piece without ``##``); a token just
    after a special token begins one too. Chapter: ``chapters/spanbert.ipynb``.
    """
    maskable = can_mask(ids, special_ids)
    after_special = F.pad(~maskable[:, :-1], (1, 0), value=True)
    return maskable & (starts_word.to(ids.device)[ids] | after_special)


def select_spans(
    maskable,
    word_start,
    p=0.15,
    *,
    generator,
    geometric_p=0.2,
    max_span=10,
    return_spans=False,
):
    """``(B, T)`` bool: spans of whole words covering ``round(p · n)`` of the ``n``
    maskable tokens of each row (at least one), SpanBERT's sampler (module docstring).
    Spans never cross a special token. ``return_spans``: also a list per row of the
    spans drawn, ``(start, stop, length drawn)``. Chapter: ``chapters/spanbert.ipynb``.
    """
    check_generator(generator)
    for name, x in (("maskable", maskable), ("word_start", word_start)):
        if not isinstance(x, torch.Tensor) or x.dtype != torch.bool or x.dim() != 2:
            raise TypeError(f"{name} must be a (B, T) bool tensor")
    if word_start.shape != maskable.shape or not 0 < p < 1:
        raise ValueError(
            f"need word_start of maskable's shape and 0 < p < 1, got {p!r}"
        )
    cdf = span_length_probs(geometric_p, max_span).cumsum(0).tolist()
    n = maskable.sum(1)
    budget = (n.double() * p).round().long().clamp(min=1).where(n > 0, 0).tolist()
    rows, drawn = [], []
    for b, k in enumerate(budget):
        ok, start = maskable[b].tolist(), word_start[b].tolist()
        anchors = maskable[b].nonzero().flatten().tolist()
        sel, count, spans, u = [False] * len(ok), 0, [], []
        while count < k:
            if len(u) < 2:  # uniforms, drawn a row's worth at a time
                u = torch.rand(2 * k + 8, generator=generator).tolist()
            words = min(bisect.bisect(cdf, u.pop()), max_span - 1) + 1  # 1..max_span
            i = anchors[int(u.pop() * len(anchors))]
            if sel[i]:  # the anchor is hidden already: draw again
                continue
            while i > 0 and ok[i - 1] and not start[i]:  # back to its word's start
                i -= 1
            j, left = i, words
            while j < len(ok) and ok[j] and count < k:  # `words` words, or the budget
                if j > i and start[j]:
                    left -= 1
                    if left == 0:
                        break
                count += not sel[j]
                sel[j], j = True, j + 1
            spans.append((i, j, words))
        rows.append(sel)
        drawn.append(spans)
    selected = torch.tensor(rows, dtype=torch.bool).reshape(maskable.shape)
    return (selected, drawn) if return_spans else selected


def replace_spans(ids, selected, *, mask_id, vocab_size, generator, random_ids=None):
    """SpanBERT's replacement: 80/10/10 drawn once per span (a run of ``selected``), so
    a span is all [MASK], all random tokens or all unchanged. Returns a ``Masked``.
    Chapter: ``chapters/spanbert.ipynb``.
    """
    check_generator(generator)
    ids = check_corruption_ids(ids, vocab_size)
    if not isinstance(selected, torch.Tensor) or selected.shape != ids.shape:
        raise TypeError(f"selected must be a bool tensor of shape {tuple(ids.shape)}")
    first = selected & ~F.pad(selected[:, :-1], (1, 0), value=False)  # span starts
    span = first.flatten().cumsum(0).view_as(ids) - 1  # (B, T): which span
    u = torch.rand(int(first.sum()), generator=generator)[span.clamp(min=0)]
    pool = torch.as_tensor(
        range(vocab_size) if random_ids is None else random_ids, dtype=torch.long
    )
    noise = pool[torch.randint(len(pool), ids.shape, generator=generator)]
    action = torch.full_like(ids, UNSELECTED)
    action[selected & (u < 0.8)] = MASKED
    action[selected & (u >= 0.8) & (u < 0.9)] = RANDOM
    action[selected & (u >= 0.9)] = UNCHANGED
    inputs = torch.where(action == MASKED, mask_id, ids)  # never modify ids
    inputs = torch.where(action == RANDOM, noise.to(ids.dtype), inputs)
    targets = torch.where(selected, ids.long(), IGNORE)  # int64: cross-entropy's
    return Masked(inputs, targets, selected.clone(), action)


def span_mask(
    ids, *, special_ids, starts_word, mask_id, vocab_size, generator, p=0.15, **kw
) -> Masked:
    """SpanBERT's corruption of a ``(B, T)`` batch: :func:`select_spans` then
    :func:`replace_spans` (``kw``: ``geometric_p``, ``max_span``). Special tokens and
    padding are never selected. Chapter: ``chapters/spanbert.ipynb``.
    """
    ids = check_corruption_ids(ids, vocab_size)
    special = check_special_ids(special_ids)
    maskable = can_mask(ids, special)
    if not bool(maskable.any()):
        raise ValueError(f"ids has no maskable token (special_ids={special})")
    starts = word_starts(ids, starts_word, special)
    selected = select_spans(maskable, starts, p, generator=generator, **kw)
    pool = sorted(set(range(vocab_size)) - set(special) - {mask_id})
    return replace_spans(
        ids,
        selected,
        mask_id=mask_id,
        vocab_size=vocab_size,
        generator=generator,
        random_ids=pool,
    )


def span_boundaries(selected):
    """For every position of ``selected`` ``(B, T)``: ``left``, ``right`` (the indices
    of the tokens just outside its span, a run of True) and ``rel`` (0 for the span's
    first token), three ``(B, T)`` long tensors, meaningful where ``selected``.
    Chapter: ``chapters/spanbert.ipynb``.
    """
    B, T = selected.shape
    idx = torch.arange(T, device=selected.device).expand(B, T)
    first = selected & ~F.pad(selected[:, :-1], (1, 0), value=False)
    last = selected & ~F.pad(selected[:, 1:], (0, 1), value=False)
    start = torch.where(first, idx, -1).cummax(1).values  # latest start to the left
    end = torch.where(last, idx, T).flip(1).cummin(1).values.flip(1)  # next end
    if bool((selected & ((start == 0) | (end == T - 1))).any()):
        raise ValueError(
            "selected: a span touches the row's edge, so it has no boundary"
        )
    return start - 1, end + 1, idx - start


class SpanBoundaryHead(nn.Module):
    """SBO: predict each span token from the boundary states and its position, (N, V).

    ``inputs(hidden, selected)`` is ``[h_left; h_right; p_rel]`` ``(N, 3D)`` for the N
    selected positions (row-major, as ``targets[selected]``): it reads ``hidden`` at the
    boundaries only. The output matrix is the token embedding table, as the MLM head's.
    Chapter: ``chapters/spanbert.ipynb``.
    """

    def __init__(self, config, embedding: nn.Embedding):
        super().__init__()
        D, eps = config.d_model, config.ln_eps
        self.position = nn.Embedding(config.max_len, D)  # p_1, p_2, ... in the span
        self.act = ACTIVATIONS[config.activation]
        self.dense1, self.ln1 = nn.Linear(3 * D, D), nn.LayerNorm(D, eps=eps)
        self.dense2, self.ln2 = nn.Linear(D, D), nn.LayerNorm(D, eps=eps)
        self.decoder = nn.Linear(D, config.vocab_size)
        if config.tie_weights:
            self.decoder.weight = embedding.weight

    def inputs(self, hidden, selected):  # (B, T, D), (B, T) -> (N, 3D)
        left, right, rel = span_boundaries(selected)
        b, t = selected.nonzero(as_tuple=True)
        return torch.cat(
            [hidden[b, left[b, t]], hidden[b, right[b, t]], self.position(rel[b, t])],
            -1,
        )

    def forward(self, hidden, selected):  # -> (N, V)
        x = self.ln1(self.act(self.dense1(self.inputs(hidden, selected))))
        return self.decoder(self.ln2(self.act(self.dense2(x))))


class SpanBertForPreTraining(BertForPreTraining):
    """BERT's encoder and MLM head plus the SBO head; loss = MLM + SBO, no NSP.

    ``forward(ids, segments=None, valid=None, targets=None, return_attention=False)``:
    as :class:`~ptlm_lite.bert.BertForPreTraining` (``logits`` are the MLM's), with
    ``extra["sbo_loss"]`` and ``extra["sbo_logits"]`` ``(N, V)``. Built with the same
    ``seed``, its encoder and MLM head start from the same weights as BERT's (the SBO
    head is built last), so a comparison changes only the objective. BERT's NSP layer
    is inherited and never used. Chapter: ``chapters/spanbert.ipynb``.
    """

    def __init__(self, config, seed: int | None = None):
        super().__init__(config, seed)
        self.sbo = SpanBoundaryHead(config, self.bert.embed.tok)
        for m in (self.sbo.position, self.sbo.dense1, self.sbo.dense2):
            m.apply(init_weights)  # not the decoder: its matrix is the embedding table
        nn.init.zeros_(self.sbo.decoder.bias)

    def forward(
        self, ids, segments=None, valid=None, targets=None, return_attention=False
    ):
        out = super().forward(
            ids, segments, valid, targets=targets, return_attention=return_attention
        )
        if targets is not None:
            selected = targets != IGNORE
            out.extra["sbo_logits"] = self.sbo(out.last_hidden, selected)
            sbo_loss = cross_entropy(out.extra["sbo_logits"], targets[selected])
            out.extra["sbo_loss"], out.loss = sbo_loss, out.loss + sbo_loss
        return out
