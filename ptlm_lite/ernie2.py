"""ERNIE 2.0 (Baidu): continual multi-task pre-training, one encoder, a head per task.

    stage 1   knowledge masking
    stage 2   knowledge masking + capitalisation + token-document relation
    stage 3   ... + sentence reordering + sentence distance + relevance
              (a task, once introduced, keeps being trained: nothing is dropped)

    [CLS] a [SEP] b [SEP] ──► token + segment + position + TASK embedding ──► Bert
        ├─ "mlm"          the masked tokens                 (word-aware)
        ├─ ("token", n)   one class per token: W h_i        (word-aware)
        └─ ("sequence", n) one class per input: W pooled    (structure / semantic)

Sun et al. (2020) pre-train one encoder on seven tasks introduced one after another;
each step trains one task, drawn from those introduced so far, so a new task never
replaces an old one (plain *sequential* training, each stage on its new tasks only,
forgets the old ones: the chapter measures it). The input gets one more embedding, the
id of the task being trained (:class:`TaskEmbeddings`). The structure-aware tasks are
pair and group builders next to BERT's NSP and ALBERT's SOP: :func:`reorder_groups`
(shuffled segments, classify the permutation) and :func:`distance_pairs` (adjacent,
same document, other document).

Chapter: ``chapters/ernie2.ipynb``; the task data and training are in
:mod:`ptlm_lite.recipes.ernie2`.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import torch
from torch import nn

from .bert import Bert, BertEmbeddings, MLMHead
from .corrupt import check_generator
from .layers import Embeddings, init_weights
from .mt_dnn import task_schedule
from .output import IGNORE, Output, cross_entropy

__all__ = [
    "PERMUTATIONS",
    "TaskEmbeddings",
    "Ernie2",
    "Labelled",
    "reorder_groups",
    "distance_pairs",
    "continual_schedule",
    "sequential_schedule",
    "draw_tasks",
]

# sentence reordering's classes: every order of 1, 2 or 3 segments (1 + 2 + 6 = 9)
PERMUTATIONS = [p for m in (1, 2, 3) for p in itertools.permutations(range(m))]
DISTANCES = ("adjacent", "same document", "other document")


class TaskEmbeddings(BertEmbeddings):
    """BERT's embeddings plus one more table, indexed by the task being trained: token
    + segment + position + task, then LayerNorm. ``task_id`` (an int, set by
    :class:`Ernie2` before each step) picks the row; fine-tuning keeps task 0's."""

    def __init__(self, config, n_tasks: int):
        super().__init__(config)
        if isinstance(n_tasks, bool) or not isinstance(n_tasks, int) or n_tasks < 1:
            raise ValueError(f"n_tasks must be a positive integer, got {n_tasks!r}")
        self.task = nn.Embedding(n_tasks, config.d_model)
        self.task_id = 0

    def forward(self, ids, segments=None, offset: int = 0):
        x = Embeddings.forward(self, ids, segments, offset)  # (B, T, D)
        x = x + self.task.weight[self.task_id]  # the same vector at every position
        return self.drop_after_ln(self.ln(x))


class Ernie2(nn.Module):
    """One encoder (a :class:`~ptlm_lite.bert.Bert` on :class:`TaskEmbeddings`) and one
    head per pre-training task. ``heads``: ``{task: "mlm" | ("token", n) |
    ("sequence", n)}``; a task's id (for its embedding) is its place in ``heads``.

    ``forward(task, ids, segments=None, valid=None, targets=None, labels=None)``:
    ``targets`` ``(B, T)`` (IGNORE where nothing counts) for "mlm" and token heads,
    ``labels`` ``(B,)`` for sequence heads -> Output(logits, loss).
    """

    def __init__(self, config, heads: dict, seed: int | None = None):
        super().__init__()
        if not isinstance(heads, dict) or not heads:
            raise TypeError("heads must be a non-empty dict {task: head spec}")
        if seed is not None:
            torch.manual_seed(seed)
        embed = TaskEmbeddings(config, len(heads))
        embed.apply(init_weights)
        self.bert = Bert(config, embed=embed)
        self.specs, self.task_ids = dict(heads), {t: i for i, t in enumerate(heads)}
        made = {}
        for task, spec in heads.items():
            kind, *n = (spec,) if isinstance(spec, str) else spec
            if kind == "mlm" and not n:
                made[task] = MLMHead(config, embed.tok)
            elif kind in ("token", "sequence") and len(n) == 1 and n[0] >= 2:
                made[task] = nn.Linear(config.d_model, n[0])
            else:
                raise ValueError(
                    f"heads[{task!r}] must be 'mlm', ('token', n) or ('sequence', n) "
                    f"with n >= 2 classes, got {spec!r}"
                )
            made[task].apply(init_weights)
        self.heads = nn.ModuleDict(made)

    @property
    def config(self):
        return self.bert.config

    def forward(
        self, task, ids, segments=None, valid=None, targets=None, labels=None
    ) -> Output:
        if task not in self.heads:
            raise ValueError(f"task={task!r} is not one of {list(self.heads)}")
        self.bert.embed.task_id = self.task_ids[task]
        hidden, pooled, _ = self.bert(ids, segments, valid)
        head, spec = self.heads[task], self.specs[task]
        if spec == "mlm" or spec[0] == "token":
            if targets is None:
                return Output(head(hidden), None)  # (B, T, V or n)
            keep = targets != IGNORE  # (B, T): only these positions are scored
            logits = head(hidden[keep])  # (N, V or n)
            return Output(logits, cross_entropy(logits, targets[keep], name="targets"))
        logits = head(pooled)  # (B, n)
        loss = None if labels is None else cross_entropy(logits, labels, name="labels")
        return Output(logits, loss, pooled=pooled)


