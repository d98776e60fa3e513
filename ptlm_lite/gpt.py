"""GPT and GPT-2: a Transformer decoder with no encoder, trained to predict the next
token.

    ids ──Embeddings(token + position)──► Stack(causal mask, [final LN]) ──► logits

Everything that makes it a language model is one mask: ``masks.causal_mask(T)``, so
position ``t`` sees positions ``0..t`` and the loss at ``t`` is the cross-entropy of
token ``t + 1``.

    L(θ) = Σ_t −log P(x_t | x_<t ; θ)                          (Radford et al., 2018)

The causal mask is only the default: ``model(ids, mask=masks.prefix_mask(T, P))`` is a
prefix-LM (the first P tokens see each other both ways), with no new forward.

GPT (2018) and GPT-2 (2019) differ by exactly one switch and an initialisation:

* GPT: post-LN blocks, ``x = LN(x + Sublayer(x))``, like the 2017 Transformer;
* GPT-2: pre-LN blocks, ``x = x + Sublayer(LN(x))``, a final LayerNorm after the last
  block, and the output projections of attention and feed-forward initialised with std
  0.02/√(2·n_layer), because each of the 2·n_layer residual branches adds its variance
  to the stream.

Generation reuses the keys and values of earlier positions (a per-layer ``cache`` dict
handed down to attention); the mask then is ``causal_mask(T_new, memory=T_past)``, the
same diagonal shifted right, exactly as in Transformer-XL. The pre-training recipe is in
:mod:`ptlm_lite.recipes.gpt`.

Chapters: ``chapters/gpt.ipynb`` (model, fine-tuning), ``chapters/gpt2.ipynb`` (pre-LN,
scale), ``chapters/gpt3.ipynb`` (in-context learning).
"""

from __future__ import annotations

import math

import torch
from torch import nn

from . import masks
from .config import Config, preset, register_preset
from .generate import generate
from .attention import check_mask
from .layers import Embeddings, check_ids, init_weights
from .output import IGNORE, Output, cross_entropy
from .stack import Model, Stack

__all__ = ["GPT", "GPTForTask", "gpt_config"]

# The papers' sizes, for counting parameters on the "meta" device (never trained here).
_GPT = dict(pos="learned", activation="gelu_tanh", dropout=0.1, tie_weights=True)
register_preset(
    "gpt",
    vocab_size=40478,
    d_model=768,
    n_layer=12,
    n_head=12,
    d_ff=3072,
    max_len=512,
    # 117M in the paper (BPE, 40k merges)
    pre_norm=False,
    **_GPT,
)
for _name, (_d, _l, _h) in {
    "gpt2": (768, 12, 12),
    "gpt2-medium": (1024, 24, 16),
    "gpt2-large": (1280, 36, 20),
    "gpt2-xl": (1600, 48, 25),
}.items():
    register_preset(
        _name,
        vocab_size=50257,
        d_model=_d,
        n_layer=_l,
        n_head=_h,
        d_ff=4 * _d,
        # 50,257 byte-level BPE tokens
        max_len=1024,
        pre_norm=True,
        **_GPT,
    )
# The book's scales: seconds on a 2-core CPU ("tiny") or a GPU ("small"); chapters set
# vocab_size.
for _pre, _name in ((False, "gpt"), (True, "gpt2")):
    register_preset(
        f"{_name}-tiny",
        d_model=64,
        n_layer=2,
        n_head=4,
        d_ff=256,
        max_len=128,
        pre_norm=_pre,
        **_GPT,
    )
    register_preset(
        f"{_name}-small",
        d_model=256,
        n_layer=4,
        n_head=8,
        d_ff=1024,
        max_len=256,
        pre_norm=_pre,
        **_GPT,
    )


def gpt_config(name: str = "gpt-tiny", **overrides) -> Config:
    """A GPT preset as a :class:`Config` (``gpt``, ``gpt2``, ..., ``gpt-tiny``,
    ``gpt2-tiny``).
    """
    return preset(name, **overrides)


