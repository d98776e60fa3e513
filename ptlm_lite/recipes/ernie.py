"""ERNIE 1.0's pre-training data and its knowledge probe: spans carried to token units.

:func:`ptlm_lite.recipes.bert.pretraining_batches` tokenizes plain sentences, so it
knows nothing of the spans the data annotates. This recipe keeps them: each row is one
annotated text (a sentence of the synthetic world, or a speech of the plays), encoded
with offsets, and :func:`ptlm_lite.ernie.token_units` turns its character spans into
token units for each level. Padding and corruption are the package's own
(:func:`~ptlm_lite.data.pad_sequences`, :func:`~ptlm_lite.ernie.knowledge_mask`), and
training is :func:`ptlm_lite.recipes.bert.pretrain` with ``nsp=False``.

:func:`fact_probes` and :func:`cloze_accuracy` are the chapter's zero-shot knowledge
cloze: a fact sentence of the pre-training documents with its tail entity hidden whole,
and every entity of the right kind as a candidate.

Chapter: ``chapters/ernie_baidu.ipynb``.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, replace

import torch

from ..data import pad_sequences
from ..device import scores_on_device
from ..ernie import LEVELS, knowledge_mask, token_units

__all__ = [
    "Row",
    "world_sentences",
    "play_speeches",
    "encode_rows",
    "knowledge_batches",
    "Probe",
    "fact_probes",
    "frequency_guess",
    "Cloze",
    "cloze_accuracy",
]

TAIL_KINDS = ("city", "organisation", "country")  # the probed facts' answers
# with ``fact_probes(..., friends=True)`` a person's friends are probed too
FRIEND_KIND = "person"
# (head kind, tail kind) -> the relation a document sentence states (the suite's names)
RELATIONS = {
    ("person", "city"): "born_in",
    ("person", "organisation"): "works_for",
    ("city", "country"): "city_in",
    ("organisation", "city"): "based_in",
}
TEMPLATES = {  # the suite's prompts (ptlm_lite.suite), never a sentence of the world
    "born_in": "{} was born in ",
    "works_for": "{} works for ",
    "city_in": "{} is a city in ",
    "based_in": "{} is based in ",
    "friend_of": "{} is a friend of ",
}


def world_sentences(world) -> list[tuple[str, tuple]]:
    """The world's documents cut into sentences, each with its spans re-based:
    ``[(text, spans)]``. The cut is the one ``recipes.bert.world_documents`` makes.
    """
    out = []
    for doc in world.documents:
        start = 0
        for text in re.split(r"(?<=\.) ", doc.text):
            end = start + len(text)
            spans = tuple(
                replace(s, start=s.start - start, end=s.end - start)
                for s in doc.spans
                if start <= s.start and s.end <= end
            )
            out.append((text, spans))
            start = end + 1
    return out


def play_speeches(
    split: str = "train", n: int | None = None
) -> list[tuple[str, tuple]]:
    """Speeches of the plays as ``"SPEAKER: text"`` with the speaker's and every named
    character's or place's span (:func:`ptlm_lite.data.shakespeare.entities`), only
    those that name someone besides the speaker."""
    from ..data import shakespeare

    docs = shakespeare.entities(split, with_mentions_only=True)[:n]
    return [(d.text, d.spans) for d in docs]


@dataclass
class Row:
    """One encoded text: ``ids`` with [CLS] and [SEP], and per level its token units."""

    ids: list
    units: dict  # level -> list of unit ids (-1 = a token alone), aligned with ids
    text: str
    tokens: list


def encode_rows(tok, items, max_len: int = 32) -> list[Row]:
    """``[(text, spans)]`` -> :class:`Row` s, cut to ``max_len`` tokens. A span that the
    cut splits is dropped whole, so a unit is never half in the row; a special token
    inside a span ([UNK], which is never masked) is left out of its unit."""
    if not isinstance(max_len, int) or max_len < 3:
        raise ValueError(f"max_len must be an integer >= 3, got {max_len!r}")
    cls, sep = tok.special_ids["cls"], tok.special_ids["sep"]
    rows = []
    for text, spans in items:
        enc = tok.encode_with_offsets(text)
        keep = max_len - 2
        limit = enc.offsets[keep - 1][1] if len(enc.ids) > keep else len(text)
        spans = [s for s in spans if s.end <= limit]
        special = [i in tok.all_special_ids for i in enc.ids[:keep]]  # e.g. [UNK]
        units = {
            level: [-1]
            + [
                -1 if s else u
                for u, s in zip(token_units(enc.offsets[:keep], spans, level), special)
            ]
            + [-1]
            for level in LEVELS
        }
        rows.append(Row([cls] + enc.ids[:keep] + [sep], units, text, enc.tokens[:keep]))
    return rows


def knowledge_batches(
    tok, rows: list[Row], level: str, *, batch_size: int = 32, seed: int = 0, p=0.15
):
    """``step -> batch`` of ``rows`` masked at ``level`` (``"basic"``, ``"phrase"`` or
    ``"entity"``).

    The rows are read in epochs, each in a new order drawn from ``seed``, so every
    sentence is read equally often and the same ``seed`` reads the same rows in the
    same order at every level: only the masking differs. Batch fields: ``ids, valid,
    segments, targets`` (no ``nsp_labels``: pre-train with ``nsp=False``).
    """
    if level not in LEVELS:
        raise ValueError(f"level must be one of {LEVELS}, got {level!r}")
    if not rows or batch_size < 1:
        raise ValueError("rows must not be empty and batch_size must be >= 1")
    ids_ = tok.special_ids
    n = len(rows)

    def order(epoch: int) -> torch.Tensor:
        return torch.randperm(
            n, generator=torch.Generator().manual_seed(seed * 7919 + epoch)
        )

    def batch(step: int) -> dict:
        picks = [
            int(order(i // n)[i % n])
            for i in range(step * batch_size, (step + 1) * batch_size)
        ]
        ids, valid = pad_sequences([rows[i].ids for i in picks], pad_id=ids_["pad"])
        units, _ = pad_sequences([rows[i].units[level] for i in picks], pad_id=-1)
        g = torch.Generator().manual_seed(seed * 1_000_003 + step)
        m = knowledge_mask(
            ids,
            units,
            special_ids=tok.all_special_ids,
            mask_id=ids_["mask"],
            vocab_size=tok.vocab_size,
            p=p,
            generator=g,
        )
        segments = torch.zeros_like(ids)
        return {
            "ids": m.inputs,
            "valid": valid,
            "segments": segments,
            "targets": m.targets,
        }

    return batch


# ----------------------------------------------------------------------------------
# The knowledge cloze


@dataclass(frozen=True)
class Probe:
    """A fact sentence with its tail hidden: ``before [tail] after``."""

    before: str
    answer: str
    after: str
    kind: str  # the tail's kind: the candidates are every entity of it
    relation: str
    # other true answers (a person has several friends): left out of the candidates,
    # so that the probe has one right answer among them (a filtered ranking, as LAMA)
    others: tuple = ()


def fact_probes(world, form: str = "sentence", friends: bool = False) -> list[Probe]:
    """One probe per fact whose tail is a city, organisation or country: "X was born in
    C", "X works for O", "C is a city in K", "O is based in C" (the suite's relations);
    with ``friends=True`` also one per friendship sentence, "X is a friend of [Y]"
    (``friend_of``, a person among the persons; X's other friends are the probe's
    ``others``, left out of its candidates).

    ``form="sentence"``: the very sentence of the pre-training documents that states the
    fact ("X was born in C and works for O."), the tail hidden. ``form="template"``: the
    suite's shorter prompt ("X works for [tail]."), a sentence the documents never
    contain, stating the same fact.
    """
    if form not in ("sentence", "template"):
        raise ValueError(f"form must be 'sentence' or 'template', got {form!r}")
    probes, friend_of = [], {}
    if friends:  # friendship is symmetric: either person's document may state it
        for doc in world.documents:
            for text, spans in world_sentences(_single(doc)):
                people = [s.entity for s in spans if s.label == FRIEND_KIND]
                if " is a friend of " in text and len(people) == 2:
                    a, b = people
                    friend_of.setdefault(a, set()).add(b)
                    friend_of.setdefault(b, set()).add(a)
    for doc in world.documents:
        head = world.entities[doc.entity]
        for text, spans in world_sentences(_single(doc)):
            for s in spans:
                if s.entity == head.id:
                    continue
                others: tuple = ()
                if s.label in TAIL_KINDS:
                    relation = RELATIONS[head.kind, s.label]
                elif (
                    friends
                    and s.label == FRIEND_KIND
                    and s.entity in friend_of.get(head.id, ())
                ):
                    relation = "friend_of"
                    others = tuple(
                        sorted(
                            world.entities[e].name
                            for e in friend_of[head.id] - {s.entity}
                        )
                    )
                else:
                    continue
                before, after = text[: s.start], text[s.end :]
                if form == "template":
                    before, after = TEMPLATES[relation].format(head.name), "."
                probes.append(
                    Probe(
                        before, text[s.start : s.end], after, s.label, relation, others
                    )
                )
    return probes


class _single:  # a one-document view of a world, for world_sentences
    def __init__(self, doc):
        self.documents = [doc]


def frequency_guess(probes: list[Probe]) -> dict[str, str]:
    """Per relation and kind, the answer stated most often: always giving it is the
    frequency baseline (it knows the distribution of answers, not one fact)."""
    counts: dict = {}
    for p in probes:
        counts.setdefault((p.relation, p.kind), Counter())[p.answer] += 1
    return {k: c.most_common(1)[0][0] for k, c in counts.items()}


@dataclass(frozen=True)
class Cloze:
    """The cloze's result: ``accuracy``; per probe the answer's ``ranks`` among its
    candidates (1 = top; a tie counts against the answer) and the ``chosen`` candidate.
    """

    accuracy: float
    ranks: list
    chosen: list


@scores_on_device  # on the GPU if there is one
@torch.no_grad()
def cloze_accuracy(model, tok, probes: list[Probe], candidates: dict, batch_size=512):
    """Zero-shot knowledge cloze: how often each probe's answer scores highest among
    ``candidates[kind]``. Returns a :class:`Cloze`.

    A probe's ``others`` (further true answers) are left out of its candidates. For
    each candidate of k word pieces the tail becomes k [MASK]s and the candidate
    scores the mean log-probability of its pieces there (the mean, so that long names
    are not penalised for their length). The model reads the probe once per candidate,
    with nothing else in the sequence: no fine-tuning, no new head.
    """
    cls, sep, mask = (tok.special_ids[k] for k in ("cls", "sep", "mask"))
    model.eval()
    rows, wanted, owner = [], [], []  # wanted: the candidate's piece at each [MASK]
    for i, p in enumerate(probes):
        before, after = tok.encode(p.before), tok.encode(p.after)
        for c in candidates[p.kind]:
            if c in p.others:
                continue
            c_ids = tok.encode(c)
            rows.append([cls] + before + [mask] * len(c_ids) + after + [sep])
            wanted.append([-1] * (1 + len(before)) + c_ids + [-1] * (len(after) + 1))
            owner.append((i, c))
    scores, device = [], next(model.parameters()).device
    for a in range(0, len(rows), batch_size):
        ids, valid = pad_sequences(rows[a : a + batch_size], pad_id=tok.pad_id)
        want, _ = pad_sequences(wanted[a : a + batch_size], pad_id=-1)
        want, hidden = want.to(device), want.to(device) >= 0  # (N, T)
        logp = model(ids.to(device), valid=valid.to(device)).logits.log_softmax(-1)
        logp = logp.gather(-1, want.clamp(min=0)[..., None])[..., 0]  # (N, T)
        mean = (logp * hidden).sum(1) / hidden.sum(1)  # (N,): mean over the pieces
        scores += mean.tolist()
    right = {i: s for (i, c), s in zip(owner, scores) if c == probes[i].answer}
    ranks, best = [1] * len(probes), {}
    for (i, c), s in zip(owner, scores):
        if c != probes[i].answer and s >= right[i] - 1e-6:  # a tie counts against it
            ranks[i] += 1
        if i not in best or s > best[i][0]:
            best[i] = (s, c)
    accuracy = sum(r == 1 for r in ranks) / len(ranks)
    return Cloze(accuracy, ranks, [best[i][1] for i in range(len(probes))])
