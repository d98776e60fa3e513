"""ULMFiT's runs: the corpora, the general-domain LM (cached), the target-domain LM and
the classifier conditions of ``chapters/ulmfit.ipynb``.

* stage 1, the **general-domain LM**: the LSTM LM of :mod:`ptlm_lite.rnn` on
  Shakespeare's training plays (the paper: Wikitext-103), cached as
  ``ulmfit-<scale>-general`` (:func:`pretrained_lstm`);
* stage 2, the **target-domain LM**: the same LM fine-tuned on the synthetic world's
  documents (``make_world(0)``, the text the suite's tasks ask about), with
  discriminative and slanted triangular learning rates (:func:`target_lm`);
* stage 3, the **classifier**: :class:`~ptlm_lite.rnn.LSTMClassifier` on a suite task
  through :func:`ptlm_lite.finetune.run`, with ULMFiT's tricks (or without one, for
  the ablation) given per condition by :func:`conditions`.

The tokenizer is the GPT chapters' 1,024-token byte-level BPE trained on the plays.
"""

from __future__ import annotations

import copy
import functools

import torch

from .. import ulmfit
from ..device import device_of, eval_mode, scores_on_device
from ..rnn import LSTMClassifier, LSTMConfig, LSTMLM
from ..runtime import seeds

# the LM's sizes and each stage's run, per scale
RUNS = {
    "tiny": dict(
        model=dict(d_embed=32, d_hidden=64, n_layer=3, dropout=0.1),
        # stage 1: 150 steps of 32 x 24 tokens, the first 100k characters of the plays
        general=dict(chars=100_000, block=24, batch=32, steps=150, lr=1e-2),
        # stage 2: the world's ~15k tokens, read about 10 times (at 1e-2 with the
        # tricks, the lower layers barely move and the held-out loss stays above 4)
        target=dict(block=24, batch=32, steps=200, lr=3e-2),
    ),
    # "small": sized for <= 3 min of the chapter on one H100 (estimated, no GPU
    # measured): an LSTM of 3 x 256 at 32 x 64 tokens runs ~10 ms/step on a GPU
    # (cuDNN), so 3,000 general LM steps take ~30 s, the target LM's 1,000 steps
    # once per seed (the ULMFiT and SiATL chapters) 5 x 10 s, and the classifier
    # runs (7 conditions x 5 seeds x 60 steps, ~5 ms each) ~10 s
    "small": dict(
        model=dict(d_embed=128, d_hidden=256, n_layer=3, dropout=0.2),
        general=dict(chars=None, block=64, batch=32, steps=3000, lr=5e-3),
        target=dict(block=64, batch=32, steps=1000, lr=5e-3),
    ),
}


def _check(scale: str) -> dict:
    if scale not in RUNS:
        raise ValueError(f"scale must be one of {sorted(RUNS)}, got {scale!r}")
    return RUNS[scale]


def tokenizer():
    """The book's 1,024-token byte-level BPE trained on Shakespeare (as GPT's)."""
    from ..data import shakespeare_tokenizer

    return shakespeare_tokenizer("bpe")


def lm_config(scale: str = "tiny") -> LSTMConfig:
    """The LSTM LM's config at ``scale``, with the tokenizer's vocabulary."""
    return LSTMConfig(vocab_size=tokenizer().vocab_size, **_check(scale)["model"])


@functools.lru_cache(maxsize=8)
def corpus(name: str, block: int, chars: int | None = None, split: str = "train"):
    """``(N, block + 1)`` token blocks: ``name="general"`` the plays of ``split`` (the
    first ``chars`` characters), ``"target"`` the world's documents (``make_world(0)``
    for training, ``make_world(1)``, other names, otherwise)."""
    from ..data import make_world, pack_blocks, text_stream

    if name == "general":
        text = text_stream(split)[:chars]
    elif name == "target":
        text = make_world(0 if split == "train" else 1).text()
    else:
        raise ValueError(f"name must be 'general' or 'target', got {name!r}")
    return pack_blocks(tokenizer().encode(text), block + 1)


def lm_batches(blocks: torch.Tensor, batch: int, seed: int = 0):
    """``step -> {"ids", "targets"}``: ``batch`` random blocks (seeded)."""
    g = torch.Generator().manual_seed(seed)

    def get(step):
        b = blocks[torch.randint(len(blocks), (batch,), generator=g)]
        return {"ids": b[:, :-1], "targets": b[:, 1:]}

    return get


@scores_on_device  # on the GPU if there is one
@torch.no_grad()
def lm_loss(model: LSTMLM, blocks: torch.Tensor, n: int = 64, per_block: bool = False):
    """The LM's mean next-token loss (nats) on the first ``n`` of ``blocks``; with
    ``per_block``, one mean per block (a NumPy array: the verdict's test examples)."""
    with eval_mode(model):
        b = blocks[:n].to(device_of(model))
        logits = model(b[:, :-1]).logits  # (n, T, V)
        loss = torch.nn.functional.cross_entropy(
            logits.transpose(1, 2), b[:, 1:], reduction="none"
        ).mean(1)  # (n,)
    return loss.cpu().numpy() if per_block else loss.mean().item()


def validation(scale: str = "tiny") -> dict[str, torch.Tensor]:
    """Held-out blocks of both domains: plays never trained on, another world."""
    run = _check(scale)
    return {
        "plays": corpus("general", run["general"]["block"], 100_000, "validation"),
        "world": corpus("target", run["target"]["block"], split="validation"),
    }


