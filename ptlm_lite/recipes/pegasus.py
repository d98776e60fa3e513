"""PEGASUS's recipe: gap-sentence pre-training on the synthetic world, fine-tuning on
the suite's summaries, and ROUGE per example.

* :func:`pretraining_documents`: the world's documents are short (one to six
  sentences), too short to lose 30% of their sentences and keep something to read. A
  pre-training document here is a person's biography **followed by the sentences of
  their employer and of their birth city** (``"Hobel Guild is a shipping company based
  in Krat."``, ``"Krat is a small city in Dasu."``), with at most one friendship kept:
  five or six sentences, which share names with one another as a news article's
  sentences do.
* :func:`pretrain`: the denoising loop, ``P.train`` on ``seq2seq.batches`` with
  :func:`~ptlm_lite.pegasus.gap_sentences` as the noise.
* :func:`summary_pairs`, :func:`finetune`: the suite's summarisation task
  (:func:`ptlm_lite.suite.generation.summaries`) as ``Pair(document, summary)``, trained
  with the same loop.
* :func:`summarise`, :func:`rouge_scores`: greedy summaries with the cache and their
  ROUGE F1 per example (:func:`ptlm_lite.seq2seq.rouge`).

Chapter: ``chapters/pegasus.ipynb``.
"""

from __future__ import annotations

import re
from functools import partial

import torch

from .. import seq2seq
from ..config import preset
from ..device import scores_on_device
from ..pegasus import Pegasus, gap_sentences
from ..train import train

__all__ = [
    "VOCAB",
    "tokenizer",
    "sentences",
    "world_documents",
    "pretraining_documents",
    "new_model",
    "pretrain",
    "summary_pairs",
    "finetune",
    "summarise",
    "rouge_scores",
]

VOCAB = 512


def tokenizer():
    """A 512-token WordPiece trained on the world's documents (``make_world(0)``), as
    in the UniLM chapter: its words are single tokens."""
    from ..data.tokenizer import get_tokenizer

    return get_tokenizer("wordpiece", VOCAB, corpus="world", n_sentinels=0)


def sentences(text: str) -> list[str]:
    """A world document's sentences (each ends with a full stop)."""
    return [s for s in re.split(r"(?<=\.) ", text) if s]


def world_documents(world_seed: int = 0, friends: int = 1) -> list[list[str]]:
    """One text document per person of ``make_world(world_seed)``: the biography (its
    first ``friends`` "is a friend of" sentences kept), then the employer's sentence,
    then the birth city's: six sentences with the default (every biography has at
    least four)."""
    from ..data import make_world

    world = make_world(world_seed)
    text = {d.entity: d.text for d in world.documents}
    out = []
    for person in world.of_kind("person"):
        org = world.one(person, "works_for")
        city = world.one(person, "born_in")
        bio = sentences(text[person.id])
        out.append(
            bio[: 3 + friends] + sentences(text[org.id]) + sentences(text[city.id])
        )
    return out


def pretraining_documents(
    tok, world_seed: int = 0, friends: int = 1
) -> list[list[list[int]]]:
    """:func:`world_documents`, tokenised: documents of sentences of token ids (the
    input of the seq2seq noises)."""
    docs = world_documents(world_seed, friends)
    flat = iter(tok.encode_batch([s for d in docs for s in d]))
    return [[next(flat) for _ in d] for d in docs]


def new_model(tok, scale: str = "tiny", seed: int | None = None) -> Pegasus:
    """A :class:`~ptlm_lite.pegasus.Pegasus` of the ``pegasus-<scale>`` preset for
    ``tok``'s vocabulary."""
    return Pegasus(preset(f"pegasus-{scale}", vocab_size=tok.vocab_size), seed=seed)


def _ids(tok) -> dict:
    s = tok.special_ids
    return {"pad_id": s["pad"], "bos_id": s["bos"], "eos_id": s["eos"]}


def pretrain(
    model,
    docs,
    tok,
    *,
    strategy: str,
    steps: int,
    seed: int = 0,
    ratio: float = 0.3,
    batch_size: int = 32,
    lr: float = 3e-3,
    warmup: int = 20,
    max_src: int = 96,
    max_tgt: int = 48,
    progress: bool = False,
    desc: str = "pre-training",
):
    """Gap-sentence generation: ``steps`` steps of ``batch_size`` documents drawn with
    ``seed``, each noised by ``gap_sentences(strategy=, ratio=)`` afresh. Seed *i* of
    every strategy draws the same documents and starts from the same weights only if
    the caller builds the model with the same seed. Returns the ``History``."""
    noise = partial(
        gap_sentences, mask_id=tok.special_ids["mask"], strategy=strategy, ratio=ratio
    )
    batches = seq2seq.batches(
        docs, noise, batch_size=batch_size, seed=seed, max_src=max_src,
        max_tgt=max_tgt, **_ids(tok),
    )  # fmt: skip
    return train(
        model, batches, steps=steps, lr=lr, warmup=warmup, seed=seed,
        progress=progress, desc=desc,
    )  # fmt: skip


def summary_pairs(tok, examples) -> list[seq2seq.Pair]:
    """The suite's ``{"document", "summary"}`` examples as token-id pairs."""
    docs = tok.encode_batch([e["document"] for e in examples])
    sums = tok.encode_batch([e["summary"] for e in examples])
    return [seq2seq.Pair(d, s) for d, s in zip(docs, sums)]


def finetune(
    model,
    pairs,
    tok,
    *,
    steps: int,
    seed: int = 0,
    batch_size: int = 16,
    lr: float = 2e-3,
    warmup: int = 10,
    max_src: int = 128,
    max_tgt: int = 32,
    progress: bool = False,
    desc: str = "fine-tuning",
):
    """Teacher-forced fine-tuning on ``pairs``: each step a batch drawn (with
    replacement, seeded) from them. Returns the ``History``."""
    if not pairs:
        raise ValueError("pairs must hold at least one Pair")
    ids = _ids(tok)

    def batch(step):
        g = torch.Generator().manual_seed(seed * 100_003 + step)
        rows = torch.randint(len(pairs), (batch_size,), generator=g).tolist()
        return seq2seq.collate(
            [pairs[r] for r in rows], max_src=max_src, max_tgt=max_tgt, **ids
        )

    return train(
        model, batch, steps=steps, lr=lr, warmup=warmup, seed=seed, progress=progress,
        desc=desc,
    )  # fmt: skip


@scores_on_device  # on the GPU if there is one
def summarise(model, tok, pairs, *, max_new_tokens: int = 24, batch_size: int = 64):
    """Greedy summaries (the house's cached :func:`~ptlm_lite.seq2seq.greedy`) of the
    pairs' sources, as text."""
    ids = _ids(tok)
    out = []
    for i in range(0, len(pairs), batch_size):
        src = seq2seq.collate(
            pairs[i : i + batch_size], max_src=model.config.max_len, max_tgt=2, **ids
        )["src"]
        gen = seq2seq.greedy(
            model, src, bos_id=ids["bos_id"], eos_id=ids["eos_id"],
            max_new_tokens=max_new_tokens,
        )  # fmt: skip
        for row in gen.tolist():
            row = row[: row.index(ids["eos_id"])] if ids["eos_id"] in row else row
            out.append(tok.decode(row))
    return out


def rouge_scores(model, tok, pairs, references, **kw) -> dict:
    """ROUGE-1/2/L F1 per example of the model's greedy summaries against
    ``references`` (strings), through :func:`ptlm_lite.seq2seq.rouge`."""
    return seq2seq.rouge(summarise(model, tok, pairs, **kw), list(references))
