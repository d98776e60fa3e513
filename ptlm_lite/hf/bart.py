"""Load Hugging Face ``BartForConditionalGeneration`` weights into
:class:`ptlm_lite.bart.Bart`.

Hugging Face keeps the query, key and value projections apart (``q_proj``, ``k_proj``,
``v_proj``); ``ptlm_lite`` stacks them into one ``qkv`` matrix (rows W_Q; W_K; W_V), so
the converter concatenates them. The position tables are copied with their two unused
rows (the offset of 2); the rest is a rename.

    from ptlm_lite.hf.bart import from_pretrained_hf
    model = from_pretrained_hf("facebook/bart-base")   # online only

Tests build the reference from a tiny random config (no download) and check the logits
to 1e-5 in fp32 with padding, and that the house's ``greedy`` and ``beam_search`` give
Hugging Face ``generate``'s tokens. Chapter: ``chapters/bart.ipynb``.
"""

from __future__ import annotations

import torch

from ..bart import Bart
from ..config import Config
from . import load_converted

__all__ = ["config_from_hf", "state_dict_from_hf", "from_hf", "from_pretrained_hf"]

_ACTIVATIONS = {"gelu": "gelu", "relu": "relu", "gelu_new": "gelu_tanh"}


def config_from_hf(hf_config) -> Config:
    """The :class:`Config` equivalent to a Hugging Face ``BartConfig``; what ``Bart``
    cannot express (unequal encoder and decoder sizes, scaled embeddings, pre-LN)
    raises a ValueError naming the field."""
    if getattr(hf_config, "model_type", None) != "bart":
        raise ValueError(
            f"hf_config must be a BartConfig, got model_type="
            f"{getattr(hf_config, 'model_type', None)!r}"
        )
    c = hf_config
    for a, b in (
        ("encoder_layers", "decoder_layers"),
        ("encoder_attention_heads", "decoder_attention_heads"),
        ("encoder_ffn_dim", "decoder_ffn_dim"),
    ):
        if getattr(c, a) != getattr(c, b):
            raise ValueError(
                f"hf_config.{a} must equal {b} for Bart, got {getattr(c, a)} and "
                f"{getattr(c, b)}"
            )
    if getattr(c, "scale_embedding", False):
        raise ValueError("hf_config.scale_embedding=True is not BART's (mBART's)")
    if getattr(c, "normalize_before", False) or getattr(c, "add_final_layer_norm", 0):
        raise ValueError("hf_config: pre-LN variants (mBART) are not supported")
    if c.activation_function not in _ACTIVATIONS:
        raise ValueError(
            f"hf_config.activation_function must be one of {sorted(_ACTIVATIONS)}, "
            f"got {c.activation_function!r}"
        )
    return Config(
        vocab_size=c.vocab_size,
        d_model=c.d_model,
        n_layer=c.encoder_layers,
        n_head=c.encoder_attention_heads,
        d_ff=c.encoder_ffn_dim,
        max_len=c.max_position_embeddings,
        dropout=c.dropout,
        pre_norm=False,
        tie_weights=True,
        pos="learned",
        activation=_ACTIVATIONS[c.activation_function],
        ln_eps=1e-5,  # Hugging Face's BART LayerNorms use torch's default
        pad_id=c.pad_token_id,
    )


def _attention(hf_state: dict, hf: str, ours: str) -> dict:
    w = torch.cat([hf_state[f"{hf}.{x}_proj.weight"] for x in "qkv"])  # (3D, D)
    b = torch.cat([hf_state[f"{hf}.{x}_proj.bias"] for x in "qkv"])
    return {
        f"{ours}.qkv.weight": w,
        f"{ours}.qkv.bias": b,
        f"{ours}.o.weight": hf_state[f"{hf}.out_proj.weight"],
        f"{ours}.o.bias": hf_state[f"{hf}.out_proj.bias"],
    }


def state_dict_from_hf(hf_state: dict, config: Config) -> dict:
    """Rename a ``BartForConditionalGeneration`` (or ``BartModel``) state dict."""
    p = "model." if any(k.startswith("model.") for k in hf_state) else ""
    tok = hf_state[f"{p}shared.weight"]
    out = {"tok.weight": tok, "head.weight": tok}
    bias = hf_state.get("final_logits_bias")
    out["final_logits_bias"] = (
        bias if bias is not None else torch.zeros(1, config.vocab_size)
    )
    for side, embed in (("encoder", "enc_embed"), ("decoder", "dec_embed")):
        h = f"{p}{side}."
        out[f"{embed}.pos.weight"] = hf_state[h + "embed_positions.weight"]
        for x in ("weight", "bias"):
            out[f"{embed}.ln.{x}"] = hf_state[h + f"layernorm_embedding.{x}"]
        for i in range(config.n_layer):
            hl, ol = f"{h}layers.{i}.", f"{side}.{i}."
            out.update(_attention(hf_state, hl + "self_attn", ol + "attn"))
            norms = [("self_attn_layer_norm", "ln1"), ("final_layer_norm", "ln2")]
            if side == "decoder":
                out.update(_attention(hf_state, hl + "encoder_attn", ol + "cross"))
                norms.append(("encoder_attn_layer_norm", "ln_cross"))
            for name in ("fc1", "fc2"):
                for x in ("weight", "bias"):
                    out[f"{ol}ff.{name}.{x}"] = hf_state[f"{hl}{name}.{x}"]
            for hf_name, name in norms:
                for x in ("weight", "bias"):
                    out[f"{ol}{name}.{x}"] = hf_state[f"{hl}{hf_name}.{x}"]
    return out


def from_hf(hf_model) -> Bart:
    """A :class:`Bart` holding the weights of a Hugging Face
    ``BartForConditionalGeneration``, in eval mode."""
    config = config_from_hf(hf_model.config)
    model = Bart(config)
    return load_converted(
        model,
        state_dict_from_hf(hf_model.state_dict(), config),
        tied={"head.weight": "tok.weight"},
    )


def from_pretrained_hf(name: str = "facebook/bart-base") -> Bart:
    """Download a real checkpoint from the Hugging Face hub and convert it. Needs a
    network connection; never used in tests. Pair it with
    ``transformers.AutoTokenizer.from_pretrained(name)``; generate with
    ``decoder_start_token_id`` (BART's is EOS, 2) as ``bos_id``.
    """
    from transformers import BartForConditionalGeneration  # lazy: online readers only

    return from_hf(BartForConditionalGeneration.from_pretrained(name))
