"""Span extraction (SQuAD-style) on the evaluation suite: ``[CLS] question [SEP]
passage [SEP]`` batches, BERT's start/end head, exact match and F1, and one call that
makes the table with its baselines.

    task ──span_batch──► ids, segments, valid, start, end
    model(**batch) ──► start/end logits ──best_span inside the passage──► (start, end)
                   ──span_scores──► exact match, F1, constant

A task of kind ``"span"`` (``suite.get("span_qa")``) and
:class:`~ptlm_lite.heads.BertForSpanExtraction`. Scores are over word pieces; the
baselines are chance (a random span of the passage) and the frequency guess (the
training split's most frequent answer position). :func:`run_spans` is
:func:`ptlm_lite.finetune.run` for spans and shares its training loop and table.

Chapter: ``chapters/spanbert.ipynb``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from .device import eval_mode, scores_on_device
from .finetune import runs_table, seed_runs, split_examples

__all__ = ["span_batch", "passage_mask", "span_scores", "evaluate_spans", "run_spans"]


def span_batch(task, examples, tokenizer, max_len: int = 64) -> dict:
    """``[CLS] question [SEP] passage [SEP]`` for a span task, as
    :class:`~ptlm_lite.heads.BertForSpanExtraction` takes it: ``ids``, ``segments``
    (1 on the passage and its [SEP]), ``valid`` ``(N, T)`` and ``start``, ``end``
    ``(N,)``, the positions of the answer's first and last token. A passage that does
    not fit in ``max_len`` loses its end; if that cuts the answer, a ValueError names
    the example.
    """
    from .data import pad_sequences

    examples = split_examples(task, examples)
    if getattr(task, "kind", task) != "span":
        raise ValueError(f"span_batch needs a task of kind 'span', got {task!r}")
    sp = tokenizer.special_ids
    rows, segs, starts, ends = [], [], [], []
    for i, e in enumerate(examples):
        q = tokenizer.encode(e["question"])
        enc = tokenizer.encode_with_offsets(e["context"])
        a0, a1 = e["answer_start"], e["answer_start"] + len(e["answer"])
        first = next(t for t, (s, f) in enumerate(enc.offsets) if f > a0)
        last = max(t for t, (s, f) in enumerate(enc.offsets) if s < a1)
        passage = enc.ids[: max(0, max_len - len(q) - 3)]
        if last >= len(passage):
            raise ValueError(
                f"examples[{i}]: the answer {e['answer']!r} does not fit in "
                f"max_len={max_len} tokens"
            )
        rows.append([sp["cls"], *q, sp["sep"], *passage, sp["sep"]])
        segs.append([0] * (len(q) + 2) + [1] * (len(passage) + 1))
        starts.append(len(q) + 2 + first)
        ends.append(len(q) + 2 + last)
    ids, valid = pad_sequences(rows, pad_id=sp["pad"])
    segments, _ = pad_sequences(segs, pad_id=0, max_len=ids.shape[1])
    return {
        "ids": ids,
        "segments": segments,
        "valid": valid,
        "start": torch.tensor(starts),
        "end": torch.tensor(ends),
    }


def passage_mask(batch: dict) -> torch.Tensor:
    """``(N, T)`` bool: the passage's tokens (segment 1 without its final [SEP]), where
    an answer may start and end.
    """
    passage = (batch["segments"] == 1) & batch["valid"]
    last = (passage * torch.arange(passage.shape[1])).argmax(1)  # the [SEP]
    passage = passage.clone()
    passage[torch.arange(len(passage)), last] = False
    return passage


def span_scores(start, end, gold_start, gold_end, offset=None) -> dict:
    """``{"exact_match", "f1", "constant"}`` of predicted spans ``[start, end]``
    against the gold ones (``(N,)`` tensors of token positions, ends included).

    F1 is SQuAD's, over word pieces: the harmonic mean of the overlap's share of the
    predicted and of the gold span. ``constant``: every prediction sits at the same
    place (``offset``: each example's passage start, so "the same place" means the same
    distance from it) with the same length: the model learned a position, not a
    reading.
    """
    start, end = torch.as_tensor(start), torch.as_tensor(end)
    gold_start, gold_end = torch.as_tensor(gold_start), torch.as_tensor(gold_end)
    if not start.shape == end.shape == gold_start.shape == gold_end.shape:
        raise ValueError("start, end, gold_start and gold_end must have one shape")
    if len(start) == 0:
        raise ValueError("no predictions to score")
    overlap = (
        torch.minimum(end, gold_end) - torch.maximum(start, gold_start) + 1
    ).clamp(min=0)
    precision = overlap / (end - start + 1).clamp(min=1)
    recall = overlap / (gold_end - gold_start + 1)
    f1 = torch.where(
        overlap > 0, 2 * precision * recall / (precision + recall).clamp(min=1e-9), 0.0
    )
    where = torch.stack([start - (0 if offset is None else offset), end - start], 1)
    exact = ((start == gold_start) & (end == gold_end)).float()
    return {
        "exact_match": float(exact.mean()),
        "f1": float(f1.float().mean()),
        "constant": bool((where == where[0]).all()),
        # per test example, for the verdict rule's interval over examples
        "exact_per_example": exact.tolist(),
        "f1_per_example": f1.float().tolist(),
    }


@scores_on_device  # on the GPU if there is one
@torch.no_grad()
def evaluate_spans(model, batch: dict, max_answer_len: int = 30, chunk: int = 256):
    """Score a span model on ``batch`` (from :func:`span_batch`): the best span inside
    the passage (:func:`~ptlm_lite.heads.best_span`) against ``start``/``end``. Returns
    :func:`span_scores` plus ``predictions``, a list of ``(start, end)``.
    """
    from .heads import best_span

    with eval_mode(model):
        device = next(model.parameters()).device
        allowed, starts, ends = passage_mask(batch), [], []
        for i in range(0, len(batch["ids"]), chunk):
            part = {
                k: batch[k][i : i + chunk].to(device)
                for k in ("ids", "segments", "valid")
            }
            out = model(**part)
            s, e = best_span(
                out.extra["start_logits"].cpu(),
                out.extra["end_logits"].cpu(),
                max_answer_len,
                allowed=allowed[i : i + chunk],
            )
            starts.append(s)
            ends.append(e)
    start, end = torch.cat(starts), torch.cat(ends)
    offset = allowed.float().argmax(1)
    return {
        **span_scores(start, end, batch["start"], batch["end"], offset),
        "predictions": list(zip(start.tolist(), end.tolist())),
    }


def _span_baselines(train_batch: dict, test_batch: dict, max_answer_len: int):
    """Chance (a uniformly random span of the passage of at most ``max_answer_len``
    tokens: expected scores) and the frequency guess (always the training split's most
    frequent answer position: distance from the passage start, and length).
    """
    from collections import Counter

    def where(b):  # passage starts, and (distance from it, length - 1) of each answer
        offset = passage_mask(b).float().argmax(1).long()
        gold = zip((b["start"] - offset).tolist(), (b["end"] - b["start"]).tolist())
        return offset, list(gold)

    (distance, extra), _ = Counter(where(train_batch)[1]).most_common(1)[0]
    offset, gold = where(test_batch)
    em, f1 = [], []
    for n, (g, g_extra) in zip(passage_mask(test_batch).sum(1).tolist(), gold):
        pairs = [(i, j) for i in range(n) for j in range(i, min(n, i + max_answer_len))]
        i, j = (torch.tensor(x) for x in zip(*pairs))
        k = len(pairs)
        s = span_scores(i, j, torch.full((k,), g), torch.full((k,), g + g_extra))
        em.append(s["exact_match"])
        f1.append(s["f1"])
    guess = span_scores(
        offset + distance,
        offset + distance + extra,
        test_batch["start"],
        test_batch["end"],
        offset,
    )
    return [
        {
            "model": "chance",
            "exact_match": float(np.mean(em)),
            "f1": float(np.mean(f1)),
        },
        {"model": f"frequency guess (offset {distance}, length {extra + 1})", **guess},
    ]


def run_spans(
    task,
    make_model: Callable | dict[str, Callable],
    tokenizer,
    seeds=(0, 1, 2),
    steps: int = 150,
    batch_size: int = 16,
    lr: float = 1e-3,
    max_len: int = 64,
    max_answer_len: int = 30,
    device=None,
    progress: bool = False,
):
    """:func:`~ptlm_lite.finetune.run` for a span task: fine-tune every factory over
    ``seeds`` on the same batches and score exact match and F1 on the test split;
    return a DataFrame.

    ``make_model``: ``{name: seed -> model}`` returning span models, e.g.
    ``lambda seed: BertForSpanExtraction.from_pretrained(pretrained)``; torch is seeded
    with ``seed`` before each call (two heads start alike only where both factories
    draw them first: a whole random model draws its encoder before). Rows: one per
    (model, seed) with ``exact_match``, ``f1``, ``constant`` (every answer at the same
    place: see :func:`span_scores`), ``final_loss``, ``seconds``; then the baselines
    ``chance`` and ``frequency guess`` (the most frequent answer position of the
    training split, in tokens).
    """

    train_batch = span_batch(task, "train", tokenizer, max_len)
    test_batch = span_batch(task, "test", tokenizer, max_len)

    def score(model, test_batch):
        result = evaluate_spans(model, test_batch, max_answer_len)
        keep = ("exact_match", "f1", "constant", "exact_per_example", "f1_per_example")
        return {k: result[k] for k in keep}

    rows = seed_runs(
        task,
        make_model,
        seeds,
        lambda model: (train_batch, test_batch),
        score,
        steps,
        batch_size,
        lr,
        device,
        progress,
    )
    rows += [
        {**r, "seed": None, "constant": r.get("constant", False)}
        for r in _span_baselines(train_batch, test_batch, max_answer_len)
    ]
    return runs_table(rows, task, steps)
