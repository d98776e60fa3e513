"""GPT and GPT-2: a Transformer decoder with no encoder, trained to predict the next token.

    ids ──Embeddings(token + learned position)──► N × Block(causal self-attention) ──► [LN] ──► logits

Everything that makes it a language model is one mask: ``masks.causal_mask(T)``, so position ``t``
sees positions ``0..t`` and the loss at ``t`` is the cross-entropy of token ``t + 1``.

    L(θ) = Σ_t −log P(x_t | x_<t ; θ)                                    (Radford et al., 2018)

GPT (2018) and GPT-2 (2019) differ by exactly one switch and an initialisation:

* GPT: post-LN blocks, ``x = LN(x + Sublayer(x))``, like the 2017 Transformer;
* GPT-2: pre-LN blocks, ``x = x + Sublayer(LN(x))``, a final LayerNorm after the last block, and
  the output projections of attention and feed-forward initialised with std 0.02/√(2·n_layer),
  because each of the 2·n_layer residual branches adds its variance to the stream.

Generation reuses the keys and values of earlier positions (a per-layer ``cache`` dict handed
down to attention); the mask then is ``causal_mask(T_new, memory=T_past)``, the same diagonal
shifted right, exactly as in Transformer-XL.

Chapters: ``chapters/gpt.ipynb`` (model, fine-tuning), ``chapters/gpt2.ipynb`` (pre-LN, scale),
``chapters/gpt3.ipynb`` (in-context learning).
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from . import masks
from .config import Config, preset, register_preset
from .generate import sample_next
from .layers import Block, Embeddings
from .transformer import Output

__all__ = ["GPT", "GPTForTask", "gpt_config", "task_inputs", "collate_task", "IGNORE",
           "shakespeare_tokenizer", "lm_corpus", "pretrain_lm", "pretrained_gpt"]

IGNORE = -100  # targets equal to this do not count towards the loss (prompts, padding)

# The papers' sizes, for counting parameters on the "meta" device (never trained here).
_GPT = dict(pos="learned", activation="gelu_tanh", dropout=0.1, tie_weights=True)
register_preset("gpt", vocab_size=40478, d_model=768, n_layer=12, n_head=12, d_ff=3072, max_len=512,
                pre_norm=False, **_GPT)                                # 117M in the paper (BPE, 40k merges)
for _name, (_d, _l, _h) in {"gpt2": (768, 12, 12), "gpt2-medium": (1024, 24, 16),
                            "gpt2-large": (1280, 36, 20), "gpt2-xl": (1600, 48, 25)}.items():
    register_preset(_name, vocab_size=50257, d_model=_d, n_layer=_l, n_head=_h, d_ff=4 * _d,
                    max_len=1024, pre_norm=True, **_GPT)               # 50,257 byte-level BPE tokens
# The book's scales: seconds on a 2-core CPU ("tiny") or a GPU ("small"); chapters set vocab_size.
register_preset("gpt-tiny", d_model=64, n_layer=2, n_head=4, d_ff=256, max_len=128, pre_norm=False, **_GPT)
register_preset("gpt2-tiny", d_model=64, n_layer=2, n_head=4, d_ff=256, max_len=128, pre_norm=True, **_GPT)
register_preset("gpt-small", d_model=256, n_layer=4, n_head=8, d_ff=1024, max_len=256, pre_norm=False, **_GPT)
register_preset("gpt2-small", d_model=256, n_layer=4, n_head=8, d_ff=1024, max_len=256, pre_norm=True, **_GPT)


def gpt_config(name: str = "gpt-tiny", **overrides) -> Config:
    """A GPT preset as a :class:`Config` (``gpt``, ``gpt2``, ..., ``gpt-tiny``, ``gpt2-tiny``)."""
    return preset(name, **overrides)


class GPT(nn.Module):
    """A decoder-only language model. ``config.pre_norm`` picks GPT (False) or GPT-2 (True).

    ``forward(ids, targets=None, return_attention=False, cache=None) -> Output`` where
    ``Output.logits`` is ``(B, T, V)``, ``Output.loss`` the mean next-token cross-entropy over targets
    that are not ``IGNORE`` (−100), ``Output.attentions`` a list over layers of ``(B, H, T, T_past+T)``
    and ``Output.extra["hidden"]`` the last hidden states ``(B, T, D)`` (for fine-tuning heads).
    """

    def __init__(self, config: Config):
        super().__init__()
        if config.pos != "learned":
            raise ValueError(f"config.pos must be 'learned' for GPT (learned position embeddings), got {config.pos!r}")
        self.config = config
        self.embed = Embeddings(config)                 # token + learned position, then dropout
        self.blocks = nn.ModuleList(Block(config) for _ in range(config.n_layer))
        # Pre-LN leaves the residual stream un-normalised, so GPT-2 adds one LayerNorm at the end.
        self.ln_f = nn.LayerNorm(config.d_model, eps=config.ln_eps) if config.pre_norm else nn.Identity()
        self.head = nn.Linear(config.d_model, config.vocab_size, bias=False)
        if config.tie_weights:
            self.head.weight = self.embed.tok.weight    # the input embedding is the output matrix
        if self.head.weight.is_meta:                    # built on device "meta" to count parameters:
            return                                      # there is nothing to initialise
        self.apply(self._init)
        if config.pre_norm:  # GPT-2: scale the residual branches' output projections by 1/√(2·n_layer)
            for block in self.blocks:
                for proj in (block.attn.o, block.ff.fc2):
                    nn.init.normal_(proj.weight, std=0.02 / math.sqrt(2 * config.n_layer))

    @staticmethod
    def _init(m):
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, std=0.02)         # N(0, 0.02), as in both papers
        if isinstance(m, nn.Linear) and m.bias is not None:
            nn.init.zeros_(m.bias)

    def new_cache(self) -> list[dict]:
        """An empty key/value cache: one dict per layer, filled by ``forward(..., cache=...)``."""
        return [{} for _ in self.blocks]

    @staticmethod
    def cache_len(cache: list[dict] | None) -> int:
        """How many positions the cache already holds."""
        return cache[0]["k"].shape[2] if cache and "k" in cache[0] else 0

    def forward(self, ids, targets=None, return_attention=False, cache=None) -> Output:
        past = self.cache_len(cache)
        if cache is not None and len(cache) != len(self.blocks):
            raise ValueError(f"cache must hold one dict per layer ({len(self.blocks)}), got {len(cache)}: "
                             f"use model.new_cache()")
        T = ids.shape[-1]
        x = self.embed(ids, offset=past)                       # (B, T, D); positions past..past+T-1
        mask = masks.causal_mask(T, memory=past, device=ids.device)  # (T, past + T)
        attentions = []
        for i, block in enumerate(self.blocks):
            x, (w, _) = block(x, mask=mask, return_attention=return_attention,
                              cache=None if cache is None else cache[i])
            attentions.append(w)
        x = self.ln_f(x)
        logits = self.head(x)                                  # (B, T, V)
        loss = None
        if targets is not None:
            if targets.shape != ids.shape:
                raise ValueError(f"targets must have the shape of ids {tuple(ids.shape)}, got {tuple(targets.shape)}")
            loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten(), ignore_index=IGNORE)
        return Output(logits, loss, attentions if return_attention else None, {"hidden": x})

    @torch.no_grad()
    def generate(self, ids, max_new_tokens: int, temperature: float = 1.0, top_k: int | None = None,
                 top_p: float | None = None, generator: torch.Generator | None = None,
                 use_cache: bool = True):
        """Continue ``ids`` (B, T) by ``max_new_tokens`` tokens; returns (B, T + max_new_tokens).

        ``temperature=0`` is greedy decoding; otherwise sample from softmax(logits / temperature),
        restricted to the ``top_k`` most likely tokens and/or the smallest set whose probability
        reaches ``top_p`` (nucleus sampling). Pass a seeded ``torch.Generator`` to get the same text
        twice. Once the text outgrows ``max_len`` the model sees only the last ``max_len`` tokens.
        """
        if ids.dim() != 2 or ids.shape[1] < 1:
            raise ValueError(f"ids must be a (B, T) tensor with T >= 1, got shape {tuple(ids.shape)}")
        if ids.shape[1] > self.config.max_len:
            raise ValueError(f"ids (the prompt) has {ids.shape[1]} tokens, longer than the context "
                             f"max_len={self.config.max_len}: keep its last {self.config.max_len} tokens")
        if not isinstance(max_new_tokens, int) or max_new_tokens < 0:
            raise ValueError(f"max_new_tokens must be a non-negative integer, got {max_new_tokens!r}")
        sample_next(torch.zeros(1, self.config.vocab_size), temperature, top_k, top_p)  # check the knobs now
        was_training = self.training
        self.eval()
        L, cache, pending = self.config.max_len, (self.new_cache() if use_cache else None), ids
        for _ in range(max_new_tokens):
            if cache is None:
                logits = self(ids[:, -L:]).logits
            else:
                if self.cache_len(cache) + pending.shape[1] > L:   # the window slides: start over
                    cache, pending = self.new_cache(), ids[:, -L:]
                logits = self(pending, cache=cache).logits
            nxt = sample_next(logits[:, -1], temperature, top_k, top_p, generator)  # (B,)
            ids = torch.cat([ids, nxt[:, None]], dim=1)
            pending = nxt[:, None]
        self.train(was_training)
        return ids

    @torch.no_grad()
    def log_likelihood(self, ids, start, end=None):
        """Σ log P(ids[t] | ids[<t]) over start <= t < end, per example: shape (B,). ``start`` and
        ``end`` are ints or (B,) tensors (right-padded batches: ``end`` = each row's length). How
        the model scores a continuation, e.g. each answer of a multiple-choice question (GPT-2, GPT-3)."""
        logp = self(ids).logits[:, :-1].log_softmax(-1)                       # (B, T-1, V)
        tok = logp.gather(-1, ids[:, 1:, None]).squeeze(-1)                   # (B, T-1): log P(ids[t]), t >= 1
        t = torch.arange(1, ids.shape[1], device=ids.device)[None]
        start = torch.as_tensor(start, device=ids.device).reshape(-1, 1)
        end = torch.as_tensor(ids.shape[1] if end is None else end, device=ids.device).reshape(-1, 1)
        return (tok * ((t >= start) & (t < end))).sum(-1)

    def load_state_dict(self, state_dict, strict: bool = True, assign: bool = False):
        """Like ``nn.Module.load_state_dict``, but a shape that does not fit the config is a
        ValueError that names the tensor, both shapes and the config."""
        own = self.state_dict()
        for name, tensor in state_dict.items():
            if name in own and tuple(own[name].shape) != tuple(tensor.shape):
                raise ValueError(
                    f"state_dict[{name!r}] has shape {tuple(tensor.shape)} but this model's config expects "
                    f"{tuple(own[name].shape)}: the checkpoint was trained with another config "
                    f"(this one has d_model={self.config.d_model}, n_layer={self.config.n_layer}, "
                    f"vocab_size={self.config.vocab_size}, max_len={self.config.max_len})")
        return super().load_state_dict(state_dict, strict=strict, assign=assign)


# ---------------------------------------------------------------------------------------------
# Fine-tuning (GPT, section 3.3): no task-specific architecture, only a new way to write the input.
#
#   classification   [start] text [extract]                         -> Linear -> classes
#   entailment       [start] premise [delim] hypothesis [extract]   -> Linear -> 3 labels
#   similarity       [start] a [delim] b [extract]  and  [start] b [delim] a [extract], states summed
#   multiple choice  [start] context [delim] answer_k [extract]  for each k -> Linear -> 1 score each
#
# The loss is L3 = L_task + λ·L_LM: the language-modelling loss on the same inputs rides along.

def task_inputs(task: str, example: dict, encode, start: int, delim: int, extract: int) -> list[list[int]]:
    """GPT's input transformations: one example as a list of token-id sequences (one per choice,
    two for similarity, else one). ``encode(str) -> list[int]``; ``start/delim/extract`` are ids."""
    if task == "classification":
        return [[start, *encode(example["text"]), extract]]
    if task in ("entailment", "similarity"):
        a, b = (example["premise"], example["hypothesis"]) if task == "entailment" else (example["a"], example["b"])
        pairs = [(a, b)] if task == "entailment" else [(a, b), (b, a)]  # similarity has no order
        return [[start, *encode(x), delim, *encode(y), extract] for x, y in pairs]
    if task == "multiple_choice":
        ctx = encode(example["context"])
        return [[start, *ctx, delim, *encode(ending), extract] for ending in example["endings"]]
    raise ValueError(f"task must be 'classification', 'entailment', 'similarity' or 'multiple_choice', got {task!r}")


def collate_task(seqs: list[list[list[int]]], labels=None, pad_id: int = 0) -> dict:
    """Right-pad ``task_inputs`` of a batch to ``ids`` (B, C, T) with ``last`` (B, C), the position of
    each [extract] token. Right padding needs no padding mask in a causal model: real tokens
    never see the pads that come after them."""
    C = len(seqs[0])
    if any(len(s) != C for s in seqs):
        raise ValueError("every example of a batch must have the same number of sequences (choices)")
    T = max(len(x) for s in seqs for x in s)
    ids = torch.full((len(seqs), C, T), pad_id, dtype=torch.long)
    for b, s in enumerate(seqs):
        for c, x in enumerate(s):
            ids[b, c, :len(x)] = torch.tensor(x)
    last = torch.tensor([[len(x) - 1 for x in s] for s in seqs])
    batch = {"ids": ids, "last": last}
    if labels is not None:
        batch["labels"] = torch.as_tensor(labels)
    return batch


class GPTForTask(nn.Module):
    """A pre-trained :class:`GPT` plus one linear layer on the last block's state at [extract].

    ``mode``: "classify" (C = 1 sequence, ``n_out`` classes), "sum" (similarity: the states of
    the C = 2 orderings are added) or "choice" (one score per sequence, softmax over the C choices).
    ``lm_weight`` is λ of the auxiliary language-modelling loss (0.5 in the paper; 0 turns it off).
    """

    def __init__(self, gpt: GPT, n_out: int, mode: str = "classify", lm_weight: float = 0.5):
        super().__init__()
        if mode not in ("classify", "sum", "choice"):
            raise ValueError(f"mode must be 'classify', 'sum' or 'choice', got {mode!r}")
        if not lm_weight >= 0:
            raise ValueError(f"lm_weight must be >= 0, got {lm_weight!r}")
        self.gpt, self.mode, self.lm_weight = gpt, mode, lm_weight
        self.config = gpt.config
        self.head = nn.Linear(gpt.config.d_model, 1 if mode == "choice" else n_out)
        nn.init.normal_(self.head.weight, std=0.02)
        nn.init.zeros_(self.head.bias)

    def forward(self, ids, last, labels=None) -> Output:
        B, C, T = ids.shape                                   # C: choices / orderings per example
        if self.mode == "classify" and C != 1:
            raise ValueError(f"mode 'classify' takes one sequence per example, got ids of shape {tuple(ids.shape)}")
        flat, flat_last = ids.view(B * C, T), last.view(B * C)
        pos = torch.arange(T, device=ids.device)[None]
        lm_targets = flat.roll(-1, dims=1).masked_fill(pos >= flat_last[:, None], IGNORE)  # nothing after [extract]
        out = self.gpt(flat, targets=lm_targets)
        h = out.extra["hidden"][torch.arange(B * C), flat_last]   # (B*C, D): the [extract] states
        if self.mode == "sum":
            logits = self.head(h.view(B, C, -1).sum(1))            # (B, n_out)
        elif self.mode == "choice":
            logits = self.head(h).view(B, C)                       # (B, C): softmax over the choices
        else:
            logits = self.head(h)                                  # (B, n_out)
        loss = task_loss = None
        if labels is not None:
            task_loss = F.cross_entropy(logits, labels)
            loss = task_loss + self.lm_weight * out.loss          # L3 = L2 + λ·L1
        return Output(logits, loss, None, {"task_loss": task_loss, "lm_loss": out.loss})


# ---------------------------------------------------------------------------------------------
# The book's pre-trained GPT: a trained-model cache recipe that later chapters reuse.

PRETRAIN = {  # each scale's run: Shakespeare characters, block length, batch, steps, peak learning rate
    "tiny": dict(chars=300_000, block=64, batch=16, steps=120, lr=6e-3),
    "small": dict(chars=None, block=256, batch=64, steps=5000, lr=6e-4),
}


def shakespeare_tokenizer():
    """The GPT chapters' tokenizer: a 1,024-token byte-level BPE trained on Shakespeare."""
    from .data import get_tokenizer
    return get_tokenizer("bpe", 1024, corpus="shakespeare", n_sentinels=0)


