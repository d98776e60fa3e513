"""BART (Lewis et al., 2019): a denoising encoder-decoder.

    noised document ──► encoder (bidirectional, like BERT) ──► memory
    <bos> + document ──► decoder (left to right, like GPT, cross-attends) ──► document

BART is the 2017 Transformer trained as an autoencoder: corrupt a document with any of
the noises of :mod:`ptlm_lite.noising` and ask the decoder to write the original. What
the model itself changes from the chapter-2 :class:`~ptlm_lite.transformer.Transformer`
is small, and all of it is here:

* **learned positions with an offset of 2**: fairseq's table keeps two rows it never
  uses, so position ``t`` reads row ``t + 2`` (Hugging Face keeps the quirk so that
  checkpoints load), and the encoder and the decoder have a table each;
* a **LayerNorm on the embeddings** (``layernorm_embedding``), then post-LN blocks as in
  BERT (no final norm) with **GELU**;
* the token table is shared by the encoder, the decoder and the output projection, and
  the logits get a **final_logits_bias** (zero, a buffer: Hugging Face uses it to ban
  tokens in some checkpoints).

It keeps :class:`Transformer`'s two methods, ``encode`` and ``decode`` (with a cache and
an offset), so the house's ``greedy`` and ``beam_search`` (:mod:`ptlm_lite.seq2seq`)
decode it, and ``forward(src, tgt_in, tgt_out)`` trains it with
:func:`~ptlm_lite.train.train`. The pre-training recipe is
:mod:`ptlm_lite.recipes.bart`; loading Hugging Face weights, :mod:`ptlm_lite.hf.bart`.

Chapter: ``chapters/bart.ipynb``.
"""

from __future__ import annotations

import torch
from torch import nn

from . import masks
from .attention import Dropout
from .config import Config, register_preset
from .layers import check_ids, init_weights
from .stack import Model, Stack
from .transformer import Transformer

__all__ = ["OFFSET", "BartEmbeddings", "Bart"]

# position t reads row t + OFFSET of the table (fairseq's two unused rows)
OFFSET = 2


class BartEmbeddings(nn.Module):
    """Token embeddings (passed in, shared) + a learned position table of its own,
    ``max_len + 2`` rows read from row 2, then LayerNorm and dropout."""

    def __init__(self, config: Config):
        super().__init__()
        self.config = config
        self.pos = nn.Embedding(config.max_len + OFFSET, config.d_model)
        self.ln = nn.LayerNorm(config.d_model, eps=config.ln_eps)
        self.drop = Dropout(config.dropout)

    def forward(self, tok: torch.Tensor, offset: int = 0) -> torch.Tensor:
        """tok: (B, T, D) token embeddings of positions ``offset .. offset + T - 1``."""
        T = tok.shape[1]
        if offset + T > self.config.max_len:
            raise ValueError(
                f"sequence of length {offset + T} is longer than "
                f"max_len={self.config.max_len}: truncate the input"
            )
        positions = torch.arange(offset, offset + T, device=tok.device) + OFFSET
        return self.drop(self.ln(tok + self.pos(positions)))  # (B, T, D)


class Bart(Transformer):
    """BART's encoder-decoder; ``config``: post-LN (``pre_norm=False``), GELU,
    ``pos="learned"`` (the ``bart-*`` presets)."""

    def __init__(self, config: Config, seed: int | None = None):
        Model.__init__(self, config, seed)  # Transformer's modules are not BART's
        if config.pre_norm or config.pos != "learned" or config.d_embed:
            raise ValueError(
                "config must be post-LN (pre_norm=False) with pos='learned' and no "
                "d_embed, as BART is: start from preset('bart-tiny', vocab_size=...)"
            )
        D, V = config.d_model, config.vocab_size
        self.tok = nn.Embedding(V, D)  # shared: encoder, decoder, output
        self.enc_embed = BartEmbeddings(config)
        self.dec_embed = BartEmbeddings(config)
        self.encoder = Stack(config)  # post-LN: no final norm
        self.decoder = Stack(config, cross=True)
        self.head = nn.Linear(D, V, bias=False)
        self.head.weight = self.tok.weight
        self.register_buffer("final_logits_bias", torch.zeros(1, V))
        self.enc_bias = self.dec_bias = None  # positions are added, not a bias
        self.apply(init_weights)  # N(0, 0.02), as BART's init_std

    def encode(self, src, mask=None, return_attention=False):
        """src: (B, S) ids -> memory (B, S, D), src_valid (B, S), encoder attentions."""
        check_ids(src, self.config.vocab_size, "src")
        src_valid = src != self.config.pad_id
        if mask is None:
            mask = masks.padding_mask(src_valid)  # (B, 1, S)
        out = self.encoder(
            self.enc_embed(self.tok(src)), mask=mask, return_attention=return_attention
        )
        return out.last_hidden, src_valid, out.attentions

    def decode(
        self,
        tgt,
        memory,
        src_valid,
        mask=None,
        return_attention=False,
        cache=None,
        offset: int = 0,
    ):
        """tgt: (B, T) ids at positions ``offset ..`` (BOS first when offset = 0) ->
        logits (B, T, V), self and cross attentions. ``cache``: one dict per decoder
        layer, holding the keys/values of the ``offset`` tokens before (generation)."""
        check_ids(tgt, self.config.vocab_size, "tgt")
        T = tgt.shape[1]
        if mask is None:
            # (T, offset + T): each new token sees the cached ones and its own past
            mask = masks.causal_mask(T, memory=offset, device=tgt.device)
            if cache is None:  # teacher forcing: padding is no key either
                mask = masks.combine(
                    mask, masks.padding_mask(tgt != self.config.pad_id)
                )
        out = self.decoder(
            self.dec_embed(self.tok(tgt), offset=offset),
            mask=mask,
            context=memory,
            context_mask=masks.cross_mask(src_valid, T),  # (B, T, S)
            cache=cache,
            return_attention=return_attention,
        )
        logits = self.head(out.last_hidden) + self.final_logits_bias
        return logits, out.attentions, out.cross


# The chapter's sizes (a tiny one for a CPU, a small one for a GPU) and the paper's.
register_preset(
    "bart-tiny",
    d_model=32,
    n_layer=1,
    n_head=2,
    d_ff=128,
    max_len=128,
    dropout=0.0,
    activation="gelu",
    pos="learned",
)
register_preset(
    "bart-small",
    d_model=256,
    n_layer=4,
    n_head=4,
    d_ff=1024,
    max_len=256,
    dropout=0.1,
    activation="gelu",
    pos="learned",
)
# BART-base and BART-large: 6 and 12 layers per side, a 50,265-token byte BPE
register_preset(
    "bart-base",
    vocab_size=50265,
    d_model=768,
    n_layer=6,
    n_head=12,
    d_ff=3072,
    max_len=1024,
    dropout=0.1,
    activation="gelu",
    pos="learned",
    pad_id=1,
)
register_preset(
    "bart-large",
    vocab_size=50265,
    d_model=1024,
    n_layer=12,
    n_head=16,
    d_ff=4096,
    max_len=1024,
    dropout=0.1,
    activation="gelu",
    pos="learned",
    pad_id=1,
)
