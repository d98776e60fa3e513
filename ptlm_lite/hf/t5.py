"""Load Hugging Face ``T5ForConditionalGeneration`` weights into
:class:`ptlm_lite.t5.T5`.

The two compute the same function, so converting is renaming (and stacking W_Q, W_K,
W_V into one ``qkv``)::

    shared                                       -> embed.tok (tied to head)
    {enc}.block.{i}.layer.0.SelfAttention.q/k/v  -> encoder.{i}.attn.qkv (stacked)
    {enc}.block.{i}.layer.0.SelfAttention.o      -> encoder.{i}.attn.o
    {enc}.block.{i}.layer.0.layer_norm           -> encoder.{i}.ln1
    encoder.block.0.layer.0.SelfAttention.relative_attention_bias -> enc_bias.table
    decoder.block.{i}.layer.1.EncDecAttention.*  -> decoder.{i}.cross.*, ln_cross
    {enc}.block.{i}.layer.-1.DenseReluDense.wi/wo -> {enc}.{i}.ff.fc1 / fc2, ln2
    {enc}.final_layer_norm                       -> {enc}.norm
    lm_head                                      -> head

No scale is folded anywhere: :class:`~ptlm_lite.t5.T5Attention` computes T5's unscaled
q·k itself. ``tests/test_t5.py`` builds the reference from a tiny random config (no
download) and checks logits with padding, greedy and beam generation.
Chapter: ``chapters/t5.ipynb``.
"""

from __future__ import annotations

import torch

from ..t5 import T5, T5Config
from . import load_converted

__all__ = ["config_from_hf", "config_to_hf", "convert_state_dict", "from_hf"]


def config_from_hf(hf_config, **overrides) -> T5Config:
    """A :class:`~ptlm_lite.t5.T5Config` with the sizes of a Hugging Face T5Config."""
    if (
        hf_config.feed_forward_proj != "relu"
        or hf_config.d_kv * hf_config.num_heads != hf_config.d_model
    ):
        raise ValueError(
            "hf_config must be a T5 v1.0 config: feed_forward_proj='relu' and "
            f"d_kv * num_heads == d_model, got {hf_config.feed_forward_proj!r}, "
            f"{hf_config.d_kv} * {hf_config.num_heads} vs {hf_config.d_model}"
        )
    if hf_config.num_decoder_layers != hf_config.num_layers:
        raise ValueError("hf_config: encoder and decoder must have as many layers")
    fields = dict(
        vocab_size=hf_config.vocab_size, d_model=hf_config.d_model,
        n_layer=hf_config.num_layers, n_head=hf_config.num_heads, d_ff=hf_config.d_ff,
        dropout=hf_config.dropout_rate, ln_eps=hf_config.layer_norm_epsilon,
        rel_buckets=hf_config.relative_attention_num_buckets,
        rel_max_distance=hf_config.relative_attention_max_distance,
        tie_weights=_scaled(hf_config), pad_id=hf_config.pad_token_id,
        pos="none", pre_norm=True, activation="relu", max_len=512,
    )  # fmt: skip
    return T5Config(**{**fields, **overrides})


def _scaled(hf_config) -> bool:
    """Does the model read the decoder output times d_model^-½ (v1.0's tied head)?
    transformers 5 says so in ``scale_decoder_outputs`` (and always ties); older
    versions in ``tie_word_embeddings``."""
    return bool(
        getattr(hf_config, "scale_decoder_outputs", hf_config.tie_word_embeddings)
    )


def config_to_hf(config: T5Config, **overrides):
    """The Hugging Face ``T5Config`` of a ptlm_lite one (for the reference tests)."""
    from transformers import T5Config as HFConfig

    return HFConfig(
        vocab_size=config.vocab_size, d_model=config.d_model, d_kv=config.d_head,
        d_ff=config.d_ff, num_layers=config.n_layer, num_heads=config.n_head,
        relative_attention_num_buckets=config.rel_buckets,
        relative_attention_max_distance=config.rel_max_distance,
        dropout_rate=config.dropout, layer_norm_epsilon=config.ln_eps,
        feed_forward_proj="relu", tie_word_embeddings=config.tie_weights,
        pad_token_id=config.pad_id, **overrides,
    )  # fmt: skip


def convert_state_dict(hf_state: dict, n_layer: int) -> dict:
    """Hugging Face T5 tensor names -> ptlm_lite names (see the module docstring)."""
    s = {k: v for k, v in hf_state.items() if not k.endswith("embed_tokens.weight")}
    out = {"embed.tok.weight": s.pop("shared.weight")}
    if "lm_head.weight" in s:
        out["head.weight"] = s.pop("lm_head.weight")
    for side, bias in (("encoder", "enc_bias"), ("decoder", "dec_bias")):
        rel = f"{side}.block.0.layer.0.SelfAttention.relative_attention_bias.weight"
        out[f"{bias}.table.weight"] = s.pop(rel)
        out[f"{side}.norm.weight"] = s.pop(f"{side}.final_layer_norm.weight")
        subs = [("attn", "ln1", "SelfAttention")]
        if side == "decoder":
            subs.append(("cross", "ln_cross", "EncDecAttention"))
        for i in range(n_layer):
            pre = f"{side}.block.{i}.layer"
            for j, (attn, ln, name) in enumerate(subs):
                w = [s.pop(f"{pre}.{j}.{name}.{x}.weight") for x in "qkv"]
                out[f"{side}.{i}.{attn}.qkv.weight"] = torch.cat(w)
                out[f"{side}.{i}.{attn}.o.weight"] = s.pop(f"{pre}.{j}.{name}.o.weight")
                out[f"{side}.{i}.{ln}.weight"] = s.pop(f"{pre}.{j}.layer_norm.weight")
            j = len(subs)
            for hf_name, ours in (("wi", "fc1"), ("wo", "fc2")):
                w = s.pop(f"{pre}.{j}.DenseReluDense.{hf_name}.weight")
                out[f"{side}.{i}.ff.{ours}.weight"] = w
            out[f"{side}.{i}.ln2.weight"] = s.pop(f"{pre}.{j}.layer_norm.weight")
    if s:
        raise ValueError(f"hf_state: tensors no rule converts: {sorted(s)[:5]}")
    return out


def from_hf(hf_model) -> T5:
    """A :class:`~ptlm_lite.t5.T5` with the weights of a Hugging Face
    ``T5ForConditionalGeneration`` (in eval mode)."""
    config = config_from_hf(hf_model.config)
    model = T5(config)
    state = convert_state_dict(hf_model.state_dict(), config.n_layer)
    tied = {"head.weight": "embed.tok.weight"} if config.tie_weights else None
    return load_converted(model, state, tied=tied)
