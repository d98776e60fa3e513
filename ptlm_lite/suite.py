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

import random
import re
from collections import Counter
from dataclasses import dataclass, field
from functools import partial

__all__ = [
    "Task",
    "TASKS",
    "tasks",
    "get",
    "entity_split",
    "class_balance",
    "surface_baseline",
    "SURFACE_CONTROLS",
    "FILLER_TRAIN_SLOTS",
]

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
        recomputed (the splits are shuffled, so a prefix is a fair sample; for a quick
        run at tiny scale).
        """
        train, test = self.train[:n_train], self.test[:n_test]
        if not train or not test:
            raise ValueError(
                f"n_train and n_test must leave examples in both splits, got "
                f"{n_train}, {n_test}"
            )
        return _task(
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


# ----------------------------------------------------------------------------------
# Building the tasks from a world


def _rng(world, what: str) -> random.Random:
    # One generator per task (as in world.py): adding a task never changes another
    # task's data.
    return random.Random(f"ptlm_lite.suite/{world.seed}/{what}")


def entity_split(world, test_share: float = TEST_SHARE) -> dict[int, str]:
    """``{entity id: "train" | "test"}``: ``test_share`` of each kind is held out
    (seeded by the world's seed). Every task of the suite asks its test questions about
    test entities only.
    """
    if not 0 < test_share < 1:
        raise ValueError(f"test_share must be in (0, 1), got {test_share!r}")
    rng = _rng(world, "split")
    split = {}
    for kind in ("person", "city", "country", "organisation"):
        ids = [e.id for e in world.of_kind(kind)]
        rng.shuffle(ids)
        n_test = max(1, round(test_share * len(ids)))
        split.update(
            {i: ("test" if k < n_test else "train") for k, i in enumerate(ids)}
        )
    return split


def _sentences(world) -> dict[int, list[str]]:
    """Each entity's pre-training document as sentences (the split
    ``bert.world_documents`` uses).
    """
    return {d.entity: re.split(r"(?<=\.) ", d.text) for d in world.documents}


def _evidence(sentences: dict, entity, phrase: str) -> str:
    """The sentence of ``entity``'s document that contains ``phrase`` (the stated fact)."""
    for s in sentences[entity.id]:
        if phrase in s:
            return s
    raise RuntimeError(f"no sentence of {entity.name!r}'s document contains {phrase!r}")


# A fact slot: who it is about, how a question starts, the true values, how the document
# says it. ``answers(e)`` lists every true value (a person has several friends).
def _slots(world):
    tail = lambda rel: lambda e: [t.name for t in world.related(e, rel)]  # noqa: E731
    attr = lambda key: lambda e: [e.attributes[key]]  # noqa: E731
    return {
        "born_in": ("person", "{} was born in", tail("born_in"), "was born in {} "),
        "works_for": ("person", "{} works for", tail("works_for"), "works for {}."),
        "city_in": ("city", "{} is a city in", tail("located_in"), " city in {}."),
        "based_in": (
            "organisation",
            "{} is based in",
            tail("located_in"),
            "company based in {}.",
        ),
        "friend_of": (
            "person",
            "{} is a friend of",
            tail("friend_of"),
            "is a friend of {}.",
        ),
        "occupation": ("person", "{} works as a", attr("occupation"), "-year-old {}."),
        "colour": (
            "person",
            "The favourite colour of {} is",
            attr("colour"),
            "colour of {head} is {}.",
        ),
    }


def _permute_avoiding(rng, values: list, forbidden: list[set], fallback: list) -> list:
    """A random permutation ``out`` of ``values`` with ``out[i] not in forbidden[i]``:
    each value becomes a wrong answer exactly as often as it is a right one, so its
    frequency tells nothing.

    Shuffle, then repair each clash by swapping with a position where both sides are
    then allowed; a clash no swap can fix (a value that is right for most entities)
    draws from ``fallback``.
    """
    out = list(values)
    rng.shuffle(out)
    order = list(range(len(out)))
    for i in range(len(out)):
        if out[i] not in forbidden[i]:
            continue
        rng.shuffle(order)
        j = next(
            (
                j
                for j in order
                if out[j] not in forbidden[i] and out[i] not in forbidden[j]
            ),
            None,
        )
        if j is not None:
            out[i], out[j] = out[j], out[i]
        else:
            out[i] = rng.choice([v for v in fallback if v not in forbidden[i]])
    return out


