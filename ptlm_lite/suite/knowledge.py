"""A knowledge-driven task for ERNIE (Tsinghua) (``chapters/ernie_thu.ipynb``):
relation classification whose answer is a fact of the world's graph that the input does
not state. Built from the same world and the same entity split as the rest of the
suite (see :mod:`ptlm_lite.suite`).

    task            input                              answer
    relation_type   "Kotheth Sheal and Drothobais."    born_in, works_for, friend_of
                                                       or none

Each person of the split is paired with a true tail of each of three relations (a city
it was born in, the organisation it works for, a friend) and with a wrong one of the
same kind: another person's true tail of that relation in the same split, so every
tail is as often right as the relations make it. The names' form tells the kinds of
the pair, hence which relation it could be, but not whether it holds: a surface model
can do no better than the majority share ("none", half the examples). Only the graph
(or facts memorised in pre-training) says which pairs are related. A training example
never names a test person (friendship is symmetric).
"""

from __future__ import annotations

import random

from .build import entity_split, sentences_of
from .task import Task, make_task

__all__ = ["KNOWLEDGE_TASKS", "RELATIONS", "relation_type", "get"]

KNOWLEDGE_TASKS = ("relation_type",)
# relation -> the kind of its tail
RELATIONS = {"born_in": "city", "works_for": "organisation", "friend_of": "person"}


def relation_type(world, split, sentences=None) -> Task:
    """Relation classification over pairs named in a neutral sentence ``"A and B."``:
    ``none`` or the relation from person A to B (see the module docstring).
    Chapter: ``chapters/ernie_thu.ipynb``.
    """
    rng = random.Random(f"ptlm_lite.suite/{world.seed}/relation_type")
    labels = ("none",) + tuple(RELATIONS)
    people = world.of_kind("person")
    tails = {}  # (relation, part) -> the true tails drawn, in order
    picks = []
    for p in people:
        part = split[p.id]
        for rel in RELATIONS:
            true = [t for t in world.related(p, rel)]
            if part == "train":  # a training example never names a test entity
                true = [t for t in true if split[t.id] == "train"]
            if true:
                t = rng.choice(true)
                tails.setdefault((rel, part), []).append(t)
                picks.append((p, rel, t, part))
    out = {"train": [], "test": []}
    for p, rel, t, part in picks:
        true = {x.id for x in world.related(p, rel)} | {p.id}
        wrong = rng.choice([x for x in tails[rel, part] if x.id not in true])
        for tail, label in ((t, labels.index(rel)), (wrong, 0)):
            out[part].append(
                {
                    "text": f"{p.name} and {tail.name}.",
                    "label": label,
                    "entity": p.name,
                    "tail": tail.name,
                    "relation": rel,
                }
            )
    for part in out.values():
        rng.shuffle(part)
    return make_task(
        "relation_type",
        "single",
        labels,
        out,
        needs_pretraining=True,
        description=(
            'Relation classification: "A and B." names a person and a city, an '
            "organisation or another person; the label is the relation from A to B "
            "in the world's graph (born_in, works_for, friend_of) or none (half the "
            "examples). The kinds of the names give which relation is possible, "
            "never whether it holds."
        ),
    )


def get(name: str, world_seed: int = 0) -> Task:
    """A knowledge task (:data:`KNOWLEDGE_TASKS`) on ``make_world(world_seed)`` with
    the suite's entity split.
    Chapter: ``chapters/ernie_thu.ipynb``.
    """
    from ..data import make_world

    if name not in KNOWLEDGE_TASKS:
        raise ValueError(f"unknown task {name!r}; knowledge tasks: {KNOWLEDGE_TASKS}")
    world = make_world(world_seed)
    return relation_type(world, entity_split(world), sentences_of(world))
