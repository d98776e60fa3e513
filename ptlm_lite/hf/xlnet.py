"""Load Hugging Face XLNet weights (``XLNetLMHeadModel``) into
:class:`ptlm_lite.xlnet.XLNet`.

Hugging Face keeps each projection as a ``(d_model, n_head, d_head)`` tensor used in an
einsum; ptlm_lite keeps ``nn.Linear`` layers, so the tensors are reshaped::

    transformer.word_embedding            -> tok (tied to head.weight)
    transformer.mask_emb                  -> mask_emb (the query stream's start)
    layer.{i}.rel_attn.q / k / v          -> blocks.{i}.attn.qkv  (stacked, transposed)
    layer.{i}.rel_attn.o                  -> blocks.{i}.attn.o    (no bias: zero)
    layer.{i}.rel_attn.r                  -> blocks.{i}.attn.r    (W_R)
    layer.{i}.rel_attn.r_w_bias / r_r_bias-> blocks.{i}.attn.u / v
    layer.{i}.rel_attn.layer_norm         -> blocks.{i}.ln1
    layer.{i}.ff.layer_1 / layer_2 / norm -> blocks.{i}.ff.fc1 / fc2, blocks.{i}.ln2
    lm_loss.bias                          -> head.bias

Supported: ``attn_type="bi"``, no ``token_type_ids`` (segment terms r_s_bias and
seg_embed are dropped), ``clamp_len <= 0``, ``bi_data=False``, ``ff_activation="gelu"``.
``tests/test_hf_xlnet.py`` checks the logits with ``perm_mask`` and ``target_mapping``
(and with mems) against a tiny random model, nothing downloaded.

Chapter: ``chapters/xlnet.ipynb``.
"""

from __future__ import annotations

import torch

from ..xlnet import XLNet, XLNetConfig

__all__ = ["config_from_hf", "convert_state_dict", "from_hf"]


def config_from_hf(hf_config) -> XLNetConfig:
    """An :class:`XLNetConfig` with the sizes of a ``transformers.XLNetConfig``."""
    for name, ok in (
        ("attn_type", hf_config.attn_type == "bi"),
        ("clamp_len", hf_config.clamp_len <= 0),
        ("bi_data", not hf_config.bi_data),
        ("ff_activation", hf_config.ff_activation == "gelu"),
    ):
        if not ok:
            raise ValueError(f"{name}={getattr(hf_config, name)!r} is not supported")
    return XLNetConfig(
        vocab_size=hf_config.vocab_size, d_model=hf_config.d_model,
        n_layer=hf_config.n_layer, n_head=hf_config.n_head, d_ff=hf_config.d_inner,
        max_len=512, dropout=0.0, activation="gelu", ln_eps=hf_config.layer_norm_eps,
        mem_len=hf_config.mem_len or 0,
    )  # fmt: skip


def convert_state_dict(hf_state: dict, n_layer: int) -> dict:
    """Hugging Face's ``XLNetLMHeadModel`` state dict under ptlm_lite's names."""
    s = {k.removeprefix("transformer."): v for k, v in hf_state.items()}
    D = s["word_embedding.weight"].shape[1]
    out = {
        "tok.weight": s["word_embedding.weight"],
        "head.weight": s["word_embedding.weight"],
        "head.bias": s["lm_loss.bias"],
        "mask_emb": s["mask_emb"],
    }
    for i in range(n_layer):
        a, b, f = f"layer.{i}.rel_attn.", f"blocks.{i}.", f"layer.{i}.ff."
        w = [s[a + n].reshape(D, D).T for n in "qkv"]  # x @ W -> Linear weight W.T
        out[b + "attn.qkv.weight"] = torch.cat(w, 0)
        out[b + "attn.qkv.bias"] = torch.zeros(3 * D)
        out[b + "attn.o.weight"] = s[a + "o"].reshape(D, D)
        out[b + "attn.o.bias"] = torch.zeros(D)
        out[b + "attn.r.weight"] = s[a + "r"].reshape(D, D).T
        out[b + "attn.u"], out[b + "attn.v"] = s[a + "r_w_bias"], s[a + "r_r_bias"]
        pairs = [("ln1", a + "layer_norm"), ("ln2", f + "layer_norm")]
        pairs += [("ff.fc1", f + "layer_1"), ("ff.fc2", f + "layer_2")]
        for mine, theirs in pairs:
            out[f"{b}{mine}.weight"] = s[theirs + ".weight"]
            out[f"{b}{mine}.bias"] = s[theirs + ".bias"]
    return out


def from_hf(hf_model) -> XLNet:
    """A ptlm_lite :class:`XLNet` with the weights of a Hugging Face
    ``XLNetLMHeadModel``."""
    config = config_from_hf(hf_model.config)
    model = XLNet(config)
    model.load_state_dict(convert_state_dict(hf_model.state_dict(), config.n_layer))
    return model.eval()
