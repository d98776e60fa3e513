"""Fine-tuning on the evaluation suite: batches for an encoder or a decoder, a training
loop, scores that expose a constant predictor, and one call that makes the table with
its baselines.

    task ──encoder_batch──► ids, segments, valid, labels   [CLS] a [SEP] b [SEP] (BERT)
         ──decoder_batch──► ids (B, C, T), last, labels   [start] a [delim] b [extract]
    model(**batch) ──► logits ──argmax──► predictions ──► accuracy, macro-F1, constant

A model that always answers the most frequent class scores the majority share in
accuracy: 65% on ``kind_from_sentence``, whose test set is 65% "person". Macro-F1 (the
mean over classes of each class's F1) gives it one class's F1 divided by the number of
classes, and :func:`evaluate` says ``constant`` outright. :func:`run` trains every model
factory over several seeds on the same batches and adds the majority, chance and
surface baselines as rows of the same table::

    from ptlm_lite import finetune, suite

    task = suite.get("relation_check")
    table = finetune.run(
        task,
        {
            "pre-trained": lambda seed: finetune.bert_model(task, pretrained),
            "random init": lambda seed: finetune.bert_model(task, config),
        },
        tok, seeds=(0, 1, 2), steps=150,
    )
    finetune.summarize(table)

Chapters: ``chapters/bert.ipynb`` (encoder heads), ``chapters/gpt.ipynb`` (GPT's input
transformations); the tasks are :mod:`ptlm_lite.suite`'s. Span extraction (SpanBERT's
chapter) is in :mod:`ptlm_lite.spans`.
"""

from __future__ import annotations

import copy
import inspect
import time
from typing import Callable

import numpy as np
import torch

from .checks import check_count, check_seeds
from .device import auto_device, eval_mode, scores_on_device
from .metrics import is_constant, macro_f1, scores
from .parallel import pmap, state_of, take_state

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
    "seed_runs",
    "runs_table",
    "split_examples",
    "per_example",
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