def _facts(world, split, slot, rng, train_people=None):
    """``{"train": [(entity, right value)], "test": [...]}``: one true value per entity
    of the slot's kind (a person has several friends; one is drawn). With
    ``train_people``, a training entity's value must be a training person (friendship is
    symmetric: "A is a friend of B" is about B too).
    """
    kind, _, answers, _ = _slots(world)[slot]
    out = {"train": [], "test": []}
    for e in world.of_kind(kind):
        true = answers(e)
        if train_people is not None and split[e.id] == "train":
            true = [v for v in true if v in train_people]
        if true:
            out[split[e.id]].append((e, rng.choice(true)))
    return out


def _relation_check(world, split, sentences) -> Task:
    rng = _rng(world, "relation_check")
    slots = _slots(world)
    train_people = {e.name for e in world.of_kind("person") if split[e.id] == "train"}
    out = {"train": [], "test": []}
    for slot in ("born_in", "works_for", "city_in", "based_in", "friend_of"):
        kind, prompt, answers, says = slots[slot]
        facts = _facts(
            world, split, slot, rng, train_people if slot == "friend_of" else None
        )
        everyone = [v for part in facts.values() for _, v in part]
        for part, pairs in facts.items():
            # The false tails are the split's true tails, shuffled: each is as often
            # right as wrong
            wrongs = _permute_avoiding(
                rng,
                [v for _, v in pairs],
                [set(answers(e)) | {e.name} for e, _ in pairs],
                everyone,
            )
            for (e, right), wrong in zip(pairs, wrongs):
                evidence = _evidence(sentences, e, says.format(right, head=e.name))
                for b, label in ((right, 1), (wrong, 0)):
                    out[part].append(
                        {
                            "a": prompt.format(e.name),
                            "b": b,
                            "label": label,
                            "entity": e.name,
                            "relation": slot,
                            "evidence": evidence,
                        }
                    )
    for part in out.values():
        rng.shuffle(part)
    return _task(
        "relation_check",
        "pair",
        ("no", "yes"),
        out,
        needs_pretraining=True,
        description=(
            'Does the relation hold? Segment A names an entity and a relation ("X was born in", '
            '"X works for", "X is a city in", "X is based in", "X is a '
            'friend of"), segment B '
            "an entity of the right kind. One true and one false tail per "
            "entity (balanced); the "
            "false tails are the true tails of the same split, shuffled, so "
            "every tail is as often "
            "right as wrong. The answer is a fact of the pre-training "
            "documents, "
            "never stated in the input."
        ),
    )


