"""The encoder-decoder Transformer of "Attention Is All You Need" (Vaswani et al.,
2017).

    source ──Embeddings──► encoder Stack(padding mask) ──► memory
    target ──Embeddings──► decoder Stack(causal ∧ padding mask,
                                         cross-attention to memory) ──► logits

The three masks are the model: padding (encoder), causal ∧ padding (decoder
self-attention) and cross (decoder queries see every real source token). Everything else
is shared with every other model in the book (:mod:`ptlm_lite.stack`,
:mod:`ptlm_lite.layers`). Targets use the book's one ignore index, ``IGNORE`` = −100,
for padding.

Chapter: ``chapters/transformer.ipynb``.
"""

from __future__ import annotations

import torch
from torch import nn

from . import masks
from .config import Config
from .layers import Embeddings, check_ids
from .output import IGNORE, Output, check_targets, no_loss
from .stack import Model, Stack

__all__ = ["Transformer", "label_smoothed_loss"]


def label_smoothed_loss(logits, targets, eps: float = 0.0, ignore_index: int = IGNORE):
    """Cross-entropy against a target distribution with 1-ε on the right token and ε
    spread over all.

        loss = (1 - ε) · (-log p[y]) + ε · mean_v(-log p[v])

    With ε = 0.1 the model is never rewarded for pushing p[y] to 1, which the paper
    found hurts perplexity but helps BLEU. Equal to ``F.cross_entropy(...,
    label_smoothing=ε)`` (a test checks). logits: (N, V), targets: (N,); positions equal
    to ``ignore_index`` do not count; when none counts the loss is 0 with no gradient
    (:func:`~ptlm_lite.output.no_loss`), not NaN.
    """
    check_targets(targets, logits.shape[-1])
    if isinstance(eps, bool) or not isinstance(eps, (int, float)) or not 0 <= eps < 1:
        raise ValueError(f"eps must be a number in [0, 1), got {eps!r}")
    keep = targets != ignore_index
    if not bool(keep.any()):
        return no_loss(logits)
    logp = logits.float().log_softmax(dim=-1)
    logp, targets = logp[keep], targets[keep]
    nll = -logp.gather(-1, targets[:, None]).squeeze(-1)
    smooth = -logp.mean(dim=-1)
    return ((1.0 - eps) * nll + eps * smooth).mean()


