"""RoBERTa (Liu et al., 2019): BERT's network with a few details changed.

    ids        [CLS]  the  dog  barks  [SEP]  [PAD]  [PAD]   (fairseq: <s> ... </s>)
    positions    1     2    3     4      5      0      0     pad_id + 1, pad_id + 2, ...
    segments     0     0    0     0      0      0      0     one segment type
    mask         ■     ■    ■     ■      ■      ·      ·     BERT's: padding is hidden

The paper's subject is the *recipe*, not the network: dynamic masking, FULL-SENTENCES
inputs without next-sentence prediction, large batches, more data, byte-level BPE. Those
live in :mod:`ptlm_lite.recipes.roberta`. What changes in the network fits here:

* **positions** count the real tokens and start at ``pad_id + 1``; padding sits at
  position ``pad_id`` (fairseq's ``make_positions``, which Hugging Face copies). A row
  padded on the left gets the same positions as the unpadded row. The table therefore
  has ``max_len`` rows for ``max_len - pad_id - 1`` tokens: 514 rows for 512 tokens in
  ``roberta-base``, whose ``<pad>`` is 1;
* **one segment type**: a pair is told apart by its separators only, so ``segments`` is
  accepted (the fine-tuning batches carry it) and ignored;
* **LayerNorm epsilon** 1e-5 (PyTorch's default) instead of BERT's 1e-12;
* **no NSP head**: pre-training is the masked LM alone, with BERT's tied
  :class:`~ptlm_lite.bert.MLMHead`.

Everything else (post-LN blocks, GELU, the embedding LayerNorm, the pooler, N(0, 0.02)
initialisation) is :mod:`ptlm_lite.bert`'s. ``tests/test_hf_roberta.py`` loads Hugging
Face ``RobertaForMaskedLM`` weights into :class:`RobertaForMaskedLM` and gets the same
logits, padding included.

Chapter: ``chapters/roberta.ipynb``.
"""

from __future__ import annotations

import torch

from .bert import BERT_FIELDS, Bert, BertEmbeddings, MLMHead, init_weights
from .config import PRESETS, Config, register_preset
from .layers import check_ids
from .output import IGNORE, Output, cross_entropy
from .stack import Model

__all__ = [
    "ROBERTA_FIELDS",
    "roberta_positions",
    "RobertaEmbeddings",
    "Roberta",
    "RobertaForMaskedLM",
]

# BERT's switches, with one segment type and PyTorch's LayerNorm epsilon.
ROBERTA_FIELDS = {**BERT_FIELDS, "n_segment": 1, "ln_eps": 1e-5}
# Liu et al. (2019): BERT's sizes with a 50K byte-level BPE vocabulary (50,265 ids in
# the released checkpoints), <pad> = 1, and 512 + 2 position rows.
for _name, _d, _layers, _heads in (("base", 768, 12, 12), ("large", 1024, 24, 16)):
    register_preset(
        f"roberta-{_name}",
        vocab_size=50265,
        d_model=_d,
        n_layer=_layers,
        n_head=_heads,
        d_ff=4 * _d,
        max_len=514,
        dropout=0.1,
        pad_id=1,
        **ROBERTA_FIELDS,
    )
# The book's scales ([PAD] = 0; a chapter sets vocab_size from its tokenizer): rows of
# 64 and 256 tokens need one more position row each, as 512 need 514 with <pad> = 1.
for _scale in ("tiny", "small"):
    _fields = {**PRESETS[_scale], **ROBERTA_FIELDS}
    _fields["max_len"] += 1
    register_preset(f"roberta-{_scale}", **_fields)


def roberta_positions(ids: torch.Tensor, pad_id: int) -> torch.Tensor:
    """``(B, T)`` position ids: ``pad_id + 1, pad_id + 2, ...`` over the real tokens of
    each row, ``pad_id`` on padding.

    >>> roberta_positions(torch.tensor([[5, 6, 7, 0, 0], [0, 0, 5, 6, 7]]), pad_id=0)
    tensor([[1, 2, 3, 0, 0],
            [0, 0, 1, 2, 3]])
    """
    real = (ids != pad_id).long()  # (B, T)
    return real.cumsum(1) * real + pad_id


class RobertaEmbeddings(BertEmbeddings):
    """BERT's embeddings (same tables, same LayerNorm) with RoBERTa's positions and one
    segment type.
    """

    def forward(self, ids, segments=None, offset: int = 0):
        check_ids(ids, self.config.vocab_size)
        if offset:
            raise ValueError("RoBERTa's positions come from the ids; offset must be 0")
        positions = roberta_positions(ids, self.config.pad_id)  # (B, T)
        if ids.numel() and int(positions.max()) >= self.config.max_len:
            raise ValueError(
                f"a row has {int(positions.max()) - self.config.pad_id} real tokens; "
                f"this config's position table (max_len={self.config.max_len}, "
                f"pad_id={self.config.pad_id}) covers "
                f"{self.config.max_len - self.config.pad_id - 1}"
            )
        # segments are ignored: every token gets the one segment vector
        x = self.tok(ids) + self.pos(positions) + self.seg(torch.zeros_like(ids))
        if self.proj is not None:  # factorised embeddings (d_embed), as BERT's
            x = self.proj(x)
        return self.drop_after_ln(self.ln(x))  # (B, T, D)


class Roberta(Bert):
    """:class:`~ptlm_lite.bert.Bert` with :class:`RobertaEmbeddings`: the same
    ``forward(ids, segments=None, valid=None, mask=None, ...)``, the same outputs.
    """

    def __init__(self, config: Config, seed: int | None = None):
        super().__init__(config, seed)
        if config.n_segment != 1:
            raise ValueError(
                f"a RoBERTa config has one segment type (n_segment=1), got "
                f"{config.n_segment}; start from preset('roberta-tiny')"
            )
        self.embed = RobertaEmbeddings(config)
        self.embed.apply(init_weights)


class RobertaForMaskedLM(Model):
    """RoBERTa with its one pre-training head, the masked LM (tied to the token
    embeddings).

    ``forward(ids, segments=None, valid=None, targets=None, return_attention=False)``:
    ``targets`` ``(B, T)`` holds the original id at the masked positions and -100
    elsewhere; only those positions are scored (``logits`` ``(N, V)``), as in
    :class:`~ptlm_lite.bert.BertForPreTraining`; without targets ``logits`` is ``(B, T,
    V)``. There is no ``nsp_labels``: RoBERTa dropped next-sentence prediction.
    """

    def __init__(self, config: Config, seed: int | None = None):
        super().__init__(config, seed)
        self.roberta = Roberta(config)
        self.mlm = MLMHead(config, self.roberta.embed.tok)
        self.mlm.apply(init_weights)

    def forward(
        self, ids, segments=None, valid=None, targets=None, return_attention=False
    ) -> Output:
        hidden, pooled, attentions = self.roberta(
            ids, valid=valid, return_attention=return_attention
        )
        out = Output(None, None, attentions, last_hidden=hidden, pooled=pooled)
        if targets is None:
            out.logits = self.mlm(hidden)  # (B, T, V)
            return out
        selected = targets != IGNORE  # (B, T)
        out.logits = self.mlm(hidden[selected])  # (N, V): the masked positions only
        out.extra["mlm_loss"] = cross_entropy(out.logits, targets[selected])
        out.loss = out.extra["mlm_loss"]
        return out
