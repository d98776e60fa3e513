"""A synthetic world: a small knowledge graph, documents about it, and tasks with known
answers.

Real corpora cannot tell us whether a model *knows* a fact or how well it fine-tunes,
because nobody wrote the answers down. Here everything is generated from a seeded random
generator:

    entities  (people, cities, countries, organisations) with attributes (age, occupation, ...)
    relations (born_in, works_for, friend_of, located_in): the knowledge graph
    documents short English biographies with every entity and attribute phrase span annotated
    span QA   SQuAD-like questions on the documents, with the answer span attached
              (the labelled tasks of the chapters are ptlm_lite.suite's, built on this world)

Names are made of random syllables ("Toravi Quen", "Velmoor"), so no pretrained model
has seen them: whatever a model knows about them it learned here. Same seed, same world.

Used in the fine-tuning chapters (BERT heads, GPT input transformations), the knowledge
chapter (ERNIE-THU), MT-DNN and ERNIE 2.0 (multi-task) and GPT-3 (in-context learning).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

KINDS = ("person", "city", "country", "organisation")
RELATIONS = ("born_in", "works_for", "friend_of", "located_in")
OCCUPATIONS = (
    "baker",
    "teacher",
    "pilot",
    "doctor",
    "farmer",
    "painter",
    "engineer",
    "sailor",
    "lawyer",
    "musician",
    "gardener",
    "librarian",
)
COLOURS = ("red", "blue", "green", "yellow", "purple", "orange", "white", "black")
INDUSTRIES = (
    "shipping",
    "banking",
    "farming",
    "software",
    "mining",
    "publishing",
    "textiles",
)
CONTINENTS = ("the north", "the south", "the east", "the west")

_ONSETS = (
    "b",
    "d",
    "f",
    "g",
    "k",
    "l",
    "m",
    "n",
    "p",
    "r",
    "s",
    "t",
    "v",
    "z",
    "br",
    "dr",
    "kr",
    "th",
    "st",
    "qu",
    "sh",
)
_VOWELS = ("a", "e", "i", "o", "u", "ai", "ea", "ou")
_CODAS = ("", "", "n", "r", "l", "s", "th", "m")


@dataclass
class Entity:
    id: int
    name: str
    kind: str  # one of KINDS
    # e.g. {"age": 34, "occupation": "baker"}
    attributes: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Relation:
    head: int  # entity id
    relation: str  # one of RELATIONS
    tail: int


@dataclass(frozen=True)
class Span:
    """``text[start:end]`` is the mention; ``entity`` is set for entity mentions."""

    start: int
    end: int
    # an entity kind ("person", ...) or "phrase:<attribute>" (e.g. "phrase:occupation")
    label: str
    entity: int | None = None


@dataclass(frozen=True)
class Document:
    entity: int  # whom the document is about
    text: str
    spans: tuple[Span, ...]


class _Writer:
    """Builds a text piece by piece and records the span of every marked piece.

    Offsets are correct by construction: a span is recorded at the moment its text is
    appended.
    """

    def __init__(self):
        self.parts: list[str] = []
        self.length = 0
        self.spans: list[Span] = []

    def add(
        self, text: str, label: str | None = None, entity: int | None = None
    ) -> "_Writer":
        if label is not None:
            self.spans.append(Span(self.length, self.length + len(text), label, entity))
        self.parts.append(text)
        self.length += len(text)
        return self

    @property
    def text(self) -> str:
        return "".join(self.parts)


class World:
    """Entities, relations and generated text; build one with :func:`make_world`."""

    def __init__(self, seed: int, entities: list[Entity], relations: list[Relation]):
        self.seed = seed
        self.entities = entities
        self.relations = relations
        self._by_kind = {
            kind: [e for e in entities if e.kind == kind] for kind in KINDS
        }
        self._out: dict[tuple[int, str], list[int]] = {}
        for r in relations:
            self._out.setdefault((r.head, r.relation), []).append(r.tail)
        self.documents = [self._document(e) for e in entities]

    # -- the knowledge graph
    # -------------------------------------------------------------------

    def of_kind(self, kind: str) -> list[Entity]:
        if kind not in KINDS:
            raise ValueError(f"unknown kind {kind!r}; kind must be one of {KINDS}")
        return self._by_kind[kind]

    def related(self, entity: Entity, relation: str) -> list[Entity]:
        """Tails of ``relation`` starting at ``entity`` (e.g. the city a person was born
        in).
        """
        if relation not in RELATIONS:
            raise ValueError(
                f"unknown relation {relation!r}; relation must be one of {RELATIONS}"
            )
        return [self.entities[i] for i in self._out.get((entity.id, relation), [])]

    def one(self, entity: Entity, relation: str) -> Entity:
        return self.related(entity, relation)[0]

    def triples(self) -> list[tuple[str, str, str]]:
        """The graph as ``(head name, relation, tail name)`` triples (for ERNIE-THU's
        entity links).
        """
        return [
            (self.entities[r.head].name, r.relation, self.entities[r.tail].name)
            for r in self.relations
        ]

    def _rng(self, task: str, seed: int | None) -> random.Random:
        # Each task gets its own generator, so adding a task never changes another
        # task's data.
        return random.Random(f"{self.seed}/{task}/{0 if seed is None else seed}")

    # -- documents
    # -----------------------------------------------------------------------------

    def _mention(self, w: _Writer, e: Entity) -> _Writer:
        return w.add(e.name, e.kind, e.id)

    def _document(self, e: Entity) -> Document:
        w = _Writer()
        a = e.attributes
        if e.kind == "person":
            city = self.one(e, "born_in")
            org = self.one(e, "works_for")
            self._mention(w, e).add(" is a ").add(f"{a['age']}-year-old", "phrase:age")
            w.add(" ").add(a["occupation"], "phrase:occupation").add(". ")
            self._mention(w, e).add(" was born in ")
            self._mention(w, city).add(" and works for ")
            self._mention(w, org).add(". ")
            w.add("The favourite colour of ")
            self._mention(w, e).add(" is ").add(a["colour"], "phrase:colour").add(".")
            for friend in self.related(e, "friend_of"):
                w.add(" ")
                self._mention(w, e).add(" is a friend of ")
                self._mention(w, friend).add(".")
        elif e.kind == "city":
            self._mention(w, e).add(" is a ").add(a["size"], "phrase:size").add(
                " city in "
            )
            self._mention(w, self.one(e, "located_in")).add(".")
        elif e.kind == "country":
            self._mention(w, e).add(" is a country in ").add(
                a["region"], "phrase:region"
            ).add(".")
        else:
            self._mention(w, e).add(" is a ").add(a["industry"], "phrase:industry")
            w.add(" company based in ")
            self._mention(w, self.one(e, "located_in")).add(".")
        return Document(e.id, w.text, tuple(w.spans))

    def text(self) -> str:
        """All documents as one text (to train a tokenizer or a small LM on the world)."""
        return "\n".join(d.text for d in self.documents)

    # -- labelled tasks
    # ------------------------------------------------------------------------

    def span_qa(self, n: int = 200, seed: int | None = None) -> list[dict]:
        """SQuAD-like extractive QA: ``{"context", "question", "answer",
        "answer_start"}``.

        ``context[answer_start:answer_start + len(answer)] == answer`` always holds.
        Used in the BERT chapter (span start/end head).
        """
        rng = self._rng("span_qa", seed)
        questions = {
            "city": "Where was {} born?",
            "organisation": "Who does {} work for?",
            "phrase:occupation": "What is the occupation of {}?",
            "phrase:colour": "What is the favourite colour of {}?",
            "phrase:age": "How old is {}?",
        }
        person_docs = [
            d for d in self.documents if self.entities[d.entity].kind == "person"
        ]
        out = []
        for _ in range(_check_n(n)):
            doc = rng.choice(person_docs)
            label = rng.choice(list(questions))
            span = next(s for s in doc.spans if s.label == label)
            out.append(
                {
                    "context": doc.text,
                    "question": questions[label].format(self.entities[doc.entity].name),
                    "answer": doc.text[span.start : span.end],
                    "answer_start": span.start,
                }
            )
        return out


def _check_n(n: int) -> int:
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise ValueError(
            f"n (the number of examples) must be a positive integer, got {n!r}"
        )
    return n


def _name(rng: random.Random, syllables: int) -> str:
    word = "".join(rng.choice(_ONSETS) + rng.choice(_VOWELS) for _ in range(syllables))
    return (word + rng.choice(_CODAS)).capitalize()


def make_world(seed: int = 0, n_entities: int = 200) -> World:
    """Generate a world deterministically from ``seed``.

    About 60% people, 20% cities, 10% organisations and a few countries. Every person is
    born in a city and works for an organisation, every organisation and city is located
    in a city or country, and people have a few friends. ``make_world(0)`` takes a few
    milliseconds. Used in every fine-tuning chapter (BERT, GPT, MT-DNN, T5, ...).
    """
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise TypeError(f"seed must be an int, got {type(seed).__name__}")
    if not isinstance(n_entities, int) or n_entities < 20:
        raise ValueError(
            f"n_entities must be an integer >= 20 (enough for every kind and four "
            f"distinct cities per question), got {n_entities!r}"
        )
    rng = random.Random(seed)
    n_country = max(3, n_entities // 20)
    n_city = max(5, n_entities // 5)
    n_org = max(3, n_entities // 10)
    n_person = n_entities - n_country - n_city - n_org

    used: set[str] = set()

    def unique(make) -> str:
        while True:
            name = make()
            if name not in used:
                used.add(name)
                return name

    entities: list[Entity] = []
    relations: list[Relation] = []

    def new(kind: str, name: str, **attributes) -> Entity:
        e = Entity(len(entities), name, kind, attributes)
        entities.append(e)
        return e

    countries = [
        new(
            "country",
            unique(lambda: _name(rng, 2) + "ia"),
            region=rng.choice(CONTINENTS),
        )
        for _ in range(n_country)
    ]
    cities = []
    for _ in range(n_city):
        city = new(
            "city",
            unique(lambda: _name(rng, rng.choice((2, 3)))),
            size=rng.choice(("small", "large", "busy", "quiet")),
        )
        relations.append(Relation(city.id, "located_in", rng.choice(countries).id))
        cities.append(city)
    orgs = []
    for _ in range(n_org):
        org = new(
            "organisation",
            unique(lambda: _name(rng, 2) + rng.choice((" Ltd", " & Co", " Guild"))),
            industry=rng.choice(INDUSTRIES),
        )
        relations.append(Relation(org.id, "located_in", rng.choice(cities).id))
        orgs.append(org)
    people = []
    for _ in range(n_person):
        person = new(
            "person",
            unique(lambda: f"{_name(rng, 2)} {_name(rng, 1)}"),
            age=rng.randrange(18, 80),
            occupation=rng.choice(OCCUPATIONS),
            colour=rng.choice(COLOURS),
        )
        relations.append(Relation(person.id, "born_in", rng.choice(cities).id))
        relations.append(Relation(person.id, "works_for", rng.choice(orgs).id))
        people.append(person)
    friends: set[tuple[int, int]] = set()
    for person in people:  # friendship is symmetric, so store both directions
        friend = rng.choice(people)
        if friend.id != person.id and (person.id, friend.id) not in friends:
            friends |= {(person.id, friend.id), (friend.id, person.id)}
            relations.append(Relation(person.id, "friend_of", friend.id))
            relations.append(Relation(friend.id, "friend_of", person.id))
    return World(seed, entities, relations)
