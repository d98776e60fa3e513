"""Load Hugging Face ALBERT weights (``AlbertForPreTraining``) into
:class:`ptlm_lite.albert.AlbertForPreTraining`.

A renaming of tensors, as for BERT (:mod:`ptlm_lite.hf.bert`), with ALBERT's parts::

    albert.embeddings.{word,position,token_type}_embeddings -> bert.embed.tok/pos/seg
    albert.embeddings.LayerNorm                  -> bert.embed.ln   (over E)
    albert.encoder.embedding_hidden_mapping_in   -> bert.embed.up   (E -> D)
    albert.encoder.albert_layer_groups.{g}.albert_layers.0.
        attention.query/key/value                -> bert.blocks.{g}.attn.qkv (stacked)
        attention.dense / attention.LayerNorm    -> bert.blocks.{g}.attn.o / ln1
        ffn / ffn_output / full_layer_layer_norm -> bert.blocks.{g}.ff.fc1 / fc2 / ln2
    albert.pooler                                -> bert.pooler
    predictions.dense / LayerNorm / decoder      -> mlm.dense / mlm.ln / mlm.decoder
    sop_classifier.classifier                    -> nsp   (the SOP head)

Hugging Face shares layers by groups: one group (ALBERT's default) is ``share="all"``,
``num_hidden_groups = num_hidden_layers`` is ``share="none"``; other groupings (and
``inner_group_num > 1``) have no ptlm_lite equivalent and raise.
``tests/test_hf_albert.py`` checks MLM and SOP logits, with padding. Chapter:
``chapters/albert.ipynb``.
"""

from __future__ import annotations

import re

from ..albert import AlbertConfig, AlbertForPreTraining
from . import load_converted
from .bert import config_from_hf as bert_config
from .rename import rename, stack_qkv

__all__ = ["config_from_hf", "convert_state_dict", "from_hf"]

_LAYER = r"albert\.encoder\.albert_layer_groups\.(\d+)\.albert_layers\.0\."
_RULES = [
    (r"albert\.embeddings\.word_embeddings\.", "bert.embed.tok."),
    (r"albert\.embeddings\.position_embeddings\.", "bert.embed.pos."),
    (r"albert\.embeddings\.token_type_embeddings\.", "bert.embed.seg."),
    (r"albert\.embeddings\.LayerNorm\.", "bert.embed.ln."),
    (r"albert\.encoder\.embedding_hidden_mapping_in\.", "bert.embed.up."),
    (_LAYER + r"attention\.(query|key|value)\.", r"bert.blocks.\1.attn.\2."),
    (_LAYER + r"attention\.dense\.", r"bert.blocks.\1.attn.o."),
    (_LAYER + r"attention\.LayerNorm\.", r"bert.blocks.\1.ln1."),
    (_LAYER + r"ffn\.", r"bert.blocks.\1.ff.fc1."),
    (_LAYER + r"ffn_output\.", r"bert.blocks.\1.ff.fc2."),
    (_LAYER + r"full_layer_layer_norm\.", r"bert.blocks.\1.ln2."),
    (r"albert\.pooler\.", "bert.pooler."),
    (r"predictions\.dense\.", "mlm.dense."),
    (r"predictions\.LayerNorm\.", "mlm.ln."),
    (r"predictions\.decoder\.", "mlm.decoder."),
    (r"predictions\.bias$", "mlm.decoder.bias"),  # the decoder's bias, listed twice
    (r"sop_classifier\.classifier\.", "nsp."),
]
_SKIP = re.compile(r"position_ids$|token_type_ids$")  # buffers, not weights


def config_from_hf(hf_config) -> AlbertConfig:
    """An :class:`~ptlm_lite.albert.AlbertConfig` with the sizes of a
    ``transformers.AlbertConfig`` (one group: ``share="all"``; one group per layer:
    ``share="none"``)."""
    L, groups = hf_config.num_hidden_layers, hf_config.num_hidden_groups
    if hf_config.inner_group_num != 1 or groups not in (1, L):
        raise ValueError(
            f"only num_hidden_groups 1 or {L} with inner_group_num 1 convert, got "
            f"{groups} and {hf_config.inner_group_num}"
        )
    # the sizes every BERT-shaped config shares, read as for BERT (as ELECTRA does)
    fields = bert_config(hf_config).to_dict()
    return AlbertConfig(
        **{
            **fields,
            "share": "all" if groups == 1 else "none",
            "d_embed": hf_config.embedding_size,
        }
    )


def convert_state_dict(hf_state: dict) -> dict:
    """Rename a Hugging Face ``AlbertForPreTraining`` state dict to ptlm_lite's names,
    stacking query, key and value."""
    out = rename(hf_state, _RULES, _SKIP)
    return stack_qkv(
        out, r"(.*\.attn)\.query\.(weight|bias)", ("query", "key", "value")
    )


def from_hf(hf_model) -> AlbertForPreTraining:
    """An :class:`~ptlm_lite.albert.AlbertForPreTraining` holding the weights of a
    Hugging Face ``AlbertForPreTraining``, in eval mode."""
    return load_converted(
        AlbertForPreTraining(config_from_hf(hf_model.config)),
        convert_state_dict(hf_model.state_dict()),
        tied={"mlm.decoder.weight": "bert.embed.tok.weight"},
    )
