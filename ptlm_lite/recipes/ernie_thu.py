"""ERNIE (Tsinghua)'s pre-training data: the world's sentences with their token-entity
alignments, masked for the MLM and corrupted for the dEA; and the models the chapter
compares.

Each row is one sentence of the synthetic world's documents (the cut of
:func:`ptlm_lite.recipes.ernie.world_sentences`), encoded with offsets; its entity
spans give the alignment (:func:`ptlm_lite.ernie_thu.span_alignment`: the entity at
the first token of its mention). :func:`batches` draws the rows in epochs (a new order
per epoch, from ``seed``), masks the tokens with BERT's 80/10/10 and corrupts the
alignments with :func:`~ptlm_lite.ernie_thu.dea_corrupt`, so a BERT pre-trained on
the same ``seed`` reads the same sentences with the same masks (it just ignores the
entity fields: :func:`bert_fields`).

Chapter: ``chapters/ernie_thu.ipynb``.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ..data import pad_sequences
from ..ernie_thu import dea_corrupt, span_alignment
from ..transe import graph_tensors, train_transe
from .bert import mlm_corruption
from .ernie import world_sentences

__all__ = [
    "EntityLinker",
    "Row",
    "encode_rows",
    "batches",
    "bert_fields",
    "entity_vectors",
    "linker",
]


class EntityLinker:
    """Links entity names in token ids (ERNIE used TAGME on raw text): the longest
    name whose word pieces start at a token and end at a word boundary. ``names[i]``
    is entity ``i``; ``link(ids)`` (B, T) -> (B, T) long, ``i + 1`` at the first token
    of a mention of entity ``i``, 0 elsewhere.
    Chapter: ``chapters/ernie_thu.ipynb``.
    """

    def __init__(self, tokenizer, names):
        self.table = {tuple(tokenizer.encode(n)): i + 1 for i, n in enumerate(names)}
        if len(self.table) != len(names):
            raise ValueError("names must be distinct and tokenize differently")
        self.longest = max(len(k) for k in self.table)
        vocab = range(tokenizer.vocab_size)
        self.inside = {i for i in vocab if tokenizer.id_to_token(i).startswith("##")}

    def __call__(self, ids: torch.Tensor) -> torch.Tensor:
        if not isinstance(ids, torch.Tensor) or ids.dim() != 2:
            raise TypeError("ids must be a (B, T) tensor of token ids")
        out = torch.zeros(ids.shape, dtype=torch.long)
        for b, row in enumerate(ids.tolist()):
            i = 0
            while i < len(row):
                for n in range(min(self.longest, len(row) - i), 0, -1):
                    hit = self.table.get(tuple(row[i : i + n]))
                    if hit and (i + n == len(row) or row[i + n] not in self.inside):
                        out[b, i], i = hit, i + n - 1
                        break
                i += 1
        return out.to(ids.device)


@dataclass
class Row:
    """One encoded sentence: ``ids`` with [CLS] and [SEP], ``entities`` aligned with
    them (entity id + 1 at a mention's first token, 0 elsewhere).
    Chapter: ``chapters/ernie_thu.ipynb``.
    """

    ids: list
    entities: list
    text: str


def encode_rows(tok, world, max_len: int = 32) -> list[Row]:
    """The world's sentences as :class:`Row` s, cut to ``max_len`` tokens (a mention
    whose first token is cut is dropped).
    Chapter: ``chapters/ernie_thu.ipynb``.
    """
    if not isinstance(max_len, int) or max_len < 3:
        raise ValueError(f"max_len must be an integer >= 3, got {max_len!r}")
    cls, sep = tok.special_ids["cls"], tok.special_ids["sep"]
    rows, keep = [], max_len - 2
    for text, spans in world_sentences(world):
        enc = tok.encode_with_offsets(text)
        ents = span_alignment(enc.offsets[:keep], spans)
        rows.append(Row([cls] + enc.ids[:keep] + [sep], [0] + ents + [0], text))
    return rows


def batches(tok, rows, n_entities: int, *, batch_size: int = 32, seed: int = 0):
    """``step -> batch`` of ``rows``: ``ids`` (MLM-masked), ``valid``, ``segments``,
    ``targets``, ``entities`` (dEA-corrupted), ``dea_targets``, ``candidates``.
    Chapter: ``chapters/ernie_thu.ipynb``.
    """
    if not rows or batch_size < 1:
        raise ValueError("rows must not be empty and batch_size must be >= 1")
    n, mlm = len(rows), mlm_corruption(tok)

    def batch(step: int) -> dict:
        picks = [
            int(
                torch.randperm(
                    n, generator=torch.Generator().manual_seed(seed + i // n)
                )[i % n]
            )
            for i in range(step * batch_size, (step + 1) * batch_size)
        ]
        ids, valid = pad_sequences([rows[i].ids for i in picks], pad_id=tok.pad_id)
        ents, _ = pad_sequences([rows[i].entities for i in picks], pad_id=0)
        g = torch.Generator().manual_seed(seed * 1_000_003 + step)
        m = mlm(ids, generator=g)
        d = dea_corrupt(ents, n_entities, generator=g)
        return {
            "ids": m.inputs,
            "valid": valid,
            "segments": torch.zeros_like(ids),
            "targets": m.targets,
            "entities": d.inputs,
            "dea_targets": d.targets,
            "candidates": d.candidates,
        }

    return batch


BERT_KEYS = ("ids", "valid", "segments", "targets")


def bert_fields(batch_fn):
    """The same batches for BERT: the token fields only.
    Chapter: ``chapters/ernie_thu.ipynb``.
    """
    return lambda step: {k: v for k, v in batch_fn(step).items() if k in BERT_KEYS}


def entity_vectors(world, *, dim: int = 32, steps: int = 300, seed: int = 0):
    """TransE on ``world``'s graph: ``(vectors (n_entities, dim), model, losses)``;
    row ``i`` is the world's entity ``i``.
    Chapter: ``chapters/ernie_thu.ipynb``.
    """
    triples, names, relations = graph_tensors(world)
    model, losses = train_transe(
        triples, len(names), len(relations), dim=dim, steps=steps, seed=seed
    )
    return model.entity.weight.detach().clone(), model, losses


def linker(tok, world) -> EntityLinker:
    """An :class:`EntityLinker` for every entity of ``world``.
    Chapter: ``chapters/ernie_thu.ipynb``.
    """
    return EntityLinker(tok, [e.name for e in world.entities])