def pretrain_general(
    model: LSTMLM, scale: str = "tiny", progress: bool = True, seed: int = 0
):
    """Stage 1: next-token training on the plays (one learning rate, cosine decay;
    ``seed``: the batches' order and dropout). Returns the History; ``evals`` holds the
    held-out loss on both domains."""
    from ..train import train

    run = _check(scale)["general"]
    blocks = corpus("general", run["block"], run["chars"])
    val = validation(scale)
    return train(
        model,
        lm_batches(blocks, run["batch"], seed),
        steps=run["steps"],
        lr=run["lr"],
        warmup=run["steps"] // 10,
        schedule="cosine",
        betas=(0.9, 0.99),
        eval_fn=lambda m: {k: lm_loss(m, v) for k, v in val.items()},
        progress=progress,
        seed=seed,
        desc=f"stage 1: general LM ({scale})",
    )


def pretrained_lstm(scale: str = "tiny", retrain: bool = False) -> LSTMLM:
    """The general-domain LM at ``scale`` from the trained-model cache (recipe
    ``ulmfit-<scale>-general``, trained on first use; ``model.history`` holds the run
    when it was trained in this process)."""
    from .. import cache

    _check(scale)
    (seed,) = seeds((0,))  # another under PTLM_SEED_SET=fresh: another cache entry

    def train_fn(model):
        model.history = pretrain_general(model, scale, seed=seed)

    cache.register(
        f"ulmfit-{scale}-general",
        LSTMLM,
        lm_config(scale),
        train_fn,
        version=str(RUNS[scale]["general"]),
        seed=seed,
    )
    return cache.get(f"ulmfit-{scale}-general", retrain=retrain)


def target_lm(
    general: LSTMLM,
    scale: str = "tiny",
    tricks: bool = True,
    seed: int = 0,
    progress: bool = True,
) -> LSTMLM:
    """Stage 2: a copy of ``general`` fine-tuned on the world's documents, with
    discriminative and slanted triangular rates (``tricks=False``: one rate, linear
    decay). ``model.history`` holds the run."""
    from ..train import train

    run = _check(scale)["target"]
    lm = copy.deepcopy(general)
    val = validation(scale)
    opts = ulmfit.train_options(lm, run["steps"], run["lr"], tricks, tricks)
    lm.history = train(
        lm,
        lm_batches(corpus("target", run["block"]), run["batch"], seed),
        steps=run["steps"],
        betas=(0.9, 0.99),
        eval_fn=lambda m: {k: lm_loss(m, v) for k, v in val.items()},
        progress=progress,
        seed=seed,
        desc=f"stage 2: target-domain LM ({scale})",
        **opts,
    )
    return lm


# the classifier's conditions: (stage-2 LM or general LM or random weights, tricks on)
ABLATIONS = {
    "ULMFiT": dict(),
    "no discriminative lr": dict(discriminative=False),
    "no slanted triangular lr": dict(slanted=False),
    "no gradual unfreezing": dict(unfreeze=False),
    "no target-domain LM": dict(source="general"),
}


def lm_for_seed(lms: dict, src: str, seed: int):
    """``lms[src]``, or, where that is ``{seed: LM}`` (one LM per seed), seed's."""
    lm = lms[src]
    if isinstance(lm, dict):
        if seed not in lm:
            raise ValueError(f"lms[{src!r}] holds no LM for seed {seed}")
        lm = lm[seed]
    return lm


def conditions(task, lms: dict, config: LSTMConfig, steps: int, lr: float, built=None):
    """``(make_model, train_kw)`` for :func:`ptlm_lite.finetune.run`: ULMFiT, each
    ablation of :data:`ABLATIONS`, naive full fine-tuning (the target LM, every layer at
    one rate, BERT's linear schedule) and training from scratch (random weights, same).
    ``lms``: ``{"target": stage-2 LM, "general": stage-1 LM}``; a value may be
    ``{seed: LM}``, so that each seed's runs start from their own LM
    (:func:`lm_for_seed`). Gradual unfreezing thaws one group per tenth of the steps.
    ``built``: a dict that collects the models each condition fine-tuned (``{name:
    [model per seed]}``), to measure them after.
    """
    mode = "choice" if task.kind == "choice" else "classify"
    every = max(1, steps // 10)
    plans = {
        name: dict(dict(source="target", unfreeze=True), **kw)
        for name, kw in ABLATIONS.items()
    }
    plain = dict(discriminative=False, slanted=False, unfreeze=False)
    plans["naive full fine-tuning"] = dict(source="target", **plain)
    plans["from scratch"] = dict(source=None, **plain)

    def make(name):
        def build(seed):
            src = plans[name]["source"]
            lm = lm_for_seed(lms, src, seed) if src else config
            model = LSTMClassifier(lm, task.n_labels, mode)
            if built is not None:
                built.setdefault(name, []).append(model)
            return model

        return build

    def train_kw(name, model):
        p = plans[name]
        return ulmfit.train_options(
            model,
            steps,
            lr,
            p.get("discriminative", True),
            p.get("slanted", True),
            every if p.get("unfreeze", True) else None,
        )

    return {name: make(name) for name in plans}, train_kw
