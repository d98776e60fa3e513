"""Load Hugging Face GPT (``OpenAIGPTLMHeadModel``) and GPT-2 (``GPT2LMHeadModel``)
weights into :class:`ptlm_lite.gpt.GPT`.

Both Hugging Face models store their linear layers as ``Conv1D``: a weight of shape (in,
out), the transpose of ``nn.Linear``'s (out, in), and fuse the query, key and value
projections into one ``c_attn`` of shape (D, 3D), as ``ptlm_lite`` does (``attn.qkv``).
The converter transposes them; everything else is a rename.

    from ptlm_lite.hf.gpt import from_pretrained_hf
    model = from_pretrained_hf("gpt2")        # online only: downloads OpenAI's 124M checkpoint

Tests build the reference models from tiny random configs (no download) and check that
the logits agree to 1e-5 in fp32. Chapters: ``chapters/gpt.ipynb``,
``chapters/gpt2.ipynb``.
"""

from __future__ import annotations


from ..config import Config
from ..gpt import GPT

__all__ = ["config_from_hf", "state_dict_from_hf", "from_hf", "from_pretrained_hf"]


def _kind(hf_config) -> str:
    kind = getattr(hf_config, "model_type", None)
    if kind not in ("openai-gpt", "gpt2"):
        raise ValueError(
            f"hf_config must be an OpenAIGPTConfig or GPT2Config, got "
            f"model_type={kind!r}"
        )
    return kind


def config_from_hf(hf_config) -> Config:
    """The :class:`Config` equivalent to a Hugging Face ``OpenAIGPTConfig`` or
    ``GPT2Config``.
    """
    kind = _kind(hf_config)
    # OpenAI GPT's "gelu" is the tanh approximation (transformers' gelu_new)
    if kind == "openai-gpt":
        act, table = hf_config.afn, {"gelu": "gelu_tanh", "relu": "relu"}
    else:
        act, table = (
            hf_config.activation_function,
            {
                "gelu_new": "gelu_tanh",
                "gelu_pytorch_tanh": "gelu_tanh",
                "gelu": "gelu",
                "relu": "relu",
            },
        )
    if act not in table:
        raise ValueError(
            f"unsupported activation {act!r} for {kind}; supported: {sorted(table)}"
        )
    activation = table[act]
    if kind == "gpt2" and (
        getattr(hf_config, "scale_attn_by_inverse_layer_idx", False)
        or getattr(hf_config, "reorder_and_upcast_attn", False)
        or not getattr(hf_config, "scale_attn_weights", True)
    ):
        raise ValueError(
            "GPT2Config options scale_attn_by_inverse_layer_idx, "
            "reorder_and_upcast_attn and "
            "scale_attn_weights=False are not supported"
        )
    d = hf_config.n_embd
    d_ff = getattr(hf_config, "n_inner", None) or 4 * d
    return Config(
        vocab_size=hf_config.vocab_size,
        d_model=d,
        n_layer=hf_config.n_layer,
        n_head=hf_config.n_head,
        d_ff=d_ff,
        max_len=hf_config.n_positions,
        dropout=hf_config.resid_pdrop,
        pre_norm=(kind == "gpt2"),
        tie_weights=True,
        pos="learned",
        activation=activation,
        ln_eps=hf_config.layer_norm_epsilon,
    )


def state_dict_from_hf(hf_state: dict, config: Config, kind: str) -> dict:
    """Rename and reshape a Hugging Face state dict (``kind``: "openai-gpt" or "gpt2")."""
    if kind not in ("openai-gpt", "gpt2"):
        raise ValueError(f"kind must be 'openai-gpt' or 'gpt2', got {kind!r}")
    p = "transformer." if any(k.startswith("transformer.") for k in hf_state) else ""
    tok, pos = (
        ("tokens_embed", "positions_embed") if kind == "openai-gpt" else ("wte", "wpe")
    )
    out = {
        "embed.tok.weight": hf_state[f"{p}{tok}.weight"],
        "embed.pos.weight": hf_state[f"{p}{pos}.weight"],
    }
    for i in range(config.n_layer):
        h, b = f"{p}h.{i}.", f"blocks.{i}."
        for hf_name, name in (
            ("attn.c_attn", "attn.qkv"),
            ("attn.c_proj", "attn.o"),
            ("mlp.c_fc", "ff.fc1"),
            ("mlp.c_proj", "ff.fc2"),
        ):
            out[b + name + ".weight"] = (
                hf_state[h + hf_name + ".weight"].t().contiguous()
            )
            out[b + name + ".bias"] = hf_state[h + hf_name + ".bias"]
        for hf_name, name in (("ln_1", "ln1"), ("ln_2", "ln2")):
            out[b + name + ".weight"] = hf_state[h + hf_name + ".weight"]
            out[b + name + ".bias"] = hf_state[h + hf_name + ".bias"]
    if kind == "gpt2":
        out["blocks.norm.weight"], out["blocks.norm.bias"] = (
            hf_state[f"{p}ln_f.weight"],
            hf_state[f"{p}ln_f.bias"],
        )
    # both Hugging Face models tie the LM head
    out["head.weight"] = out["embed.tok.weight"]
    return out


def from_hf(hf_model) -> GPT:
    """A :class:`GPT` holding the weights of a Hugging Face ``OpenAIGPTLMHeadModel`` /
    ``GPT2LMHeadModel`` (or their headless ``*Model``), in eval mode."""
    kind = _kind(hf_model.config)
    config = config_from_hf(hf_model.config)
    model = GPT(config)
    model.load_state_dict(state_dict_from_hf(hf_model.state_dict(), config, kind))
    return model.eval()


def from_pretrained_hf(name: str = "gpt2") -> GPT:
    """Download a real checkpoint from the Hugging Face hub (``"openai-gpt"``,
    ``"gpt2"``, ``"gpt2-medium"``, ...) and convert it. Needs a network connection;
    never used in tests. Pair it with
    ``transformers.AutoTokenizer.from_pretrained(name)`` for the tokenizer.
    """
    # lazy: only readers who go online need it
    from transformers import AutoModelForCausalLM

    return from_hf(AutoModelForCausalLM.from_pretrained(name))
