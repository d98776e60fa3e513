"""MASS's pre-training recipe on the synthetic world and the chapter's two measures.

* :func:`pretraining_batches`: the world's documents through
  :func:`~ptlm_lite.mass.mass_noise` and :func:`ptlm_lite.seq2seq.batches`, each batch
  with ``start``, where its fragments begin (the decoder's positions);
  :data:`FRAGMENTS` names the chapter's three settings of k.
* Understanding, :func:`slot_cloze`: zero-shot, the suite's ``slot_filler`` as one
  masked token. The decoder's first step sees only [BOS], so its answer is read from
  the encoder's output alone.
* Generation, :func:`summary_batch` / :func:`finetune_summaries` / :func:`summarise`:
  the suite's ``summaries`` (``suite.generation``), fine-tuned with teacher forcing and
  scored per example with ROUGE (:func:`ptlm_lite.seq2seq.rouge`).

Chapter: ``chapters/mass.ipynb``.
"""

from __future__ import annotations

import numpy as np
import torch

from .. import seq2seq
from ..config import preset
from ..device import device_of, scores_on_device
from ..mass import MASS, fragment_start, mass_noise
from . import bert as bert_recipe

__all__ = [
    "VOCAB",
    "FRAGMENTS",
    "tokenizer",
    "new_model",
    "documents",
    "pretraining_batches",
    "pretrain",
    "slot_cloze",
    "summary_batch",
    "finetune_summaries",
    "summarise",
]

VOCAB = 512
# the chapter's sweep of the fragment length: one token, half the text, all of it
FRAGMENTS = {
    "k = 1": dict(k=1),
    "k = m/2": dict(fraction=0.5),
    "k = m": dict(fraction=1.0),
}


def tokenizer():
    """The world WordPiece of 512 tokens (``recipes.unilm``'s): ``special_ids`` has
    ``pad``, ``mask``, ``bos`` and ``eos``."""
    from ..data.tokenizer import get_tokenizer

    return get_tokenizer("wordpiece", VOCAB, corpus="world", n_sentinels=0)


def new_model(tok, scale: str = "tiny", seed: int | None = None, **overrides) -> MASS:
    """A :class:`~ptlm_lite.mass.MASS` of the ``<scale>`` preset (both halves) for
    ``tok``, pre-LN, without dropout, its positions up to 128 (the summaries' documents
    are up to ~110 tokens)."""
    fields = dict(
        vocab_size=tok.vocab_size, pad_id=tok.special_ids["pad"], max_len=128,
        dropout=0.0, pre_norm=True,
    )  # fmt: skip
    return MASS(preset(scale, **{**fields, **overrides}), seed=seed)


def documents(tok, split: str = "train") -> list:
    """The world's documents as lists of sentences of token ids (``"train"``: world
    0, which the suite's tasks ask about; ``"validation"``: world 1)."""
    return bert_recipe.token_documents(tok, "world", split, 0)


def pretraining_batches(
    tok, docs, fragment: dict, *, batch_size: int, max_len: int, seed: int = 0
):
    """An endless iterator of MASS batches (``src``, ``tgt_in``, ``tgt_out``,
    ``start``): documents of ``docs`` drawn at random (seeded), windows of at most
    ``max_len`` tokens, the fragment set by ``fragment`` (``dict(k=1)`` or
    ``dict(fraction=0.5)``: :data:`FRAGMENTS`)."""
    s = tok.special_ids

    def noise(doc, g):
        return mass_noise(doc, g, mask_id=s["mask"], max_len=max_len, **fragment)

    stream = seq2seq.batches(
        docs, noise, batch_size=batch_size, seed=seed, pad_id=s["pad"],
        bos_id=s["bos"], eos_id=s["eos"], max_src=max_len + 1, max_tgt=max_len + 1,
    )  # fmt: skip
    for batch in stream:
        yield {**batch, "start": fragment_start(batch["src"], s["mask"])}


def pretrain(model, tok, docs, fragment: dict, *, steps: int, seed: int = 0, **kw):
    """Pre-train ``model`` for ``steps`` steps on :func:`pretraining_batches`; ``kw``:
    ``batch_size``, ``max_len`` and :func:`~ptlm_lite.train.train`'s keywords (a
    constant rate after ``warmup``). Returns the History."""
    from ..train import train

    sizes = {k: kw.pop(k) for k in ("batch_size", "max_len")}
    batches = pretraining_batches(tok, docs, fragment, seed=seed, **sizes)
    kw["warmup"] = min(kw.get("warmup", 10), steps - 1)
    return train(model, batches, steps=steps, schedule="constant", seed=seed, **kw)


@scores_on_device  # on the GPU if there is one
@torch.no_grad()
def slot_cloze(model, tok, examples) -> np.ndarray:
    """Zero-shot understanding, 1/0 per example of ``slot_filler``: the source is
    ``context [MASK] .``, the decoder gets [BOS] at the [MASK]'s position, and the
    answer is the ending whose first piece is likelier there. The decoder sees nothing
    but [BOS], so all it knows of the context comes through the encoder."""
    model.eval()
    s = tok.special_ids
    rows = [[*tok.encode(e["context"]), s["mask"], *tok.encode("."), s["eos"]]
            for e in examples]  # fmt: skip
    T = max(map(len, rows))
    src = torch.tensor([r + [s["pad"]] * (T - len(r)) for r in rows])
    start = fragment_start(src, s["mask"])
    bos = torch.full((len(rows), 1), s["bos"])
    dev = device_of(model)
    logits = model(src.to(dev), bos.to(dev), start=start.to(dev)).logits[:, 0].cpu()
    first = torch.tensor([[tok.encode(w)[0] for w in e["endings"]] for e in examples])
    label = torch.tensor([e["label"] for e in examples])
    return (logits.gather(1, first).argmax(1) == label).float().numpy()


def summary_batch(tok, examples, *, max_src: int = 128, max_tgt: int = 32) -> dict:
    """``suite.generation.summaries`` examples (``document`` -> ``summary``) collated
    as one batch dict (``src``, ``tgt_in``, ``tgt_out``) by
    :func:`ptlm_lite.seq2seq.collate`."""
    s = tok.special_ids
    pairs = [
        seq2seq.Pair(tok.encode(e["document"]), tok.encode(e["summary"]))
        for e in examples
    ]
    return seq2seq.collate(
        pairs, pad_id=s["pad"], bos_id=s["bos"], eos_id=s["eos"], max_src=max_src,
        max_tgt=max_tgt,
    )  # fmt: skip


def finetune_summaries(model, train_batch: dict, *, steps: int, seed: int = 0, **kw):
    """Fine-tune ``model`` on :func:`summary_batch`'s rows (``steps`` steps of
    ``batch_size`` rows drawn at random, linear warm-up and decay:
    :func:`ptlm_lite.finetune.finetune`). Returns the History."""
    from ..finetune import finetune

    return finetune(model, train_batch, steps, seed=seed, **kw)


@scores_on_device  # on the GPU if there is one
@torch.no_grad()
def summarise(model, tok, src: torch.Tensor, max_new_tokens: int = 30) -> list[str]:
    """Greedy summaries (:func:`ptlm_lite.seq2seq.greedy`, cached) of a batch of
    sources, as text cut at [EOS]."""
    s = tok.special_ids
    out = seq2seq.greedy(
        model, src, bos_id=s["bos"], eos_id=s["eos"], max_new_tokens=max_new_tokens
    )
    texts = []
    for row in out.tolist():
        row = row[: row.index(s["eos"])] if s["eos"] in row else row
        texts.append(tok.decode([t for t in row if t != s["pad"]]))
    return texts
