"""Load Hugging Face RoBERTa weights (``RobertaForMaskedLM`` or ``RobertaModel``) into
:class:`ptlm_lite.roberta.RobertaForMaskedLM`.

RoBERTa's tensors are BERT's under other names, so this module renames them to BERT's
and lets :mod:`ptlm_lite.hf.bert` do the rest (stacking query, key and value)::

    roberta.embeddings.*                  -> roberta.embed.*   (as bert.embeddings.*)
    roberta.encoder.layer.{i}.*           -> roberta.blocks.{i}.*
    roberta.pooler.dense                  -> roberta.pooler
    lm_head.dense / lm_head.layer_norm    -> mlm.dense / mlm.ln
    lm_head.decoder (+ lm_head.bias)      -> mlm.decoder   (tied to roberta.embed.tok)

The positions need no conversion: :func:`ptlm_lite.roberta.roberta_positions` numbers
them as Hugging Face does (from ``pad_token_id + 1``, padding at ``pad_token_id``), so
the same position table gives the same vectors. ``tests/test_hf_roberta.py`` builds
``RobertaForMaskedLM`` from a tiny random config (no download) and checks the logits,
padded rows included.

Chapter: ``chapters/roberta.ipynb``.
"""

from __future__ import annotations

import re


from ..config import Config
from . import load_converted
from ..roberta import ROBERTA_FIELDS, RobertaForMaskedLM
from . import bert as hf_bert

__all__ = ["config_from_hf", "convert_state_dict", "from_hf", "from_pretrained_hf"]

# RoBERTa name -> BERT name (Hugging Face's), applied before hf.bert's rules
_TO_BERT = [
    (r"^roberta\.", "bert."),
    (r"^lm_head\.dense\.", "cls.predictions.transform.dense."),
    (r"^lm_head\.layer_norm\.", "cls.predictions.transform.LayerNorm."),
    (r"^lm_head\.decoder\.", "cls.predictions.decoder."),
    (r"^lm_head\.bias$", "cls.predictions.bias"),
]


def config_from_hf(hf_config) -> Config:
    """A ptlm_lite :class:`Config` with the sizes of a ``transformers.RobertaConfig``.

    Hugging Face's MLM head always uses the exact GELU, whatever ``hidden_act`` says;
    ptlm_lite's uses the config's activation, so only ``hidden_act="gelu"`` (every
    released RoBERTa) converts.
    """
    if hf_config.hidden_act != "gelu":
        raise ValueError(
            f"hidden_act must be 'gelu' (RoBERTa's MLM head is hard-wired to it), got "
            f"{hf_config.hidden_act!r}"
        )
    bert_like = hf_bert.config_from_hf(hf_config)
    return Config(
        **{
            **bert_like.to_dict(),
            **ROBERTA_FIELDS,
            "n_segment": hf_config.type_vocab_size,
            "ln_eps": hf_config.layer_norm_eps,
            "pad_id": hf_config.pad_token_id,
        }
    )


def convert_state_dict(hf_state: dict) -> dict:
    """Rename a Hugging Face ``RobertaForMaskedLM`` / ``RobertaModel`` state dict to
    ptlm_lite's names.
    """
    if not any(k.startswith(("roberta.", "lm_head.")) for k in hf_state):
        hf_state = {f"roberta.{k}": v for k, v in hf_state.items()}  # RobertaModel
    as_bert = {}
    for name, tensor in hf_state.items():
        for pattern, repl in _TO_BERT:
            name = re.sub(pattern, repl, name)
        as_bert[name] = tensor
    return {
        re.sub(r"^bert\.", "roberta.", k): v
        for k, v in hf_bert.convert_state_dict(as_bert).items()
    }


# what a checkpoint may lack: RobertaForMaskedLM has no pooler, RobertaModel no head
_OPTIONAL = ("roberta.pooler.", "mlm.")


def from_hf(hf_model) -> RobertaForMaskedLM:
    """A :class:`RobertaForMaskedLM` holding the weights of a Hugging Face
    ``RobertaForMaskedLM`` or ``RobertaModel``, in eval mode. Parts the checkpoint lacks
    keep their fresh initialisation and are listed in ``model.hf_missing``; a missing
    encoder weight is an error.
    """
    return load_converted(
        RobertaForMaskedLM(config_from_hf(hf_model.config)),
        convert_state_dict(hf_model.state_dict()),
        optional=_OPTIONAL,
        tied={"mlm.decoder.weight": "roberta.embed.tok.weight"},
    )


def from_pretrained_hf(name: str = "roberta-base") -> RobertaForMaskedLM:
    """Download a real checkpoint from the Hugging Face Hub (online only; never in
    tests)::

        model = from_pretrained_hf("roberta-base")   # 125M parameters, about 500 MB
        tok = transformers.AutoTokenizer.from_pretrained("roberta-base")
    """
    from transformers import RobertaForMaskedLM as HFRobertaForMaskedLM

    return from_hf(HFRobertaForMaskedLM.from_pretrained(name))
