"""Fine-tuning on the evaluation suite: batches for an encoder or a decoder, a training
loop, scores that expose a constant predictor, and one call that makes the table with
its baselines.

    task ──encoder_batch──► ids, segments, valid, labels   [CLS] a [SEP] b [SEP] (BERT)
         ──decoder_batch──► ids (B, C, T), last, labels   [start] a [delim] b [extract]
    model(**batch) ──► logits ──argmax──► predictions ──► accuracy, macro-F1, constant

A model that always answers the most frequent class scores the majority share in
accuracy: 71.7% on a test set that is 71.7% "person". Macro-F1 (the mean over classes of
each class's F1) gives it only one class's F1 divided by the number of classes, and
:func:`evaluate` says ``constant`` outright. :func:`run` trains every model factory over
several seeds on the same batches and adds the majority, chance and surface baselines as
rows of the same table::

    from ptlm_lite import finetune, suite task = suite.get("relation_check") table =
    finetune.run(task, {"pre-trained": lambda seed: finetune.bert_model(task,
    pretrained),
                                "random init": lambda seed: finetune.bert_model(task,
                                config)},
                         tok, seeds=(0, 1, 2), steps=150)
    finetune.summarize(table)

Chapters: ``chapters/bert.ipynb`` (encoder heads), ``chapters/gpt.ipynb`` (GPT's input
transformations); the tasks are :mod:`ptlm_lite.suite`'s.
"""

from __future__ import annotations

import copy
import inspect
import time
from typing import Callable

import numpy as np
import torch

__all__ = [
    "encoder_batch",
    "decoder_batch",
    "batches",
    "bert_model",
    "gpt_model",
    "finetune",
    "evaluate",
    "scores",
    "macro_f1",
    "is_constant",
    "run",
    "summarize",
]


# ----------------------------------------------------------------------------------
# Batches


def _kind(task) -> str:
    kind = task if isinstance(task, str) else task.kind
    if kind not in ("single", "pair", "choice"):
        raise ValueError(
            f"task kind must be 'single', 'pair' or 'choice', got {kind!r}"
        )
    return kind


def _examples(task, examples):
    if isinstance(examples, str):
        if examples not in ("train", "test"):
            raise ValueError(
                f"examples must be 'train', 'test' or a list of examples, got "
                f"{examples!r}"
            )
        return getattr(task, examples)
    if len(examples) == 0:
        raise ValueError("examples is empty: pass at least one example")
    return examples


def encoder_batch(task, examples, tokenizer, max_len: int = 64) -> dict:
    """BERT's inputs for a whole split: ``[CLS] text [SEP]`` (single) or ``[CLS] a [SEP]
    b [SEP]`` (pair; a choice task pairs the context with each ending).

    ``task``: a :class:`~ptlm_lite.suite.Task` (or its kind); ``examples``: ``"train"``,
    ``"test"`` or a list of example dicts; ``tokenizer``: anything with ``encode_batch``
    and ``special_ids`` (``cls``, ``sep``, ``pad``). Returns ``ids``, ``segments``,
    ``valid`` of shape ``(N, T)`` (``(N, C, T)`` for choices, C candidates each) and
    ``labels`` ``(N,)``; the keys are the names of the BERT heads' ``forward``
    arguments.
    """
    from .data import encode_pair, pad_sequences

    kind, examples = _kind(task), _examples(task, examples)
    sp = tokenizer.special_ids
    cls, sep, pad = sp["cls"], sp["sep"], sp["pad"]
    if kind == "single":
        rows = [
            [cls] + t[: max_len - 2] + [sep]
            for t in tokenizer.encode_batch([e["text"] for e in examples])
        ]
        segs = [[0] * len(r) for r in rows]
    else:
        if kind == "pair":
            a_texts, b_texts = [e["a"] for e in examples], [e["b"] for e in examples]
        # one (context, ending) pair per candidate, candidates of an example consecutive
        else:
            a_texts = [e["context"] for e in examples for _ in e["endings"]]
            b_texts = [end for e in examples for end in e["endings"]]
        enc = [
            encode_pair(a, b, cls, sep, max_len)
            for a, b in zip(
                tokenizer.encode_batch(a_texts), tokenizer.encode_batch(b_texts)
            )
        ]
        rows, segs = [r for r, _ in enc], [s for _, s in enc]
    ids, valid = pad_sequences(rows, pad_id=pad)  # (N·C, T)
    segments, _ = pad_sequences(segs, pad_id=0, max_len=ids.shape[1])
    batch = {"ids": ids, "segments": segments, "valid": valid}
    if kind == "choice":
        C = len(examples[0]["endings"])
        if any(len(e["endings"]) != C for e in examples):
            raise ValueError(
                "every example of a choice task must have the same number of endings"
            )
        batch = {k: v.view(len(examples), C, -1) for k, v in batch.items()}  # (N, C, T)
    batch["labels"] = torch.tensor([e["label"] for e in examples])
    return batch