def split_examples(task, examples):
    """``task``'s ``"train"`` or ``"test"`` split, or ``examples`` itself (a non-empty
    list of example dicts)."""
    if isinstance(examples, str):
        if examples not in ("train", "test"):
            msg = "'train', 'test' or a list of examples"
            raise ValueError(f"examples must be {msg}, got {examples!r}")
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

    kind, examples = _kind(task), split_examples(task, examples)
    check_count("max_len", max_len, low=3)  # [CLS] a token [SEP]
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
    from .recipes.gpt import collate_task, task_inputs

    kind, examples = _kind(task), split_examples(task, examples)
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
    """A BERT head for ``task``: :class:`~ptlm_lite.heads.BertForMultipleChoice` for a
    choice task, else :class:`~ptlm_lite.heads.BertForSequenceClassification` with
    ``task.n_labels`` classes.

    ``source``: a pre-trained model (its encoder is copied) or a
    :class:`~ptlm_lite.config.Config` (random weights, the control of every pre-training
    claim).
    """
    from . import heads
    from .config import Config

    head, kw = (
        (heads.BertForMultipleChoice, {})
        if task.kind == "choice"
        else (heads.BertForSequenceClassification, {"n_labels": task.n_labels})
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
    check_count("steps", steps)
    check_count("batch_size", batch_size)
    g = torch.Generator().manual_seed(check_count("seed", seed, low=0))

    def batch(step: int) -> dict:
        idx = torch.randint(n, (batch_size,), generator=g)
        return {k: v[idx] for k, v in train_batch.items()}

    kw = dict(
        warmup=steps // 10, schedule="linear", desc="fine-tuning", progress=progress
    )
    return train(model, batch, steps=steps, lr=lr, seed=seed, **{**kw, **train_kw})


@scores_on_device  # on the GPU if there is one
@torch.no_grad()
def evaluate(model, batch: dict, chunk: int = 256) -> dict:
    """Score ``model`` on ``batch`` (with ``labels``), ``chunk`` examples at a time:
    ``{"accuracy", "macro_f1", "constant", "predictions", "correct"}`` (the last two per
    example, in order). ``constant``: every prediction is the same class (its accuracy
    is that class's share, the majority share at best; its macro-F1 is low)."""
    check_count("chunk", chunk)
    with eval_mode(model):
        device = next(model.parameters()).device
        inputs = {k: v for k, v in batch.items() if k != "labels"}
        n = _size(inputs)
        preds = [
            model(**{k: v[i : i + chunk].to(device) for k, v in inputs.items()})
            .logits.argmax(-1)
            .cpu()
            for i in range(0, n, chunk)
        ]
    predictions = torch.cat(preds).numpy()
    return {
        **scores(predictions, batch["labels"].numpy()),
        "predictions": predictions.tolist(),
        "correct": (predictions == batch["labels"].numpy()).astype(float).tolist(),
    }


# ----------------------------------------------------------------------------------
# One call per chapter: models × seeds, with the baselines


def _baselines(task, surface: bool) -> list[dict]:
    labels = np.array([e["label"] for e in task.test])
    constant = np.full_like(labels, task.majority_label)
    shares = np.bincount(labels, minlength=task.n_labels) / len(labels)
    present = shares > 0
    # uniform guessing: precision = a class's share, recall = 1/K (expected counts);
    # it predicts every class, so a class absent from the test counts, with F1 0
    k = 1 / task.n_labels
    f1 = 2 * shares[present] * k / (shares[present] + k)
    chance_f1 = float(f1.sum() / task.n_labels)
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


def seed_runs(
    task,
    make_model,
    seeds,
    batches_for,
    score,
    steps,
    batch_size,
    lr,
    device,
    progress,
    train_kw=None,
) -> list[dict]:
    """The runs that :func:`run` and :func:`ptlm_lite.spans.run_spans` share: for
    every factory and seed, seed torch and build the model (here, in order), then
    fine-tune it on ``batches_for(model)[0]`` and score it on ``[1]`` (``score(model,
    test) -> dict``) in a :func:`~ptlm_lite.parallel.pmap` worker; one row each, with
    ``final_loss`` and ``seconds``. ``train_kw(name, model)``: the run's own keywords of
    ``train`` (``lr``, ``param_groups``, ``on_step``: ULMFiT). The factory's model ends
    trained, as in a loop.
    """
    factories = make_model if isinstance(make_model, dict) else {"model": make_model}
    if not factories or not all(callable(f) for f in factories.values()):
        raise TypeError(
            "make_model must be a callable seed -> model or a non-empty dict of them"
        )
    seeds = check_seeds(seeds)  # a repeated seed repeats a run: a false interval
    runs = []  # built here, in order, so that a factory may keep its models
    for name, factory in factories.items():
        for seed in seeds:
            torch.manual_seed(seed)
            runs.append((name, seed, factory(seed), torch.get_rng_state()))

    def one(run):  # in a pmap worker: train and score one model
        name, seed, model, rng = run
        torch.set_rng_state(rng)  # where it stood after the factory
        # on the GPU if there is one (PTLM_DEVICE overrides): trained, scored there
        home, where = next(model.parameters()).device, auto_device(device)
        model.to(where)
        train_batch, test_batch = batches_for(model)
        extra = (train_kw(name, model) or {}) if train_kw else {}
        start, desc = time.perf_counter(), f"{task.name}: {name}, seed {seed}"
        kw = {"progress": progress, "desc": desc, "device": where, **extra}
        hist = finetune(
            model, train_batch, steps, batch_size, kw.pop("lr", lr), seed, **kw
        )
        row = {
            "model": name,
            "seed": seed,
            **score(model, test_batch),
            "final_loss": hist.final_loss(min(20, steps)),
            "seconds": round(time.perf_counter() - start, 2),
        }
        return row, state_of(model.to(home))  # handed back where the factory built it

    done = pmap(one, runs, desc=f"{task.name}: fine-tuning", progress=progress)
    for (*_, model, _), (_, state) in zip(runs, done):
        take_state(model, state)  # the factory's model is the trained one, as before
    return [row for row, _ in done]


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
    train_kw: Callable[[str, torch.nn.Module], dict] | None = None,
    **batch_kw,
):
    """Fine-tune and score every model factory on ``task`` over ``seeds``; return a
    DataFrame.

    ``make_model``: ``{name: seed -> model}`` (or one callable, named "model"), e.g.
    ``{"pre-trained": lambda seed: bert_model(task, pretrained), "random init": lambda
    seed: bert_model(task, config)}``; torch is seeded with ``seed`` before each call
    (BERT's two factories then draw the same new head; GPT's do not). Batches are built
    once per input form (encoder or decoder) and every run of a seed draws the same
    examples in the same order. Rows: one per (model, seed) with ``accuracy``,
    ``macro_f1``, ``constant``, ``correct`` (1/0 per test example), ``final_loss`` and
    ``seconds`` (training and scoring); then the baselines ``majority class`` (the
    best constant answer: always the test split's most frequent label,
    ``task.majority``), ``chance`` (uniform guessing, expected values) and ``surface
    (char n-grams)`` (:func:`ptlm_lite.suite.surface_baseline`, if ``surface``).
    ``batch_kw`` goes to the batch builder (``max_len``, ``prefix_space``).
    ``table.attrs`` holds the task's name, ``needs_pretraining``, the steps and the
    split sizes; ``train_kw``: as in :func:`seed_runs`.
    """

    cached: dict[bool, tuple[dict, dict]] = {}

    def batches_for(model):  # built once per input form (encoder or decoder)
        decoder = _is_decoder(model)
        if decoder not in cached:
            cached[decoder] = batches(task, tokenizer, decoder=decoder, **batch_kw)
        return cached[decoder]

    # device=: scored where it trained (evaluate alone follows auto_device)
    scorer = evaluate if device is None else evaluate.__wrapped__

    def score(model, test_batch):
        result = scorer(model, test_batch)
        return {k: result[k] for k in ("accuracy", "macro_f1", "constant", "correct")}

    sizes = (steps, batch_size, lr, device, progress)
    rows = seed_runs(task, make_model, seeds, batches_for, score, *sizes, train_kw)
    rows += [{**r, "seed": None} for r in _baselines(task, surface)]
    return runs_table(rows, task, steps)


