"""BERT's fine-tuning heads: one small layer on the pre-trained encoder per task.

    [CLS] sentence A [SEP] sentence B [SEP] ──► Bert ──► pooled [CLS] ──► classifier
    [CLS] question [SEP] passage [SEP]      ──► Bert ──► every token  ──► start, end
    C × ([CLS] context [SEP] choice [SEP])  ──► Bert ──► C pooled     ──► one score each

Fine-tuning (Devlin et al., 2018, section 4) keeps the whole pre-trained encoder and
adds as little as possible: a linear layer on the pooled ``[CLS]`` for sentences and
pairs, two vectors that score every token as the start or the end of an answer span
(SQuAD), and one vector that scores each (context, choice) pair (SWAG).
``from_pretrained`` puts a fresh head on a copy of any model of the BERT family that
has a ``.bert`` encoder (BERT, BERT-WWM, ERNIE, SpanBERT, RoBERTa). A head built on an
encoder itself (``BertForSequenceClassification(bert, n_labels=3)``) shares it, not a
copy: :class:`MultiTask` puts several heads on one encoder (MT-DNN, ERNIE 2.0).

Chapter: ``chapters/bert.ipynb``; the fine-tuning loops are :mod:`ptlm_lite.finetune`
and :mod:`ptlm_lite.spans`.
"""

from __future__ import annotations

import torch
from torch import nn

from .bert import Bert, init_weights
from .config import Config
from .output import Output, cross_entropy
from .stack import Model

__all__ = [
    "MultiTask",
    "BertForSequenceClassification",
    "BertForSpanExtraction",
    "BertForMultipleChoice",
    "best_span",
    "mean_pool",
]


class _FineTuned(Model):
    """A task head on a (pre-trained) :class:`Bert`: built from a config (a new
    encoder), on an encoder (shared, not copied: ``bert`` or any model with a ``.bert``)
    or ``from_pretrained`` (a copy).
    """

    def __init__(self, encoder, seed: int | None = None):
        config = encoder if isinstance(encoder, Config) else _encoder(encoder).config
        super().__init__(config, seed)
        self.bert = Bert(config) if isinstance(encoder, Config) else _encoder(encoder)

    @classmethod
    def from_pretrained(cls, pretrained: nn.Module, **kwargs):
        """A fresh head on a copy of ``pretrained.bert`` (any model of this file has
        one).
        """
        encoder = pretrained.bert if hasattr(pretrained, "bert") else pretrained
        model = cls(encoder.config, **kwargs)
        model.bert.load_state_dict(encoder.state_dict())
        return model


class BertForSequenceClassification(_FineTuned):
    """Single sentences or pairs (sentiment, entailment): a linear layer on the pooled
    ``[CLS]``.

    ``forward(ids, segments=None, valid=None, labels=None)`` -> logits ``(B,
    n_labels)``.
    """

    def __init__(self, config, n_labels: int = 2, seed: int | None = None):
        super().__init__(config, seed)
        config = self.config
        self.n_labels = n_labels
        self.drop = nn.Dropout(config.dropout)
        self.classifier = nn.Linear(config.d_model, n_labels)
        self.classifier.apply(init_weights)

    def forward(
        self, ids, segments=None, valid=None, labels=None, return_attention=False
    ) -> Output:
        _, pooled, attentions = self.bert(
            ids, segments, valid, return_attention=return_attention
        )
        logits = self.classifier(self.drop(pooled))  # (B, n_labels)
        loss = None if labels is None else cross_entropy(logits, labels, name="labels")
        return Output(logits, loss, attentions, pooled=pooled)


class BertForSpanExtraction(_FineTuned):
    """SQuAD: question as sentence A, passage as sentence B; the answer is a span of B.

    Two learned vectors S and E score every token: start_i = S·h_i, end_j = E·h_j; the
    answer is the span i <= j maximising start_i + end_j (:func:`best_span`); training
    maximises the log-likelihood of the true start and end (the mean of two
    cross-entropies over positions). ``forward(ids, segments=None, valid=None,
    start=None, end=None)`` -> logits ``(B, T, 2)``; ``extra`` holds ``start_logits``
    and ``end_logits`` ``(B, T)``, -inf on padding.
    """

    def __init__(self, config, seed: int | None = None):
        super().__init__(config, seed)
        config = self.config
        self.span = nn.Linear(config.d_model, 2)  # rows: S and E
        self.span.apply(init_weights)

    def forward(
        self,
        ids,
        segments=None,
        valid=None,
        start=None,
        end=None,
        return_attention=False,
    ) -> Output:
        hidden, _, attentions = self.bert(
            ids, segments, valid, return_attention=return_attention
        )
        valid = ids != self.config.pad_id if valid is None else valid
        # (B, T, 2)
        logits = self.span(hidden).masked_fill(~valid[..., None], float("-inf"))
        start_logits, end_logits = logits.unbind(-1)
        loss = None
        if start is not None and end is not None:
            loss = (
                cross_entropy(start_logits, start, name="start")
                + cross_entropy(end_logits, end, name="end")
            ) / 2
        return Output(
            logits,
            loss,
            attentions,
            {"start_logits": start_logits, "end_logits": end_logits},
        )


