"""One evaluation suite for the fine-tuning experiments of the encoder and decoder chapters.

A fine-tuning task can test a pre-training claim only if pre-training is what it needs. The
synthetic world's sentences state an entity's kind in words ("X is a large *city* in Y"), so
classifying them is solved from the surface: random weights reach ~100% in a hundred steps and
pre-training has nothing to add. The suite therefore asks about **facts**. The book pre-trains
every model on ``make_world(0)``'s documents (``bert.world_documents``, ``gpt.lm_corpus``); the
tasks below are built from the same world, and their inputs name an entity without stating the fact:

    task                 input                                       answer              needs
    favourite_colour     "Kotheth Sheal"                             orange (8 colours)   facts
    relation_check       "Kotheth Sheal was born in" + "Drothobais"  yes / no             facts
    fact_cloze           "Kotheth Sheal works for" + 4 candidates    the right one        facts
    kind_from_name       "Kotheth Sheal"                             person (4 kinds)     surface
    kind_from_sentence   "Kotheth Sheal is a 36-year-old sailor."    person (4 kinds)     surface

Entities, not examples, are split into train and test (70/30 per kind, seeded): a test question
is about an entity whose facts are in the pre-training documents but about which fine-tuning
saw nothing (friendship is symmetric, so a training example never names a test person as a
friend). Fine-tuning teaches the *format*; only pre-training can supply the test answers.

Two tasks are labelled ``needs_pretraining=False`` and kept as the contrast:
``kind_from_sentence`` has the kind word in the input, and ``kind_from_name`` is solved by the
world's naming scheme (countries end in "-ia", organisations in "Ltd", "& Co" or "Guild", people
have two words and cities one). :func:`surface_baseline` measures this per task: a logistic
regression on bags of character n-grams of the input, trained on the fine-tuning split. It
reaches ~100% on the two surface tasks and about the majority share on the three others.

Every task has fixed splits (same world seed, same examples), its ``majority`` share (the best
any constant answer does on the test split) and its ``chance`` (uniform guessing). The relation
and cloze tasks are balanced by construction; the others report their majority share. Negatives
and distractors are drawn in proportion to how often each value is a true answer, so "pick the
most frequent city" is no shortcut.

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

__all__ = ["Task", "TASKS", "tasks", "get", "entity_split", "class_balance", "surface_baseline"]

KINDS = ("single", "pair", "choice")
TEST_SHARE = 0.3  # of each entity kind, held out of fine-tuning
N_CHOICES = 4


@dataclass(frozen=True)
class Task:
    """A fine-tuning task with fixed splits and its baselines.

    ``kind`` says what an example holds besides ``label`` (an int) and ``entity`` (whom it is about):

    * ``"single"``: ``text``; ``label`` indexes ``labels``;
    * ``"pair"``: ``a`` and ``b`` (two segments); ``label`` indexes ``labels``;
    * ``"choice"``: ``context`` and ``endings`` (``len(labels)`` candidates); ``label`` is the
      position of the right one, and ``labels`` names the positions.

    Tasks that need pre-training also give ``evidence``: the sentence of the pre-training
    documents that states the answer. ``majority``: the test accuracy of the best constant answer
    (the largest share of one label in ``test``); ``chance``: the expected accuracy of uniform
    guessing, ``1 / len(labels)``.
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
    def majority_label(self) -> int:
        """The most frequent label of the training split (what a constant predictor learns)."""
        return Counter(e["label"] for e in self.train).most_common(1)[0][0]

    def balance(self, split: str = "test") -> dict[str, float]:
        """Share of each label in ``split`` (``"train"`` or ``"test"``)."""
        return class_balance(self, split)

    def __repr__(self) -> str:
        need = "needs pre-training" if self.needs_pretraining else "surface form suffices"
        return (f"Task({self.name!r}, {self.kind}, {self.n_labels} labels, {len(self.train)} train / "
                f"{len(self.test)} test, majority {self.majority:.1%}, chance {self.chance:.1%}, {need})")