def _fact_cloze(world, split, sentences) -> Task:
    rng = _rng(world, "fact_cloze")
    slots = _slots(world)
    out = {"train": [], "test": []}
    for slot in ("born_in", "works_for", "occupation", "colour", "city_in", "based_in"):
        kind, prompt, answers, says = slots[slot]
        facts = _facts(world, split, slot, rng)
        everyone = [v for part in facts.values() for _, v in part]
        for part, pairs in facts.items():
            # Each round of distractors is the split's right answers, shuffled: every
            # value is a candidate 4 times as often as it is right, whatever its
            # frequency
            endings = [[right] for _, right in pairs]
            for _ in range(N_CHOICES - 1):
                wrongs = _permute_avoiding(
                    rng, [v for _, v in pairs], [set(c) for c in endings], everyone
                )
                for c, wrong in zip(endings, wrongs):
                    c.append(wrong)
            for (e, right), candidates in zip(pairs, endings):
                out[part].append(
                    {
                        "context": prompt.format(e.name),
                        "endings": candidates,
                        "label": 0,
                        "entity": e.name,
                        "relation": slot,
                        "evidence": _evidence(
                            sentences, e, says.format(right, head=e.name)
                        ),
                    }
                )
    for part in out.values():  # the right ending goes to each position equally often
        rng.shuffle(part)
        for i, ex in enumerate(part):
            right, wrong = ex["endings"][0], ex["endings"][1:]
            rng.shuffle(wrong)
            pos = i % N_CHOICES
            ex["endings"] = wrong[:pos] + [right] + wrong[pos:]
            ex["label"] = pos
    return _task(
        "fact_cloze",
        "choice",
        tuple(str(i + 1) for i in range(N_CHOICES)),
        out,
        needs_pretraining=True,
        description=(
            'Fact cloze with four candidates: "X was born in", "X works for", "X works as a", '
            '"The favourite colour of X is", "X is a city in", "X is '
            'based in", each followed by '
            "the true value and three others of the same kind: the split's "
            "right answers, "
            "shuffled, so every value is a candidate four times as often as "
            "it is right. The "
            "right position is balanced. The answer is a fact of the "
            "pre-training documents, "
            "never stated in the input."
        ),
    )


def _shuffled(world, name: str, out: dict) -> dict:
    """Each part of ``out`` in a seeded order of its own task, so that any prefix is a
    fair sample.
    """
    rng = _rng(world, name)
    for part in out.values():
        rng.shuffle(part)
    return out


def _favourite_colour(world, split, sentences) -> Task:
    from .data.world import COLOURS

    out = {"train": [], "test": []}
    for e in world.of_kind("person"):
        colour = e.attributes["colour"]
        out[split[e.id]].append(
            {
                "text": e.name,
                "label": COLOURS.index(colour),
                "entity": e.name,
                "evidence": _evidence(sentences, e, f"colour of {e.name} is {colour}."),
            }
        )
    return _task(
        "favourite_colour",
        "single",
        COLOURS,
        _shuffled(world, "favourite_colour", out),
        needs_pretraining=True,
        description=(
            "A person's favourite colour (8 classes) from the name alone. Each "
            "document says it "
            'once ("The favourite colour of X is green."); the colour was '
            "drawn independently of "
            "the name, so only a model that read the documents can know it. "
            "Not balanced: "
            "compare with the majority share."
        ),
    )


# The slot filler. Colours and occupations differ in form: every occupation ends in
# "-er", "-or", "-ot" or "-ian" and no colour does, and occupations are longer (2-3 word
# pieces for a colour, 3-5 for an occupation, in both book tokenizers). No choice of
# the world's 20 words hides that, so any fine-tuning question with a colour and an
# occupation would teach the form of each kind, and a model with random weights would
# carry that over to the test's unseen words. Fine-tuning therefore asks the same kind
# of question about *other* slots of the same documents (a person's birthplace,
# employer and friends: a city, an organisation, a person), and the test asks about the
# colour and occupation slots, whose words and contexts fine-tuning never shows.
# Fine-tuning teaches the format ("pick the ending that fits the slot"); which ending
# fits a colour or occupation slot only pre-training can have taught.
FILLER_TRAIN_SLOTS = ("born_in", "works_for", "friend_of")
FILLER_TEST_SLOTS = ("colour", "occupation")
# training questions per pair of training slots, each asked in both slots
FILLER_TRAIN_PAIRS = 10
# each (colour, occupation, slot) test question asked about this many people
FILLER_COPIES = 2


