"""T5's recipe: pre-training with a noise (span corruption, or the BERT-style
baseline) on the synthetic world's documents, then text-to-text fine-tuning, every task
written as ``"prefix: input" -> output text``.

* :func:`tokenizer`: a Unigram model (SentencePiece's algorithm, T5's) with sentinels
  ``<extra_id_0>``, ``<extra_id_1>``, ...;
* :func:`noises`: the two objectives as :mod:`ptlm_lite.seq2seq` noises;
* :func:`step_flops`: the training FLOPs of one batch (encoder and decoder tokens
  counted apart: the objectives differ in their target lengths);
* :func:`text_pairs`: ``summarize:`` (``suite.generation.summaries``) and ``classify:``
  (a suite task, its label as a word) as (source, target) pairs;
* :func:`finetune`: one model on one task or on several mixed in proportion;
* :func:`write` and :func:`score`: greedy generation with the cache, and the
  per-example scores the verdicts read.

Chapter: ``chapters/t5.ipynb``.
"""

from __future__ import annotations

from functools import partial

import numpy as np
import torch

from .. import flops, seq2seq
from ..config import preset
from ..device import scores_on_device
from ..t5 import T5, bert_style, span_corruption

__all__ = [
    "VOCAB", "N_SENTINELS", "DOC_LEN", "tokenizer", "pretraining_documents", "noises",
    "new_model", "step_flops", "pretrain", "text_pairs", "pair_batches", "finetune",
    "write", "score",
]  # fmt: skip

VOCAB, N_SENTINELS = 512, 32
DOC_LEN = 96  # pre-training documents cut to their first 96 tokens


def tokenizer():
    """A 512-piece Unigram model trained on the world's documents (``make_world(0)``),
    with 32 sentinels after the 7 special tokens."""
    from ..data.tokenizer import get_tokenizer

    return get_tokenizer("unigram", VOCAB, corpus="world", n_sentinels=N_SENTINELS)


def pretraining_documents(tok, split: str = "train") -> list[list[list[int]]]:
    """The world's documents (world 0 for ``"train"``), each one token list cut to
    :data:`DOC_LEN` tokens (one "sentence": the noises flatten them anyway)."""
    from .bert import token_documents

    docs = token_documents(tok, "world", split, 0)
    return [[[t for s in d for t in s][:DOC_LEN]] for d in docs]


def noises(tok) -> dict:
    """``{name: noise(doc, generator) -> Pair}``: T5's span corruption (15%, mean span
    3) and the BERT-style baseline (15% i.i.d., 80/10/10, the whole text as target;
    random replacements drawn from the learned pieces, never a special or sentinel)."""
    first_word = 7 + tok.n_sentinels
    return {
        "span corruption": partial(span_corruption, sentinel_ids=tok.sentinel_ids),
        "BERT-style": partial(
            bert_style,
            mask_id=tok.mask_id,
            random_ids=range(first_word, tok.vocab_size),
        ),
    }


def new_model(tok, scale: str = "tiny", seed: int | None = None) -> T5:
    """A :class:`~ptlm_lite.t5.T5` of the ``t5-<scale>`` preset for ``tok``."""
    return T5(preset(f"t5-{scale}", vocab_size=tok.vocab_size), seed=seed)


def step_flops(config, batch: dict) -> float:
    """Training FLOPs of one batch (:func:`ptlm_lite.flops.seq2seq_per_token`): each
    source token through the encoder, each target token through the decoder."""
    src, tgt = batch["src"] != 0, batch["tgt_out"] != -100
    enc, dec = flops.seq2seq_per_token(config, src.shape[1], tgt.shape[1])
    return float(src.sum()) * enc + float(tgt.sum()) * dec


def _batches(tok, docs, noise, batch_size: int, seed: int, max_len: int):
    ids = tok.special_ids
    return seq2seq.batches(
        docs, noise, batch_size=batch_size, seed=seed, pad_id=ids["pad"],
        bos_id=ids["bos"], eos_id=ids["eos"], max_src=max_len, max_tgt=max_len,
    )  # fmt: skip


def pretrain(model, noise, *, steps: int, tok, seed: int = 0, batch_size: int = 16,
             docs=None, **kw):  # fmt: skip
    """Pre-train ``model`` on ``noise`` of the world's documents for ``steps`` steps
    (``kw``: :func:`~ptlm_lite.train.train`'s). Returns its History."""
    from ..train import train

    docs = pretraining_documents(tok) if docs is None else docs
    batches = _batches(tok, docs, noise, batch_size, seed, DOC_LEN + 1)
    return train(model, batches, steps=steps, **kw)


