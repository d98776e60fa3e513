"""BERT's pre-training recipe: MLM + NSP on Shakespeare and the synthetic world, half
and half.

The corruption and the pair builder are arguments, so a later chapter passes a function
instead of copying this file: whole-word masking (BERT-WWM), entity masking (ERNIE),
spans (SpanBERT) or no pairs at all (RoBERTa's full sentences); ALBERT's sentence order
would be one more ``pairs`` function::

    # corrupt: (ids, generator) -> Masked;  pairs: (docs, n, generator) -> [Pair]
    batches = pretraining_batches(tok, corrupt=my_whole_word_mask)
    batches = pretraining_batches(tok, pairs=my_sop_pairs)

The book's pre-trained BERT is cached as ``bert-<scale>-shakespeare``:
:func:`pretrained_bert` registers the recipe and returns the cached model (training it
on first use), so later chapters (BERT-WWM, ERNIE, SpanBERT, RoBERTa) start from the
same weights. ``PRETRAIN_KW[scale]`` holds each scale's batches and schedule.

Chapter: ``chapters/bert.ipynb``.
"""

from __future__ import annotations

import re
from functools import partial
from typing import Callable

import torch

from ..bert import BertForPreTraining
from ..config import preset
from ..corrupt import mlm_mask, nsp_pairs, pack_pairs
from ..runtime import seeds

__all__ = [
    "VOCAB",
    "RECIPE_VERSION",
    "PRETRAIN_STEPS",
    "PRETRAIN_KW",
    "tokenizer",
    "world_documents",
    "mlm_corruption",
    "pretraining_batches",
    "pretrain",
    "register",
    "pretrained_bert",
]

# a small WordPiece vocabulary trained on the training plays (no T5 sentinels)
VOCAB = 1024
RECIPE_VERSION = "3"  # bump when the recipe below changes: the cache retrains
# "small": sized for a GPU (issue 24): about 40 s of the BERT chapter's ≤ 3 minutes on
# one H100, estimated from per-step times measured on an H200
PRETRAIN_STEPS = {"tiny": 400, "small": 1000}
# each scale's batches and schedule (tiny: pretrain's defaults). The warm-up is shorter
# than the BERT chapter's ablation runs (SIZES["ablation_steps"]), so that seed 0 of
# their main condition is exactly this run's checkpoint at that step (kept below)
PRETRAIN_KW = {
    "tiny": dict(batch_size=24, max_len=32, lr=5e-3, warmup=40),
    "small": dict(batch_size=32, max_len=128, lr=1e-3, warmup=50),
}


def tokenizer():
    """The BERT chapters' tokenizer: the book's 1,024-token WordPiece trained on the
    training plays. A small vocabulary means every token is seen often enough for a tiny
    model to learn it.
    """
    from ..data import shakespeare_tokenizer

    return shakespeare_tokenizer("wordpiece", VOCAB)


def world_documents(seed: int = 0) -> list[list[str]]:
    """The synthetic world's documents (``make_world(seed)``) as ordered lists of
    sentences.
    """
    from ..data import make_world

    return [re.split(r"(?<=\.) ", d.text) for d in make_world(seed).documents]


def mlm_corruption(tok, p: float = 0.15, proportions=(0.8, 0.1, 0.1)) -> Callable:
    """BERT's corruption for ``tok`` as a function ``(ids, generator) -> Masked``: ``p``
    of the tokens selected; of those, ``proportions`` become [MASK] / a random token /
    stay unchanged.
    """
    return partial(
        mlm_mask,
        special_ids=tok.all_special_ids,
        mask_id=tok.special_ids["mask"],
        vocab_size=tok.vocab_size,
        p=p,
        proportions=proportions,
    )


# token_documents' results in this process, keyed by (id(tok), corpus, split, n_docs);
# each entry holds its tokenizer too, so the id cannot be reused while the entry lives
_token_documents: dict = {}