def _slot_filler(world, split, sentences) -> Task:
    from .data.world import COLOURS, OCCUPATIONS

    rng = _rng(world, "slot_filler")
    people = world.of_kind("person")

    def born_in(p):
        return world.related(p, "born_in")[0].name

    prompts = {
        "colour": lambda p: f"The favourite colour of {p.name} is",
        "occupation": lambda p: f"{p.name} is a {p.attributes['age']}-year-old",
        "born_in": lambda p: f"{p.name} was born in",
        "works_for": lambda p: f"{p.name} was born in {born_in(p)} and works for",
        "friend_of": lambda p: f"{p.name} is a friend of",
    }
    holds = {
        "colour": lambda p: [p.attributes["colour"]],
        "occupation": lambda p: [p.attributes["occupation"]],
        "born_in": lambda p: [t.name for t in world.related(p, "born_in")],
        "works_for": lambda p: [t.name for t in world.related(p, "works_for")],
        "friend_of": lambda p: [t.name for t in world.related(p, "friend_of")],
    }
    # a training slot's fillers: the values it takes in the documents, training
    # entities only
    train_names = {e.name for e in world.entities if split[e.id] == "train"}
    fillers = {
        slot: sorted({v for p in people for v in holds[slot](p)} & train_names)
        for slot in FILLER_TRAIN_SLOTS
    }

    def evidence(slot: str, word: str) -> str:
        """The first pre-training sentence where ``word`` fills ``slot`` (someone's
        document).
        """
        p = next((p for p in people if word in holds[slot](p)), None)
        if p is None:
            raise RuntimeError(
                f"no document of world {world.seed} has {word!r} as a {slot}"
            )
        return _evidence(sentences, p, f"{prompts[slot](p)} {word}")

    def question(slot, right, wrong, askable):
        p = rng.choice(askable)
        return {
            "context": prompts[slot](p),
            "endings": [right, wrong],
            "label": 0,
            "entity": p.name,
            "slot": slot,
            "evidence": evidence(slot, right),
        }

    out = {"train": [], "test": []}
    askable = {
        part: [p for p in people if split[p.id] == part] for part in ("train", "test")
    }
    # fine-tuning: each pair of training slots, FILLER_TRAIN_PAIRS pairs of fillers,
    # each pair asked in both slots (every filler as often right as wrong)
    slots = FILLER_TRAIN_SLOTS
    for i, a in enumerate(slots):
        for b in slots[i + 1 :]:
            for _ in range(FILLER_TRAIN_PAIRS):
                x, y = rng.choice(fillers[a]), rng.choice(fillers[b])
                for slot, right, wrong in ((a, x, y), (b, y, x)):
                    out["train"].append(question(slot, right, wrong, askable["train"]))
    # the test: every colour with every occupation, in both slots
    for colour in COLOURS:
        for occupation in OCCUPATIONS:
            for slot, right, wrong in (
                ("colour", colour, occupation),
                ("occupation", occupation, colour),
            ):
                for _ in range(FILLER_COPIES):
                    out["test"].append(question(slot, right, wrong, askable["test"]))
    for part in out.values():
        rng.shuffle(part)
        # the right ending goes to each position equally often
        for i, ex in enumerate(part):
            if i % 2:
                ex["endings"], ex["label"] = ex["endings"][::-1], 1
    return _task(
        "slot_filler",
        "choice",
        ("1", "2"),
        out,
        needs_pretraining=True,
        description=(
            'Which word fills the slot? "The favourite colour of X is" or "X is a '
            '36-year-old", then two endings: a colour and an occupation. Fine-tuning '
            "never shows a colour or an occupation, nor these two contexts: it asks "
            'the same kind of question about other slots ("X was born in", "X was '
            'born in Y and works for", "X is a friend of": a city, an organisation, a '
            "person), so it teaches the format and nothing about colours or "
            "occupations, whose forms give their kind away (every occupation ends in "
            '"-er", "-or", "-ot" or "-ian" and is longer). The pre-training documents '
            "put each test word in its slot 5 to 20 times. Each test question pairs "
            "one of the 8 colours with one of the 12 occupations in both slots, so "
            "every word is as often right as wrong, and the right position is "
            "balanced. The right ending is the kind of word the slot takes, not "
            "necessarily that person's own colour or occupation."
        ),
    )