class GPT(Model):
    """A decoder-only language model. ``config.pre_norm`` picks GPT (False) or GPT-2
    (True). GPT-2's 1/√(2·n_layer) initialisation of the residual projections comes
    with ``pre_norm=True`` only (the GPT-2 chapter copies the weights across to compare
    LN placements alone).

    ``forward(ids, targets=None, mask=None, cache=None, return_attention=False,
    return_hidden=False, positions=None)`` returns an :class:`~ptlm_lite.output.Output`:
    ``logits`` (B, T, V); ``loss`` the mean next-token cross-entropy over targets that
    are not ``IGNORE`` (−100); ``attentions`` per layer (B, H, T, T_past + T);
    ``last_hidden`` the top layer's states (B, T, D) for heads. ``mask`` defaults to
    the causal mask (shifted by the cache's length); ``positions`` (B, T) to 0..T-1
    (after the cache's): several sequences packed in one row give each its own.
    """

    def __init__(self, config: Config, seed: int | None = None):
        super().__init__(config, seed)
        if config.pos != "learned":
            raise ValueError(
                f"config.pos must be 'learned' for GPT (learned position embeddings), "
                f"got {config.pos!r}"
            )
        # token + learned position, then dropout
        self.embed = Embeddings(config)
        # the blocks; pre-LN (GPT-2) ends with one more LayerNorm, which the Stack holds
        self.blocks = Stack(config)
        E = config.d_embed or config.d_model
        # factorised embeddings (d_embed < d_model): the tied head goes back down to E
        # first (D -> E -> V), as the embeddings went up (V -> E -> D)
        self.head_proj = (
            nn.Linear(config.d_model, E, bias=False) if E != config.d_model else None
        )
        self.head = nn.Linear(E, config.vocab_size, bias=False)
        if config.tie_weights:
            # the input embedding is the output matrix
            self.head.weight = self.embed.tok.weight
        # built on device "meta" to count parameters:
        if self.head.weight.is_meta:
            return  # there is nothing to initialise
        self.apply(init_weights)  # N(0, 0.02), as in both papers
        # GPT-2: scale the residual branches' output projections by 1/√(2·n_layer)
        if config.pre_norm:
            for block in self.blocks:
                for proj in (block.attn.o, block.ff.fc2):
                    nn.init.normal_(
                        proj.weight, std=0.02 / math.sqrt(2 * config.n_layer)
                    )

    def new_cache(self) -> list[dict]:
        """An empty key/value cache: one dict per layer, filled by ``forward(...,
        cache=...)``.
        """
        return [{} for _ in range(self.config.n_layer)]

    @staticmethod
    def cache_len(cache: list[dict] | None) -> int:
        """How many positions the cache already holds."""
        return cache[0]["k"].shape[2] if cache and "k" in cache[0] else 0

    def forward(
        self,
        ids,
        targets=None,
        mask=None,
        cache=None,
        return_attention=False,
        return_hidden=False,
        positions=None,
    ) -> Output:
        check_ids(ids, self.config.vocab_size)
        if cache is not None and (
            not isinstance(cache, list)
            or len(cache) != self.config.n_layer
            or not all(isinstance(c, dict) for c in cache)
        ):
            raise ValueError(
                f"cache must be a list of {self.config.n_layer} dicts (model."
                f"new_cache()), got {type(cache).__name__}"
                + (f" of {len(cache)}" if isinstance(cache, list) else "")
            )
        past = self.cache_len(cache)
        if cache is not None and past and cache[0]["k"].shape[0] != ids.shape[0]:
            raise ValueError(
                f"ids: batch size {ids.shape[0]} differs from the cache's "
                f"({cache[0]['k'].shape[0]}): start a new one with model.new_cache()"
            )
        if mask is not None:
            check_mask(mask, ids.shape[1], past + ids.shape[1])
        # (B, T, D); positions past..past+T-1
        x = self.embed(ids, offset=past, positions=positions)
        # the default: left to right
        if mask is None:
            # (T, past + T)
            mask = masks.causal_mask(ids.shape[1], memory=past, device=ids.device)
        out = self.blocks(
            x,
            mask=mask,
            cache=cache,
            return_attention=return_attention,
            return_hidden=return_hidden,
        )
        x = out.last_hidden  # (B, T, D), after GPT-2's final LayerNorm
        logits = self.head(
            x if self.head_proj is None else self.head_proj(x)
        )  # (B, T, V)
        loss = None if targets is None else cross_entropy(logits, targets)
        return Output(logits, loss, out.attentions, hidden=out.hidden, last_hidden=x)

    # model.generate(ids, max_new_tokens, temperature, top_k, top_p, ...)
    generate = generate

    @torch.no_grad()
    def log_likelihood(self, ids, start, end=None):
        """Σ log P(ids[t] | ids[<t]) over start <= t < end, per example: shape (B,).
        ``start`` and ``end`` are ints or (B,) tensors (right-padded batches: ``end`` =
        each row's length). How the model scores a continuation, e.g. each answer of a
        multiple-choice question (GPT-2, GPT-3).
        """
        # (B, T-1, V)
        logp = self(ids).logits[:, :-1].log_softmax(-1)
        # (B, T-1): log P(ids[t]), t >= 1
        tok = logp.gather(-1, ids[:, 1:, None]).squeeze(-1)
        T = ids.shape[1]
        t = torch.arange(1, T, device=ids.device)[None]
        start = torch.as_tensor(start, device=ids.device).reshape(-1, 1)
        end = torch.as_tensor(T if end is None else end, device=ids.device)
        end = end.reshape(-1, 1)
        # token 0 has no context: never counted (start 0 scores from token 1 on)
        if not ((0 <= start) & (start <= end) & (end <= T)).all():
            raise ValueError(
                f"need 0 <= start <= end <= {T} (ids' length), got start="
                f"{start.flatten().tolist()}, end={end.flatten().tolist()}"
            )
        return (tok * ((t >= start) & (t < end))).sum(-1)