def lm_corpus(block: int = 64, chars: int | None = None, split: str = "train") -> dict[str, torch.Tensor]:
    """``(N, block + 1)`` token blocks of the two pre-training corpora: Shakespeare's plays of
    ``split`` (the first ``chars`` characters) and the synthetic world's documents (``make_world(0)``
    for training, ``make_world(1)`` otherwise: other names, same kind of text)."""
    from .data import make_world, pack_blocks, text_stream
    tok = shakespeare_tokenizer()
    world = make_world(0 if split == "train" else 1).text()
    return {"shakespeare": pack_blocks(tok.encode(text_stream(split)[:chars]), block + 1),
            "world": pack_blocks(tok.encode(world), block + 1)}


def pretrain_lm(model: GPT, scale: str = "tiny", progress: bool = True, callback=None, seed: int = 0):
    """Next-token pre-training on random blocks, half Shakespeare and half the synthetic world's
    documents in every batch. Returns the :class:`History`; ``history.evals`` holds the validation
    loss on held-out plays and on another world's documents."""
    from .train import train
    run = PRETRAIN[scale]
    corpora = lm_corpus(run["block"], run["chars"])
    val = {k: v[:32] for k, v in lm_corpus(run["block"], 100_000, split="validation").items()}
    g = torch.Generator().manual_seed(seed)

    def batch(step):
        parts = [c[torch.randint(len(c), (run["batch"] // 2,), generator=g)] for c in corpora.values()]
        b = torch.cat(parts)                                                   # (B, block + 1)
        return {"ids": b[:, :-1], "targets": b[:, 1:]}

    def evaluate(m):
        return {f"val_{k}": m(v[:, :-1], targets=v[:, 1:]).loss.item() for k, v in val.items()}
    return train(model, batch, steps=run["steps"], lr=run["lr"], warmup=run["steps"] // 10, schedule="cosine",
                 betas=(0.9, 0.95), eval_fn=evaluate, callback=callback, progress=progress, seed=seed,
                 desc=f"pre-training GPT ({scale})")


def pretrained_gpt(scale: str = "tiny", retrain: bool = False) -> GPT:
    """The book's pre-trained GPT at ``scale`` from the trained-model cache (recipe ``gpt-<scale>-lm``,
    trained on first use; ``model.history`` holds the run when it was trained in this process)."""
    from . import cache
    if scale not in PRETRAIN:
        raise ValueError(f"scale must be one of {sorted(PRETRAIN)}, got {scale!r}")

    def train_fn(model):
        model.history = pretrain_lm(model, scale)

    config = gpt_config(f"gpt-{scale}", vocab_size=shakespeare_tokenizer().vocab_size)
    cache.register(f"gpt-{scale}-lm", GPT, config, train_fn, version=str(PRETRAIN[scale]))
    return cache.get(f"gpt-{scale}-lm", retrain=retrain)