_KIND_DESCRIPTIONS = {
    "kind_from_name": (
        "Entity typing from the name alone. The world's names give the kind away "
        "(countries end "
        'in "-ia", organisations in "Ltd", "& Co" or "Guild", people have two '
        "words and "
        "cities one), so the surface form suffices. Not balanced (about 65% people): "
        "compare "
        "with the majority share and read macro-F1."
    ),
    "kind_from_sentence": (
        "Which kind of entity is the sentence about? The first sentence of each "
        "document "
        "(the world's `classification` task, once per entity). The kind word "
        '("city", '
        '"country", "company", "-year-old") is in the input, so the surface form '
        "suffices and random weights learn it too. Not balanced (about 65% people): "
        "compare with the majority share "
        "and read macro-F1."
    ),
}


def _kind(name: str, world, split, sentences) -> Task:
    """The two surface tasks: an entity's kind from its name, or from its document's
    first sentence.
    """
    from .data.world import KINDS as ENTITY_KINDS

    out = {"train": [], "test": []}
    for e in world.entities:
        text = e.name if name == "kind_from_name" else sentences[e.id][0]
        out[split[e.id]].append(
            {"text": text, "label": ENTITY_KINDS.index(e.kind), "entity": e.name}
        )
    return _task(
        name,
        "single",
        ENTITY_KINDS,
        _shuffled(world, name, out),
        needs_pretraining=False,
        description=_KIND_DESCRIPTIONS[name],
    )


def _task(name, kind, labels, out, needs_pretraining, description) -> Task:
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


_BUILDERS = {
    "favourite_colour": _favourite_colour,
    "relation_check": _relation_check,
    "fact_cloze": _fact_cloze,
    "slot_filler": _slot_filler,
    "kind_from_name": partial(_kind, "kind_from_name"),
    "kind_from_sentence": partial(_kind, "kind_from_sentence"),
}
# the tasks that need pre-training first, then the surface contrasts
TASKS = tuple(_BUILDERS)


def tasks(world_seed: int = 0, names=None) -> dict[str, Task]:
    """The suite: ``{name: Task}`` built from ``make_world(world_seed)`` (the book
    pre-trains on world 0; another seed gives a world no pre-trained model has read).
    ``names`` picks a subset.
    """
    from .data import make_world

    names = TASKS if names is None else tuple(names)
    unknown = [n for n in names if n not in _BUILDERS]
    if unknown:
        raise ValueError(f"unknown task(s) {unknown}; the suite has {TASKS}")
    world = make_world(world_seed)
    split, sentences = entity_split(world), _sentences(world)
    return {n: _BUILDERS[n](world, split, sentences) for n in names}


def get(name: str, world_seed: int = 0) -> Task:
    """One task of the suite (see :data:`TASKS`)."""
    return tasks(world_seed, (name,))[name]


# ----------------------------------------------------------------------------------
# The surface baselines: what the input's form alone gives

# The tasks that exist to be solved by the surface form, the contrast to the others:
# :func:`surface_baseline` must beat their majority share by far, and must not beat
# any other task's (``tests/test_suite.py`` checks both).
SURFACE_CONTROLS = ("kind_from_name", "kind_from_sentence", "span_qa")
# the feature sets of :func:`surface_baseline`
SURFACE_FEATURES = ("ngrams", "length", "edges")


def _template(context: str) -> str:
    """What a surface model may condition a candidate on: the context's last word,
    digits blanked ("is", "0-year-old", "in", "for", ...): the slot, without the
    entity.
    """
    words = context.split()
    return re.sub(r"\d", "0", words[-1]) if words else ""


def _surface_tokens(
    text: str, features, ngrams: tuple[int, int], tokenizers: dict
) -> list[str]:
    """One field's surface features as strings (a bag for a linear model)."""
    out = []
    if "ngrams" in features:
        padded = f" {text} "  # spaces mark the start and end of the field
        out += [
            "g:" + padded[i : i + n]
            for n in range(ngrams[0], ngrams[1] + 1)
            for i in range(len(padded) - n + 1)
        ]
    if "length" in features:
        out += [f"chars:{len(text)}", f"words:{len(text.split())}"]
        for name, (tok, prefix) in tokenizers.items():
            out.append(f"pieces[{name}]:{len(tok.encode(prefix + text))}")
    if "edges" in features:
        out += [f"first:{text[:1]}", f"last:{text[-1:]}", f"last2:{text[-2:]}"]
    return out