def runs_table(rows: list[dict], task, steps: int):
    """The runs and baselines of :func:`run` or :func:`~ptlm_lite.spans.run_spans` as
    one DataFrame, with the task and its sizes in ``attrs``."""
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


def per_example(table, model: str, column: str = "correct", task=None) -> np.ndarray:
    """One row per seed (in seed order) of ``column``'s per-example scores for
    ``model`` (``"correct"``: 1/0 per test example; a span table's ``"f1_per_example"``
    or ``"exact_per_example"``): what :func:`ptlm_lite.verdict.verdict` takes to count
    the test examples as well as the seeds. ``task``: the task's name, when the table
    holds several.
    """
    rows = table[(table["model"] == model) & table["seed"].notna()]
    if task is not None:
        rows = rows[rows["task"] == task]
    if len(rows) == 0:
        raise ValueError(
            f"no runs of model={model!r}"
            + (f" on task={task!r}" if task is not None else "")
            + f"; known models: {sorted(set(table['model']))}"
        )
    if rows["task"].nunique() > 1:
        raise ValueError(
            f"the table holds several tasks {sorted(set(rows['task']))}: pass task="
        )
    if column not in rows:
        raise ValueError(f"column={column!r} is not in the table; it has {list(table)}")
    if rows["seed"].duplicated().any():  # a table concatenated twice: a false interval
        raise ValueError(f"the table holds a seed of model={model!r} twice")
    return np.array(rows.sort_values("seed")[column].tolist(), dtype=float)


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