def decoder_batch(task, examples, tokenizer, prefix_space: bool = True) -> dict:
    """GPT's input transformations for a whole split
    (:func:`ptlm_lite.recipes.gpt.task_inputs`): ``[start] text [extract]``, ``[start] a
    [delim] b [extract]``, or one such sequence per ending.

    start / delim / extract are the tokenizer's ``bos`` / ``sep`` / ``cls`` ids, as in
    the GPT chapter. ``prefix_space``: encode each text as " text", the way names occur
    inside the pre-training documents (a byte-level BPE splits "Kotheth" and " Kotheth"
    differently). Returns ``ids`` ``(N, C, T)`` (C = 1 unless choices), ``last`` ``(N,
    C)`` and ``labels`` ``(N,)``: the arguments of :class:`~ptlm_lite.gpt.GPTForTask`'s
    ``forward``.
    """
    collate_task, task_inputs = _gpt_transformations()
    kind, examples = _kind(task), _examples(task, examples)
    sp = tokenizer.special_ids
    start, delim, extract = sp.get("bos", sp["cls"]), sp["sep"], sp["cls"]

    def encode(text: str) -> list[int]:
        return tokenizer.encode(" " + text if prefix_space else text)

    def as_gpt(e: dict) -> tuple[str, dict]:
        if kind == "single":
            return "classification", {"text": e["text"]}
        if kind == "pair":
            return "entailment", {"premise": e["a"], "hypothesis": e["b"]}
        return "multiple_choice", {"context": e["context"], "endings": e["endings"]}

    seqs = [task_inputs(*as_gpt(e), encode, start, delim, extract) for e in examples]
    return collate_task(seqs, [e["label"] for e in examples], pad_id=sp["pad"])


def _gpt_transformations():
    from .recipes.gpt import collate_task, task_inputs

    return collate_task, task_inputs


def _is_decoder(model) -> bool:
    return "last" in inspect.signature(model.forward).parameters


def batches(
    task, tokenizer, model=None, decoder: bool | None = None, **kw
) -> tuple[dict, dict]:
    """``(train batch, test batch)`` in the form ``model`` takes (a decoder if its
    ``forward`` has a ``last`` argument, as GPTForTask's does; or say ``decoder=True``).
    """
    if model is None and decoder is None:
        raise ValueError(
            "pass the model (to see which inputs it takes) or decoder=True/False"
        )
    decoder = _is_decoder(model) if decoder is None else decoder
    make = decoder_batch if decoder else encoder_batch
    return make(task, "train", tokenizer, **kw), make(task, "test", tokenizer, **kw)


# ----------------------------------------------------------------------------------
# Models with the head a task needs


def bert_model(task, source):
    """A BERT head for ``task``: :class:`~ptlm_lite.bert.BertForMultipleChoice` for a
    choice task, else :class:`~ptlm_lite.bert.BertForSequenceClassification` with
    ``task.n_labels`` classes.

    ``source``: a pre-trained model (its encoder is copied) or a
    :class:`~ptlm_lite.config.Config` (random weights, the control of every pre-training
    claim).
    """
    from . import bert
    from .config import Config

    head, kw = (
        (bert.BertForMultipleChoice, {})
        if task.kind == "choice"
        else (bert.BertForSequenceClassification, {"n_labels": task.n_labels})
    )
    return (
        head(source, **kw)
        if isinstance(source, Config)
        else head.from_pretrained(source, **kw)
    )


def gpt_model(task, source, lm_weight: float = 0.5):
    """A :class:`~ptlm_lite.gpt.GPTForTask` for ``task`` ("choice" mode for a choice
    task, else "classify" with ``task.n_labels`` outputs). ``source``: a pre-trained GPT
    (deep-copied, so the original stays as it was) or a Config (random weights).
    ``lm_weight``: λ of the auxiliary LM loss.
    """
    from .config import Config
    from .gpt import GPT, GPTForTask

    gpt = GPT(source) if isinstance(source, Config) else copy.deepcopy(source)
    mode = "choice" if task.kind == "choice" else "classify"
    return GPTForTask(gpt, task.n_labels, mode=mode, lm_weight=lm_weight)