def _surface_bags(task: Task, examples, features, ngrams, tokenizers) -> list[list]:
    """One bag of features per scored item: an example of a single or pair task, an
    (example, candidate) of a choice task. The candidate's (or segment B's) features
    also come crossed with the context's template (:func:`_template`), so a linear
    model can learn "after *is*, a short word", which is the kind of shortcut a choice
    between two kinds of word offers.
    """
    bag = partial(
        _surface_tokens, features=features, ngrams=ngrams, tokenizers=tokenizers
    )

    def crossed(context, candidate):
        t = _template(context)
        own = bag(candidate)
        return (
            ["A|" + f for f in bag(context)]
            + ["B|" + f for f in own]
            + [f"{t}|" + f for f in own]
        )

    if task.kind == "single":
        return [bag(e["text"]) for e in examples]
    if task.kind == "pair":
        return [crossed(e["a"], e["b"]) for e in examples]
    return [crossed(e["context"], c) for e in examples for c in e["endings"]]


def surface_baseline(
    task: Task,
    ngrams: tuple[int, int] = (1, 4),
    C: float = 1.0,
    features=SURFACE_FEATURES,
    tokenizers: dict | None = None,
) -> dict:
    """Accuracy and macro-F1 on ``task.test`` of a model that sees only the input's
    form.

    Each text field (the sentence; segments A and B; context and candidate) becomes a
    bag of surface features, chosen among :data:`SURFACE_FEATURES`: ``"ngrams"``,
    character n-grams (spaces included and around the field, so a word count, a prefix
    and a suffix show); ``"length"``, characters, words and, for each of
    ``tokenizers`` (``{name: (tokenizer, prefix)}``), word pieces; ``"edges"``, the
    first and last characters. The candidate's (segment B's) features come crossed with
    the context's last word too (:func:`_surface_bags`), so "after *is*, the shorter
    word" is in reach. A logistic regression is trained on ``task.train``; a choice task
    scores each (context, candidate) pair as right or wrong and picks the best-scored
    candidate. The model is linear, so it can use a suffix, a length or how often a
    value is the answer, but not whether two particular entities belong together, which
    is exactly a fact. Returns ``{"accuracy", "macro_f1", "predictions"}``.
    """
    import numpy as np
    from sklearn.feature_extraction.text import CountVectorizer
    from sklearn.linear_model import LogisticRegression
    from threadpoolctl import threadpool_limits

    from .finetune import scores

    unknown = set(features) - set(SURFACE_FEATURES)
    if unknown or not features:
        raise ValueError(
            f"features must be a non-empty subset of {SURFACE_FEATURES}, got "
            f"{features!r}"
        )
    if task.kind not in KINDS:
        raise ValueError(f"no surface baseline for a {task.kind!r} task")
    tokenizers = tokenizers or {}
    bags = {
        part: _surface_bags(task, getattr(task, part), features, ngrams, tokenizers)
        for part in ("train", "test")
    }
    vectorizer = CountVectorizer(
        analyzer=lambda bag: bag, binary=True, lowercase=False
    ).fit(bags["train"])
    X_train, X_test = (vectorizer.transform(bags[p]) for p in ("train", "test"))
    # A tight tolerance: on a balanced pair task the gradient at zero is tiny, and the
    # default stops before the first step (a constant "baseline" would measure
    # nothing).
    clf = LogisticRegression(C=C, max_iter=5000, tol=1e-8)
    labels = np.array([e["label"] for e in task.test])
    # BLAS threads spinning on a busy 2-core machine: 50x slower
    with threadpool_limits(1):
        if task.kind == "choice":
            right = np.array(
                [
                    int(i == e["label"])
                    for e in task.train
                    for i in range(len(e["endings"]))
                ]
            )
            clf.fit(X_train, right)
            score = clf.decision_function(X_test).reshape(len(task.test), -1)  # (N, C)
            predictions = score.argmax(1)
        else:
            clf.fit(X_train, [e["label"] for e in task.train])
            predictions = clf.predict(X_test)
    return {
        **scores(predictions, labels, task.n_labels),
        "predictions": predictions.tolist(),
    }


