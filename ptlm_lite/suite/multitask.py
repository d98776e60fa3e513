"""Two auxiliary tasks for MT-DNN's task mixture (``chapters/mt_dnn.ipynb``): a pair
classification and a graded pair similarity (a regression), built from the same world
and the same entity split as the rest of the suite. See :mod:`ptlm_lite.suite`.

    task             input                                         answer
    slot_fit         "Kotheth Sheal was born in" + "Drothobais"    fits or not
    kind_similarity  "Drothobais" + "Veadumia"                     0, 0.5 or 1

Both are solved by the surface form (the world's names give their kind away) and are
therefore never evidence that pre-training helps; they exist to share an encoder with
the tasks that need it. Neither shows a colour or an occupation, so neither teaches
``slot_filler``'s test words: ``slot_fit`` asks about the same three training slots as
``slot_filler``'s fine-tuning split (:data:`~ptlm_lite.suite.FILLER_TRAIN_SLOTS`), about
every training person instead of 60 questions.
"""

from __future__ import annotations

import random

from .build import FILLER_TRAIN_SLOTS, entity_split, sentences_of
from .task import Task, make_task

__all__ = ["MT_TASKS", "SLOT_KINDS", "get", "slot_fit", "kind_similarity", "similarity"]

# built here, not listed in the suite's TASKS (``suite.get`` builds those): MT-DNN's
# auxiliary tasks are a mixture's, not evidence about pre-training
MT_TASKS = ("slot_fit", "kind_similarity")

# the kind of entity each training slot of slot_filler takes
SLOT_KINDS = {"born_in": "city", "works_for": "organisation", "friend_of": "person"}
_PROMPTS = {
    "born_in": "{} was born in",
    "works_for": "{} works for",
    "friend_of": "{} is a friend of",
}
# kind_similarity: "related" kinds (places; agents) score half
GROUPS = {"city": "place", "country": "place", "person": "agent"}
GROUPS["organisation"] = "agent"
SIMILARITY_LEVELS = ("unlike", "related", "same kind")


def _rng(world, what: str) -> random.Random:
    # one generator per task, as in build.py: adding a task changes no other task
    return random.Random(f"ptlm_lite.suite/{world.seed}/{what}")


def slot_fit(world, split, sentences) -> Task:
    """Pair classification: does segment B (an entity name) fit the slot of segment A
    (``"X was born in"``: a city; ``"X works for"``: an organisation; ``"X is a friend
    of"``: a person)? For every person of the split and every slot, the true filler
    (label 1) and a name of another kind from the same split (label 0).
    """
    rng = _rng(world, "slot_fit")
    out = {"train": [], "test": []}
    by_kind = {
        (kind, part): [e.name for e in world.of_kind(kind) if split[e.id] == part]
        for kind in sorted(set(SLOT_KINDS.values()))
        for part in ("train", "test")
    }
    for p in world.of_kind("person"):
        part = split[p.id]
        for slot in FILLER_TRAIN_SLOTS:
            kind = SLOT_KINDS[slot]
            right = [t.name for t in world.related(p, slot) if split[t.id] == part]
            if not right:
                continue
            other = rng.choice(
                [k for k in sorted(set(SLOT_KINDS.values())) if k != kind]
            )
            for b, label in (
                (rng.choice(right), 1),
                (rng.choice(by_kind[other, part]), 0),
            ):
                out[part].append(
                    {
                        "a": _PROMPTS[slot].format(p.name),
                        "b": b,
                        "label": label,
                        "entity": p.name,
                        "slot": slot,
                    }
                )
    for part in out.values():
        rng.shuffle(part)
    return make_task(
        "slot_fit",
        "pair",
        ("no", "yes"),
        out,
        needs_pretraining=False,
        description=(
            'Does the name fit the slot? Segment A is "X was born in", "X works '
            'for" or "X is a friend of" (the training slots of slot_filler), segment '
            "B the true filler (a city, an organisation, a person) or a name of "
            "another kind (balanced). The names' form gives their kind away: a "
            "surface task, for MT-DNN's mixture."
        ),
    )


def similarity(a, b) -> int:
    """kind_similarity's level of two entities: 2 (same kind), 1 (both places or both
    agents), 0 (unlike)."""
    if a.kind == b.kind:
        return 2
    return 1 if GROUPS[a.kind] == GROUPS[b.kind] else 0


def kind_similarity(world, split, sentences) -> Task:
    """Graded pair similarity (STS-B's role, a regression on ``label / 2``): two
    entity names of the split; 1 if they are of the same kind, 0.5 if both are places
    (city, country) or both agents (person, organisation), 0 otherwise. Each level is a
    third of the pairs.
    """
    rng = _rng(world, "kind_similarity")
    out = {"train": [], "test": []}
    for part in out:
        ents = [e for e in world.entities if split[e.id] == part]
        for e in ents:  # one pair of each level per entity
            for level in (2, 1, 0):
                f = rng.choice(
                    [o for o in ents if o is not e and similarity(e, o) == level]
                )
                out[part].append(
                    {"a": e.name, "b": f.name, "label": level, "entity": e.name}
                )
        rng.shuffle(out[part])
    return make_task(
        "kind_similarity",
        "pair",
        SIMILARITY_LEVELS,
        out,
        needs_pretraining=False,
        description=(
            "How alike are two names' kinds? 1 (same kind), 0.5 (both places: city "
            "and country; or both agents: person and organisation), 0 (unlike); the "
            "label is the level, the regression target label / 2. One pair of each "
            "level per entity of the split. A surface task, for MT-DNN's mixture."
        ),
    )


def get(name: str, world_seed: int = 0) -> Task:
    """One of :data:`MT_TASKS`, built from ``make_world(world_seed)`` with the suite's
    entity split."""
    from ..data import make_world

    builders = {"slot_fit": slot_fit, "kind_similarity": kind_similarity}
    if name not in builders:
        raise ValueError(f"name must be one of {MT_TASKS}, got {name!r}")
    world = make_world(world_seed)
    return builders[name](world, entity_split(world), sentences_of(world))
