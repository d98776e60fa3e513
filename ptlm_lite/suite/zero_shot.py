"""A multiple-choice question asked of a language model itself, with no fine-tuning.

The GPT paper (section 5, "zero-shot behaviours") reads a task off its language model:
for a multiple-choice question it picks the answer with the higher **average
log-probability per token** after the question. :func:`lm_choice` does the same for any
left-to-right model whose ``model(ids).logits`` are next-token logits (the book's
``GPT`` and ``LSTMLM``), on a suite task with ``context`` and ``endings``
(``slot_filler``, ``fact_cloze``): each ending is scored after its context, one
sequence per ending, and the model is right when the likeliest ending is the labelled
one. Averaging per token keeps a longer ending (an occupation has more pieces than a
colour) from losing for its length alone; a model with random weights still scores a
little off chance, which is why chapters show it beside the trained one. (GPT-2's
chapter scores options shared by every prompt, summed: ``recipes.gpt.option_scores``.)

A masked LM has no left-to-right probability to read. :func:`mlm_choice` asks it the
same question with the **pseudo-log-likelihood** of the ending (Salazar, Liang, Nguyen
and Kirchhoff, "Masked Language Model Scoring", 2020): in ``[CLS] context ending
[SEP]``, each piece of the ending is masked in turn and scored from everything else,
and the scores are averaged per piece.

Chapters: ``chapters/gpt.ipynb`` (the pre-trained LM against the classifier fine-tuned
from it), ``chapters/ulmfit.ipynb`` (the general and the target-domain LM),
``chapters/bert.ipynb`` (the masked LM against its fine-tuned classifiers).
"""

from __future__ import annotations

import numpy as np
import torch

from ..data import pad_sequences
from ..device import device_of, eval_mode, scores_on_device
from ..output import IGNORE

__all__ = ["ending_logprob", "lm_choice", "masked_ending_logprob", "mlm_choice"]


def _check(examples) -> list[dict]:
    examples = list(examples)
    if not examples:
        raise ValueError("examples must hold at least one question")
    for e in examples:
        if not isinstance(e, dict) or not {"context", "endings", "label"} <= set(e):
            raise TypeError(
                "examples must be a choice task's examples: dicts with 'context', "
                f"'endings' and 'label' (suite.get('slot_filler').test), got {e!r:.80}"
            )
    return examples


@scores_on_device  # on the GPU if there is one
@torch.no_grad()
def ending_logprob(model, tok, examples, k: int) -> torch.Tensor:
    """Per example, the mean log-probability per token of ``endings[k]`` (with a space
    before it) after ``context``, under the language model ``model``: shape (N,), on
    the CPU."""
    examples = _check(examples)
    heads = [tok.encode(e["context"]) for e in examples]
    full = [h + tok.encode(" " + e["endings"][k]) for h, e in zip(heads, examples)]
    ids, _ = pad_sequences(full)  # right-padded: causal, so never read
    T = ids.shape[1]
    with eval_mode(model):
        logits = model(ids.to(device_of(model))).logits[:, :-1].float().cpu()
    logp = logits.log_softmax(-1)  # (N, T-1, V)
    token = logp.gather(-1, ids[:, 1:, None]).squeeze(-1)  # log P(ids[t]), t >= 1
    t = torch.arange(1, T)[None]
    start = torch.tensor([len(h) for h in heads])[:, None]
    end = torch.tensor([len(f) for f in full])[:, None]
    ending = (t >= start) & (t < end)  # the ending's tokens
    return (token * ending).sum(1) / ending.sum(1)


def lm_choice(model, tok, examples) -> np.ndarray:
    """1/0 per question: does ``model`` give the labelled ending the highest mean
    log-probability per token after the context? (Ties go to the first ending.)"""
    return _choice(ending_logprob, model, tok, examples)


@scores_on_device  # on the GPU if there is one
@torch.no_grad()
def masked_ending_logprob(model, tok, examples, k: int) -> torch.Tensor:
    """Per example, the mean over the pieces of ``endings[k]`` (with a space before it)
    of log P(piece | the rest of ``[CLS] context ending [SEP]``), each piece replaced
    by ``[MASK]`` in its own copy of the row (pseudo-log-likelihood) under the masked
    LM ``model`` (``model(ids, valid=..., targets=...)``: the book's
    ``BertForPreTraining``): shape (N,), on the CPU."""
    examples = _check(examples)
    s = tok.special_ids
    rows, owner, at, piece = [], [], [], []
    for i, e in enumerate(examples):
        head = [s["cls"], *tok.encode(e["context"])]
        ending = tok.encode(" " + e["endings"][k])
        for j, p in enumerate(ending):  # one row per piece, that piece masked
            rows.append(head + ending[:j] + [s["mask"]] + ending[j + 1 :] + [s["sep"]])
            owner.append(i)
            at.append(len(head) + j)
            piece.append(p)
    ids, valid = pad_sequences(rows, pad_id=s["pad"])
    targets = torch.full_like(ids, IGNORE)  # the masked piece, one per row
    targets[torch.arange(len(rows)), torch.tensor(at)] = torch.tensor(piece)
    dev = device_of(model)
    with eval_mode(model):
        out = model(ids.to(dev), valid=valid.to(dev), targets=targets.to(dev))
    logits = out.logits.float().cpu()  # (rows, V): row-major, one masked position a row
    logp = logits.log_softmax(-1).gather(1, torch.tensor(piece)[:, None])[:, 0]
    owner = torch.tensor(owner)
    total = torch.zeros(len(examples)).index_add_(0, owner, logp)
    return total / torch.bincount(owner, minlength=len(examples))


def mlm_choice(model, tok, examples) -> np.ndarray:
    """1/0 per question: does the masked LM ``model`` give the labelled ending the
    highest pseudo-log-likelihood per piece (:func:`masked_ending_logprob`) after the
    context? (Ties go to the first ending.)"""
    return _choice(masked_ending_logprob, model, tok, examples)


def _choice(score, model, tok, examples) -> np.ndarray:
    examples = _check(examples)
    n = {len(e["endings"]) for e in examples}
    if len(n) != 1:
        raise ValueError(f"every question must have as many endings, got {sorted(n)}")
    scores = torch.stack([score(model, tok, examples, k) for k in range(n.pop())], 1)
    labels = np.array([e["label"] for e in examples])
    return (scores.argmax(1).numpy() == labels).astype(float)