def class_balance(task: Task, split: str = "test") -> dict[str, float]:
    """``{label name: share of the split}``, in the order of ``task.labels``."""
    if split not in ("train", "test"):
        raise ValueError(f"split must be 'train' or 'test', got {split!r}")
    examples = getattr(task, split)
    counts = Counter(e["label"] for e in examples)
    return {name: counts[i] / len(examples) for i, name in enumerate(task.labels)}


# ----------------------------------------------------------------------------------------------
# Building the tasks from a world


def _rng(world, what: str) -> random.Random:
    # One generator per task (as in world.py): adding a task never changes another task's data.
    return random.Random(f"ptlm_lite.suite/{world.seed}/{what}")


def entity_split(world, test_share: float = TEST_SHARE) -> dict[int, str]:
    """``{entity id: "train" | "test"}``: ``test_share`` of each kind is held out (seeded by the
    world's seed). Every task of the suite asks its test questions about test entities only."""
    if not 0 < test_share < 1:
        raise ValueError(f"test_share must be in (0, 1), got {test_share!r}")
    rng = _rng(world, "split")
    split = {}
    for kind in ("person", "city", "country", "organisation"):
        ids = [e.id for e in world.of_kind(kind)]
        rng.shuffle(ids)
        n_test = max(1, round(test_share * len(ids)))
        split.update({i: ("test" if k < n_test else "train") for k, i in enumerate(ids)})
    return split


def _sentences(world) -> dict[int, list[str]]:
    """Each entity's pre-training document as sentences (the split ``bert.world_documents`` uses)."""
    return {d.entity: re.split(r"(?<=\.) ", d.text) for d in world.documents}


def _evidence(sentences: dict, entity, phrase: str) -> str:
    """The sentence of ``entity``'s document that contains ``phrase`` (the stated fact)."""
    for s in sentences[entity.id]:
        if phrase in s:
            return s
    raise RuntimeError(f"no sentence of {entity.name!r}'s document contains {phrase!r}")


# A fact slot: who it is about, how a question starts, the true values, how the document says it.
# ``answers(world, e)`` lists every true value (a person has several friends).
def _slots(world):
    tail = lambda rel: (lambda e: [t.name for t in world.related(e, rel)])  # noqa: E731
    attr = lambda key: (lambda e: [e.attributes[key]])  # noqa: E731
    return {
        "born_in": ("person", "{} was born in", tail("born_in"), "was born in {} "),
        "works_for": ("person", "{} works for", tail("works_for"), "works for {}."),
        "city_in": ("city", "{} is a city in", tail("located_in"), " city in {}."),
        "based_in": ("organisation", "{} is based in", tail("located_in"), "company based in {}."),
        "friend_of": ("person", "{} is a friend of", tail("friend_of"), "is a friend of {}."),
        "occupation": ("person", "{} works as a", attr("occupation"), "-year-old {}."),
        "colour": ("person", "The favourite colour of {} is", attr("colour"), "colour of {head} is {}."),
    }


def _pool(world, slot) -> list[str]:
    """Every true value of ``slot`` over the world, with repeats: negatives and distractors drawn
    from it are as frequent as true answers, so a value's frequency tells nothing."""
    kind, _, answers, _ = _slots(world)[slot]
    return [v for e in world.of_kind(kind) for v in answers(e)]


def _draw(rng, pool, exclude, k):
    """``k`` distinct values from ``pool`` (a multiset), none in ``exclude``."""
    out = []
    candidates = [v for v in pool if v not in exclude]
    while len(out) < k:
        v = rng.choice(candidates)
        if v not in out:
            out.append(v)
    return out


