"""UniLM (Dong et al., 2019): one Transformer, three self-attention masks.

    packed input   [CLS] a1 a2 [SEP] b1 b2 [SEP]
    segments         0   0  0    0   1  1    1

* **bidirectional** (BERT): every token sees every real token;
* **left-to-right** (GPT): every token sees itself and what is left of it;
* **seq2seq**: segment A sees A in both directions, segment B sees all of A and its own
  past (:func:`ptlm_lite.masks.seq2seq_mask`, built per example from the segments).

The weights are BERT's (:class:`~ptlm_lite.bert.Bert` and its tied MLM head) and so is
the objective: the cloze, predict the ``[MASK]`` tokens. Only the mask changes, batch by
batch, so one set of weights learns to understand (bidirectional) and to generate
(seq2seq, left-to-right). Generation is cloze too: append ``[MASK]``, predict it, put
the prediction in its place, append the next ``[MASK]``. The source's keys and values
never change (it cannot see the target), so they are computed once and cached; each
step feeds the token just chosen (kept in the cache) and a new ``[MASK]`` (dropped).
The pre-training recipe is :mod:`ptlm_lite.recipes.unilm`.

Chapter: ``chapters/unilm.ipynb``.
"""

from __future__ import annotations

import torch

from . import masks
from .bert import Bert, MLMHead, init_weights
from .config import Config
from .device import eval_mode
from .output import IGNORE, Output, check_targets, cross_entropy
from .stack import Model

__all__ = ["OBJECTIVES", "objective_mask", "UniLM"]

OBJECTIVES = ("bidirectional", "left-to-right", "seq2seq")


def objective_mask(objective: str, segments, valid) -> torch.Tensor:
    """The self-attention mask of one UniLM objective for a packed batch: ``(B, T, T)``
    bool, True = may attend. ``segments`` (B, T): 0 for ``[CLS] A [SEP]``, 1 for ``B
    [SEP]``; ``valid`` (B, T) bool, True for real tokens (padding is never seen).

    Chapter: ``chapters/unilm.ipynb``.
    """
    if objective not in OBJECTIVES:
        raise ValueError(f"objective must be one of {OBJECTIVES}, got {objective!r}")
    pad = masks.padding_mask(valid)  # (B, 1, T), checks valid
    T = valid.shape[1]
    if objective == "bidirectional":
        return pad.expand(-1, T, -1)
    if objective == "left-to-right":
        return masks.combine(masks.causal_mask(T, device=valid.device), pad)
    return masks.seq2seq_mask(segments, valid)


