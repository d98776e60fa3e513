"""Load Hugging Face ELECTRA weights (``ElectraForPreTraining``, the discriminator, and
optionally ``ElectraForMaskedLM``, the generator) into
:class:`ptlm_lite.electra.ElectraForPreTraining`.

The encoders are BERT's, so their tensors are renamed by :mod:`ptlm_lite.hf.bert`'s
rules (``electra.`` read as ``bert.``); ELECTRA adds::

    electra.embeddings_project                    -> bert.embed.project (E -> D)
    discriminator_predictions.dense               -> rtd.dense
    discriminator_predictions.dense_prediction    -> rtd.out
    generator: electra.*                          -> generator.* (embeddings: shared)
    generator_predictions.dense / LayerNorm       -> mlm.dense / mlm.ln
    generator_lm_head (weight tied to the tokens) -> mlm.decoder

The generator's embedding tables and LayerNorm must equal the discriminator's (ELECTRA
shares them; Hugging Face stores two copies). Hugging Face's ``ElectraModel`` has no
pooler: ``bert.pooler`` keeps its fresh initialisation (listed in
``model.hf_missing``). ``tests/test_hf_electra.py`` builds both from tiny random
configs (no download) and checks the logits. Chapter: ``chapters/electra.ipynb``.
"""

from __future__ import annotations

import torch

from ..bert import BERT_FIELDS
from ..electra import ElectraConfig, ElectraForPreTraining
from . import load_converted
from .bert import config_from_hf as bert_config
from .bert import convert_state_dict as convert_bert

__all__ = ["config_from_hf", "convert_state_dict", "from_hf"]

_HEADS = {
    "discriminator_predictions.dense.": "rtd.dense.",
    "discriminator_predictions.dense_prediction.": "rtd.out.",
    "generator_predictions.dense.": "mlm.dense.",
    "generator_predictions.LayerNorm.": "mlm.ln.",
    "generator_lm_head.": "mlm.decoder.",
}
_EMBED = ("embed.tok.", "embed.pos.", "embed.seg.", "embed.ln.")


def config_from_hf(discriminator_config, generator_config=None) -> ElectraConfig:
    """An :class:`ElectraConfig` with the sizes of a ``transformers.ElectraConfig``
    (``gen_fraction`` from the generator's hidden size, when given)."""
    c = bert_config(discriminator_config).to_dict()
    c.update(BERT_FIELDS, activation=c["activation"])
    E = discriminator_config.embedding_size
    c["d_embed"] = 0 if E == c["d_model"] else E
    if generator_config is not None:
        c["gen_fraction"] = generator_config.hidden_size / c["d_model"]
    return ElectraConfig(**c)


def convert_state_dict(hf_state: dict, prefix: str = "bert.") -> dict:
    """Rename one Hugging Face ELECTRA state dict (discriminator or generator) to
    ptlm_lite's names; the encoder's names start with ``prefix``."""
    heads, body = {}, {}
    for name, tensor in hf_state.items():
        head = next((h for h in _HEADS if name.startswith(h)), None)
        if head is not None:
            heads[_HEADS[head] + name[len(head) :]] = tensor
        elif name.startswith("electra.embeddings_project."):
            heads[prefix + "embed.project." + name.rsplit(".", 1)[1]] = tensor
        elif name.startswith("electra."):
            body["bert." + name[len("electra.") :]] = tensor
        else:
            raise KeyError(f"no rule converts the Hugging Face tensor {name!r}")
    out = {prefix + k[len("bert.") :]: v for k, v in convert_bert(body).items()}
    return {**out, **heads}


def from_hf(discriminator, generator=None) -> ElectraForPreTraining:
    """An :class:`ElectraForPreTraining` holding a Hugging Face
    ``ElectraForPreTraining`` (and ``ElectraForMaskedLM``, whose embeddings must equal
    the discriminator's), in eval mode. Without a generator, the generator keeps its
    fresh initialisation (``model.hf_missing``)."""
    config = config_from_hf(
        discriminator.config, None if generator is None else generator.config
    )
    model = ElectraForPreTraining(config)
    if (
        generator is not None
        and model.gen_config.d_model != generator.config.hidden_size
    ):
        raise ValueError(
            f"the generator's hidden size {generator.config.hidden_size} is not a "
            f"fraction this config reproduces ({model.gen_config.d_model})"
        )
    state = convert_state_dict(discriminator.state_dict())
    if generator is not None:
        gen = convert_state_dict(generator.state_dict(), prefix="generator.")
        for name in [
            k for k in gen if k.startswith(tuple("generator." + e for e in _EMBED))
        ]:
            own = "bert." + name[len("generator.") :]
            if not torch.equal(gen[name], state[own]):
                raise ValueError(
                    f"the generator's {name} differs from the discriminator's: ELECTRA "
                    "shares its embeddings (copy them before converting)"
                )
        state.update(gen)
    optional = ("bert.pooler.", "generator.pooler.")
    if generator is None:
        optional += ("generator.", "mlm.")
    shared = {f"generator.{e}weight": f"bert.{e}weight" for e in _EMBED}
    shared["generator.embed.ln.bias"] = "bert.embed.ln.bias"
    return load_converted(
        model,
        state,
        optional=optional,
        tied={"mlm.decoder.weight": "bert.embed.tok.weight", **shared},
    )