# ----------------------------------------------------------------------------------
# Training and scoring


def _size(batch: dict) -> int:
    sizes = {len(v) for v in batch.values()}
    if len(sizes) != 1:
        raise ValueError(
            f"every tensor of the batch dict must have the same first dimension, got "
            f"{sizes}"
        )
    return sizes.pop()


def finetune(
    model,
    train_batch: dict,
    steps: int,
    batch_size: int = 16,
    lr: float = 1e-3,
    seed: int = 0,
    progress: bool = False,
    **train_kw,
):
    """Fine-tune ``model`` on ``train_batch`` (a dict of tensors over the whole training
    split, as :func:`encoder_batch` / :func:`decoder_batch` make): ``steps`` steps of
    ``batch_size`` examples drawn at random (seeded), AdamW with a linear warm-up over
    the first tenth and linear decay (BERT's schedule), through
    :func:`ptlm_lite.train.train`. Returns its History.
    """
    from .train import train

    n = _size(train_batch)
    g = torch.Generator().manual_seed(seed)

    def batch(step: int) -> dict:
        idx = torch.randint(n, (batch_size,), generator=g)
        return {k: v[idx] for k, v in train_batch.items()}

    kw = dict(
        warmup=steps // 10, schedule="linear", desc="fine-tuning", progress=progress
    )
    return train(model, batch, steps=steps, lr=lr, seed=seed, **{**kw, **train_kw})


def is_constant(predictions) -> bool:
    """True if every prediction is the same class: the model learned the label
    frequencies only.
    """
    values = np.asarray(predictions).ravel()
    return len(values) > 0 and bool((values == values[0]).all())


def macro_f1(predictions, labels) -> float:
    """The mean over classes of each class's F1 (the harmonic mean of its precision and
    recall), over the classes that occur in ``labels`` or ``predictions``
    (scikit-learn's convention; a class never predicted has F1 = 0). A constant
    predictor on K balanced classes gets 2 / (K + 1) / K.
    """
    p, y = np.asarray(predictions).ravel(), np.asarray(labels).ravel()
    if p.shape != y.shape or len(y) == 0:
        raise ValueError(
            f"predictions and labels must be non-empty and of one length, got "
            f"{p.shape}, {y.shape}"
        )
    f1 = []
    for c in np.union1d(p, y):
        tp = np.sum((p == c) & (y == c))
        denom = np.sum(p == c) + np.sum(y == c)  # 2·TP + FP + FN
        f1.append(2 * tp / denom if denom else 0.0)
    return float(np.mean(f1))


def scores(predictions, labels, n_labels: int | None = None) -> dict:
    """``{"accuracy", "macro_f1", "constant"}`` of ``predictions`` against
    ``labels``."""
    p, y = np.asarray(predictions).ravel(), np.asarray(labels).ravel()
    if n_labels is not None and len(p) and (p.min() < 0 or p.max() >= n_labels):
        raise ValueError(
            f"predictions must be in [0, {n_labels}), got values in [{p.min()}, "
            f"{p.max()}]"
        )
    return {
        "accuracy": float(np.mean(p == y)),
        "macro_f1": macro_f1(p, y),
        "constant": is_constant(p),
    }


@torch.no_grad()
def evaluate(model, batch: dict, chunk: int = 256) -> dict:
    """Score ``model`` on ``batch`` (with ``labels``): ``{"accuracy", "macro_f1",
    "constant", "predictions"}``. ``constant`` is True when every prediction is the same
    class; its accuracy then equals that class's share (the majority share at best) and
    its macro-F1 is low.
    """
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    inputs = {k: v for k, v in batch.items() if k != "labels"}
    n = _size(inputs)
    preds = [
        model(**{k: v[i : i + chunk].to(device) for k, v in inputs.items()})
        .logits.argmax(-1)
        .cpu()
        for i in range(0, n, chunk)
    ]
    model.train(was_training)
    predictions = torch.cat(preds).numpy()
    return {
        **scores(predictions, batch["labels"].numpy()),
        "predictions": predictions.tolist(),
    }