class UniLM(Model):
    """BERT's encoder and MLM head, run under the mask of the batch's ``objective``.

    ``forward(ids, segments=None, valid=None, objective="bidirectional", targets=None,
    return_attention=False)``: ``targets`` (B, T) hold the original ids at the masked
    positions, -100 elsewhere; with them ``logits`` are ``(N, V)`` at those N positions
    and ``loss`` their cross-entropy; without, ``logits`` are ``(B, T, V)``.
    ``segments`` default to all zeros (one segment: the seq2seq mask is then
    bidirectional). ``model.bert`` is a :class:`~ptlm_lite.bert.Bert`, so the
    fine-tuning heads of :mod:`ptlm_lite.heads` take a copy of it.

    Chapter: ``chapters/unilm.ipynb``.
    """

    def __init__(self, config: Config, seed: int | None = None):
        super().__init__(config, seed)
        self.bert = Bert(config)
        self.mlm = MLMHead(config, self.bert.embed.tok)
        self.mlm.apply(init_weights)  # (the tied matrix too: the same N(0, 0.02))

    def forward(
        self,
        ids,
        segments=None,
        valid=None,
        objective: str = "bidirectional",
        targets=None,
        return_attention: bool = False,
    ) -> Output:
        if not isinstance(ids, torch.Tensor) or ids.dim() != 2:
            raise ValueError(
                f"ids must be a (B, T) tensor, got {type(ids).__name__} of shape "
                f"{tuple(getattr(ids, 'shape', ()))}"
            )
        segments = torch.zeros_like(ids) if segments is None else segments
        valid = ids != self.config.pad_id if valid is None else valid
        mask = objective_mask(objective, segments, valid)  # the one line that changes
        out = self.bert(
            ids, segments, valid, mask=mask, return_attention=return_attention
        )
        if targets is None:
            out.logits = self.mlm(out.last_hidden)  # (B, T, V)
            return out
        check_targets(targets, self.config.vocab_size)
        if targets.shape != ids.shape:
            raise ValueError(
                f"targets must have the shape of ids {tuple(ids.shape)}, got "
                f"{tuple(targets.shape)}"
            )
        selected = targets != IGNORE  # (B, T): only the masked positions are scored
        out.logits = self.mlm(out.last_hidden[selected])  # (N, V)
        out.loss = cross_entropy(out.logits, targets[selected])
        return out

    def _step(self, ids, segments, mask, cache):
        """Feed ``ids`` (B, m) after the cached positions, under ``mask`` (B, m, past +
        m); returns the MLM logits (B, m, V). The cache grows by m."""
        past = len(cache[0]["k"][0, 0]) if "k" in cache[0] else 0
        x = self.bert.embed(
            ids, segments, offset=past
        )  # positions past .. past + m - 1
        return self.mlm(self.bert.blocks(x, mask=mask, cache=cache).last_hidden)

    @torch.no_grad()
    def generate(
        self, src, src_valid=None, *, mask_id: int, max_new_tokens: int, cache=True
    ):
        """Greedy seq2seq generation: ``src`` (B, S) is ``[CLS] A [SEP]`` (right-padded:
        the target starts at position S for every row); returns the (B,
        max_new_tokens) generated ids (cut them at the first ``[SEP]``).

        ``cache=True`` encodes the source once and keeps every chosen token's keys and
        values; ``cache=False`` recomputes the whole sequence with the seq2seq mask at
        every step (the reference the cache must equal).
        """
        if not isinstance(src, torch.Tensor) or src.dim() != 2 or src.shape[1] < 1:
            raise ValueError(
                f"src must be a (B, S) tensor of ids, got shape "
                f"{tuple(getattr(src, 'shape', ()))}"
            )
        S = src.shape[1]
        if (
            isinstance(max_new_tokens, bool)
            or not isinstance(max_new_tokens, int)
            or not 1 <= max_new_tokens <= self.config.max_len - S
        ):
            raise ValueError(
                f"max_new_tokens must be an integer in [1, max_len - S = "
                f"{self.config.max_len - S}], got {max_new_tokens!r}"
            )
        src_valid = src != self.config.pad_id if src_valid is None else src_valid
        with eval_mode(self):
            B = src.shape[0]
            masks_ = torch.full((B, 1), mask_id, device=src.device)
            out = src.new_empty(B, 0)
            if cache:  # the source once: it sees only itself, so it never changes
                cache = [{} for _ in range(self.config.n_layer)]
                self._step(src, 0 * src, masks.padding_mask(src_valid), cache)
            for t in range(max_new_tokens):
                target = torch.cat([out, masks_], 1)  # y_1 .. y_t-1 [MASK]
                if not cache:  # everything again: source, the tokens so far, [MASK]
                    ids, seg = (
                        torch.cat([src, target], 1),
                        torch.cat([0 * src, 0 * target + 1], 1),
                    )
                    valid = torch.cat([src_valid, target > -1], 1)
                    logits = self(ids, seg, valid, objective="seq2seq").logits[:, -1]
                else:  # the last chosen token (kept) and a new [MASK] (dropped after)
                    new = target[:, -2:]
                    keys = torch.cat([src_valid, target > -1], 1)  # (B, S + t + 1)
                    # each new query sees the real keys up to itself
                    mask = masks.causal_mask(
                        len(new[0]), memory=S + t - len(new[0]) + 1
                    )
                    mask = mask.to(src.device) & keys[:, None, :]
                    logits = self._step(new, 0 * new + 1, mask, cache)[:, -1]
                    for layer in cache:  # forget the [MASK]'s keys and values
                        layer["k"], layer["v"] = (
                            layer["k"][:, :, :-1],
                            layer["v"][:, :, :-1],
                        )
                out = torch.cat([out, logits.argmax(-1, keepdim=True)], 1)
        return out
