"""Load Hugging Face Reformer weights (``ReformerModelWithLMHead``) into
:class:`ptlm_lite.reformer.Reformer`::

    reformer.embeddings.word_embeddings / position_embeddings -> embed.tok / embed.pos
    encoder.layers.{i}.attention.layer_norm                  -> blocks.{i}.ln1
    encoder.layers.{i}.attention.self_attention.query_key    -> blocks.{i}.attn.qkv
          and .value (stacked: W_QK ; W_V)
    encoder.layers.{i}.attention.output.dense                -> blocks.{i}.attn.o
    encoder.layers.{i}.feed_forward.layer_norm / dense.dense
          / output.dense                                     -> blocks.{i}.ln2 / ff.fc1
                                                                / ff.fc2
    encoder.layer_norm, lm_head.decoder                      -> ln_f, head

Hugging Face's LSH attention draws the same buckets (with ``hash_seed`` set, the same
random rotations) but chooses keys by another rule than :func:`~ptlm_lite.reformer.
lsh_counts`: the rounds are sorted together, a chunk reads the chunk before it even
across rounds and buckets, and the first chunk reads the last one (circular). So
:class:`HFReformer` is the package's model with one method overridden,
:meth:`HFLSHAttention.counts`. Sequences no longer than a chunk get full attention
(minus oneself), as in Hugging Face.

Supported: ``attn_layers`` all ``"lsh"``, ``is_decoder=True``,
``axial_pos_embds=False``, ``lsh_num_chunks_before=1``, ``lsh_num_chunks_after=0``,
an integer ``num_buckets``, no padding. ``tests/test_hf_reformer.py`` compares the
logits of tiny random models.

Chapter: ``chapters/reformer.ipynb``.
"""

from __future__ import annotations

import torch

from ..reformer import LSHAttention, Reformer, ReformerConfig

__all__ = ["HFLSHAttention", "HFReformer", "config_from_hf", "convert_state_dict"]
__all__ += ["from_hf"]


class HFLSHAttention(LSHAttention):
    """LSH attention with Hugging Face's choice of keys (see the module docstring)."""

    def counts(self, buckets, mask=None):
        B, H, R, T = buckets.shape
        if T <= self.chunk:  # no hashing: every key, as one round
            buckets, R = torch.zeros_like(buckets[:, :, :1]), 1
        N, nb = R * T, max(self.n_buckets, 1)
        offset = torch.arange(R, device=buckets.device)[:, None] * nb  # per round
        flat = (buckets + offset).flatten(2)  # (B, H, R·T): the rounds sorted together
        order = (flat * N + torch.arange(N, device=flat.device)).argsort(-1)
        qpos = (order % T).unflatten(-1, (-1, min(self.chunk, T)))  # (B, H, n, m)
        kpos = qpos if T <= self.chunk else torch.cat([qpos.roll(1, 2), qpos], -1)
        ok = qpos[..., :, None] != kpos[..., None, :]  # never oneself...
        if mask is not None:
            ok = ok & mask[qpos[..., :, None], kpos[..., None, :]]
        n = torch.zeros(B, H, T * T, device=buckets.device)
        idx = (qpos[..., :, None] * T + kpos[..., None, :]).flatten(2)
        n = n.scatter_add_(-1, idx, ok.flatten(2).to(n.dtype)).view(B, H, T, T)
        eye = torch.eye(T, dtype=torch.bool, device=n.device)
        return n + (n.sum(-1, keepdim=True) == 0) * eye  # ...unless nothing else


class HFReformer(Reformer):
    """:class:`~ptlm_lite.reformer.Reformer` with :class:`HFLSHAttention`."""

    attention = HFLSHAttention


def config_from_hf(hf) -> ReformerConfig:
    """A :class:`ReformerConfig` with the sizes of a ``transformers.ReformerConfig``."""
    for name, ok in (
        ("attn_layers", set(hf.attn_layers) == {"lsh"}),
        ("is_decoder", hf.is_decoder),
        ("axial_pos_embds", not hf.axial_pos_embds),
        ("lsh_num_chunks_before", hf.lsh_num_chunks_before == 1),
        ("lsh_num_chunks_after", hf.lsh_num_chunks_after == 0),
        ("num_buckets", isinstance(hf.num_buckets, int)),
        ("attention_head_size",
         hf.attention_head_size * hf.num_attention_heads == hf.hidden_size),
        ("hidden_act", hf.hidden_act in ("relu", "gelu")),
    ):  # fmt: skip
        if not ok:
            raise ValueError(f"{name}={getattr(hf, name)!r} is not supported")
    return ReformerConfig(
        vocab_size=hf.vocab_size, d_model=hf.hidden_size, n_layer=len(hf.attn_layers),
        n_head=hf.num_attention_heads, d_ff=hf.feed_forward_size,
        max_len=hf.max_position_embeddings, ln_eps=hf.layer_norm_eps,
        activation=hf.hidden_act, n_buckets=hf.num_buckets, n_hashes=hf.num_hashes,
        chunk=hf.lsh_attn_chunk_length, ff_chunk=hf.chunk_size_feed_forward,
        hash_seed=-1 if hf.hash_seed is None else hf.hash_seed, pos="learned",
        tie_weights=False, pre_norm=True, dropout=0.0,
    )  # fmt: skip


def convert_state_dict(hf_state: dict, n_layer: int) -> dict:
    """Hugging Face's ``ReformerModelWithLMHead`` state dict under ptlm_lite's names."""
    s = {k.removeprefix("reformer."): v for k, v in hf_state.items()}
    out = {
        "embed.tok.weight": s["embeddings.word_embeddings.weight"],
        "embed.pos.weight": s["embeddings.position_embeddings.embedding.weight"],
        "ln_f.weight": s["encoder.layer_norm.weight"],
        "ln_f.bias": s["encoder.layer_norm.bias"],
        "head.weight": s["lm_head.decoder.weight"],
        "head.bias": s["lm_head.decoder.bias"],
    }
    for i in range(n_layer):
        a = f"encoder.layers.{i}.attention."
        f = f"encoder.layers.{i}.feed_forward."
        b = f"blocks.{i}."
        qk = s[a + "self_attention.query_key.weight"]
        v = s[a + "self_attention.value.weight"]
        out[b + "attn.qkv.weight"] = torch.cat([qk, v])
        out[b + "attn.o.weight"] = s[a + "output.dense.weight"]
        for ours, theirs in (
            ("ln1", a + "layer_norm"),
            ("ln2", f + "layer_norm"),
            ("ff.fc1", f + "dense.dense"),
            ("ff.fc2", f + "output.dense"),
        ):
            out[f"{b}{ours}.weight"] = s[theirs + ".weight"]
            out[f"{b}{ours}.bias"] = s[theirs + ".bias"]
    return out


def from_hf(hf_model) -> HFReformer:
    """A :class:`HFReformer` with the weights of ``hf_model`` (a
    ``ReformerModelWithLMHead``), in eval mode."""
    config = config_from_hf(hf_model.config)
    model = HFReformer(config)
    model.load_state_dict(convert_state_dict(hf_model.state_dict(), config.n_layer))
    return model.eval()
