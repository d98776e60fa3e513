"""The renaming the regex-driven converters of :mod:`ptlm_lite.hf` share (BERT,
ALBERT, PEGASUS; RoBERTa and ELECTRA through BERT's): Hugging Face tensor names to
``ptlm_lite``'s by an ordered list of rules, and the separate query, key and value
projections of each attention stacked into the one ``qkv`` matrix ``ptlm_lite`` keeps
(rows W_Q; W_K; W_V, so a (3D, D) weight and a 3D bias).
"""

from __future__ import annotations

import re

import torch

__all__ = ["rename", "stack_qkv"]


def rename(hf_state: dict, rules: list, skip: re.Pattern) -> dict:
    """Each tensor of ``hf_state`` under the name the first matching rule gives it
    (``rules``: ``(pattern, replacement)`` pairs for ``re.subn``); names that ``skip``
    finds (buffers, not weights) are left out; a name no rule converts is a KeyError
    naming it."""
    out = {}
    for name, tensor in hf_state.items():
        if skip.search(name):
            continue
        for pattern, repl in rules:
            new, hits = re.subn(pattern, repl, name)
            if hits:
                out[new] = tensor
                break
        else:
            raise KeyError(f"no rule converts the Hugging Face tensor {name!r}")
    return out


def stack_qkv(state: dict, query: str, parts) -> dict:
    """``state`` with each attention's three projections replaced by one ``qkv``:
    ``query`` is a regular expression for a query projection's name with two groups,
    the attention's prefix and the leaf (``weight`` or ``bias``); ``parts`` names the
    query, key and value projections under that prefix (``("query", "key", "value")``
    or ``"qkv"``). Returns a new dict."""
    out = dict(state)
    for key in list(out):
        hit = re.fullmatch(query, key)
        if hit:
            stem, leaf = hit.groups()
            out[f"{stem}.qkv.{leaf}"] = torch.cat(
                [out.pop(f"{stem}.{n}.{leaf}") for n in parts]
            )
    return out
