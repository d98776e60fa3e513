"""Converters between Hugging Face transformers checkpoints and ptlm_lite models.

Where transformers has a model, ptlm_lite's version loads the same weights and gives the
same outputs in fp32 (tests/test_hf_*.py build the reference from tiny random configs,
no download). transformers is imported lazily, only by the functions that need it.
"""

from __future__ import annotations

import torch

__all__ = ["load_converted"]


def load_converted(model, state: dict, optional: tuple = (), tied: dict | None = None):
    """Load a converted Hugging Face state dict into ``model`` and return it in eval
    mode.

    Tensors whose names start with one of ``optional`` (heads a checkpoint may lack:
    ``BertForMaskedLM`` has no NSP head) keep their fresh initialisation and are listed
    in ``model.hf_missing``; any other missing or unexpected tensor is an error.
    ``tied``: ``{name: module attribute path}`` of matrices that are the same tensor as
    another (an MLM decoder and the token embedding); Hugging Face may list them or not,
    and they must come out equal. Used by every converter in ``ptlm_lite.hf``.
    """
    tied = tied or {}
    missing, unexpected = model.load_state_dict(state, strict=False)
    missing = [m for m in missing if m not in tied]
    model.hf_missing = sorted(
        {m.rsplit(".", 1)[0] for m in missing if m.startswith(optional)}
    )
    missing = [m for m in missing if not m.startswith(optional)]
    if missing or unexpected:
        raise RuntimeError(
            f"weights do not match: missing {missing}, unexpected {unexpected}"
        )
    params = dict(model.named_parameters(remove_duplicate=False))
    for name, other in tied.items():
        if not torch.equal(params[name], params[other]):
            raise RuntimeError(f"{name} must be tied to {other}")
    return model.eval()
