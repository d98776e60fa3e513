"""FastBERT (Liu et al., 2020): a classifier after every layer, and each example stops
at the first one that is sure enough.

    [CLS] text [SEP] ──► layer 1 ──► layer 2 ──► ... ──► layer L ──► teacher
                            │           │                             (fine-tuned)
                         student 1   student 2  ...  student L-1
                            │           │
                      u < speed?    u < speed?   ──► yes: answer here, stop
                                                     no: go on to the next layer

Three steps, the first two at training time:

1. **Fine-tune** BERT with one classifier on its last layer, the *teacher* (an ordinary
   :class:`~ptlm_lite.heads.BertForSequenceClassification`).
2. **Self-distil**: freeze the backbone and the teacher, put a *student* classifier
   after each of the first L-1 layers, and train the students alone to match the
   teacher's distribution on unlabelled text: the loss is the sum over students of
   KL(p_teacher ‖ p_student) (:func:`distill_loss`). No labels are needed, so any
   amount of in-domain text will do.
3. **Adaptive inference**: after layer i, student i's normalised entropy
   ``u = -Σ p log p / log N`` (0: sure, 1: uniform; :func:`normalized_entropy`)
   decides: ``u < speed`` stops the example there and its student answers; otherwise
   it goes on. ``speed = 0`` runs every layer (the teacher answers); ``speed = 1``
   stops almost every example after layer 1. The loop is the package's one loop
   over blocks, :class:`~ptlm_lite.stack.Stack`, with an ``exit_rule``: the examples
   that stop leave the batch, the rest go on.

The students here are BERT's own head in miniature (dense + tanh on the ``[CLS]``
vector, then a linear layer); the paper's add a small self-attention. The FLOPs an
example spends (:func:`flops_spent`) are counted with :mod:`ptlm_lite.flops`: the
blocks it ran over its own tokens, plus one classifier per block.

Chapter: ``chapters/fastbert.ipynb``; the recipe (teacher, students, the curve) is
:mod:`ptlm_lite.recipes.fastbert`.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from . import flops, masks
from .bert import init_weights
from .heads import BertForSequenceClassification
from .output import Output
from .stack import Model

__all__ = [
    "normalized_entropy",
    "distill_loss",
    "distill",
    "Student",
    "FastBert",
    "classifier_weights",
    "flops_spent",
]


def normalized_entropy(logits) -> torch.Tensor:
    """FastBERT's uncertainty: the entropy of ``softmax(logits)`` divided by that of
    the uniform distribution, ``-Σ p log p / log N``, in [0, 1]. ``(..., N) ->
    (...)``, N >= 2 classes. Chapter: ``chapters/fastbert.ipynb``."""
    if not isinstance(logits, torch.Tensor) or not logits.is_floating_point():
        raise TypeError(
            f"logits must be a float tensor (..., N), got {type(logits).__name__}"
        )
    if logits.dim() == 0 or logits.shape[-1] < 2:
        raise ValueError(
            f"logits must end in N >= 2 classes, got shape {tuple(logits.shape)}"
        )
    logp = logits.log_softmax(-1)
    return -(logp.exp() * logp).sum(-1) / math.log(logits.shape[-1])


def distill_loss(student_logits, teacher_logits) -> torch.Tensor:
    """The self-distillation loss: Σ over students of the batch mean of
    KL(p_teacher ‖ p_student) = Σ p_t (log p_t - log p_s).

    ``student_logits``: (S, B, N), one row of logits per student (or a list of S
    (B, N) tensors); ``teacher_logits``: (B, N), taken as a fixed target (no gradient
    reaches the teacher). Chapter: ``chapters/fastbert.ipynb``."""
    if isinstance(student_logits, (list, tuple)):
        if not student_logits:
            raise ValueError("student_logits is empty: give at least one student")
        student_logits = torch.stack(list(student_logits))
    for name, t, dim in (
        ("student_logits", student_logits, 3),
        ("teacher_logits", teacher_logits, 2),
    ):
        if not isinstance(t, torch.Tensor) or not t.is_floating_point():
            raise TypeError(f"{name} must be a float tensor, got {type(t).__name__}")
        if t.dim() != dim:
            raise ValueError(
                f"{name} must have {dim} dimensions "
                f"({'(S, B, N)' if dim == 3 else '(B, N)'}), got {tuple(t.shape)}"
            )
    if student_logits.shape[1:] != teacher_logits.shape:
        raise ValueError(
            f"student_logits (S, B, N) {tuple(student_logits.shape)} must end in "
            f"teacher_logits' shape {tuple(teacher_logits.shape)}"
        )
    log_t = teacher_logits.detach().log_softmax(-1)  # (B, N)
    log_s = student_logits.log_softmax(-1)  # (S, B, N)
    kl = (log_t.exp() * (log_t - log_s)).sum(-1)  # (S, B)
    return kl.mean(1).sum()


class Student(nn.Module):
    """A student classifier: dense + tanh on a layer's ``[CLS]`` vector, then a
    linear layer to ``n_labels`` (the teacher's shape: BERT's pooler + classifier).
    ``(B, T, D) -> (B, n_labels)``."""

    def __init__(self, d_model: int, n_labels: int):
        super().__init__()
        self.dense = nn.Linear(d_model, d_model)
        self.out = nn.Linear(d_model, n_labels)
        self.apply(init_weights)

    def forward(self, hidden):
        return self.out(torch.tanh(self.dense(hidden[:, 0])))


class FastBert(Model):
    """A fine-tuned :class:`~ptlm_lite.heads.BertForSequenceClassification` (the
    backbone and the teacher, used as they are: shared, not copied) and a
    :class:`Student` after each of its first L-1 layers.

    ``forward(ids, segments=None, valid=None, speed=None, labels=None)``:

    * ``speed=None``: every layer for every example; ``logits`` are the teacher's
      (B, N), ``extra["students"]`` the students' (L-1, B, N), ``extra["cls"]``
      the ``[CLS]`` states they read (B, L-1, D), and ``loss`` is
      :func:`distill_loss` (the students' training loss);
    * ``speed`` in [0, 1]: adaptive inference. Each example stops after the first
      layer whose student's :func:`normalized_entropy` is below ``speed`` and takes
      that student's answer (the teacher's if it reaches the last layer);
      ``extra["exit_layer"]`` (B,) says where, ``extra["uncertainty"]`` (B,) how
      unsure the answering classifier was.

    ``labels`` adds ``extra["correct"]`` (B,) bool.
    Chapter: ``chapters/fastbert.ipynb``.
    """

    def __init__(self, teacher: BertForSequenceClassification, seed=None):
        if not isinstance(teacher, BertForSequenceClassification):
            raise TypeError(
                "teacher must be a fine-tuned BertForSequenceClassification, got "
                f"{type(teacher).__name__}"
            )
        if teacher.config.n_layer < 2:
            raise ValueError("FastBERT needs at least 2 layers (n_layer >= 2)")
        super().__init__(teacher.config, seed)  # seed: the students' initial weights
        self.teacher = teacher
        d, n = self.config.d_model, teacher.n_labels
        self.students = nn.ModuleList(
            Student(d, n) for _ in range(self.config.n_layer - 1)
        )

    def freeze_teacher(self) -> None:
        """Self-distillation trains the students only: backbone and teacher frozen
        (and in eval mode, so dropout does not move the target)."""
        self.teacher.requires_grad_(False).eval()

    def train(self, mode: bool = True):
        super().train(mode)
        if not any(p.requires_grad for p in self.teacher.parameters()):
            self.teacher.eval()  # a frozen teacher stays in eval mode
        return self

    def _teacher_logits(self, hidden):  # (B, T, D) -> (B, N): pooler + classifier
        bert = self.teacher.bert
        return self.teacher.classifier(torch.tanh(bert.pooler(hidden[:, 0])))

    def forward(self, ids, segments=None, valid=None, speed=None, labels=None):
        bert = self.teacher.bert
        if valid is None:
            valid = ids != self.config.pad_id
        x = bert.embed(ids, segments)  # checks ids and segments
        mask = masks.padding_mask(valid)  # (B, 1, T)
        if speed is None:
            out = bert.blocks(x, mask=mask, return_hidden=True)
            students = torch.stack(
                [s(h) for s, h in zip(self.students, out.hidden[1:-1])]
            )  # (L-1, B, N)
            logits = self._teacher_logits(out.last_hidden)
            # the [CLS] states the students read (B, L-1, D): distill's cache
            cls = torch.stack([h[:, 0] for h in out.hidden[1:-1]], 1)
            extra = {"students": students, "cls": cls}
            loss = distill_loss(students, logits)
        else:
            if (
                isinstance(speed, bool)
                or not isinstance(speed, (int, float))
                or not (0 <= speed <= 1)
            ):
                raise ValueError(f"speed must be a number in [0, 1], got {speed!r}")
            answers = torch.empty(len(ids), self.teacher.n_labels, device=x.device)

            def exit_rule(layer, h, rows):  # after block `layer` (1 = the first)
                student_logits = self.students[layer - 1](h)  # (B', N)
                stop = normalized_entropy(student_logits) < speed
                answers[rows[stop]] = student_logits[stop].to(answers.dtype)
                return stop

            out = bert.blocks(x, mask=mask, exit_rule=exit_rule)
            exit_layer = out.extra["exit_layer"]
            last = exit_layer == self.config.n_layer  # the teacher answers these
            answers[last] = self._teacher_logits(out.last_hidden[last]).to(
                answers.dtype
            )
            logits, loss = answers, None
            extra = {
                "exit_layer": exit_layer,
                "uncertainty": normalized_entropy(answers),
            }
        if labels is not None:
            extra["correct"] = logits.argmax(-1) == labels
        return Output(logits, loss, extra=extra, last_hidden=out.last_hidden)


class _Cached(nn.Module):
    """The students on cached ``[CLS]`` states: the same loss as FastBert's forward."""

    def __init__(self, students: nn.ModuleList):
        super().__init__()
        self.students = students

    def forward(self, cls, teacher):  # (B, L-1, D), (B, N)
        logits = [s(cls[:, i : i + 1]) for i, s in enumerate(self.students)]
        return Output(None, distill_loss(logits, teacher))


