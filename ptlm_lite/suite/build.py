"""How the suite's tasks are built from a world: the entity split, the fact tasks and
the slot filler (the kind tasks and span QA are in :mod:`ptlm_lite.suite.controls`).
See :mod:`ptlm_lite.suite`."""

from __future__ import annotations

import random
import re

from ..checks import check_number
from .task import N_CHOICES, TEST_SHARE, Task, make_task

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
    check_number("test_share", test_share, strict=True, high=1)  # in (0, 1)
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


def sentences_of(world) -> dict[int, list[str]]:
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


def relation_check(world, split, sentences) -> Task:
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
    return make_task(
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


def fact_cloze(world, split, sentences) -> Task:
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
    return make_task(
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


def shuffled(world, name: str, out: dict) -> dict:
    """Each part of ``out`` in a seeded order of its own task, so that any prefix is a
    fair sample.
    """
    rng = _rng(world, name)
    for part in out.values():
        rng.shuffle(part)
    return out


def favourite_colour(world, split, sentences) -> Task:
    from ..data.world import COLOURS

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
    return make_task(
        "favourite_colour",
        "single",
        COLOURS,
        shuffled(world, "favourite_colour", out),
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


def _blocks_of_four(questions: list[dict]) -> list[dict]:
    """The test questions reordered colour, occupation, occupation, colour, ...: with
    the right ending on alternate sides (the caller), every block of four asks each slot
    twice, its right ending once in each position. So any prefix of 4k questions is as
    balanced as the whole test: a model that always picks the colour (most colours are
    shorter than most occupations) or always the first ending scores exactly half of
    it, the majority."""
    colour = [q for q in questions if q["slot"] == "colour"]
    occupation = [q for q in questions if q["slot"] == "occupation"]
    if len(colour) != len(occupation) or len(colour) % 2:
        raise ValueError("the test must ask each slot equally often, an even number")
    return [
        q
        for i in range(0, len(colour), 2)
        for q in (colour[i], occupation[i], occupation[i + 1], colour[i + 1])
    ]


def slot_filler(world, split, sentences) -> Task:
    from ..data.world import COLOURS, OCCUPATIONS

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
    for name, part in out.items():
        rng.shuffle(part)
        if name == "test":  # chapters score a prefix (Task.subset): balance every block
            part[:] = _blocks_of_four(part)
        # the right ending goes to each position equally often
        for i, ex in enumerate(part):
            if i % 2:
                ex["endings"], ex["label"] = ex["endings"][::-1], 1
    return make_task(
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
            "balanced, in every block of four questions as in the whole test (so "
            "in any prefix of 4k questions a model that always picks the colour, or "
            "the first ending, scores half). The right ending is the kind of word the slot takes, not "
            "necessarily that person's own colour or occupation."
        ),
    )
