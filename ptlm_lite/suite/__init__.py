"""One evaluation suite for the fine-tuning experiments of the encoder and decoder
chapters.

A fine-tuning task can test a pre-training claim only if pre-training is what it needs.
The synthetic world's sentences state an entity's kind in words ("X is a large *city* in
Y"), so classifying them is solved from the surface: random weights reach ~100% in a
hundred steps and pre-training has nothing to add. The suite therefore asks about
**facts**, and about the **kinds of words** the documents put in each slot (what a tiny
model does learn). The book pre-trains every model on ``make_world(0)``'s documents
(``recipes.bert.world_documents``, ``recipes.gpt.lm_corpus``); the tasks below are built
from the same world, and their inputs name an entity without stating the fact:

    task                 input                                       answer              needs
    favourite_colour     "Kotheth Sheal"                             orange (8 colours)   facts
    relation_check       "Kotheth Sheal was born in" + "Drothobais"  yes / no             facts
    fact_cloze           "Kotheth Sheal works for" + 4 candidates    the right one        facts
    slot_filler          "The favourite colour of Kotheth Sheal is"  "red"                word kinds
                         + "red" / "farmer"
    kind_from_name       "Kotheth Sheal"                             person (4 kinds)     surface
    kind_from_sentence   "Kotheth Sheal is a 36-year-old sailor."    person (4 kinds)     surface

Entities, not examples, are split into train and test (70/30 per kind, seeded): a test
question is about an entity whose facts are in the pre-training documents but about
which fine-tuning saw nothing (friendship is symmetric, so a training example never
names a test person as a friend). Fine-tuning teaches the *format*; only pre-training
can supply the test answers.

The book's tiny models do not learn the facts: each is stated once, a name is 4 to 6
word pieces, and at tiny scale the three fact tasks stay at chance, pre-trained or not.
``slot_filler`` asks what the same documents do teach a tiny model: which *kind* of word
goes in a slot. A colour and an occupation compete for "The favourite colour of X is" or
"X is a 36-year-old". The two kinds differ in form (every occupation ends in "-er",
"-or", "-ot" or "-ian", no colour does, and occupations have more word pieces), so a
fine-tuning set with colours and occupations would teach a random-weights model the
form of each kind. Fine-tuning therefore asks the same kind of question about three
other slots of the person documents (:data:`FILLER_TRAIN_SLOTS`: born in a city, works
for an organisation, is a friend of a person) and never shows a colour, an occupation
or the two test contexts; the pre-training documents put each test word in its slot 5
to 20 times.

Three tasks are declared surface controls (:data:`SURFACE_CONTROLS`,
``Task.surface_control``; ``needs_pretraining=False``) and kept as the contrast:
``kind_from_sentence`` has the kind word in the input, ``kind_from_name`` is solved by
the world's naming scheme (countries end in "-ia", organisations in "Ltd", "& Co" or
"Guild", people have two words and cities one), and ``span_qa`` (below) has its answer
in the passage. :func:`surface_baseline` measures this per task: a logistic regression
on the input's form (character n-grams, lengths in characters and word pieces, first
and last characters; a candidate's features also crossed with its context's last
word), trained on the fine-tuning split. It solves ``kind_from_sentence``, beats the
majority share by far on ``kind_from_name``, and does no better than a constant answer
on the four others, with each feature set alone (``tests/test_suite.py`` checks both).

Every task has fixed splits (same world seed, same examples), its ``majority`` share
(the best any constant answer does on the test split) and its ``chance`` (uniform
guessing). The relation, cloze and slot-filler tasks are balanced by construction; the
others report their majority share. Negatives and distractors are the split's right
answers, shuffled: every city, company, colour or occupation is exactly as often right
as wrong, so "pick the most frequent city" is no shortcut.

Used with :mod:`ptlm_lite.finetune` in ``chapters/bert.ipynb`` and ``chapters/gpt.ipynb``::

    from ptlm_lite import suite
    task = suite.get("relation_check")
    task.train[0]   # {'a': '... was born in', 'b': '...', 'label': 1, 'entity': ..., 'evidence': ...}
"""

from __future__ import annotations

from functools import partial

from . import build, controls
from .build import FILLER_TRAIN_SLOTS, entity_split, sentences_of
from .controls import SPAN_TASKS
from .surface import SURFACE_FEATURES, surface_baseline
from .task import KINDS, SURFACE_CONTROLS, SpanTask, Task, class_balance

__all__ = [
    "Task",
    "SpanTask",
    "TASKS",
    "tasks",
    "get",
    "entity_split",
    "class_balance",
    "surface_baseline",
    "SURFACE_CONTROLS",
    "SURFACE_FEATURES",
    "FILLER_TRAIN_SLOTS",
    "SPAN_TASKS",
    "KINDS",
]

BUILDERS = {
    "favourite_colour": build.favourite_colour,
    "relation_check": build.relation_check,
    "fact_cloze": build.fact_cloze,
    "slot_filler": build.slot_filler,
    "kind_from_name": partial(controls.kind_task, "kind_from_name"),
    "kind_from_sentence": partial(controls.kind_task, "kind_from_sentence"),
    "span_qa": controls.span_qa,
}
# the tasks that need pre-training first, then the surface contrasts (span tasks apart)
TASKS = tuple(n for n in BUILDERS if n not in SPAN_TASKS)


def tasks(world_seed: int = 0, names=None) -> dict[str, Task]:
    """The suite: ``{name: Task}`` built from ``make_world(world_seed)`` (the book
    pre-trains on world 0; another seed gives a world no pre-trained model has read).
    ``names`` picks a subset.
    """
    from ..data import make_world

    names = TASKS if names is None else tuple(names)
    unknown = [n for n in names if n not in BUILDERS]
    if unknown:
        raise ValueError(f"unknown task(s) {unknown}; the suite has {TASKS}")
    world = make_world(world_seed)
    split, sentences = entity_split(world), sentences_of(world)
    return {n: BUILDERS[n](world, split, sentences) for n in names}


def get(name: str, world_seed: int = 0) -> Task:
    """One task of the suite (see :data:`TASKS`)."""
    return tasks(world_seed, (name,))[name]
