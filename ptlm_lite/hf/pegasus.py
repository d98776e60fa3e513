"""Load Hugging Face ``PegasusForConditionalGeneration`` weights into
:class:`ptlm_lite.pegasus.Pegasus`.

The two compute the same function, so converting is a renaming of tensors::

    model.shared                                  -> embed.tok  (= head, tied)
    model.{side}.layers.{i}.self_attn.q/k/v_proj  -> {side}.{i}.attn.qkv  (stacked)
    model.{side}.layers.{i}.self_attn.out_proj    -> {side}.{i}.attn.o
    model.{side}.layers.{i}.self_attn_layer_norm  -> {side}.{i}.ln1
    model.decoder.layers.{i}.encoder_attn.*       -> decoder.{i}.cross.*  (stacked)
    model.decoder.layers.{i}.encoder_attn_layer_norm -> decoder.{i}.ln_cross
    model.{side}.layers.{i}.fc1 / fc2             -> {side}.{i}.ff.fc1 / fc2
    model.{side}.layers.{i}.final_layer_norm      -> {side}.{i}.ln2
    model.{side}.layer_norm                       -> {side}.norm   (pre-LN's final norm)

The sinusoidal position tables are not weights: :class:`~ptlm_lite.pegasus.Pegasus`
computes its own (:func:`~ptlm_lite.pegasus.pegasus_positions`) and the converter checks
that they equal Hugging Face's. ``final_logits_bias`` (a buffer of zeros in every
PEGASUS checkpoint) must be zero. ``tests/test_pegasus.py`` builds the reference from a
tiny random config (no download) and checks logits with padding, greedy and beam
generation. Chapter: ``chapters/pegasus.ipynb``.
"""

from __future__ import annotations

import re

import torch

from ..config import Config
from ..pegasus import PEGASUS_FIELDS, Pegasus, pegasus_positions
from . import load_converted
from .rename import rename, stack_qkv

__all__ = ["config_from_hf", "convert_state_dict", "from_hf", "from_pretrained_hf"]

_RULES = [
    (r"model\.shared\.", "embed.tok."),
    (
        r"model\.(encoder|decoder)\.layers\.(\d+)\.self_attn\.out_proj\.",
        r"\1.\2.attn.o.",
    ),
    (
        r"model\.(encoder|decoder)\.layers\.(\d+)\.self_attn\.(q|k|v)_proj\.",
        r"\1.\2.attn.\3.",
    ),
    (
        r"model\.decoder\.layers\.(\d+)\.encoder_attn\.out_proj\.",
        r"decoder.\1.cross.o.",
    ),
    (
        r"model\.decoder\.layers\.(\d+)\.encoder_attn\.(q|k|v)_proj\.",
        r"decoder.\1.cross.\2.",
    ),
    (r"model\.(encoder|decoder)\.layers\.(\d+)\.self_attn_layer_norm\.", r"\1.\2.ln1."),
    (
        r"model\.decoder\.layers\.(\d+)\.encoder_attn_layer_norm\.",
        r"decoder.\1.ln_cross.",
    ),
    (r"model\.(encoder|decoder)\.layers\.(\d+)\.(fc1|fc2)\.", r"\1.\2.ff.\3."),
    (r"model\.(encoder|decoder)\.layers\.(\d+)\.final_layer_norm\.", r"\1.\2.ln2."),
    (r"model\.(encoder|decoder)\.layer_norm\.", r"\1.norm."),
]
# tied copies of model.shared, position tables (checked, not loaded), the logits bias
_SKIP = re.compile(
    r"embed_tokens\.weight$|lm_head\.weight$|embed_positions\.weight$|"
    r"final_logits_bias$"
)


def config_from_hf(hf_config) -> Config:
    """A ptlm_lite :class:`Config` with the sizes of a ``transformers.PegasusConfig``
    (the same sizes on both sides, scaled embeddings, tied head)."""
    c = hf_config
    act = {"relu": "relu", "gelu": "gelu", "gelu_new": "gelu_tanh"}
    checks = {
        "activation_function": (c.activation_function in act, sorted(act)),
        "scale_embedding": (c.scale_embedding, True),
        "tie_word_embeddings": (getattr(c, "tie_word_embeddings", True), True),
        "encoder/decoder sizes": (
            c.encoder_layers == c.decoder_layers
            and c.encoder_attention_heads == c.decoder_attention_heads
            and c.encoder_ffn_dim == c.decoder_ffn_dim,
            "equal on both sides",
        ),
    }
    for name, (ok, wanted) in checks.items():
        if not ok:
            raise ValueError(
                f"hf_config: {name} must be {wanted} for ptlm_lite's Pegasus"
            )
    return Config(
        **{
            **PEGASUS_FIELDS,
            "vocab_size": c.vocab_size,
            "d_model": c.d_model,
            "n_layer": c.encoder_layers,
            "n_head": c.encoder_attention_heads,
            "d_ff": c.encoder_ffn_dim,
            "max_len": c.max_position_embeddings,
            "dropout": float(c.dropout),
            "activation": act[c.activation_function],
            "pad_id": c.pad_token_id or 0,
        }
    )


def convert_state_dict(hf_state: dict) -> dict:
    """Rename a ``PegasusForConditionalGeneration`` state dict to ptlm_lite's names,
    stacking each attention's query, key and value into one ``qkv``."""
    out = rename(hf_state, _RULES, _SKIP)
    return stack_qkv(out, r"(.*\.(?:attn|cross))\.q\.(weight|bias)", "qkv")


_SIDES = ("encoder", "decoder")


def from_hf(hf_model) -> Pegasus:
    """A :class:`~ptlm_lite.pegasus.Pegasus` holding the weights of a Hugging Face
    ``PegasusForConditionalGeneration``, in eval mode."""
    state = hf_model.state_dict()
    bias = state.get("final_logits_bias")
    if bias is not None and bool(bias.abs().max() > 0):
        raise ValueError("hf_model: final_logits_bias must be zero (as in PEGASUS)")
    model = Pegasus(config_from_hf(hf_model.config))
    for side in _SIDES:  # the position tables of both halves
        theirs = state[f"model.{side}.embed_positions.weight"]
        ours = pegasus_positions(*theirs.shape)
        if not torch.allclose(theirs.float(), ours, atol=1e-6):
            raise ValueError(f"hf_model: the {side}'s position table is not PEGASUS's")
    return load_converted(
        model, convert_state_dict(state), tied={"head.weight": "embed.tok.weight"}
    )


def from_pretrained_hf(name: str = "google/pegasus-xsum") -> Pegasus:
    """Download a real checkpoint from the Hugging Face Hub (online only; never in
    tests): ``from_pretrained_hf("google/pegasus-xsum")`` (570M parameters)."""
    from transformers import PegasusForConditionalGeneration

    return from_hf(PegasusForConditionalGeneration.from_pretrained(name))