# ----------------------------------------------------------------------------------
# One call per chapter: models × seeds, with the baselines


def _baselines(task, surface: bool) -> list[dict]:
    labels = np.array([e["label"] for e in task.test])
    constant = np.full_like(labels, task.majority_label)
    shares = np.bincount(labels, minlength=task.n_labels) / len(labels)
    present = shares > 0
    # uniform guessing: precision = a class's share, recall = 1/K (expected counts)
    k = 1 / task.n_labels
    chance_f1 = float(np.mean(2 * shares[present] * k / (shares[present] + k)))
    rows = [
        {"model": "majority class", **scores(constant, labels)},
        {
            "model": "chance",
            "accuracy": task.chance,
            "macro_f1": chance_f1,
            "constant": False,
        },
    ]
    if surface:
        from .suite import surface_baseline

        s = surface_baseline(task)
        rows.append(
            {
                "model": "surface (char n-grams)",
                "accuracy": s["accuracy"],
                "macro_f1": s["macro_f1"],
                "constant": is_constant(s["predictions"]),
            }
        )
    return rows


def run(
    task,
    make_model: Callable | dict[str, Callable],
    tokenizer,
    seeds=(0, 1, 2),
    steps: int = 150,
    batch_size: int = 16,
    lr: float = 1e-3,
    surface: bool = True,
    device=None,
    progress: bool = False,
    **batch_kw,
):
    """Fine-tune and score every model factory on ``task`` over ``seeds``; return a
    DataFrame.

    ``make_model``: ``{name: seed -> model}`` (or one callable, named "model"), e.g.
    ``{"pre-trained": lambda seed: bert_model(task, pretrained), "random init": lambda
    seed: bert_model(task, config)}``; torch is seeded with ``seed`` before each call,
    so the new head starts the same way for every factory. Batches are built once per
    input form (encoder or decoder) and every run of a seed draws the same examples in
    the same order. Rows: one per (model, seed) with ``accuracy``, ``macro_f1``,
    ``constant``, ``seconds``; then the baselines ``majority class`` (the best constant
    answer: always the test split's most frequent label, ``task.majority``), ``chance``
    (uniform guessing, expected values) and ``surface (char n-grams)``
    (:func:`ptlm_lite.suite.surface_baseline`, if ``surface``). ``batch_kw`` goes to the
    batch builder (``max_len``, ``prefix_space``). ``table.attrs`` holds the task's
    name, ``needs_pretraining``, the steps and the split sizes.
    """

    factories = make_model if isinstance(make_model, dict) else {"model": make_model}
    if not factories or not all(callable(f) for f in factories.values()):
        raise TypeError(
            "make_model must be a callable seed -> model or a non-empty dict of them"
        )
    cached: dict[bool, tuple[dict, dict]] = {}
    rows = []
    for name, factory in factories.items():
        for seed in seeds:
            torch.manual_seed(seed)
            model = factory(seed)
            if device is not None:
                model.to(device)
            decoder = _is_decoder(model)
            if decoder not in cached:
                cached[decoder] = batches(task, tokenizer, decoder=decoder, **batch_kw)
            train_batch, test_batch = cached[decoder]
            start = time.perf_counter()
            hist = finetune(
                model,
                train_batch,
                steps,
                batch_size,
                lr,
                seed,
                progress=progress,
                desc=f"{task.name}: {name}, seed {seed}",
            )
            result = evaluate(model, test_batch)
            rows.append(
                {
                    "model": name,
                    "seed": seed,
                    "accuracy": result["accuracy"],
                    "macro_f1": result["macro_f1"],
                    "constant": result["constant"],
                    "final_loss": hist.final_loss(min(20, steps)),
                    "seconds": round(time.perf_counter() - start, 2),
                }
            )
    rows += [{**r, "seed": None} for r in _baselines(task, surface)]
    return _table(rows, task, steps)


def _table(rows: list[dict], task, steps: int):
    """The runs and baselines of :func:`run` or :func:`run_spans` as one DataFrame,
    with the task and its sizes in ``attrs``."""
    import pandas as pd

    table = pd.DataFrame(rows)
    table["seed"] = table["seed"].astype("Int64")  # baselines have none
    table.insert(0, "task", task.name)
    table.attrs.update(
        task=task.name,
        needs_pretraining=task.needs_pretraining,
        steps=steps,
        n_train=len(task.train),
        n_test=len(task.test),
    )
    return table


