"""MASS: masked sequence-to-sequence pre-training (Song, Tan, Qin, Lu and Liu, 2019).

One encoder-decoder, one noise. A fragment of k consecutive tokens of an m-token text
is replaced by [MASK] in the encoder's input (same length); the decoder writes the
fragment back, seeing only the fragment's earlier tokens, each at its position in the
text:

    text         x0  x1  x2  x3  x4  x5  x6  x7         m = 8
    encoder      x0  x1  [M] [M] [M] [M] x6  x7         fragment x2..x5, k = 4
    decoder in   [BOS] x2  x3  x4  x5                   at positions 2 3 4 5 6
    decoder out  x2  x3  x4  x5  [EOS]

So each predicted token reads the text outside the fragment (through the encoder, in
both directions) and the fragment's tokens before it (through the decoder, left to
right): :func:`reads`. The one knob, k, spans two known models:

* k = 1: one masked token, predicted from everything else, and the decoder has only
  [BOS]: BERT's masked LM;
* k = m: the encoder sees nothing but [MASK]s, so every token is predicted from the
  tokens before it: GPT's language model.

The paper's choice, k ≈ m/2, makes the encoder understand the unmasked half and the
decoder lean on it (it cannot copy: the fragment is masked at the input).

Chapter: ``chapters/mass.ipynb``; the noise follows :mod:`ptlm_lite.seq2seq`'s contract.
"""

from __future__ import annotations

import torch
from torch import nn

from . import masks
from .config import register_preset
from .output import Output, check_targets, cross_entropy
from .seq2seq import Pair, check_document, check_generator
from .transformer import Transformer, label_smoothed_loss

__all__ = [
    "fragment_length",
    "mass_noise",
    "fragment_start",
    "reads",
    "MASS",
    "MassForChoice",
]

# the paper's model (Table 1 setting): 6+6 layers of width 1024, 16 heads
register_preset(
    "mass", vocab_size=60000, d_model=1024, n_layer=6, n_head=16, d_ff=4096,
    max_len=512, dropout=0.1, activation="gelu",
)  # fmt: skip


def fragment_length(m: int, k: int | None = None, fraction: float | None = None):
    """The fragment's length for an m-token text: ``k`` tokens (at most m), or
    ``fraction`` of m rounded (at least 1). Give exactly one of the two."""
    if (k is None) == (fraction is None):
        raise ValueError(
            f"give exactly one of k (tokens) and fraction (of m), got k={k!r}, "
            f"fraction={fraction!r}"
        )
    if k is not None:
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise ValueError(f"k must be an integer >= 1, got {k!r}")
        return min(k, m)
    if isinstance(fraction, bool) or not isinstance(fraction, (int, float)):
        raise ValueError(f"fraction must be a number in (0, 1], got {fraction!r}")
    if not 0 < fraction <= 1:
        raise ValueError(f"fraction must be in (0, 1], got {fraction!r}")
    return max(1, min(m, round(fraction * m)))


def mass_noise(
    doc, generator, *, mask_id: int, k=None, fraction=None, max_len=None, start=None
) -> Pair:
    """MASS's noise under :mod:`ptlm_lite.seq2seq`'s contract: the document flattened
    (a random window of ``max_len`` tokens if longer), a fragment of
    :func:`fragment_length` tokens starting at a uniform position (or ``start``)
    replaced by ``mask_id`` in the source; the target is the fragment.
    ``doc`` is not modified; the same generator state gives the same pair."""
    text = [t for sentence in check_document(doc) for t in sentence]
    check_generator(generator)
    if isinstance(mask_id, bool) or not isinstance(mask_id, int) or mask_id < 0:
        raise ValueError(
            f"mask_id must be a non-negative int token id, got {mask_id!r}"
        )
    if max_len is not None:
        if isinstance(max_len, bool) or not isinstance(max_len, int) or max_len < 1:
            raise ValueError(
                f"max_len must be None or an integer >= 1, got {max_len!r}"
            )
        if len(text) > max_len:
            w = int(torch.randint(len(text) - max_len + 1, (1,), generator=generator))
            text = text[w : w + max_len]
    m = len(text)
    if m == 0:
        raise ValueError("doc must hold at least one token")
    n = fragment_length(m, k, fraction)
    if start is None:
        start = int(torch.randint(m - n + 1, (1,), generator=generator))
    elif (
        isinstance(start, bool) or not isinstance(start, int) or not 0 <= start <= m - n
    ):
        raise ValueError(
            f"start must be None or an integer in [0, m - k = {m - n}], got {start!r}"
        )
    source = text[:start] + [mask_id] * n + text[start + n :]
    return Pair(source=source, target=text[start : start + n])


def fragment_start(src: torch.Tensor, mask_id: int) -> torch.Tensor:
    """(B, S) encoder inputs -> (B,): where each row's fragment begins, its first
    ``mask_id`` (0 for a row without one). The decoder's positions start there."""
    if not isinstance(src, torch.Tensor) or src.dim() != 2:
        raise ValueError("src must be a (B, S) tensor of token ids")
    return (src == mask_id).int().argmax(dim=1)


