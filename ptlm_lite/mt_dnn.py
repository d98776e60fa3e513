"""MT-DNN: one BERT encoder shared by many tasks, a small head per task.

    task t ~ p(t) ∝ n_t^(1/T)      one task per mini-batch (T = 1: proportional to data)
        │
    [CLS] a [SEP] b [SEP] ──► shared Bert ──► pooled x ──► head of task t ──► loss of t
                                               ├─ classify   softmax(W x)        (CE)
                                               ├─ similarity w · x               (MSE)
                                               └─ rank       s = w · x per candidate,
                                                              softmax over candidates

Liu, He, Chen and Gao (2019) train BERT's encoder on the nine GLUE tasks at once, each
mini-batch from one task, then fine-tune a copy per task. The heads are the paper's
four kinds: single-sentence and pairwise classification (cross-entropy on the pooled
``[CLS]``: :class:`~ptlm_lite.heads.BertForSequenceClassification`), pairwise text
similarity (a regression, :class:`BertForSimilarity`) and relevance ranking
(:class:`BertForRanking`: a listwise softmax over each query's candidates, or a
pairwise loss). The paper's pairwise classifier is a stochastic answer network (a few
steps of attention between the two sentences); this package uses the plain classifier.

Chapter: ``chapters/mt_dnn.ipynb``; the task data is built in
:mod:`ptlm_lite.recipes.mt_dnn`.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from .heads import BertForMultipleChoice, BertForSequenceClassification, MultiTask
from .output import Output, cross_entropy

__all__ = [
    "HEADS",
    "BertForSimilarity",
    "BertForRanking",
    "ranking_loss",
    "mt_dnn",
    "task_probabilities",
    "task_schedule",
    "train_multitask",
    "task_losses",
]

HEADS = ("classify", "similarity", "rank")


class BertForSimilarity(BertForSequenceClassification):
    """Pairwise text similarity as a regression (STS-B): ``Sim(a, b) = w · x`` on the
    pooled ``[CLS]`` x, trained with the mean squared error against ``scores``.

    ``forward(ids, segments=None, valid=None, scores=None)`` -> logits ``(B,)``, the
    predicted similarity.
    """

    def __init__(self, config, seed: int | None = None):
        super().__init__(config, n_labels=1, seed=seed)

    def forward(
        self, ids, segments=None, valid=None, scores=None, return_attention=False
    ) -> Output:
        out = super().forward(ids, segments, valid, return_attention=return_attention)
        sim = out.logits.squeeze(-1)  # (B,)
        loss = None
        if scores is not None:
            if not torch.is_floating_point(scores) or scores.shape != sim.shape:
                raise ValueError(
                    f"scores must be a float tensor of shape {tuple(sim.shape)}, got "
                    f"{scores.dtype} {tuple(scores.shape)}"
                )
            loss = F.mse_loss(sim, scores.to(sim.dtype))
        return Output(sim, loss, out.attentions, pooled=out.pooled)


def ranking_loss(scores, labels, loss: str = "listwise", gamma: float = 1.0):
    """The loss of a query whose right candidate is ``labels`` among ``scores`` ``(B,
    C)``.

    ``"listwise"`` (MT-DNN, eq. 5): ``-log softmax(γ s)[right]``, the negative
    log-likelihood of the right candidate among all C. ``"pairwise"`` (RankNet): the
    mean over the wrong candidates j of ``log(1 + exp(-γ (s_right - s_j)))``.
    """
    if loss not in ("listwise", "pairwise"):
        raise ValueError(f"loss must be 'listwise' or 'pairwise', got {loss!r}")
    if not gamma > 0:
        raise ValueError(f"gamma must be a positive number, got {gamma!r}")
    if loss == "listwise":
        return cross_entropy(gamma * scores, labels, name="labels")
    right = scores.gather(1, labels[:, None])  # (B, 1)
    wrong = torch.ones_like(scores, dtype=torch.bool).scatter(1, labels[:, None], False)
    pair = F.softplus(-gamma * (right - scores))  # (B, C): log(1 + e^(-γ(s+ - s_j)))
    return (pair * wrong).sum() / wrong.sum()


class BertForRanking(BertForMultipleChoice):
    """Relevance ranking (QNLI as MT-DNN casts it): each of C candidates is paired with
    the query, ``s = w · x`` scores each pooled ``[CLS]``, and :func:`ranking_loss`
    compares the right one with the rest. The paper squashes ``s`` with a sigmoid and
    sets γ = 1; with scores in (0, 1) a softmax over them can never be confident, so
    this head leaves them raw.

    ``forward(ids, segments=None, valid=None, labels=None)`` with ``ids`` ``(B, C,
    T)`` -> logits ``(B, C)``.
    """

    def __init__(self, config, loss: str = "listwise", gamma: float = 1.0, seed=None):
        super().__init__(config, seed=seed)
        ranking_loss(torch.zeros(1, 2), torch.zeros(1, dtype=torch.long), loss, gamma)
        self.loss, self.gamma = loss, gamma

    def forward(
        self, ids, segments=None, valid=None, labels=None, return_attention=False
    ) -> Output:
        out = super().forward(ids, segments, valid, return_attention=return_attention)
        loss = None
        if labels is not None:
            loss = ranking_loss(out.logits, labels, self.loss, self.gamma)
        return Output(out.logits, loss, out.attentions)


def mt_dnn(encoder, heads: dict) -> MultiTask:
    """MT-DNN: one head per task on ``encoder`` itself (a :class:`~ptlm_lite.bert.Bert`
    or a model with a ``.bert``, shared, not copied).

    ``heads``: ``{task name: "similarity" | "rank" | ("classify", n_labels)}``.
    """
    bert, made = getattr(encoder, "bert", encoder), {}
    for name, spec in heads.items():
        kind, *n = spec if isinstance(spec, tuple) else (spec,)
        if kind not in HEADS or (kind == "classify") != bool(n):
            raise ValueError(
                f"heads[{name!r}] must be 'similarity', 'rank' or ('classify', "
                f"n_labels), got {spec!r}"
            )
        made[name] = (
            BertForSequenceClassification(bert, n_labels=n[0])
            if kind == "classify"
            else BertForSimilarity(bert)
            if kind == "similarity"
            else BertForRanking(bert)
        )
    return MultiTask(bert, made)


def task_probabilities(sizes: dict, temperature: float = 1.0) -> dict:
    """How often each task is drawn: ``p(t) ∝ n_t^(1/T)`` for ``sizes`` ``{task:
    n_t}`` (training examples). ``T = 1`` is MT-DNN's rule (every example is seen
    equally often: a task's share is its share of the data); a larger T flattens the
    mixture toward uniform (``T = inf``), which small tasks need to be seen at all.
    """
    if not isinstance(sizes, dict) or not sizes:
        raise ValueError("sizes must be a non-empty dict {task: number of examples}")
    bad = {t: n for t, n in sizes.items() if isinstance(n, bool) or not n > 0}
    if bad:
        raise ValueError(f"sizes must be positive numbers, got {bad}")
    if isinstance(temperature, bool) or not temperature > 0:
        raise ValueError(f"temperature must be > 0 (or math.inf), got {temperature!r}")
    w = {t: n ** (1 / temperature) if math.isfinite(temperature) else 1.0
         for t, n in sizes.items()}  # fmt: skip
    total = sum(w.values())
    return {t: x / total for t, x in w.items()}


def task_schedule(sizes: dict, steps: int, temperature: float = 1.0, seed: int = 0):
    """The task of each of ``steps`` mini-batches, drawn from
    :func:`task_probabilities` with a seeded generator: a list of task names.
    """
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        raise ValueError(f"steps must be a positive integer, got {steps!r}")
    p = task_probabilities(sizes, temperature)
    g = torch.Generator().manual_seed(seed)
    draws = torch.multinomial(torch.tensor(list(p.values())), steps, True, generator=g)
    names = list(p)
    return [names[i] for i in draws.tolist()]


def train_multitask(
    model: MultiTask,
    data: dict,
    steps: int,
    batch_size: int = 16,
    temperature: float = 1.0,
    lr: float = 1e-3,
    seed: int = 0,
    **train_kw,
):
    """MT-DNN's multi-task stage: ``steps`` mini-batches of ``batch_size`` examples,
    each from one task drawn by :func:`task_schedule`, through the task's own head and
    the shared encoder (AdamW, :func:`ptlm_lite.train.train`).

    ``data``: ``{task: dict of tensors over its training split}`` (the keys of its
    head's ``forward``). Returns the History, with ``tasks`` (the task of every step)
    and ``probabilities`` (the mixture) added.
    """
    from .train import train

    missing = set(data) - set(model.heads)
    if missing:
        raise ValueError(f"data has tasks without a head: {sorted(missing)}")
    sizes = {t: len(next(iter(b.values()))) for t, b in data.items()}
    order = task_schedule(sizes, steps, temperature, seed)
    g = torch.Generator().manual_seed(seed)

    def batch(step: int) -> dict:  # steps count from 1
        task = order[step - 1]
        idx = torch.randint(sizes[task], (batch_size,), generator=g)
        return {"task": task, **{k: v[idx] for k, v in data[task].items()}}

    kw = dict(desc="MT-DNN: multi-task training", progress=False)
    hist = train(model, batch, steps=steps, lr=lr, seed=seed, **{**kw, **train_kw})
    hist.tasks = order[: len(hist.losses)]
    hist.probabilities = task_probabilities(sizes, temperature)
    return hist


def task_losses(history) -> dict:
    """``{task: (steps, losses)}`` from :func:`train_multitask`'s History: each task's
    own loss curve (the steps at which it was drawn)."""
    out = {}
    for step, (task, loss) in enumerate(zip(history.tasks, history.losses), 1):
        steps, losses = out.setdefault(task, ([], []))
        steps.append(step)
        losses.append(loss)
    return out