class GPTForTask(Model):
    """A pre-trained :class:`GPT` plus one linear layer on the last block's state at
    [extract] (GPT, section 3.3; inputs built by
    :func:`ptlm_lite.recipes.gpt.task_inputs`).

    ``mode``: "classify" (C = 1 sequence, ``n_out`` classes), "sum" (similarity: the
    states of the C = 2 orderings are added) or "choice" (one score per sequence,
    softmax over the C choices). ``lm_weight`` is λ of the auxiliary language-modelling
    loss (0.5 in the paper; 0 turns it off, and ``extra["lm_loss"]`` is then None): L3 =
    L_task + λ·L_LM.
    """

    def __init__(
        self, gpt: GPT, n_out: int, mode: str = "classify", lm_weight: float = 0.5
    ):
        super().__init__(gpt.config)
        if mode not in ("classify", "sum", "choice"):
            raise ValueError(
                f"mode must be 'classify', 'sum' or 'choice', got {mode!r}"
            )
        if not lm_weight >= 0:
            raise ValueError(f"lm_weight must be >= 0, got {lm_weight!r}")
        self.gpt, self.mode, self.lm_weight = gpt, mode, lm_weight
        self.head = nn.Linear(gpt.config.d_model, 1 if mode == "choice" else n_out)
        nn.init.normal_(self.head.weight, std=0.02)
        nn.init.zeros_(self.head.bias)

    def forward(self, ids, last, labels=None) -> Output:
        # C: choices / orderings per example
        B, C, T = ids.shape
        if self.mode == "classify" and C != 1:
            raise ValueError(
                f"mode 'classify' takes one sequence per example, got ids of shape "
                f"{tuple(ids.shape)}"
            )
        last = torch.as_tensor(last, device=ids.device)
        if (
            last.shape != (B, C)
            or last.is_floating_point()
            or not ((last >= 1) & (last < T)).all()
        ):  # last <= 0 masks every LM target: the LM loss would silently be 0
            raise ValueError(
                f"last must be ({B}, {C}) integer positions of [extract] in [1, {T}) "
                f"(one per sequence of ids; 0 is [start]), got {last.tolist()}"
            )
        flat, flat_last = ids.view(B * C, T), last.view(B * C)
        pos = torch.arange(T, device=ids.device)[None]
        # nothing after [extract]
        lm_targets = flat.roll(-1, dims=1).masked_fill(
            pos >= flat_last[:, None], IGNORE
        )
        # λ = 0: no LM loss to compute (it would add nothing to the gradient)
        out = self.gpt(flat, targets=lm_targets if self.lm_weight else None)
        # (B*C, D): the [extract] states
        h = out.last_hidden[torch.arange(B * C), flat_last]
        if self.mode == "sum":
            logits = self.head(h.view(B, C, -1).sum(1))  # (B, n_out)
        elif self.mode == "choice":
            # (B, C): softmax over the choices
            logits = self.head(h).view(B, C)
        else:
            logits = self.head(h)  # (B, n_out)
        loss = task_loss = None
        if labels is not None:
            task_loss = cross_entropy(logits, labels, name="labels")
            loss = task_loss
            if self.lm_weight:
                loss = task_loss + self.lm_weight * out.loss  # L3 = L2 + λ·L1
        return Output(logits, loss, None, {"task_loss": task_loss, "lm_loss": out.loss})
