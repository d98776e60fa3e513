"""A generation task for the encoder-decoders of Part IV: write a person's one-line
summary from their biography.

    document                                                 summary
    "The favourite colour of Sourus Le is purple. Zeabre     "Sourus Le, a 52-year-old
     Zin is a 27-year-old doctor. Sourus Le was born in       musician, works for
     Krat and works for Hobel Guild. Sourus Le is a           Hobel Guild."
     52-year-old musician."

The document is the first three sentences of the person's biography in the synthetic
world (age and occupation, birthplace and employer, favourite colour), shuffled, with
one **distractor** added at a random place: the age-and-occupation
sentence of one of their friends (of another person when they have none), so copying
"the first age in the text" is wrong as often as not. The summary copies four things:
the name, the age, the occupation and the employer. Every fact is in the input: this is
not a knowledge test but a test of reading and copying, which a denoising pre-training
teaches. A random-weights encoder-decoder fine-tuned on the ~90 training documents
learns the template first ("X, a N-year-old J, works for Y.") and the copying later:
score it with :func:`facts_copied` (the share of the four facts stated), since ROUGE
gives a summary of the wrong person about half marks for the template's words.
:func:`constant_summary` is the task's floor: one training summary written for every
document, which copies a fact only where the test person happens to share it.

People, not examples, are split into train and test with the suite's entity split
(:func:`~ptlm_lite.suite.build.entity_split`), so a test summary is about a person no
fine-tuning example described. Scored per example by :func:`facts_copied`, with ROUGE
(:func:`ptlm_lite.seq2seq.rouge`) beside it.

Chapters: ``chapters/bart.ipynb``, ``chapters/t5.ipynb``, ``chapters/pegasus.ipynb``,
``chapters/mass.ipynb``.
"""

from __future__ import annotations

import random
import re

import numpy as np

from .build import entity_split

__all__ = [
    "FIELDS",
    "constant_summary",
    "facts_by_field",
    "facts_copied",
    "summaries",
    "summary_of",
    "summary_words",
]

# what a summary copies from the document
FIELDS = ("name", "age", "occupation", "employer")


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
    "person": str, "facts": {field: str}}`` for every person of
    ``make_world(world_seed)``, split by the suite's entity split. Same seed, same
    examples."""
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
        # the three sentences about the person (age and occupation; birthplace and
        # employer; colour), not the friendships: shorter inputs, the same facts
        sentences = _sentences(docs[person.id])[:3]
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
                "facts": {
                    "name": person.name,
                    "age": str(person.attributes["age"]),
                    "occupation": person.attributes["occupation"],
                    "employer": world.one(person, "works_for").name,
                },
            }
        )
    return out


def summary_words(text: str) -> list[str]:
    """The lower-cased runs of letters and digits of a summary, as the scorers read it:
    "52 - year - old" (a WordPiece decode) and "52-year-old" read the same. Counting
    them measures a written summary and its reference alike (chapters/mass.ipynb)."""
    return re.findall(r"[a-z0-9]+", text.lower())


def facts_by_field(predictions, examples) -> dict[str, np.ndarray]:
    """Per fact of :data:`FIELDS` (name, age, occupation, employer), 1 where the
    predicted summary states it and 0 where not, per example: ``{field: (N,)}``. A
    fact is stated when its words appear in order, side by side (case, spacing and
    punctuation ignored). :func:`facts_copied` is their mean; this says which facts a
    model copies (chapters/bart.ipynb)."""
    if isinstance(predictions, str):
        raise TypeError("predictions must be a list of strings")
    predictions, examples = list(predictions), list(examples)
    if len(predictions) != len(examples):
        raise ValueError(
            f"predictions ({len(predictions)}) and examples ({len(examples)}) must "
            "have the same length"
        )
    out = {f: np.zeros(len(predictions)) for f in FIELDS}
    for i, (pred, ex) in enumerate(zip(predictions, examples)):
        if not isinstance(pred, str):
            raise TypeError(f"predictions must hold strings, got {type(pred).__name__}")
        if not isinstance(ex, dict) or "facts" not in ex:
            raise TypeError("examples must be summaries() examples (with 'facts')")
        words = " " + " ".join(summary_words(pred)) + " "
        for f in FIELDS:
            out[f][i] = f" {' '.join(summary_words(ex['facts'][f]))} " in words
    return out


def facts_copied(predictions, examples) -> np.ndarray:
    """Per example, the share of the four facts (:data:`FIELDS`: name, age,
    occupation, employer) that the predicted summary states (:func:`facts_by_field`,
    averaged). A template with the wrong person scores 0 where ROUGE gives it about
    half ("a", "year", "old", "works", "for" are in every summary): use this as the
    task's score and ROUGE beside it.
    """
    return np.mean(list(facts_by_field(predictions, examples).values()), axis=0)


def constant_summary(train, test, candidates: int = 10) -> dict:
    """The floor of the task: the one summary a model that ignores its document would
    write every time, scored on ``test``.

    Chosen on ``train`` alone: of the first ``candidates`` training summaries, the one
    with the best mean ROUGE-L against all the training summaries (scoring every one
    against every one takes seconds). ``train`` and ``test``: :func:`summaries`
    examples. Returns ``{"text": the summary, "facts": (N,), "rouge1", "rouge2",
    "rougeL": (N,)}``, per test example, as a model's scores are. Chapters: MASS, BART,
    PEGASUS, T5 (each shows it beside its models).
    """
    from ..seq2seq import rouge

    train, test = list(train), list(test)
    if not train or not test:
        raise ValueError(
            f"train and test must be non-empty lists of summaries() examples, got "
            f"{len(train)} and {len(test)}"
        )
    if (
        isinstance(candidates, bool)
        or not isinstance(candidates, int)
        or candidates < 1
    ):
        raise ValueError(f"candidates must be a positive int, got {candidates!r}")
    refs = [e["summary"] for e in train]
    text = max(
        refs[:candidates],
        key=lambda s: rouge([s] * len(refs), refs, ("rougeL",))["rougeL"].mean(),
    )
    out = {"text": text, **rouge([text] * len(test), [e["summary"] for e in test])}
    out["facts"] = facts_copied([text] * len(test), test)
    return out
