"""A synthetic world: a small knowledge graph, documents about it, and tasks with known
answers.

Real corpora cannot tell us whether a model *knows* a fact or how well it fine-tunes,
because nobody wrote the answers down. Here everything is generated from a seeded random
generator:

    entities  (people, cities, countries, organisations) with attributes (age, occupation, ...)
    relations (born_in, works_for, friend_of, located_in): the knowledge graph
    documents short English biographies with every entity and attribute phrase span annotated
    tasks     classification, entailment, span QA, multiple choice, text-to-text, mixtures and
              in-context-learning sequences, each with the right answer attached

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
ENTAILMENT_LABELS = ("entailment", "neutral", "contradiction")

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

    def classification(self, n: int = 200, seed: int | None = None) -> list[dict]:
        """Sentence classification: which kind of entity is this sentence about?

        ``{"text", "label"}`` with ``label`` an index into :data:`KINDS`. Used in the
        BERT fine-tuning chapter ([CLS] pooling) and GPT's input transformations.
        """
        rng = self._rng("classification", seed)
        out = []
        for _ in range(_check_n(n)):
            doc = rng.choice(self.documents)
            sentence = _first_sentence(doc.text)
            out.append(
                {"text": sentence, "label": KINDS.index(self.entities[doc.entity].kind)}
            )
        return out

    def entailment(self, n: int = 200, seed: int | None = None) -> list[dict]:
        """Premise/hypothesis pairs labelled entailment (0), neutral (1) or
        contradiction (2).

        The premise states two facts about a person; the hypothesis repeats one
        (entailment), changes its value (contradiction) or states a fact the premise
        does not mention (neutral). Used in the GPT and BERT fine-tuning chapters
        (MNLI-like).
        """
        rng = self._rng("entailment", seed)
        people = self.of_kind("person")
        facts = {
            "occupation": lambda p, v: f"{p.name} works as a {v}.",
            "colour": lambda p, v: f"The favourite colour of {p.name} is {v}.",
            "age": lambda p, v: f"{p.name} is {v} years old.",
        }
        choices = {
            "occupation": OCCUPATIONS,
            "colour": COLOURS,
            "age": tuple(range(18, 80)),
        }
        out = []
        for _ in range(_check_n(n)):
            p = rng.choice(people)
            shown = rng.sample(list(facts), 2)
            premise = " ".join(facts[k](p, p.attributes[k]) for k in shown)
            label = rng.randrange(3)
            if label == 0:
                key = rng.choice(shown)
                hypothesis = facts[key](p, p.attributes[key])
            elif label == 1:
                key = next(k for k in facts if k not in shown)
                hypothesis = facts[key](p, rng.choice(choices[key]))
            else:
                key = rng.choice(shown)
                wrong = rng.choice([v for v in choices[key] if v != p.attributes[key]])
                hypothesis = facts[key](p, wrong)
            out.append({"premise": premise, "hypothesis": hypothesis, "label": label})
        return out

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

    def multiple_choice(self, n: int = 200, seed: int | None = None) -> list[dict]:
        """SWAG-like: a context, four endings, the index of the one that fits.

        Choosing needs one step of reasoning across the context: the person works for an
        organisation, the organisation is in a city, so the office is in that city. Used
        in the BERT and GPT chapters (multiple-choice head).
        """
        rng = self._rng("multiple_choice", seed)
        cities = self.of_kind("city")
        out = []
        for _ in range(_check_n(n)):
            p = rng.choice(self.of_kind("person"))
            org = self.one(p, "works_for")
            city = self.one(org, "located_in")
            context = (
                f"{p.name} works for {org.name}. {org.name} is based in {city.name}. "
                f"Every morning, {p.name}"
            )
            wrong = rng.sample([c for c in cities if c.id != city.id], 3)
            endings = [f" travels to the office in {c.name}." for c in [city] + wrong]
            order = list(range(4))
            rng.shuffle(order)
            out.append(
                {
                    "context": context,
                    "endings": [endings[i] for i in order],
                    "label": order.index(0),
                }
            )
        return out

    def text_to_text(
        self, n: int = 200, seed: int | None = None
    ) -> list[tuple[str, str]]:
        """T5-style ``(source, target)`` string pairs; a task prefix says what to do.

        Prefixes: ``classify:``, ``nli premise: ... hypothesis: ...``, ``question: ...
        context: ...`` and ``triple:`` (sentence -> ``head | relation | tail``). Used in
        the T5 chapter.
        """
        rng = self._rng("text_to_text", seed)
        k = max(1, n // 4 + 1)
        pairs = [
            (f"classify: {ex['text']}", KINDS[ex["label"]])
            for ex in self.classification(k, rng.randrange(2**31))
        ]
        pairs += [
            (
                f"nli premise: {ex['premise']} hypothesis: {ex['hypothesis']}",
                ENTAILMENT_LABELS[ex["label"]],
            )
            for ex in self.entailment(k, rng.randrange(2**31))
        ]
        pairs += [
            (f"question: {ex['question']} context: {ex['context']}", ex["answer"])
            for ex in self.span_qa(k, rng.randrange(2**31))
        ]
        for _ in range(k):
            r = rng.choice(self.relations)
            head, tail = self.entities[r.head], self.entities[r.tail]
            sentence = _RELATION_SENTENCES[r.relation].format(head.name, tail.name)
            pairs.append(
                (f"triple: {sentence}", f"{head.name} | {r.relation} | {tail.name}")
            )
        rng.shuffle(pairs)
        return pairs[: _check_n(n)]

    def mixture(
        self,
        tasks: tuple[str, ...] | None = None,
        n_per_task: int = 100,
        seed: int | None = None,
    ) -> list[tuple[str, dict]]:
        """A shuffled multi-task mixture of ``(task name, example)``.

        ``tasks`` is any subset of :data:`TASKS` (default: all four labelled tasks).
        ERNIE 2.0's continual schedule is a sequence of growing mixtures:
        ``mixture(("classification",))``, then ``mixture(("classification",
        "entailment"))``, ... Used in the MT-DNN and ERNIE 2.0 chapters.
        """
        tasks = TASKS if tasks is None else tuple(tasks)
        unknown = [t for t in tasks if t not in TASKS]
        if unknown or not tasks:
            raise ValueError(
                f"unknown task(s) {unknown or tasks!r}; tasks must be a non-empty "
                f"subset of {TASKS}"
            )
        rng = self._rng("mixture", seed)
        out = [
            (t, ex)
            for t in tasks
            for ex in getattr(self, t)(n_per_task, rng.randrange(2**31))
        ]
        rng.shuffle(out)
        return out

    # -- in-context learning
    # -------------------------------------------------------------------

    def icl_pairs(self, family: str, rng: random.Random) -> tuple[str, str]:
        """One ``(input, output)`` pair of a task family (see :data:`ICL_FAMILIES`)."""
        people, words = (
            self.of_kind("person"),
            [e.name.split()[0].lower() for e in self.entities],
        )
        if family == "occupation":
            p = rng.choice(people)
            return p.name, p.attributes["occupation"]
        if family == "birthplace":
            p = rng.choice(people)
            return p.name, self.one(p, "born_in").name
        if family == "country":
            c = rng.choice(self.of_kind("city"))
            return c.name, self.one(c, "located_in").name
        if family == "reverse":
            w = rng.choice(words)
            return w, w[::-1]
        if family == "uppercase":
            w = rng.choice(words)
            return w, w.upper()
        if family == "first_letter":
            w = rng.choice(words)
            return w, w[0]
        if family == "successor":
            x = rng.randrange(100)
            return str(x), str(x + 1)
        if family == "antonym":
            return rng.choice(_ANTONYMS)
        raise ValueError(
            f"unknown task family {family!r}; family must be one of {ICL_FAMILIES}"
        )

    def icl_sequences(
        self,
        n: int = 100,
        shots: int = 4,
        families: tuple[str, ...] | None = None,
        exclude: tuple[str, ...] = (),
        seed: int | None = None,
    ) -> list[dict]:
        """Few-shot prompts: ``shots`` demonstrations of one family, then a query.

        Each item: ``{"family", "prompt", "answer"}`` where ``prompt`` looks like::

            toravi -> ivarot
            quen -> neuq
            velmoor ->

        and ``answer`` is ``" roomlev"``-style (without the leading space). Hold
        families out of training with ``exclude=`` and evaluate on them with
        ``families=`` to ask whether a model learns *to learn from demonstrations*, not
        just the tasks. Used in the GPT-3 chapter.
        """
        chosen = ICL_FAMILIES if families is None else tuple(families)
        bad = [f for f in tuple(chosen) + tuple(exclude) if f not in ICL_FAMILIES]
        if bad:
            raise ValueError(
                f"unknown task family {bad[0]!r}; families/exclude accept "
                f"{ICL_FAMILIES}"
            )
        chosen = tuple(f for f in chosen if f not in exclude)
        if not chosen:
            raise ValueError(
                "families minus exclude is empty; keep at least one family"
            )
        if not isinstance(shots, int) or shots < 0:
            raise ValueError(f"shots must be an integer >= 0, got {shots!r}")
        rng = self._rng("icl", seed)
        out = []
        for _ in range(_check_n(n)):
            family = rng.choice(chosen)
            demos = [self.icl_pairs(family, rng) for _ in range(shots)]
            query, answer = self.icl_pairs(family, rng)
            lines = [f"{x} -> {y}" for x, y in demos] + [f"{query} ->"]
            out.append({"family": family, "prompt": "\n".join(lines), "answer": answer})
        return out


TASKS = ("classification", "entailment", "span_qa", "multiple_choice")
ICL_FAMILIES = (
    "occupation",
    "birthplace",
    "country",
    "reverse",
    "uppercase",
    "first_letter",
    "successor",
    "antonym",
)
_ANTONYMS = (
    ("hot", "cold"),
    ("big", "small"),
    ("up", "down"),
    ("early", "late"),
    ("fast", "slow"),
    ("light", "dark"),
    ("old", "young"),
    ("open", "closed"),
    ("happy", "sad"),
    ("rich", "poor"),
    ("hard", "soft"),
    ("near", "far"),
)
_RELATION_SENTENCES = {
    "born_in": "{} was born in {}.",
    "works_for": "{} works for {}.",
    "friend_of": "{} is a friend of {}.",
    "located_in": "{} is located in {}.",
}


def _first_sentence(text: str) -> str:
    return text.split(". ")[0].rstrip(".") + "."


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