def token_documents(tok, corpus: str, split: str, n_docs: int) -> list[list[list[int]]]:
    """``corpus``'s documents (``"shakespeare"``: the first ``n_docs`` scenes of
    ``split``; ``"world"``: ``make_world(0)`` for the training split, ``make_world(1)``
    otherwise) as lists of tokenized sentences, empty ones dropped.

    Encoded once per tokenizer in a process (a Shakespeare split takes about half a
    second, and a chapter builds its batches a dozen times); every call returns a fresh
    copy, so a caller may change what it gets.
    """
    key = (id(tok), corpus, split, n_docs)
    hit = _token_documents.get(key)
    if hit is None or hit[0] is not tok:
        from ..data import documents

        docs = (
            documents(split, "sentence")[:n_docs]
            if corpus == "shakespeare"
            else world_documents(0 if split == "train" else 1)
        )
        flat = tok.encode_batch([s for d in docs for s in d])
        out, i = [], 0
        for d in docs:
            out.append(tuple(tuple(t) for t in flat[i : i + len(d)] if t))
            i += len(d)
        if len(_token_documents) >= 16:  # a handful of tokenizers at most in a chapter
            _token_documents.pop(next(iter(_token_documents)))
        hit = _token_documents[key] = (tok, tuple(out))
    return [[list(s) for s in d] for d in hit[1]]