def _relation_check(world, split, sentences) -> Task:
    rng = _rng(world, "relation_check")
    slots = _slots(world)
    train_people = {e.name for e in world.of_kind("person") if split[e.id] == "train"}
    out = {"train": [], "test": []}
    for slot in ("born_in", "works_for", "city_in", "based_in", "friend_of"):
        kind, prompt, answers, says = slots[slot]
        everyone = _pool(world, slot)
        for e in world.of_kind(kind):
            part = split[e.id]
            true, pool = answers(e), everyone
            if slot == "friend_of":
                pool = [v for v in pool if v != e.name]
                if part == "train":  # never name a test person: friendship is symmetric
                    true = [v for v in true if v in train_people]
                    pool = [v for v in pool if v in train_people]
                    if not true:
                        continue
            right = rng.choice(true)
            wrong = _draw(rng, pool, set(answers(e)), 1)[0]
            evidence = _evidence(sentences, e, says.format(right, head=e.name))
            for b, label in ((right, 1), (wrong, 0)):
                out[part].append({"a": prompt.format(e.name), "b": b, "label": label, "entity": e.name,
                                  "relation": slot, "evidence": evidence})
    for part in out.values():
        rng.shuffle(part)
    return _task(
        "relation_check", "pair", ("no", "yes"), out, needs_pretraining=True,
        description=("Does the relation hold? Segment A names an entity and a relation (\"X was born in\", "
                     "\"X works for\", \"X is a city in\", \"X is based in\", \"X is a friend of\"), segment B "
                     "an entity of the right kind. One true and one false tail per entity (balanced); "
                     "false tails are other entities' true tails. The answer is a fact of the "
                     "pre-training documents, never stated in the input."))


def _fact_cloze(world, split, sentences) -> Task:
    rng = _rng(world, "fact_cloze")
    slots = _slots(world)
    out = {"train": [], "test": []}
    for slot in ("born_in", "works_for", "occupation", "colour", "city_in", "based_in"):
        kind, prompt, answers, says = slots[slot]
        pool = _pool(world, slot)
        for e in world.of_kind(kind):
            right = answers(e)[0]
            wrong = _draw(rng, pool, {right}, N_CHOICES - 1)
            out[split[e.id]].append({
                "context": prompt.format(e.name), "endings": [right] + wrong, "label": 0, "entity": e.name,
                "relation": slot, "evidence": _evidence(sentences, e, says.format(right, head=e.name))})
    for part in out.values():  # the right ending goes to each position equally often
        rng.shuffle(part)
        for i, ex in enumerate(part):
            right, wrong = ex["endings"][0], ex["endings"][1:]
            rng.shuffle(wrong)
            pos = i % N_CHOICES
            ex["endings"] = wrong[:pos] + [right] + wrong[pos:]
            ex["label"] = pos
    return _task(
        "fact_cloze", "choice", tuple(str(i + 1) for i in range(N_CHOICES)), out, needs_pretraining=True,
        description=("Fact cloze with four candidates: \"X was born in\", \"X works for\", \"X works as a\", "
                     "\"The favourite colour of X is\", \"X is a city in\", \"X is based in\", each followed by "
                     "the true value and three others of the same kind, drawn as often as they are true "
                     "answers. The right position is balanced. The answer is a fact of the pre-training "
                     "documents, never stated in the input."))


def _favourite_colour(world, split, sentences) -> Task:
    from .data.world import COLOURS

    out = {"train": [], "test": []}
    for e in world.of_kind("person"):
        colour = e.attributes["colour"]
        out[split[e.id]].append({"text": e.name, "label": COLOURS.index(colour), "entity": e.name,
                                 "evidence": _evidence(sentences, e, f"colour of {e.name} is {colour}.")})
    return _task(
        "favourite_colour", "single", COLOURS, out, needs_pretraining=True,
        description=("A person's favourite colour (8 classes) from the name alone. Each document says it "
                     "once (\"The favourite colour of X is green.\"); the colour was drawn independently of "
                     "the name, so only a model that read the documents can know it. Not balanced: "
                     "compare with the majority share."))


def _kind_from_name(world, split, sentences) -> Task:
    from .data.world import KINDS as ENTITY_KINDS

    out = {"train": [], "test": []}
    for e in world.entities:
        out[split[e.id]].append({"text": e.name, "label": ENTITY_KINDS.index(e.kind), "entity": e.name})
    return _task(
        "kind_from_name", "single", ENTITY_KINDS, out, needs_pretraining=False,
        description=("Entity typing from the name alone. The world's names give the kind away (countries end "
                     "in \"-ia\", organisations in \"Ltd\", \"& Co\" or \"Guild\", people have two words and "
                     "cities one), so the surface form suffices. Not balanced (about 65% people): compare "
                     "with the majority share and read macro-F1."))


