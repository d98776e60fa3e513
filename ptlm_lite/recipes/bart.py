"""BART's pre-training recipe and the chapter's experiment: denoise the synthetic
world's documents with one of the five noises, then fine-tune on the suite's
summaries and score each test summary with ROUGE.

* :func:`pretrain`: ``steps`` steps of ``(noised document -> document)`` pairs from
  :func:`ptlm_lite.seq2seq.batches` over the world's training documents (one document
  = its sentences, cut to ``max_len - 1`` tokens before the noise: :func:`cut`;
  512-token world WordPiece, as UniLM's chapter).
* :func:`finetune`: ``(document -> summary)`` pairs of
  :func:`ptlm_lite.suite.generation.summaries` (a biography, sentences shuffled, plus
  a distractor sentence -> a one-line summary that copies name, age, occupation and
  employer): the task that stands for "pre-training helps", which a random-weights
  model fails at this budget.
* :func:`summarise`: greedy summaries of the test documents (the house's cached
  decoder), scored per example by the facts they copy
  (:func:`ptlm_lite.suite.generation.facts_copied`) and by ROUGE
  (:func:`ptlm_lite.seq2seq.rouge`, ``rouge-score``).

Chapter: ``chapters/bart.ipynb``.
"""

from __future__ import annotations

from functools import partial

import torch

from .. import noising, seq2seq
from ..bart import Bart
from ..config import preset
from ..device import scores_on_device
from ..seq2seq import Pair
from . import bert as bert_recipe

__all__ = [
    "VOCAB",
    "tokenizer",
    "new_model",
    "noise",
    "pretrain",
    "summary_pairs",
    "finetune",
    "summarise",
    "documents",
]

VOCAB = 512


def tokenizer():
    """A 512-token WordPiece trained on the world's documents (UniLM's): its
    special ids are ``pad 0, unk 1, cls 2, sep 3, mask 4, bos 5, eos 6``."""
    from ..data.tokenizer import get_tokenizer

    return get_tokenizer("wordpiece", VOCAB, corpus="world", n_sentinels=0)


def new_model(tok, scale: str = "tiny", seed: int | None = None) -> Bart:
    """A :class:`~ptlm_lite.bart.Bart` of the ``bart-<scale>`` preset for ``tok``."""
    cfg = preset(
        f"bart-{scale}", vocab_size=tok.vocab_size, pad_id=tok.special_ids["pad"]
    )
    return Bart(cfg, seed=seed)


def noise(name: str, tok):
    """The noise ``name`` of :data:`ptlm_lite.noising.NOISES` with ``tok``'s
    ``[MASK]`` bound where it takes one: ``f(doc, generator) -> Pair``."""
    if name not in noising.NOISES:
        raise ValueError(f"name must be one of {list(noising.NOISES)}, got {name!r}")
    f = noising.NOISES[name]
    if name in ("token masking", "text infilling"):
        return partial(f, mask_id=tok.special_ids["mask"])
    return f


def documents(tok, split: str = "train") -> list[list[list[int]]]:
    """The world's documents as lists of sentences of ``tok``'s ids: "train" is
    ``make_world(0)``, "validation" another world (``make_world(1)``)."""
    if split not in ("train", "validation"):
        raise ValueError(f"split must be 'train' or 'validation', got {split!r}")
    return bert_recipe.token_documents(tok, "world", split, 0)


def cut(doc, n: int) -> list[list[int]]:
    """A document's first ``n`` tokens, as sentences (the last one shortened): a
    document is cut *before* it is noised, so that a permuted or rotated source never
    loses the tokens its target asks for (cut after, it would, 1 in 20 of them)."""
    out = []
    for sentence in doc:
        if n <= 0:
            break
        out.append(list(sentence[:n]))
        n -= len(out[-1])
    return out


def _ids(tok) -> dict:
    s = tok.special_ids
    return {"pad_id": s["pad"], "bos_id": s["bos"], "eos_id": s["eos"]}


def pretrain(
    model,
    name: str,
    *,
    tok,
    steps: int,
    seed: int = 0,
    batch_size: int = 16,
    max_len: int = 64,
    **kw,
):
    """Pre-train ``model`` for ``steps`` steps to write back the world's training
    documents from their ``name``-noised copies; ``kw``: :func:`~ptlm_lite.train.
    train`'s keywords (``lr``, ``warmup``, ``progress``, ...). Returns its History."""
    from ..train import train

    batches = seq2seq.batches(
        [cut(d, max_len - 1) for d in documents(tok, "train")],
        noise(name, tok),
        batch_size=batch_size,
        seed=seed,
        max_src=max_len,
        max_tgt=max_len,
        **_ids(tok),
    )
    kw.setdefault("warmup", min(10, steps - 1))
    return train(model, batches, steps=steps, seed=seed, **kw)


def summary_pairs(tok, split: str, n: int | None = None, world_seed: int = 0):
    """The suite's summaries of ``split`` ("train" or "test"), the first ``n``, as
    ``(pairs, examples)``: token-id :class:`~ptlm_lite.seq2seq.Pair` s (document ->
    summary) and the examples themselves (``document``, ``summary``, ``facts``: what
    :func:`ptlm_lite.suite.generation.facts_copied` scores)."""
    from ..suite.generation import summaries

    if split not in ("train", "test"):
        raise ValueError(f"split must be 'train' or 'test', got {split!r}")
    rows = summaries(world_seed)[split][:n]
    docs = tok.encode_batch([r["document"] for r in rows])
    sums = tok.encode_batch([r["summary"] for r in rows])
    return [Pair(d, s) for d, s in zip(docs, sums)], rows


def finetune(
    model,
    pairs,
    *,
    tok,
    steps: int,
    seed: int = 0,
    batch_size: int = 16,
    max_src: int = 64,
    max_tgt: int = 24,
    **kw,
):
    """Fine-tune ``model`` on ``pairs`` (:func:`summary_pairs`), ``batch_size`` drawn
    at random each step (seeded by ``seed``); returns the History."""
    from ..train import train

    if not pairs:
        raise ValueError("pairs must hold at least one (document, summary) pair")
    g = torch.Generator().manual_seed(seed)

    def batch(step: int) -> dict:
        idx = torch.randint(len(pairs), (batch_size,), generator=g).tolist()
        return seq2seq.collate(
            [pairs[i] for i in idx], max_src=max_src, max_tgt=max_tgt, **_ids(tok)
        )

    kw.setdefault("warmup", min(10, steps - 1))
    return train(model, batch, steps=steps, seed=seed, **kw)


@scores_on_device  # on the GPU if there is one
@torch.no_grad()
def summarise(model, tok, pairs, *, max_src: int = 64, max_new_tokens: int = 24):
    """Greedy summaries (text) of ``pairs``' documents, in one batch."""
    s = tok.special_ids
    src = seq2seq.collate(pairs, max_src=max_src, max_tgt=2, **_ids(tok))["src"]
    out = seq2seq.greedy(
        model.eval(),
        src,
        bos_id=s["bos"],
        eos_id=s["eos"],
        max_new_tokens=max_new_tokens,
    )
    drop = {s["pad"], s["eos"], s["bos"]}
    return [tok.decode([t for t in row if t not in drop]) for row in out.tolist()]