def pretraining_batches(
    tok,
    *,
    batch_size: int = 24,
    max_len: int = 32,
    seed: int = 0,
    split: str = "train",
    corpora=("shakespeare", "world"),
    n_docs: int = 120,
    pairs: Callable = nsp_pairs,
    corrupt: Callable | None = None,
):
    """``step -> batch``: sentence pairs, half from Shakespeare's scenes and half from
    the synthetic world's documents, corrupted afresh each step.

    A document (a scene, or a world entity's short biography) is a list of ordered
    sentences. Each step draws ``batch_size // len(corpora)`` pairs from each corpus
    with ``pairs(docs, n, generator=g)`` (default BERT's NSP: half with a random B from
    another document), packs ``[CLS] A [SEP] B [SEP]`` into at most ``max_len`` tokens
    and corrupts ``ids`` with ``corrupt(ids, generator=g)`` (default
    :func:`mlm_corruption`). Batch fields: ``ids, segments, valid, targets`` (−100 where
    nothing is predicted) and ``nsp_labels`` (0 = IsNext, 1 = NotNext).
    ``split="validation"`` gives held-out plays and another world (``make_world(1)``).
    The generator is seeded by ``(seed, step)``, so a step's batch never changes. A new
    corruption every time an example comes back is RoBERTa's *dynamic* masking; Google's
    BERT masked each example once (static masking, 10 copies with different masks) — the
    chapter says so.
    """
    unknown = set(corpora) - {"shakespeare", "world"}
    if not corpora or unknown:
        raise ValueError(
            f"corpora must be a non-empty subset of ('shakespeare', 'world'), got "
            f"{corpora!r}"
        )
    if batch_size < len(corpora):
        raise ValueError(
            f"batch_size must be at least {len(corpora)} (one pair per corpus), got "
            f"{batch_size}"
        )
    corrupt = corrupt or mlm_corruption(tok)
    all_docs = [token_documents(tok, name, split, n_docs) for name in corpora]
    ids = tok.special_ids
    share = [batch_size // len(corpora)] * len(corpora)
    share[0] += batch_size - sum(share)

    def batch(step: int) -> dict:
        g = torch.Generator().manual_seed(seed * 1_000_003 + step)
        drawn = [
            pair
            for docs, n in zip(all_docs, share)
            for pair in pairs(docs, n, generator=g)
        ]
        b = pack_pairs(
            drawn,
            cls_id=ids["cls"],
            sep_id=ids["sep"],
            pad_id=ids["pad"],
            max_len=max_len,
        )
        m = corrupt(b["ids"], generator=g)
        return {**b, "ids": m.inputs, "targets": m.targets}

    return batch


def pretrain(
    model,
    *,
    steps: int,
    batch_size: int = 24,
    max_len: int = 32,
    lr: float = 5e-3,
    warmup: int = 40,
    nsp: bool = True,
    seed: int = 0,
    keep: tuple = (),
    tok=None,
    batches: Callable | None = None,
    callback: Callable | None = None,
    desc: str = "pre-training BERT",
    **train_kw,
):
    """Pre-train ``model`` (a :class:`BertForPreTraining`) on ``batches`` (default
    :func:`pretraining_batches` of the book's tokenizer): MLM (+ NSP unless
    ``nsp=False``, as RoBERTa).

    Linear warm-up for ``warmup`` steps, then a constant learning rate, so that a run of
    N steps is exactly the first N steps of a longer run (the chapter compares ablations
    with an early checkpoint). The tiny model needs a high rate (5e-3) to get past the
    unigram plateau in a few hundred steps. ``keep``: steps whose weights are copied
    into ``history.checkpoints[step]``. Returns the :class:`~ptlm_lite.train.History`.
    """
    from ..train import train

    batches = batches or pretraining_batches(
        tok or tokenizer(), batch_size=batch_size, max_len=max_len, seed=seed
    )
    get = (
        batches
        if nsp
        else (
            lambda step: {k: v for k, v in batches(step).items() if k != "nsp_labels"}
        )
    )
    checkpoints = {}

    def keep_checkpoints(step, loss):
        if step in keep:
            checkpoints[step] = {
                k: v.detach().to("cpu", copy=True)  # on the CPU, wherever it trains
                for k, v in model.state_dict().items()
            }
        if callback is not None:
            callback(step, loss)

    history = train(
        model,
        get,
        steps=steps,
        lr=lr,
        warmup=warmup,  # not cut to the run: a constant schedule needs no room after it
        schedule="constant",
        seed=seed,
        desc=desc,
        callback=keep_checkpoints,
        **train_kw,
    )
    history.checkpoints = checkpoints
    return history


def _train_tiny(model, seed: int = 0):
    model.history = pretrain(
        model,
        steps=PRETRAIN_STEPS["tiny"],
        keep=(70, 100, 200),
        progress=True,
        seed=seed,
        **PRETRAIN_KW["tiny"],
    )


def _train_small(model, seed: int = 0):
    model.history = pretrain(
        model,
        steps=PRETRAIN_STEPS["small"],
        keep=(100,),  # the BERT chapter's SIZES["ablation_steps"] at "small"
        seed=seed,
        **PRETRAIN_KW["small"],
        progress=True,
    )


def register() -> None:
    """Register ``bert-tiny-shakespeare`` and ``bert-small-shakespeare`` in the
    trained-model cache, pre-trained with seed 0 (another seed, so another entry, under
    ``PTLM_SEED_SET=fresh``: a replication pre-trains afresh too).
    """
    from .. import cache

    (seed,) = seeds((0,))
    for scale, fn in (("tiny", _train_tiny), ("small", _train_small)):
        cache.register(
            f"bert-{scale}-shakespeare",
            BertForPreTraining,
            preset(f"bert-{scale}", vocab_size=VOCAB),
            partial(fn, seed=seed),
            version=RECIPE_VERSION,
            seed=seed,
        )


def pretrained_bert(scale: str = "tiny", retrain: bool = False) -> BertForPreTraining:
    """The book's pre-trained BERT at ``scale`` (``model.history`` holds the run when it
    was trained in this process; ``retrain=True`` trains it afresh).
    """
    from .. import cache

    if scale not in PRETRAIN_STEPS:
        raise ValueError(
            f"scale must be one of {sorted(PRETRAIN_STEPS)}, got {scale!r}"
        )
    register()
    return cache.get(f"bert-{scale}-shakespeare", retrain=retrain)