def _kind_from_sentence(world, split, sentences) -> Task:
    from .data.world import KINDS as ENTITY_KINDS

    out = {"train": [], "test": []}
    for e in world.entities:
        out[split[e.id]].append({"text": sentences[e.id][0], "label": ENTITY_KINDS.index(e.kind),
                                 "entity": e.name})
    return _task(
        "kind_from_sentence", "single", ENTITY_KINDS, out, needs_pretraining=False,
        description=("Which kind of entity is the sentence about? The first sentence of each document "
                     "(the world's `classification` task). The kind word (\"city\", \"country\", "
                     "\"company\", \"-year-old\") is in the input, so the surface form suffices: random "
                     "weights learn it. Not balanced (about 65% people): compare with the majority share "
                     "and read macro-F1."))


def _task(name, kind, labels, out, needs_pretraining, description) -> Task:
    test = out["test"]
    shares = Counter(e["label"] for e in test)
    return Task(name=name, description=description, kind=kind, labels=tuple(labels), train=out["train"],
                test=test, needs_pretraining=needs_pretraining,
                majority=max(shares.values()) / len(test), chance=1 / len(labels))


_BUILDERS = {
    "favourite_colour": _favourite_colour,
    "relation_check": _relation_check,
    "fact_cloze": _fact_cloze,
    "kind_from_name": _kind_from_name,
    "kind_from_sentence": _kind_from_sentence,
}
TASKS = tuple(_BUILDERS)  # the tasks that need pre-training first, then the surface contrasts


def tasks(world_seed: int = 0, names=None) -> dict[str, Task]:
    """The suite: ``{name: Task}`` built from ``make_world(world_seed)`` (the book pre-trains on
    world 0; another seed gives a world no pre-trained model has read). ``names`` picks a subset."""
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


# ----------------------------------------------------------------------------------------------
# The surface baseline: what the input's characters alone give


def _fields(task: Task, examples) -> list[list[str]]:
    """The text fields a surface model reads, one list per field."""
    if task.kind == "single":
        return [[e["text"] for e in examples]]
    if task.kind == "pair":
        return [[e["a"] for e in examples], [e["b"] for e in examples]]
    return [[e["context"] for e in examples for _ in e["endings"]],
            [end for e in examples for end in e["endings"]]]


def surface_baseline(task: Task, ngrams: tuple[int, int] = (1, 4), C: float = 1.0) -> dict:
    """Accuracy and macro-F1 on ``task.test`` of a model that sees only the input's characters.

    Each text field (the sentence; segments A and B; context and candidate) becomes a bag of
    character n-grams (spaces included, so a word count shows); a logistic regression is trained on
    ``task.train``. A choice task scores each (context, candidate) pair as right or wrong and
    picks the best-scored candidate. The model is linear in each field's n-grams, so it can use a
    suffix, a word count or how often a value is the answer, but not whether two fields belong
    together, which is exactly a fact. Returns ``{"accuracy", "macro_f1", "predictions"}``.
    """
    import numpy as np
    from scipy.sparse import hstack
    from sklearn.feature_extraction.text import CountVectorizer
    from sklearn.linear_model import LogisticRegression

    from .finetune import scores

    train_fields, test_fields = _fields(task, task.train), _fields(task, task.test)
    vectorizers = [CountVectorizer(analyzer="char", ngram_range=ngrams, binary=True, lowercase=False).fit(f)
                   for f in train_fields]
    X_train = hstack([v.transform(f) for v, f in zip(vectorizers, train_fields)]).tocsr()
    X_test = hstack([v.transform(f) for v, f in zip(vectorizers, test_fields)]).tocsr()
    clf = LogisticRegression(C=C, max_iter=2000)
    labels = np.array([e["label"] for e in task.test])
    if task.kind == "choice":
        right = np.array([int(i == e["label"]) for e in task.train for i in range(len(e["endings"]))])
        clf.fit(X_train, right)
        score = clf.decision_function(X_test).reshape(len(task.test), -1)  # (N, C)
        predictions = score.argmax(1)
    else:
        clf.fit(X_train, [e["label"] for e in task.train])
        predictions = clf.predict(X_test)
    return {**scores(predictions, labels, task.n_labels), "predictions": predictions.tolist()}
