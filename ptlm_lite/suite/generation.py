"""A generation task for the encoder-decoders of Part IV: write a person's one-line
summary from their biography.

    document                                                 summary
    "The favourite colour of Sourus Le is purple. Zeabre     "Sourus Le, a 52-year-old
     Zin is a 27-year-old doctor. Sourus Le was born in       musician, works for
     Krat and works for Hobel Guild. Sourus Le is a           Hobel Guild."
     52-year-old musician. Sourus Le is a friend of Zeabre
     Zin."

The document is the person's biography from the synthetic world with its sentences
shuffled and one **distractor** added at a random place: the age-and-occupation
sentence of one of their friends (of another person when they have none), so copying
"the first age in the text" is wrong as often as not. The summary copies four things:
the name, the age, the occupation and the employer. Every fact is in the input: this is
not a knowledge test but a test of reading and copying, which a denoising pre-training
teaches and which a random-weights encoder-decoder does not learn from the ~90 training
documents in the chapters' fine-tuning budget (``tests/test_seq2seq.py`` checks the
floor).

People, not examples, are split into train and test with the suite's entity split
(:func:`~ptlm_lite.suite.build.entity_split`), so a test summary is about a person no
fine-tuning example described. Scored per example with ROUGE
(:func:`ptlm_lite.seq2seq.rouge`).

Chapters: ``chapters/bart.ipynb``, ``chapters/t5.ipynb``, ``chapters/pegasus.ipynb``,
``chapters/mass.ipynb``.
"""

from __future__ import annotations

import random
import re

from .build import entity_split

__all__ = ["summaries", "summary_of"]


def _rng(world, what: str) -> random.Random:
    # one generator per task, as in build.py: adding a task changes no other task
    return random.Random(f"ptlm_lite.suite/{world.seed}/{what}")


def _sentences(text: str) -> list[str]:
    return re.split(r"(?<=\.) ", text)


def summary_of(world, person) -> str:
    """The one-line summary of ``person`` (an :class:`~ptlm_lite.data.world.Entity` of
    kind person): name, age, occupation, employer."""
    if getattr(person, "kind", None) != "person":
        raise ValueError(f"person must be a person entity of the world, got {person!r}")
    a = person.attributes
    org = world.one(person, "works_for")
    return (
        f"{person.name}, a {a['age']}-year-old {a['occupation']}, works for {org.name}."
    )


def summaries(world_seed: int = 0) -> dict[str, list[dict]]:
    """``{"train": [...], "test": [...]}`` of ``{"document": str, "summary": str,
    "person": str}`` for every person of ``make_world(world_seed)``, split by the
    suite's entity split. Same seed, same examples."""
    from ..data import make_world

    if isinstance(world_seed, bool) or not isinstance(world_seed, int):
        raise TypeError(f"world_seed must be an int, got {world_seed!r}")
    world = make_world(world_seed)
    split = entity_split(world)
    rng = _rng(world, "summaries")
    people = world.of_kind("person")
    docs = {d.entity: d.text for d in world.documents}
    out = {"train": [], "test": []}
    for person in people:
        sentences = _sentences(docs[person.id])
        friends = world.related(person, "friend_of")
        other = (
            rng.choice(friends)
            if friends
            else rng.choice([p for p in people if p is not person])
        )
        distractor = _sentences(docs[other.id])[0]  # "Y is a 27-year-old doctor."
        rng.shuffle(sentences)
        sentences.insert(rng.randrange(len(sentences) + 1), distractor)
        out[split[person.id]].append(
            {
                "document": " ".join(sentences),
                "summary": summary_of(world, person),
                "person": person.name,
            }
        )
    return out