# ----------------------------------------------------------------------------------
# Structure-aware pair and group builders (next to corrupt.nsp_pairs, albert.sop_pairs)


@dataclass(frozen=True)
class Labelled:
    """Segments and their class: ``a`` and ``b`` for a pair (``corrupt.pack_pairs``
    packs it: its ``nsp_labels`` are then these labels), or ``segments`` for a group."""

    segments: tuple
    label: int

    @property
    def a(self):
        return self.segments[0]

    @property
    def b(self):
        return self.segments[1]


def _checked(documents, n, generator, min_len: int):
    check_generator(generator)
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be a positive integer, got {n!r}")
    usable = [d for d, doc in enumerate(documents) if len(doc) >= min_len]
    if not usable:
        raise ValueError(f"documents must hold a document of >= {min_len} segments")
    return usable, lambda k: int(torch.randint(k, (1,), generator=generator))


def reorder_groups(documents, n: int, *, generator, max_segments: int = 3):
    """``n`` sentence-reordering examples: m consecutive segments of one document (m
    drawn from 1..``max_segments``, at most the document's length), shuffled; the label
    is the index in :data:`PERMUTATIONS` of the order shown (``segments[j]`` is the
    original segment ``perm[j]``). ERNIE 2.0 cuts a paragraph into 1..m pieces."""
    if max_segments not in (1, 2, 3):
        raise ValueError(f"max_segments must be 1, 2 or 3, got {max_segments!r}")
    usable, rand = _checked(documents, n, generator, 1)
    out = []
    for _ in range(n):
        doc = documents[usable[rand(len(usable))]]
        m = 1 + rand(min(max_segments, len(doc)))
        start = rand(len(doc) - m + 1)
        perm = PERMUTATIONS.index(
            tuple(torch.randperm(m, generator=generator).tolist())
        )
        segs = tuple(list(doc[start + i]) for i in PERMUTATIONS[perm])
        out.append(Labelled(segs, perm))
    return out


def distance_pairs(documents, n: int, *, generator):
    """``n`` sentence-distance pairs, a third of each class (:data:`DISTANCES`): 0, B
    follows A; 1, B is from A's document but not next to it; 2, B is from another
    document. NSP's two classes with "same document, farther away" between them."""
    usable, rand = _checked(documents, n, generator, 3)
    if len(documents) < 2:
        raise ValueError("documents must hold at least two documents")
    out = []
    for k in range(n):
        d = usable[rand(len(usable))]
        doc, label = documents[d], k % 3
        i = rand(len(doc) - 1)
        if label == 0:
            b = doc[i + 1]
        elif label == 1:
            far = [j for j in range(len(doc)) if abs(j - i) > 1]
            if not far:  # a 3-segment document's middle: take an end as A
                i = 0
                far = [2]
            b = doc[far[rand(len(far))]]
        else:
            other = rand(len(documents) - 1)
            other += other >= d
            b = documents[other][rand(len(documents[other]))]
        out.append(Labelled((list(doc[i]), list(b)), label))
    return out


# ----------------------------------------------------------------------------------
# The continual schedule


@dataclass(frozen=True)
class Stage:
    """``steps`` training steps, each drawing one task with probability ``shares``."""

    steps: int
    shares: dict


def _schedule(stages, steps, keep: bool) -> list:
    if isinstance(stages, (str, dict)) or not stages:
        raise ValueError("stages must be a non-empty list of lists of task names")
    steps = [steps] * len(stages) if isinstance(steps, int) else list(steps)
    if len(steps) != len(stages) or any(
        isinstance(s, bool) or not isinstance(s, int) or s < 1 for s in steps
    ):
        raise ValueError(
            f"steps must be a positive int or one per stage ({len(stages)}), "
            f"got {steps!r}"
        )
    out, seen = [], []
    for new, n in zip(stages, steps):
        if isinstance(new, str) or not new or set(new) & set(seen):
            raise ValueError(f"each stage must add new task names, got {new!r}")
        seen += list(new)
        tasks = seen if keep else list(new)
        out.append(Stage(n, {t: 1 / len(tasks) for t in tasks}))
    return out


def continual_schedule(stages, steps) -> list:
    """ERNIE 2.0's schedule: stage k trains every task introduced in stages 1..k, each
    with an equal share of its ``steps``. ``stages``: the new tasks of each stage,
    ``[["mlm"], ["cap"], ["order"]]``; ``steps``: per stage (an int: all equal)."""
    return _schedule(stages, steps, keep=True)


def sequential_schedule(stages, steps) -> list:
    """The baseline: stage k trains only its own new tasks (task 1, then task 2 alone,
    then task 3 alone), with the same steps as :func:`continual_schedule`."""
    return _schedule(stages, steps, keep=False)


def draw_tasks(schedule, seed: int = 0) -> list:
    """The task of every step of ``schedule``: each stage's tasks drawn with their
    shares (:func:`ptlm_lite.mt_dnn.task_schedule`, seeded by ``seed`` and the
    stage)."""
    out = []
    for k, stage in enumerate(schedule):
        out += task_schedule(stage.shares, stage.steps, seed=seed * 1009 + k)
    return out
