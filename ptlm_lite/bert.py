"""BERT (Devlin et al., 2018): a Transformer encoder pre-trained to fill in blanks.

    ids       [CLS] the dog [MASK] loud ##ly [SEP] it wanted food [SEP] [PAD] [PAD]
    segments    0    0   0    0     0    0     0    1    1     1    1      0     0
    positions   0    1   2    3     4    5     6    7    8     9   10     11    12
    mask        ■    ■   ■    ■     ■    ■     ■    ■    ■     ■    ■      ·     ·

Everything BERT adds to the 2017 encoder fits in this file:

* **inputs**: token + segment (sentence A or B) + learned position embeddings, then
  LayerNorm;
* **mask**: bidirectional. Every token sees every real token; only padding is hidden
  (:func:`ptlm_lite.masks.padding_mask`). Compare GPT's causal mask: that one line is
  the difference between "reads the whole sentence" and "can generate text";
* **heads**: masked-LM (predict the hidden token, decoder tied to the token embeddings)
  and next-sentence prediction (is segment B the real continuation of A?) on the pooled
  ``[CLS]``. The fine-tuning heads (a classifier on ``[CLS]``, a start/end scorer for
  span extraction, one score per choice for multiple choice) are in
  :mod:`ptlm_lite.heads`.

How the blanks are made (15% of tokens; 80% [MASK], 10% random, 10% unchanged) is not
the model's business: see :mod:`ptlm_lite.corrupt`; the pre-training recipe is
:mod:`ptlm_lite.recipes.bert`. The stack, attention and masks are the shared ones
(post-LN, GELU). ``mask=`` overrides the padding mask: UniLM's left-to-right and seq2seq
masks are just other masks.

Chapter: ``chapters/bert.ipynb``.
"""

from __future__ import annotations


import torch
from torch import nn

from . import masks
from .config import PRESETS, Config, register_preset
from .layers import ACTIVATIONS, Embeddings, init_weights
from .output import IGNORE, Output, check_targets, cross_entropy
from .stack import Model, Stack

__all__ = [
    "BERT_FIELDS",
    "BertEmbeddings",
    "Bert",
    "MLMHead",
    "BertForPreTraining",
    "init_weights",
]

# The switches that make a Config a BERT: learned positions, two segments, exact GELU,
# post-LN.
BERT_FIELDS = dict(
    pos="learned",
    n_segment=2,
    activation="gelu",
    ln_eps=1e-12,
    pre_norm=False,
    tie_weights=True,
)
# Devlin et al. (2018), section 3: L=12, H=768, A=12 ("110M") and L=24, H=1024, A=16
# ("340M"), a 30,522-token uncased WordPiece vocabulary and 512 positions.
register_preset(
    "bert-base",
    vocab_size=30522,
    d_model=768,
    n_layer=12,
    n_head=12,
    d_ff=3072,
    max_len=512,
    dropout=0.1,
    **BERT_FIELDS,
)
register_preset(
    "bert-large",
    vocab_size=30522,
    d_model=1024,
    n_layer=24,
    n_head=16,
    d_ff=4096,
    max_len=512,
    dropout=0.1,
    **BERT_FIELDS,
)
# The book's scales: a chapter sets vocab_size from its tokenizer.
register_preset("bert-tiny", **{**PRESETS["tiny"], **BERT_FIELDS})
register_preset("bert-small", **{**PRESETS["small"], **BERT_FIELDS})


class BertEmbeddings(Embeddings):
    """Token + segment + learned position embeddings, then LayerNorm, then dropout.

    The shared :class:`~ptlm_lite.layers.Embeddings` sums the three tables; BERT
    normalises the sum before dropout (the blocks are post-LN, so nothing else would
    normalise the first input).
    """

    def __init__(self, config: Config):
        super().__init__(config)
        self.ln = nn.LayerNorm(config.d_model, eps=config.ln_eps)
        # dropout moves after the LayerNorm
        self.drop_after_ln, self.drop = self.drop, nn.Identity()

    def forward(self, ids, segments=None, offset: int = 0):
        # (B, T, D)
        return self.drop_after_ln(self.ln(super().forward(ids, segments, offset)))