def text_pairs(tok, examples, task: str, labels=None) -> list[seq2seq.Pair]:
    """Text to text. ``task="summarize"``: ``summaries()`` examples,
    ``"summarize: <document>" -> "<summary>"``; ``task="classify"``: a suite task's
    single-text examples, ``"classify: <text>" -> "<label word>"`` (``labels`` its
    label names)."""
    if task == "summarize":
        src = [f"summarize: {e['document']}" for e in examples]
        tgt = [e["summary"] for e in examples]
    elif task == "classify":
        if labels is None:
            raise ValueError("labels: the label names are needed to classify")
        src = [f"classify: {e['text']}" for e in examples]
        tgt = [labels[e["label"]] for e in examples]
    else:
        raise ValueError(f"task must be 'summarize' or 'classify', got {task!r}")
    return [
        seq2seq.Pair(s, t) for s, t in zip(tok.encode_batch(src), tok.encode_batch(tgt))
    ]


def pair_batches(tok, tasks: dict, *, batch_size: int, seed: int, max_len: int = 128):
    """An endless iterator of collated batches; ``tasks``: ``{name: (pairs, weight)}``.
    Each batch comes from one task, drawn with probability proportional to its weight,
    its examples drawn uniformly among that task's pairs (the paper mixes examples; a
    batch per task gives the same mixture in expectation without padding a one-word
    answer to a summary's length)."""
    names = list(tasks)
    w = torch.tensor([float(tasks[n][1]) for n in names])
    if not names or bool((w <= 0).any()):
        raise ValueError("tasks must map names to (pairs, weight > 0)")
    g = torch.Generator().manual_seed(seed)
    ids = tok.special_ids
    while True:
        k = int(torch.multinomial(w / w.sum(), 1, generator=g))
        pairs = tasks[names[k]][0]
        rows = [pairs[i] for i in torch.randint(len(pairs), (batch_size,), generator=g)]
        yield seq2seq.collate(
            rows, pad_id=ids["pad"], bos_id=ids["bos"], eos_id=ids["eos"],
            max_src=max_len, max_tgt=max_len,
        )  # fmt: skip


def finetune(
    model, tasks: dict, *, steps: int, tok, seed: int = 0, batch_size: int = 16, **kw
):
    """Fine-tune ``model`` on :func:`pair_batches` of ``tasks`` for ``steps`` steps."""
    from ..train import train

    batches = pair_batches(tok, tasks, batch_size=batch_size, seed=seed)
    return train(model, batches, steps=steps, **kw)


@scores_on_device  # on the GPU if there is one
@torch.no_grad()
def write(
    model, tok, pairs, max_new_tokens: int = 48, batch_size: int = 64
) -> list[str]:
    """Greedy generation (the source encoded once, the decoder's keys and values
    cached) for each pair's source; the texts decoded without special tokens."""
    ids, out = tok.special_ids, []
    for i in range(0, len(pairs), batch_size):
        chunk = pairs[i : i + batch_size]
        src = seq2seq.collate(
            chunk, pad_id=ids["pad"], bos_id=ids["bos"], eos_id=ids["eos"],
            max_src=256, max_tgt=2,
        )["src"]  # fmt: skip
        gen = seq2seq.greedy(
            model,
            src,
            bos_id=ids["bos"],
            eos_id=ids["eos"],
            max_new_tokens=max_new_tokens,
        )
        out += [tok.decode(row) for row in gen.tolist()]
    return out


def score(predictions, references, examples=None) -> dict[str, np.ndarray]:
    """Per-example scores: ``exact`` (1 if the text is the reference), ``rougeL``
    (:func:`ptlm_lite.seq2seq.rouge`) and, for summaries (``examples`` given),
    ``facts``: the share of the four facts stated
    (``suite.generation.facts_copied``)."""
    from ..suite.generation import facts_copied

    norm = [p.strip().lower() for p in predictions]
    out = {
        "exact": np.array(
            [p == r.strip().lower() for p, r in zip(norm, references)], float
        ),
        "rougeL": seq2seq.rouge(predictions, references, types=("rougeL",))["rougeL"],
    }
    if examples is not None:
        out["facts"] = facts_copied(predictions, examples)
    return out