def best_span(start_logits, end_logits, max_answer_len: int = 30, allowed=None):
    """The highest-scoring span ``i <= j < i + max_answer_len``: ``(start (B,), end
    (B,))``.

    ``allowed`` (``(B, T)`` bool, e.g. ``segments == 1``) restricts both ends to the
    passage.
    """
    B, T = start_logits.shape
    score = start_logits[:, :, None] + end_logits[:, None, :]  # (B, T_start, T_end)
    i, j = torch.arange(T)[:, None], torch.arange(T)[None, :]
    ok = (j >= i) & (j < i + max_answer_len)
    if allowed is not None:
        ok = ok & allowed[:, :, None] & allowed[:, None, :]
    flat = score.masked_fill(~ok, float("-inf")).flatten(1).argmax(-1)
    return flat // T, flat % T


class BertForMultipleChoice(_FineTuned):
    """SWAG: each of C choices is paired with the context (``[CLS] context [SEP] choice
    [SEP]``); one learned vector scores each pooled ``[CLS]``, and a softmax over the C
    scores picks one.

    ``forward(ids, segments=None, valid=None, labels=None)`` with ``ids`` of shape ``(B,
    C, T)`` -> logits ``(B, C)``.
    """

    def __init__(self, config, seed: int | None = None):
        super().__init__(config, seed)
        config = self.config
        self.drop = nn.Dropout(config.dropout)
        self.score = nn.Linear(config.d_model, 1)
        self.score.apply(init_weights)

    def forward(
        self, ids, segments=None, valid=None, labels=None, return_attention=False
    ) -> Output:
        if not isinstance(ids, torch.Tensor) or ids.dim() != 3:
            raise ValueError(
                f"ids must be (B, C, T): a batch of C choices each, got shape "
                f"{tuple(getattr(ids, 'shape', ()))}"
            )
        B, C, T = ids.shape
        flat = lambda t: None if t is None else t.reshape(B * C, T)  # noqa: E731
        _, pooled, attentions = self.bert(
            flat(ids), flat(segments), flat(valid), return_attention=return_attention
        )
        # (B, C): one score per choice
        logits = self.score(self.drop(pooled)).view(B, C)
        loss = None if labels is None else cross_entropy(logits, labels, name="labels")
        return Output(logits, loss, attentions)


def _encoder(source) -> Bert:
    encoder = getattr(source, "bert", source)
    if not isinstance(encoder, Bert):
        raise TypeError(
            "a head takes a Config (a new encoder), a Bert encoder or a model with a "
            f".bert encoder, got {type(source).__name__}"
        )
    return encoder


class MultiTask(nn.Module):
    """Several task heads on one encoder (MT-DNN's shared layers, ERNIE 2.0's tasks).

    ``MultiTask(bert, {"nli": BertForSequenceClassification(bert, n_labels=3), "qa":
    BertForSpanExtraction(bert)})``: every head must be built on ``bert`` itself, so
    one update through any head changes the encoder they all read.
    ``forward(task, **batch)`` runs that task's head: ``model("nli", ids=...,
    labels=...)``.
    """

    def __init__(self, encoder, heads: dict):
        super().__init__()
        self.encoder = _encoder(encoder)
        if not isinstance(heads, dict) or not heads:
            raise TypeError("heads must be a non-empty dict {task name: head}")
        for name, head in heads.items():
            if getattr(head, "bert", None) is not self.encoder:
                raise ValueError(
                    f"heads[{name!r}] does not share the encoder: build it on the "
                    f"encoder itself, e.g. BertForSequenceClassification(encoder, ...)"
                )
        self.heads = nn.ModuleDict(heads)

    @property
    def config(self):
        return self.encoder.config

    def forward(self, task: str, **batch) -> Output:
        if task not in self.heads:
            raise ValueError(f"task={task!r} is not one of {list(self.heads)}")
        return self.heads[task](**batch)


def mean_pool(hidden, valid):
    """The average of the real tokens' vectors: ``(B, T, D), (B, T) bool -> (B, D)``.

    The alternative to the ``[CLS]`` vector as a sentence embedding (Sentence-BERT's
    choice).
    """
    w = valid.to(hidden.dtype)[..., None]  # (B, T, 1)
    return (hidden * w).sum(1) / w.sum(1).clamp(min=1.0)