class Bert(Model):
    """The encoder: embeddings, ``n_layer`` post-LN blocks, and the ``[CLS]`` pooler.

    ``forward(ids, segments=None, valid=None, mask=None, return_attention=False,
    return_hidden=False)`` returns an :class:`~ptlm_lite.output.Output` with
    ``last_hidden`` (B, T, D), ``pooled`` (B, D), ``attentions`` (a list over layers of
    ``(B, H, T, T)`` when asked for) and ``hidden`` (every layer's states when
    ``return_hidden``); it unpacks as ``hidden, pooled, attentions = bert(ids)``.
    ``valid`` (B, T) bool marks real tokens (default: not padding);
    ``mask`` defaults to ``masks.padding_mask(valid)``: only padding is hidden.

    ``embed``: embeddings to share with another model (ELECTRA's generator and
    discriminator share theirs); they are used as they are, not re-initialised.
    """

    def __init__(
        self, config: Config, seed: int | None = None, embed: nn.Module | None = None
    ):
        super().__init__(config, seed)
        if config.n_segment < 1 or config.pos != "learned":
            raise ValueError(
                "a BERT config needs n_segment >= 1 and pos='learned'; start from "
                "preset('bert-tiny') or add ptlm_lite.bert.BERT_FIELDS"
            )
        self.embed = BertEmbeddings(config) if embed is None else embed
        self.blocks = Stack(config)
        # The pooler: a dense + tanh on the [CLS] vector, trained by NSP, reused by
        # classifiers.
        self.pooler = nn.Linear(config.d_model, config.d_model)
        if embed is None:
            self.apply(init_weights)
        else:  # shared embeddings keep their weights
            self.blocks.apply(init_weights)
            self.pooler.apply(init_weights)

    def forward(
        self,
        ids,
        segments=None,
        valid=None,
        mask=None,
        return_attention=False,
        return_hidden=False,
    ):
        x = self.embed(ids, segments)  # checks ids and segments
        if valid is None:
            valid = ids != self.config.pad_id
        elif (
            not isinstance(valid, torch.Tensor)
            or valid.dtype != torch.bool
            or valid.shape != ids.shape
        ):
            raise TypeError(
                f"valid must be a bool tensor of shape {tuple(ids.shape)}, True for "
                f"real tokens "
                f"(Hugging Face's attention_mask.bool())"
            )
        if mask is None:
            # (B, 1, T): bidirectional, only padding is hidden
            mask = masks.padding_mask(valid)
        out = self.blocks(
            x, mask=mask, return_attention=return_attention, return_hidden=return_hidden
        )
        # (B, D): the [CLS] position
        out.pooled = torch.tanh(self.pooler(out.last_hidden[:, 0]))
        return out


class MLMHead(nn.Module):
    """Masked-LM head: dense + GELU + LayerNorm, then the vocabulary projection.

    The projection's matrix *is* the token embedding table (``tie_weights``), so an
    input token and the output that predicts it share a vector; only a per-token bias is
    new. With factorised embeddings (``d_embed`` E < d_model D) the dense layer goes
    down to E, as ALBERT's head does: D -> E -> V.
    """

    def __init__(self, config: Config, embedding: nn.Embedding):
        super().__init__()
        E = config.d_embed or config.d_model
        self.dense = nn.Linear(config.d_model, E)
        self.act = ACTIVATIONS[config.activation]
        self.ln = nn.LayerNorm(E, eps=config.ln_eps)
        self.decoder = nn.Linear(E, config.vocab_size)
        if config.tie_weights:
            self.decoder.weight = embedding.weight

    def forward(self, hidden):  # (B, T, D) -> (B, T, V)
        return self.decoder(self.ln(self.act(self.dense(hidden))))


class BertForPreTraining(Model):
    """BERT with its two pre-training heads: masked LM and next-sentence prediction.

    ``forward(ids, segments=None, valid=None, targets=None, nsp_labels=None,
    return_attention=False)``

    * ``targets``: ``(B, T)`` original ids at the masked positions, -100 elsewhere (from
      :func:`ptlm_lite.corrupt.mlm_mask`); only those positions count, BERT's "15% per
      step".
    * ``nsp_labels``: ``(B,)``, 0 = B really follows A ("IsNext"), 1 = B is a random
      segment ("NotNext"), as in Google's code and Hugging Face, and everywhere in the
      package.

    Returns an :class:`~ptlm_lite.transformer.Output`: ``logits`` are the MLM logits,
    ``(B, T, V)`` without ``targets`` and ``(N, V)`` at the N masked positions
    (row-major order) with them; ``loss`` = MLM loss + NSP loss (those whose labels were
    given); ``extra`` holds ``nsp_logits (B, 2)``, ``mlm_loss``, ``nsp_loss``;
    ``last_hidden`` and ``pooled`` are the encoder's.
    """

    def __init__(self, config: Config, seed: int | None = None):
        super().__init__(config, seed)
        self.bert = Bert(config)
        self.mlm = MLMHead(config, self.bert.embed.tok)
        self.nsp = nn.Linear(config.d_model, 2)
        # (re-initialises the tied matrix too: same N(0, 0.02))
        self.mlm.apply(init_weights)
        self.nsp.apply(init_weights)

    def forward(
        self,
        ids,
        segments=None,
        valid=None,
        targets=None,
        nsp_labels=None,
        return_attention=False,
    ) -> Output:
        if targets is not None:
            check_targets(targets, self.config.vocab_size)
            if targets.shape != getattr(ids, "shape", None):
                raise ValueError(
                    f"targets must have the shape of ids "
                    f"{tuple(getattr(ids, 'shape', ()))}, got {tuple(targets.shape)}"
                )
        hidden, pooled, attentions = self.bert(
            ids, segments, valid, return_attention=return_attention
        )
        nsp_logits = self.nsp(pooled)  # (B, 2)
        extra = {"nsp_logits": nsp_logits}
        losses = []
        if targets is None:
            logits = self.mlm(hidden)  # (B, T, V)
        else:
            # Only the masked positions are scored (Google's code gathers them too): the
            # other ~85% would cost a vocabulary-sized softmax each and count for
            # nothing.
            selected = targets != IGNORE  # (B, T)
            # (N, V), N = number of masked positions
            logits = self.mlm(hidden[selected])
            extra["mlm_loss"] = cross_entropy(logits, targets[selected])
            losses.append(extra["mlm_loss"])
        if nsp_labels is not None:
            extra["nsp_loss"] = cross_entropy(nsp_logits, nsp_labels, name="nsp_labels")
            losses.append(extra["nsp_loss"])
        return Output(
            logits,
            sum(losses) if losses else None,
            attentions,
            extra,
            last_hidden=hidden,
            pooled=pooled,
        )