def reads(m: int, start: int, k: int) -> torch.Tensor:
    """What each prediction of the fragment may read of the text: ``(k, m)`` ints, row
    i for the token at ``start + i``: 1 = through the encoder (outside the fragment),
    2 = through the decoder (the fragment's earlier tokens), 0 = not at all. k = 1 gives
    BERT's row (all but itself), k = m GPT's (the strict past)::

        m = 7, start = 2, k = 3:   1 1 0 0 0 1 1
                                   1 1 2 0 0 1 1  (rows: x2, x3, x4)
                                   1 1 2 2 0 1 1
    """
    if not (0 <= start and 1 <= k and start + k <= m):
        raise ValueError(f"need 0 <= start and 1 <= k with start + k <= m, got {m=}, "
                         f"{start=}, {k=}")  # fmt: skip
    out = torch.ones(k, m, dtype=torch.long)
    out[:, start : start + k] = 2 * masks.causal_mask(k).long()
    out[:, start : start + k].fill_diagonal_(0)
    return out


class MASS(Transformer):
    """The Transformer (:class:`~ptlm_lite.transformer.Transformer`) with one change:
    ``start`` (B,) puts the decoder's tokens at the fragment's positions, ``start + 0,
    1, ...``, instead of 0, 1, ... (the paper's decoder keeps the text's positions).
    Without ``start`` (fine-tuning, generation) it is the plain Transformer, so
    :func:`ptlm_lite.seq2seq.greedy` and ``beam_search`` work unchanged.
    """

    def decode(
        self, tgt, memory, src_valid, mask=None, return_attention=False, cache=None,
        offset: int = 0, start=None,
    ):  # fmt: skip
        """As :meth:`Transformer.decode`; ``start``: (B,) the fragments' positions."""
        if start is None:
            return super().decode(
                tgt, memory, src_valid, mask, return_attention, cache, offset
            )
        T = tgt.shape[1]
        # (B, T): token t of row b sits at position start[b] + offset + t
        positions = start[:, None] + offset + torch.arange(T, device=tgt.device)
        if mask is None:
            mask = masks.causal_mask(T, memory=offset, device=tgt.device)
            if cache is None:  # (B, 1, T): nobody attends to padding
                mask = masks.combine(
                    mask, masks.padding_mask(tgt != self.config.pad_id)
                )
        out = self.decoder(
            self.embed(tgt, positions=positions),
            mask=mask,
            context=memory,
            context_mask=masks.cross_mask(src_valid, T),  # (B, T, S)
            cache=cache,
            return_attention=return_attention,
        )
        return self.head(out.last_hidden), out.attentions, out.cross

    def forward(
        self, src, tgt_in, tgt_out=None, start=None, return_attention=False
    ) -> Output:
        """Teacher forcing as :meth:`Transformer.forward`, the decoder at ``start``."""
        if start is None:
            return super().forward(src, tgt_in, tgt_out, return_attention)
        if not isinstance(start, torch.Tensor) or start.shape != src.shape[:1]:
            raise ValueError(f"start must be a ({src.shape[0]},) tensor of positions")
        memory, src_valid, enc = self.encode(src, return_attention=return_attention)
        logits, dec, cross = self.decode(
            tgt_in, memory, src_valid, return_attention=return_attention, start=start
        )
        loss = None
        if tgt_out is not None:
            check_targets(tgt_out, self.config.vocab_size, "tgt_out")
            loss = label_smoothed_loss(
                logits.flatten(0, 1), tgt_out.flatten(), self.config.label_smoothing
            )
        attentions = (
            {"encoder": enc, "decoder": dec, "cross": cross}
            if return_attention
            else None
        )
        return Output(logits, loss, attentions)


class MassForChoice(nn.Module):
    """Understanding through MASS's encoder: each (context, choice) row is encoded,
    mean-pooled over its real tokens and scored by one new linear layer; the softmax
    over the C choices picks one (:mod:`ptlm_lite.finetune`'s choice batches).
    ``forward(ids, segments=None, valid=None, labels=None)``, ids ``(B, C, T)`` ->
    logits ``(B, C)``. The decoder is not used."""

    def __init__(self, model: MASS):
        super().__init__()
        if not isinstance(model, Transformer):
            raise TypeError(f"model must be a MASS model, got {type(model).__name__}")
        self.model, self.config = model, model.config
        self.score = nn.Linear(model.config.d_model, 1)

    def forward(self, ids, segments=None, valid=None, labels=None) -> Output:
        if not isinstance(ids, torch.Tensor) or ids.dim() != 3:
            raise ValueError("ids must be (B, C, T): a batch of C choices each")
        B, C, T = ids.shape
        memory, src_valid, _ = self.model.encode(ids.reshape(B * C, T))
        w = src_valid.unsqueeze(-1).float()  # (B·C, T, 1)
        pooled = (memory * w).sum(1) / w.sum(1).clamp(min=1)  # (B·C, D)
        logits = self.score(pooled).view(B, C)
        loss = None if labels is None else cross_entropy(logits, labels, name="labels")
        return Output(logits, loss)
