"""Choosing the next token: greedy, temperature, top-k and top-p (nucleus) sampling.

Model-agnostic: it takes the logits of the last position, ``(B, V)``, and returns
``(B,)`` ids.

* temperature τ: sample from softmax(z / τ); τ → 0 is greedy, τ > 1 flattens the
  distribution;
* top-k: keep the k most likely tokens (Fan et al., 2018; GPT-2's samples use k = 40);
* top-p: keep the smallest set of most likely tokens whose probability reaches p
  (Holtzman et al., 2019).

Introduced in ``chapters/gpt.ipynb``.
"""

from __future__ import annotations

import math

import torch

from .device import eval_mode

__all__ = ["filter_logits", "sample_next", "generate"]


def _check(temperature, top_k, top_p, vocab_size: int) -> None:
    if (
        isinstance(temperature, bool)
        or not isinstance(temperature, (int, float))
        or not math.isfinite(temperature)
        or temperature < 0
    ):
        raise ValueError(
            f"temperature must be a finite number >= 0 (0 = greedy), got "
            f"{temperature!r}"
        )
    if top_k is not None and (
        isinstance(top_k, bool)
        or not isinstance(top_k, int)
        or not 1 <= top_k <= vocab_size
    ):
        raise ValueError(
            f"top_k must be None or an integer in [1, vocab_size={vocab_size}], got "
            f"{top_k!r}"
        )
    if top_p is not None and (
        isinstance(top_p, bool)
        or not isinstance(top_p, (int, float))
        or not 0 < top_p <= 1
    ):
        raise ValueError(f"top_p must be None or a number in (0, 1], got {top_p!r}")


def filter_logits(
    logits: torch.Tensor, top_k: int | None = None, top_p: float | None = None
) -> torch.Tensor:
    """Set the logits of tokens outside the top-k / top-p set to −inf. ``logits``: (B,
    V).
    """
    _check(1.0, top_k, top_p, logits.shape[-1])
    logits = logits.clone()
    if top_k is not None:
        kth = logits.topk(top_k, dim=-1).values[:, -1:]  # (B, 1)
        logits[logits < kth] = float("-inf")
    if top_p is not None:
        sorted_logits, order = logits.sort(dim=-1, descending=True)
        probs = sorted_logits.softmax(-1)
        # Drop a token when the tokens ranked above it already reach top_p (the first
        # always stays). (B, V), in sorted order
        drop = probs.cumsum(-1) - probs >= top_p
        logits.scatter_(-1, order, sorted_logits.masked_fill(drop, float("-inf")))
    return logits


def sample_next(
    logits: torch.Tensor,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """One next token per row of ``logits`` (B, V). ``temperature=0`` is greedy
    (argmax).
    """
    _check(temperature, top_k, top_p, logits.shape[-1])
    if temperature == 0:
        return logits.argmax(-1)
    # in float64, with the largest logit shifted to 0: no temperature that passes the
    # check turns the logits into inf or NaN; top-k first, the same k at any temperature
    z = filter_logits(logits.double(), top_k=top_k)
    z = (z - z.max(-1, keepdim=True).values) / temperature
    probs = filter_logits(z, top_p=top_p).softmax(-1).float()
    return torch.multinomial(probs, 1, generator=generator).squeeze(-1)


@torch.no_grad()
def generate(
    model,
    ids,
    max_new_tokens: int,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
    generator: torch.Generator | None = None,
    use_cache: bool = True,
):
    """Continue ``ids`` (B, T) by ``max_new_tokens`` tokens with a decoder-only
    ``model`` (:class:`~ptlm_lite.gpt.GPT`); returns (B, T + max_new_tokens).

    ``temperature=0`` is greedy decoding; otherwise sample from softmax(logits /
    temperature), restricted to the ``top_k`` most likely tokens and/or the smallest set
    whose probability reaches ``top_p`` (nucleus sampling). Pass a seeded
    ``torch.Generator`` to get the same text twice. With ``use_cache`` each step feeds
    only the new token and reuses the keys and values of the earlier ones; once the text
    outgrows ``max_len`` the model sees only the last ``max_len`` tokens (the cache
    starts over).
    """
    L = model.config.max_len
    if not isinstance(ids, torch.Tensor) or ids.dim() != 2 or ids.shape[1] < 1:
        raise ValueError(
            f"ids must be a (B, T) tensor with T >= 1, got shape "
            f"{tuple(getattr(ids, 'shape', ()))}"
        )
    if ids.shape[1] > L:
        raise ValueError(
            f"ids (the prompt) has {ids.shape[1]} tokens, longer than the context "
            f"max_len={L}: keep its last {L} tokens"
        )
    if (
        isinstance(max_new_tokens, bool)
        or not isinstance(max_new_tokens, int)
        or max_new_tokens < 0
    ):
        raise ValueError(
            f"max_new_tokens must be a non-negative integer, got {max_new_tokens!r}"
        )
    _check(temperature, top_k, top_p, model.config.vocab_size)
    with eval_mode(model):
        cache, pending = (model.new_cache() if use_cache else None), ids
        for _ in range(max_new_tokens):
            if cache is None:
                logits = model(ids[:, -L:]).logits
            else:
                # the window slides: start over
                if model.cache_len(cache) + pending.shape[1] > L:
                    cache, pending = model.new_cache(), ids[:, -L:]
                logits = model(pending, cache=cache).logits
            # (B,): the next token of every row
            nxt = sample_next(logits[:, -1], temperature, top_k, top_p, generator)
            ids = torch.cat([ids, nxt[:, None]], dim=1)
            pending = nxt[:, None]
    return ids
