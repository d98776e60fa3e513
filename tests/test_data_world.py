"""The synthetic world: determinism, consistent annotations, tasks whose answers are
right.
"""

import time

import pytest

from ptlm_lite.data import world as w


def test_same_seed_same_world_and_different_seed_different_world():
    a, b, c = w.make_world(0), w.make_world(0), w.make_world(1)
    assert a.text() == b.text() and a.triples() == b.triples()
    assert a.span_qa(20) == b.span_qa(20)
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


def test_span_questions_have_exact_answers():
    world = w.make_world(0)
    for ex in world.span_qa(50):
        start = ex["answer_start"]
        assert ex["context"][start : start + len(ex["answer"])] == ex["answer"]


@pytest.mark.parametrize(
    "call, err, match",
    [
        (lambda: w.make_world(0, n_entities=5), ValueError, "n_entities must be"),
        (lambda: w.make_world("0"), TypeError, "seed must be an int"),
        (
            lambda: w.make_world(0).span_qa(0),
            ValueError,
            "n .* must be a positive integer",
        ),
        (lambda: w.make_world(0).of_kind("animal"), ValueError, "kind must be one of"),
    ],
)
def test_bad_inputs(call, err, match):
    with pytest.raises(err, match=match):
        call()
