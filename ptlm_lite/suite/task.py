"""The suite's task: fixed splits, the majority and chance baselines, and the
span-extraction variant. See :mod:`ptlm_lite.suite`."""

from __future__ import annotations

import numbers

from collections import Counter
from dataclasses import dataclass, field

__all__ = [
    "Task",
    "SpanTask",
    "class_balance",
    "make_task",
    "make_span_task",
    "KINDS",
    "SURFACE_CONTROLS",
]

# The tasks that exist to be solved by the surface form, the contrast to the others:
# :func:`surface_baseline` must beat their majority share by far, and must not beat
# any other task's (``tests/test_suite.py`` checks both).
SURFACE_CONTROLS = ("kind_from_name", "kind_from_sentence", "span_qa")

KINDS = ("single", "pair", "choice")
TEST_SHARE = 0.3  # of each entity kind, held out of fine-tuning
N_CHOICES = 4


@dataclass(frozen=True)
class Task:
    """A fine-tuning task with fixed splits and its baselines.

    ``kind`` says what an example holds besides ``label`` (an int) and ``entity`` (whom
    it is about):

    * ``"single"``: ``text``; ``label`` indexes ``labels``;
    * ``"pair"``: ``a`` and ``b`` (two segments); ``label`` indexes ``labels``;
    * ``"choice"``: ``context`` and ``endings`` (``len(labels)`` candidates); ``label``
      is the position of the right one, and ``labels`` names the positions.

    Tasks that need pre-training also give ``evidence``: the sentence of the
    pre-training documents that states the answer. ``majority``: the test accuracy of
    the best constant answer (the largest share of one label in ``test``); ``chance``:
    the expected accuracy of uniform guessing, ``1 / len(labels)``.
    """

    name: str
    description: str
    kind: str
    labels: tuple[str, ...]
    train: list[dict] = field(repr=False)
    test: list[dict] = field(repr=False)
    needs_pretraining: bool
    majority: float
    chance: float

    @property
    def n_labels(self) -> int:
        """Classes of a single/pair task, candidates of a choice task."""
        return len(self.labels)

    @property
    def surface_control(self) -> bool:
        """A declared surface control (:data:`SURFACE_CONTROLS`): a task that exists to
        be solved by the input's form, the contrast to the others, never evidence that
        pre-training helps.
        """
        return self.name in SURFACE_CONTROLS

    @property
    def majority_label(self) -> int:
        """The most frequent label of the test split: always answering it scores
        ``majority``.
        """
        counts = Counter(e["label"] for e in self.test)
        return max(sorted(counts), key=counts.__getitem__)

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {self.kind!r}")

    def subset(self, n_train: int | None = None, n_test: int | None = None) -> "Task":
        """The first ``n_train`` / ``n_test`` examples of each split, with ``majority``
        recomputed (the splits are shuffled, so a prefix is a fair sample, and
        slot_filler's test is balanced in every block of four; for a quick run at tiny
        scale).
        """
        _prefix("n_train", n_train), _prefix("n_test", n_test)  # no slice from the end
        train, test = self.train[:n_train], self.test[:n_test]
        if not train or not test:
            raise ValueError(
                f"n_train and n_test must leave examples in both splits, got "
                f"{n_train}, {n_test}"
            )
        return make_task(
            self.name,
            self.kind,
            self.labels,
            {"train": train, "test": test},
            self.needs_pretraining,
            self.description,
        )

    def balance(self, split: str = "test") -> dict[str, float]:
        """Share of each label in ``split`` (``"train"`` or ``"test"``)."""
        return class_balance(self, split)

    def __repr__(self) -> str:
        need = (
            "needs pre-training" if self.needs_pretraining else "surface form suffices"
        )
        return (
            f"Task({self.name!r}, {self.kind}, {self.n_labels} labels, "
            f"{len(self.train)} train / "
            f"{len(self.test)} test, majority {self.majority:.1%}, chance "
            f"{self.chance:.1%}, {need})"
        )


def class_balance(task: Task, split: str = "test") -> dict[str, float]:
    """``{label name: share of the split}``, in the order of ``task.labels``."""
    if split not in ("train", "test"):
        raise ValueError(f"split must be 'train' or 'test', got {split!r}")
    examples = getattr(task, split)
    counts = Counter(e["label"] for e in examples)
    return {name: counts[i] / len(examples) for i, name in enumerate(task.labels)}


def make_task(name, kind, labels, out, needs_pretraining, description) -> Task:
    test = out["test"]
    shares = Counter(e["label"] for e in test)
    return Task(
        name=name,
        description=description,
        kind=kind,
        labels=tuple(labels),
        train=out["train"],
        test=test,
        needs_pretraining=needs_pretraining,
        majority=max(shares.values()) / len(test),
        chance=1 / len(labels),
    )


@dataclass(frozen=True, repr=False)
class SpanTask(Task):
    """A span-extraction task (``kind == "span"``): the answer is a span of a passage.

    An example holds ``question``, ``context`` (the passage), ``answer`` and
    ``answer_start`` (``context[answer_start:answer_start + len(answer)] == answer``),
    ``entity``, ``relation`` (which question) and ``label``, the index of that question
    in ``labels`` (so ``balance()`` gives the share of each question). The baselines
    are of exact match, not of a class: ``majority`` is the best constant answer string
    (the most frequent answer of the test split), ``chance`` a uniformly random span of
    the passage's whitespace-separated words. Token-level baselines (the most frequent
    answer position) need a tokenizer: :func:`ptlm_lite.spans.run_spans` adds them.
    """

    def __post_init__(self):
        if self.kind != "span":
            raise ValueError(f"a SpanTask has kind 'span', got {self.kind!r}")

    def __repr__(self) -> str:
        return (
            f"SpanTask({self.name!r}, {self.n_labels} question types, "
            f"{len(self.train)} train / {len(self.test)} test, best constant answer "
            f"{self.majority:.1%}, "
            f"chance {self.chance:.1%}, "
            + ("needs pre-training)" if self.needs_pretraining else "surface)")
        )

    @property
    def majority_label(self) -> int:
        raise TypeError(
            "a span task has no majority label: its constant baseline is an answer "
            "string (majority)"
        )

    def subset(self, n_train: int | None = None, n_test: int | None = None):
        """The first ``n_train`` / ``n_test`` examples, baselines recomputed."""
        _prefix("n_train", n_train), _prefix("n_test", n_test)  # no slice from the end
        train, test = self.train[:n_train], self.test[:n_test]
        if not train or not test:
            raise ValueError(
                f"n_train and n_test must leave examples in both splits, got "
                f"{n_train}, {n_test}"
            )
        return make_span_task(
            self.name,
            self.labels,
            train,
            test,
            self.needs_pretraining,
            self.description,
        )


def make_span_task(
    name, labels, train, test, needs_pretraining, description
) -> SpanTask:
    answers = Counter(e["answer"] for e in test)
    words = [len(e["context"].split()) for e in test]
    return SpanTask(
        name=name,
        description=description,
        kind="span",
        labels=tuple(labels),
        train=train,
        test=test,
        needs_pretraining=needs_pretraining,
        majority=max(answers.values()) / len(test),
        chance=sum(2 / (w * (w + 1)) for w in words) / len(test),
    )


def _prefix(name: str, n) -> None:
    """``n`` for :meth:`subset`: None (the whole split) or a positive int."""
    if n is not None and (
        isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 1
    ):
        raise ValueError(f"{name} must be None or a positive integer, got {n!r}")
