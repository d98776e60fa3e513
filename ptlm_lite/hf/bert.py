"""Load Hugging Face BERT weights (``BertForPreTraining``, ``BertForMaskedLM`` or
``BertModel``) into :class:`ptlm_lite.bert.BertForPreTraining`.

The two implementations compute the same function, so converting is a renaming of tensors::

    bert.embeddings.word_embeddings              -> bert.embed.tok
    bert.embeddings.position_embeddings          -> bert.embed.pos
    bert.embeddings.token_type_embeddings        -> bert.embed.seg
    bert.embeddings.LayerNorm                    -> bert.embed.ln
    bert.encoder.layer.{i}.attention.self.query/key/value -> bert.blocks.{i}.attn.qkv  (stacked)
    bert.encoder.layer.{i}.attention.output.dense/LayerNorm -> bert.blocks.{i}.attn.o / ln1
    bert.encoder.layer.{i}.intermediate.dense    -> bert.blocks.{i}.ff.fc1
    bert.encoder.layer.{i}.output.dense/LayerNorm -> bert.blocks.{i}.ff.fc2 / ln2
    bert.pooler.dense                            -> bert.pooler
    cls.predictions.transform.dense/LayerNorm    -> mlm.dense / mlm.ln
    cls.predictions.decoder (+ bias)             -> mlm.decoder   (weight tied to bert.embed.tok)
    cls.seq_relationship                         -> nsp

``tests/test_hf_bert.py`` builds ``BertForPreTraining`` from a tiny random config (no
download) and checks that both give the same MLM and NSP logits. A checkpoint without
the NSP head or the pooler (``BertForMaskedLM``) loads too: those layers keep their
fresh initialisation, and ``from_hf`` says which were missing in ``model.hf_missing``.
Chapter: ``chapters/bert.ipynb``.
"""

from __future__ import annotations

import re

from ..bert import BERT_FIELDS, BertForPreTraining
from ..config import Config
from . import load_converted
from .rename import rename, stack_qkv

__all__ = ["config_from_hf", "convert_state_dict", "from_hf", "from_pretrained_hf"]

# (Hugging Face name pattern, ptlm_lite name); applied in order, first match wins
_RULES = [
    (r"bert\.embeddings\.word_embeddings\.", "bert.embed.tok."),
    (r"bert\.embeddings\.position_embeddings\.", "bert.embed.pos."),
    (r"bert\.embeddings\.token_type_embeddings\.", "bert.embed.seg."),
    (r"bert\.embeddings\.LayerNorm\.", "bert.embed.ln."),
    (
        r"bert\.encoder\.layer\.(\d+)\.attention\.self\.(query|key|value)\.",
        r"bert.blocks.\1.attn.\2.",
    ),
    (
        r"bert\.encoder\.layer\.(\d+)\.attention\.output\.dense\.",
        r"bert.blocks.\1.attn.o.",
    ),
    (
        r"bert\.encoder\.layer\.(\d+)\.attention\.output\.LayerNorm\.",
        r"bert.blocks.\1.ln1.",
    ),
    (r"bert\.encoder\.layer\.(\d+)\.intermediate\.dense\.", r"bert.blocks.\1.ff.fc1."),
    (r"bert\.encoder\.layer\.(\d+)\.output\.dense\.", r"bert.blocks.\1.ff.fc2."),
    (r"bert\.encoder\.layer\.(\d+)\.output\.LayerNorm\.", r"bert.blocks.\1.ln2."),
    (r"bert\.pooler\.dense\.", "bert.pooler."),
    (r"cls\.predictions\.transform\.dense\.", "mlm.dense."),
    (r"cls\.predictions\.transform\.LayerNorm\.", "mlm.ln."),
    (r"cls\.predictions\.decoder\.", "mlm.decoder."),
    (r"cls\.predictions\.bias$", "mlm.decoder.bias"),
    (r"cls\.seq_relationship\.", "nsp."),
]
_SKIP = re.compile(r"position_ids$|token_type_ids$")  # buffers, not weights


def config_from_hf(hf_config) -> Config:
    """A ptlm_lite :class:`Config` with the sizes of a ``transformers.BertConfig``."""
    act = {
        "gelu": "gelu",
        "gelu_new": "gelu_tanh",
        "gelu_pytorch_tanh": "gelu_tanh",
        "relu": "relu",
    }
    if hf_config.hidden_act not in act:
        raise ValueError(
            f"hidden_act {hf_config.hidden_act!r} is not supported; known: "
            f"{sorted(act)}"
        )
    return Config(
        **{
            **BERT_FIELDS,
            "vocab_size": hf_config.vocab_size,
            "d_model": hf_config.hidden_size,
            "n_layer": hf_config.num_hidden_layers,
            "n_head": hf_config.num_attention_heads,
            "d_ff": hf_config.intermediate_size,
            "max_len": hf_config.max_position_embeddings,
            "dropout": hf_config.hidden_dropout_prob,
            "activation": act[hf_config.hidden_act],
            "ln_eps": hf_config.layer_norm_eps,
            "n_segment": hf_config.type_vocab_size,
            "pad_id": hf_config.pad_token_id or 0,
        }
    )


def convert_state_dict(hf_state: dict) -> dict:
    """Rename a Hugging Face ``BertForPreTraining`` / ``BertForMaskedLM`` state dict to
    ptlm_lite's names (a headless ``BertModel``'s names get the ``bert.`` prefix),
    stacking query, key and value.
    """
    if not any(k.startswith("bert.") for k in hf_state):  # BertModel: no prefix
        hf_state = {f"bert.{k}": v for k, v in hf_state.items()}
    out = rename(hf_state, _RULES, _SKIP)
    return stack_qkv(
        out, r"(.*\.attn)\.query\.(weight|bias)", ("query", "key", "value")
    )


# heads a checkpoint may lack (MaskedLM: no pooler/NSP)
_OPTIONAL = ("bert.pooler.", "nsp.", "mlm.")


def from_hf(hf_model) -> BertForPreTraining:
    """A :class:`BertForPreTraining` holding the weights of a Hugging Face
    ``BertForPreTraining``, ``BertForMaskedLM`` or ``BertModel``, in eval mode. Heads
    the checkpoint lacks keep their fresh initialisation and are listed in
    ``model.hf_missing``; a missing encoder weight is an error.
    """
    return load_converted(
        BertForPreTraining(config_from_hf(hf_model.config)),
        convert_state_dict(hf_model.state_dict()),
        optional=_OPTIONAL,
        # the decoder's matrix is the token embedding, which HF may list twice or not
        tied={"mlm.decoder.weight": "bert.embed.tok.weight"},
    )


def from_pretrained_hf(name: str = "bert-base-uncased") -> BertForPreTraining:
    """Download a real checkpoint from the Hugging Face Hub (online only; never in
    tests).

    For example::

        model = from_pretrained_hf("bert-base-uncased")   # 110M parameters, about 440 MB
        tok = transformers.AutoTokenizer.from_pretrained("bert-base-uncased")
    """
    # lazy: heavy import
    from transformers import BertForPreTraining as HFBertForPreTraining

    return from_hf(HFBertForPreTraining.from_pretrained(name))