class Transformer(Model):
    """Encoder-decoder with one shared vocabulary; ``tie_weights`` shares the embedding
    matrix between source, target and the output projection (the paper's three-way
    tying).

    The later encoder-decoders change two things, passed as classes: ``norm`` (T5's
    ``nn.RMSNorm``) and ``bias``, relative positions given to self-attention as an
    additive bias instead of added to the input (T5; with ``config.pos = "none"``):
    ``bias(config, bidirectional)`` builds one module for the encoder (True) and one
    for the decoder (False, it may only look back), each called as ``module(Tq, Tk)``
    and returning ``(H, Tq, Tk)``.
    """

    def __init__(
        self,
        config: Config,
        seed: int | None = None,
        norm: type = nn.LayerNorm,
        bias: type | None = None,
    ):
        super().__init__(config, seed)
        self.embed = Embeddings(config, scale=True)
        # pre-LN leaves the residual stream un-normalised: each Stack then ends with
        # its own final norm
        self.encoder = Stack(config, norm=norm)
        self.decoder = Stack(config, cross=True, norm=norm)
        self.head = nn.Linear(config.d_model, config.vocab_size, bias=False)
        if config.tie_weights:  # one matrix: the init below gives it the head's Xavier
            self.head.weight = self.embed.tok.weight
        self.enc_bias = None if bias is None else bias(config, bidirectional=True)
        self.dec_bias = None if bias is None else bias(config, bidirectional=False)
        self.apply(self._init)

    @staticmethod
    def _init(m):
        if isinstance(m, nn.Linear):
            nn.init.xavier_uniform_(m.weight)
            if m.bias is not None:
                nn.init.zeros_(m.bias)
        elif isinstance(m, nn.Embedding):
            nn.init.normal_(m.weight, std=m.embedding_dim**-0.5)

    def encode(self, src, mask=None, return_attention=False):
        """src: (B, S) ids -> memory (B, S, D), src_valid (B, S), encoder attentions."""
        src_valid = src != self.config.pad_id
        if mask is None:
            mask = masks.padding_mask(src_valid)  # (B, 1, S): nobody attends to padding
        S = src.shape[1]
        bias = None if self.enc_bias is None else self.enc_bias(S, S)
        out = self.encoder(
            self.embed(src), mask=mask, bias=bias, return_attention=return_attention
        )
        return out.last_hidden, src_valid, out.attentions

    def decode(
        self,
        tgt,
        memory,
        src_valid,
        mask=None,
        return_attention=False,
        cache: list | None = None,
        offset: int = 0,
    ):
        """tgt: (B, T) ids (starting with BOS) -> logits (B, T, V), self and cross
        attentions.

        Step by step (generation): ``cache`` is one dict per decoder layer, kept between
        calls (the layers store their keys and values in it, the encoder's too), and
        ``offset`` the position of ``tgt``'s first token, the number of tokens decoded
        before. ``tgt`` then holds only the new tokens.
        """
        T = tgt.shape[1]
        if mask is None:
            # (T, offset + T): each new token sees every earlier one and itself
            mask = masks.causal_mask(T, memory=offset, device=tgt.device)
            if cache is None:
                # (B, 1, T): nobody attends to padding (generation pads only after EOS)
                mask = masks.combine(
                    mask, masks.padding_mask(tgt != self.config.pad_id)
                )
        # (B, T, S)
        cross = masks.cross_mask(src_valid, T)
        bias = None
        if self.dec_bias is not None:  # the rows of the new positions only
            bias = self.dec_bias(offset + T, offset + T)[:, offset:]
        out = self.decoder(
            self.embed(tgt, offset=offset),
            mask=mask,
            bias=bias,
            context=memory,
            context_mask=cross,
            cache=cache,
            return_attention=return_attention,
        )
        return self.head(out.last_hidden), out.attentions, out.cross

    def forward(self, src, tgt_in, tgt_out=None, return_attention=False) -> Output:
        """Teacher forcing: ``tgt_in`` is the target shifted right (BOS first),
        ``tgt_out`` the target itself, ``IGNORE`` (−100) where it does not count
        (padding).
        """
        check_ids(src, self.config.vocab_size, "src")
        check_ids(tgt_in, self.config.vocab_size, "tgt_in")
        if tgt_in.shape[0] != src.shape[0]:
            raise ValueError(
                f"tgt_in must have the batch size of src ({src.shape[0]}), got "
                f"{tgt_in.shape[0]}"
            )
        if tgt_out is not None:
            check_targets(tgt_out, self.config.vocab_size, "tgt_out")
        memory, src_valid, enc = self.encode(src, return_attention=return_attention)
        logits, dec, cross = self.decode(
            tgt_in, memory, src_valid, return_attention=return_attention
        )
        loss = None
        if tgt_out is not None:
            if tgt_out.shape != tgt_in.shape:
                raise ValueError(
                    f"tgt_out must have the shape of tgt_in {tuple(tgt_in.shape)}, got "
                    f"{tuple(tgt_out.shape)}"
                )
            loss = label_smoothed_loss(
                logits.flatten(0, 1), tgt_out.flatten(), self.config.label_smoothing
            )
        attentions = (
            {"encoder": enc, "decoder": dec, "cross": cross}
            if return_attention
            else None
        )
        return Output(logits, loss, attentions)

    @torch.no_grad()
    def generate(
        self, src, bos_id: int, eos_id: int, max_new_tokens: int | None = None
    ):
        """Greedy decoding: feed back the most likely token until EOS (or the length
        limit), the source encoded once and the decoder's keys and values cached.

        Returns (B, T) ids without the BOS; positions after an EOS are padded.
        ``max_new_tokens=None`` decodes up to ``max_len - 1`` tokens; 0 returns an
        empty (B, 0) tensor (no token asked for, none made).
        """
        if max_new_tokens is None:
            max_new_tokens = self.config.max_len - 1
        if (
            isinstance(max_new_tokens, bool)
            or not isinstance(max_new_tokens, int)
            or not 0 <= max_new_tokens < self.config.max_len
        ):
            raise ValueError(
                f"max_new_tokens must be None or an integer in [0, max_len="
                f"{self.config.max_len}), got {max_new_tokens!r}"
            )
        for name, v in (("bos_id", bos_id), ("eos_id", eos_id)):
            if isinstance(v, bool) or not isinstance(v, int):
                raise TypeError(f"{name} must be an int token id, got {v!r}")
            if not 0 <= v < self.config.vocab_size:
                raise ValueError(
                    f"{name} must be in [0, vocab_size={self.config.vocab_size}), "
                    f"got {v}"
                )
        check_ids(src, self.config.vocab_size, "src")
        if max_new_tokens == 0:
            return src.new_zeros(src.shape[0], 0)
        memory, src_valid, _ = self.encode(src)
        out = torch.full((src.shape[0], 1), bos_id, dtype=torch.long, device=src.device)
        done = torch.zeros(src.shape[0], dtype=torch.bool, device=src.device)
        # the keys and values of every decoded token (and of the source) are kept:
        # each step runs the decoder on the newest token only
        cache = [{} for _ in range(self.config.n_layer)]
        for step in range(max_new_tokens):
            logits, _, _ = self.decode(
                out[:, -1:], memory, src_valid, cache=cache, offset=step
            )
            nxt = logits[:, -1].argmax(-1)
            nxt = nxt.masked_fill(done, self.config.pad_id)
            out = torch.cat([out, nxt[:, None]], dim=1)
            done |= nxt == eos_id
            if bool(done.all()):
                break
        return out[:, 1:]