def summarize(table):
    """One row per (task, model): mean, std, min and max over seeds of accuracy and
    macro-F1, and how many of the runs predicted one class only.
    """
    g = table.groupby(["task", "model"], sort=False)
    out = g[["accuracy", "macro_f1"]].agg(["mean", "std", "min", "max"])
    out.columns = [f"{metric} {stat}" for metric, stat in out.columns]
    out["runs"] = g.size()
    out["constant runs"] = g["constant"].sum().astype(int)
    return out


# ----------------------------------------------------------------------------------
# Span extraction (SQuAD-style), added for ``chapters/spanbert.ipynb``: a task of kind
# "span" (``suite.get("span_qa")``) and BERT's start/end head
# (:class:`~ptlm_lite.bert.BertForSpanExtraction`). Scores are exact match and F1 over
# word pieces; the baselines are the most frequent answer position and chance.


def span_batch(task, examples, tokenizer, max_len: int = 64) -> dict:
    """``[CLS] question [SEP] passage [SEP]`` for a span task, as
    :class:`~ptlm_lite.bert.BertForSpanExtraction` takes it: ``ids``, ``segments``
    (1 on the passage and its [SEP]), ``valid`` ``(N, T)`` and ``start``, ``end``
    ``(N,)``, the positions of the answer's first and last token. A passage that does
    not fit in ``max_len`` loses its end; if that cuts the answer, a ValueError names
    the example.
    """
    from .data import pad_sequences

    examples = _examples(task, examples)
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
    return {
        "exact_match": float(
            ((start == gold_start) & (end == gold_end)).float().mean()
        ),
        "f1": float(f1.float().mean()),
        "constant": bool((where == where[0]).all()),
    }


@torch.no_grad()
def evaluate_spans(model, batch: dict, max_answer_len: int = 30, chunk: int = 256):
    """Score a span model on ``batch`` (from :func:`span_batch`): the best span inside
    the passage (:func:`~ptlm_lite.bert.best_span`) against ``start``/``end``. Returns
    :func:`span_scores` plus ``predictions``, a list of ``(start, end)``.
    """
    from .bert import best_span

    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    allowed, starts, ends = passage_mask(batch), [], []
    for i in range(0, len(batch["ids"]), chunk):
        part = {
            k: batch[k][i : i + chunk].to(device) for k in ("ids", "segments", "valid")
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
    model.train(was_training)
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
    """:func:`run` for a span task: fine-tune every factory over ``seeds`` on the same
    batches and score exact match and F1 on the test split; return a DataFrame.

    ``make_model``: ``{name: seed -> model}`` returning span models, e.g.
    ``lambda seed: BertForSpanExtraction.from_pretrained(pretrained)``; torch is seeded
    with ``seed`` before each call, so the new head starts the same way for every
    factory. Rows: one per (model, seed) with ``exact_match``, ``f1``, ``constant``
    (every answer at the same place: see :func:`span_scores`), ``final_loss``,
    ``seconds``; then the baselines ``chance`` and ``frequency guess`` (the most
    frequent answer position of the training split, in tokens).
    """

    factories = make_model if isinstance(make_model, dict) else {"model": make_model}
    if not factories or not all(callable(f) for f in factories.values()):
        raise TypeError(
            "make_model must be a callable seed -> model or a non-empty dict of them"
        )
    train_batch = span_batch(task, "train", tokenizer, max_len)
    test_batch = span_batch(task, "test", tokenizer, max_len)
    rows = []
    for name, factory in factories.items():
        for seed in seeds:
            torch.manual_seed(seed)
            model = factory(seed)
            if device is not None:
                model.to(device)
            start = time.perf_counter()
            hist = finetune(
                model,
                train_batch,
                steps,
                batch_size,
                lr,
                seed,
                progress=progress,
                desc=f"{task.name}: {name}, seed {seed}",
            )
            result = evaluate_spans(model, test_batch, max_answer_len)
            rows.append(
                {
                    "model": name,
                    "seed": seed,
                    "exact_match": result["exact_match"],
                    "f1": result["f1"],
                    "constant": result["constant"],
                    "final_loss": hist.final_loss(min(20, steps)),
                    "seconds": round(time.perf_counter() - start, 2),
                }
            )
    rows += [
        {**r, "seed": None, "constant": r.get("constant", False)}
        for r in _span_baselines(train_batch, test_batch, max_answer_len)
    ]
    return _table(rows, task, steps)