def distill(model: FastBert, unlabelled: dict, steps: int, **kw):
    """Self-distillation: train ``model``'s students (backbone and teacher frozen) for
    ``steps`` on ``unlabelled`` (``ids``, ``segments``, ``valid``; no labels) with
    :func:`ptlm_lite.finetune.finetune` (``kw``: its ``batch_size``, ``lr``, ``seed``,
    ...). The frozen backbone's states never change, so they are computed once and
    the students train on them: the loss of ``model(**batch)``, for a fraction of the
    time. Returns the History. Chapter: ``chapters/fastbert.ipynb``."""
    from .finetune import finetune

    model.freeze_teacher()
    inputs = {k: unlabelled[k] for k in ("ids", "segments", "valid") if k in unlabelled}
    with torch.no_grad():
        out = model.eval()(**inputs)
    cached = {"cls": out.extra["cls"], "teacher": out.logits}
    history = finetune(_Cached(model.students), cached, steps, **kw)
    model.eval()
    return history


def classifier_weights(config, n_labels: int) -> int:
    """The matrix weights of one classifier (a student or the teacher): ``D·D + D·N``.
    Chapter: ``chapters/fastbert.ipynb``."""
    return config.d_model * config.d_model + config.d_model * n_labels


def flops_spent(config, n_tokens, exit_layer, n_labels: int) -> torch.Tensor:
    """Forward FLOPs each example spent (:func:`ptlm_lite.flops.per_token`): its
    ``exit_layer`` blocks over its own ``n_tokens`` real tokens (the cost of running
    it alone, padding not counted), plus one classifier on ``[CLS]`` per block it ran
    (students 1..k, or L-1 students and the teacher). ``n_tokens``, ``exit_layer``:
    (B,) integers. Chapter: ``chapters/fastbert.ipynb``."""
    n_tokens, exit_layer = torch.as_tensor(n_tokens), torch.as_tensor(exit_layer)
    if n_tokens.shape != exit_layer.shape or n_tokens.dim() != 1:
        raise ValueError(
            f"n_tokens and exit_layer must be (B,) of one length, got "
            f"{tuple(n_tokens.shape)} and {tuple(exit_layer.shape)}"
        )
    w = classifier_weights(config, n_labels)
    return torch.tensor(
        [
            # the classifiers run once per block on one position: w·k weights over
            # T tokens is w·k/T per token
            flops.per_token(config, t, layers=k, head=w * k / t, train=False) * t
            for t, k in zip(n_tokens.tolist(), exit_layer.tolist())
        ],
        dtype=torch.float64,
    )