# ----------------------------------------------------------------------------------
# Span extraction (SQuAD-style), added for ``chapters/spanbert.ipynb``. The tasks above
# are unchanged and :data:`TASKS` still lists them only; ``get("span_qa")`` builds this
# one, and ``ptlm_lite.spans.run_spans`` fine-tunes and scores it.
#
#     span_qa    "Where was Kotheth Sheal born?"                          surface
#                + "Kotheth Sheal was born in Drothobais and works for Brimo Guild."
#                -> "Drothobais" (a span of the passage)

SPAN_TASKS = ("span_qa",)
# The question for each kind of answer span: the templates of ``World.span_qa``.
SPAN_QUESTIONS = {
    "city": "Where was {} born?",
    "organisation": "Who does {} work for?",
    "phrase:occupation": "What is the occupation of {}?",
    "phrase:colour": "What is the favourite colour of {}?",
    "phrase:age": "How old is {}?",
}


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
            f"SpanTask({self.name!r}, {self.n_labels} questions, {len(self.train)} "
            f"train / {len(self.test)} test, best constant answer {self.majority:.1%}, "
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
        train, test = self.train[:n_train], self.test[:n_test]
        if not train or not test:
            raise ValueError(
                f"n_train and n_test must leave examples in both splits, got "
                f"{n_train}, {n_test}"
            )
        return _span_task(
            self.name,
            self.labels,
            train,
            test,
            self.needs_pretraining,
            self.description,
        )


def _span_task(name, labels, train, test, needs_pretraining, description) -> SpanTask:
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


def _span_qa(world, split, sentences) -> SpanTask:
    """One question per person and kind of answer; the passage is the sentence of the
    person's document that holds the answer (at most 48 tokens with the question, in
    the BERT chapters' WordPiece, so it fits the tiny models' pre-training rows).
    """
    out = {"train": [], "test": []}
    labels = tuple(SPAN_QUESTIONS)
    for doc in world.documents:
        e = world.entities[doc.entity]
        if e.kind != "person":
            continue
        start = 0
        bounds = []  # (start, end) of each sentence in doc.text
        for s in sentences[e.id]:
            bounds.append((start, start + len(s)))
            start += len(s) + 1
        for i, (label, question) in enumerate(SPAN_QUESTIONS.items()):
            span = next(s for s in doc.spans if s.label == label)
            a, b = next((a, b) for a, b in bounds if a <= span.start and span.end <= b)
            out[split[e.id]].append(
                {
                    "question": question.format(e.name),
                    "context": doc.text[a:b],
                    "answer": doc.text[span.start : span.end],
                    "answer_start": span.start - a,
                    "entity": e.name,
                    "relation": label,
                    "label": i,
                }
            )
    out = _shuffled(world, "span_qa", out)
    return _span_task(
        "span_qa",
        labels,
        out["train"],
        out["test"],
        needs_pretraining=False,
        description=(
            "SQuAD-style span extraction: a question about a person (where born, whom "
            "they work for, occupation, favourite colour, age) and the sentence of "
            "their document that answers it; the answer is a span of that sentence. "
            "A surface task: the answer stands in the passage, always next to the "
            "same words, so random weights can learn it too; what pre-training can "
            "add is a head start (fewer fine-tuning steps to the same exact match). "
            "Test questions are about test entities only."
        ),
    )


_BUILDERS["span_qa"] = _span_qa
