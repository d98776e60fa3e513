"""The synthetic world: determinism, consistent annotations, tasks whose answers are
right.
"""

import time

import pytest

from ptlm_lite.data import world as w


def test_same_seed_same_world_and_different_seed_different_world():
    a, b, c = w.make_world(0), w.make_world(0), w.make_world(1)
    assert a.text() == b.text() and a.triples() == b.triples()
    assert a.entailment(20) == b.entailment(20)
    assert a.icl_sequences(10) == b.icl_sequences(10)
    assert a.text() != c.text()


def test_default_world_is_fast_and_scales():
    start = time.perf_counter()
    world = w.make_world(0)
    assert time.perf_counter() - start < 0.5
    assert len(world.entities) == 200
    assert {e.kind for e in world.entities} == set(w.KINDS)
    assert len(w.make_world(0, n_entities=1000).entities) == 1000


def test_knowledge_graph_is_consistent():
    world = w.make_world(0)
    for person in world.of_kind("person"):
        assert world.one(person, "born_in").kind == "city"
        assert world.one(person, "works_for").kind == "organisation"
        for friend in world.related(person, "friend_of"):
            assert person in world.related(friend, "friend_of")  # symmetric
    for city in world.of_kind("city"):
        assert world.one(city, "located_in").kind == "country"


def test_document_spans_are_exact():
    world = w.make_world(0)
    for doc in world.documents:
        for span in doc.spans:
            mention = doc.text[span.start : span.end]
            if span.entity is not None:
                assert mention == world.entities[span.entity].name
                assert span.label == world.entities[span.entity].kind
            else:
                assert span.label.startswith("phrase:") and mention


def test_labelled_tasks_have_correct_answers():
    world = w.make_world(0)
    names = {e.name: e for e in world.entities}
    for ex in world.span_qa(50):
        start = ex["answer_start"]
        assert ex["context"][start : start + len(ex["answer"])] == ex["answer"]
    for ex in world.classification(50):
        subject = next(
            n for n in sorted(names, key=len, reverse=True) if ex["text"].startswith(n)
        )
        assert w.KINDS[ex["label"]] == names[subject].kind
    for ex in world.entailment(60):
        assert ex["label"] in (0, 1, 2)
        assert (ex["hypothesis"] in ex["premise"]) == (ex["label"] == 0)
    for ex in world.multiple_choice(30):
        assert len(ex["endings"]) == 4 and len(set(ex["endings"])) == 4
        city = ex["context"].split(" is based in ")[1].split(".")[0]
        assert ex["endings"][ex["label"]] == f" travels to the office in {city}."
    pairs = world.text_to_text(40)
    assert len(pairs) == 40 and all(
        isinstance(s, str) and isinstance(t, str) for s, t in pairs
    )
    prefixes = {s.split(":")[0] for s, _ in pairs}
    assert prefixes == {"classify", "nli premise", "question", "triple"}


def test_mixture_and_icl_families():
    world = w.make_world(0)
    mix = world.mixture(("classification", "entailment"), n_per_task=10)
    assert len(mix) == 20 and {t for t, _ in mix} == {"classification", "entailment"}
    seqs = world.icl_sequences(50, shots=3, exclude=("reverse", "uppercase"))
    assert {s["family"] for s in seqs}.isdisjoint({"reverse", "uppercase"})
    held_out = world.icl_sequences(20, shots=2, families=("reverse",))
    for s in held_out:
        lines = s["prompt"].split("\n")
        assert len(lines) == 3 and lines[-1].endswith(" ->")
        assert s["answer"] == lines[-1][:-3][::-1]
        x, y = lines[0].split(" -> ")
        assert y == x[::-1]


@pytest.mark.parametrize(
    "call, err, match",
    [
        (lambda: w.make_world(0, n_entities=5), ValueError, "n_entities must be"),
        (lambda: w.make_world("0"), TypeError, "seed must be an int"),
        (
            lambda: w.make_world(0).classification(0),
            ValueError,
            "n .* must be a positive integer",
        ),
        (lambda: w.make_world(0).mixture(("squad",)), ValueError, "tasks must be"),
        (
            lambda: w.make_world(0).icl_sequences(families=("sorting",)),
            ValueError,
            "families/exclude accept",
        ),
        (
            lambda: w.make_world(0).icl_sequences(
                families=("reverse",), exclude=("reverse",)
            ),
            ValueError,
            "empty",
        ),
        (lambda: w.make_world(0).of_kind("animal"), ValueError, "kind must be one of"),
    ],
)
def test_bad_inputs(call, err, match):
    with pytest.raises(err, match=match):
        call()
