"""The evaluation suite: fixed splits, honest baselines, and test facts that only pre-training saw."""
from collections import Counter

import pytest

from ptlm_lite import suite
from ptlm_lite.data import make_world


@pytest.fixture(scope="module")
def tasks():
    return suite.tasks()


@pytest.fixture(scope="module")
def world():
    return make_world(0)


def test_the_suite_has_every_form_and_flags_the_surface_tasks(tasks):
    assert tuple(tasks) == suite.TASKS
    assert {t.kind for t in tasks.values()} == {"single", "pair", "choice"}
    assert not tasks["kind_from_sentence"].needs_pretraining
    assert not tasks["kind_from_name"].needs_pretraining
    assert all(tasks[n].needs_pretraining for n in ("favourite_colour", "relation_check", "fact_cloze"))
    for t in tasks.values():
        assert t.description and t.labels and t.train and t.test
        assert t.chance == pytest.approx(1 / len(t.labels))
        assert all(0 <= e["label"] < t.n_labels for e in t.train + t.test)


def test_splits_are_fixed(tasks):
    again = suite.tasks()
    for name, t in tasks.items():
        assert t.train == again[name].train and t.test == again[name].test
    assert suite.get("fact_cloze").test == tasks["fact_cloze"].test
    assert suite.get("relation_check", world_seed=1).test != tasks["relation_check"].test


def test_balanced_or_majority_reported(tasks):
    for t in tasks.values():
        shares = t.balance("test")
        assert sum(shares.values()) == pytest.approx(1)
        assert t.majority == pytest.approx(max(shares.values()))  # what a constant answer scores at best
        assert t.majority >= t.chance
    for name in ("relation_check", "fact_cloze"):  # balanced by construction
        for split in ("train", "test"):
            assert max(tasks[name].balance(split).values()) <= tasks[name].chance + 0.01
    assert tasks["kind_from_sentence"].majority > 0.6  # mostly people: the majority share is the bar


def test_no_value_is_more_often_right_than_wrong(tasks):
    """Negatives and distractors are the right answers shuffled: a model that learns how often a
    city or a colour is the answer learns nothing."""
    for split in ("train", "test"):
        pairs = getattr(tasks["relation_check"], split)
        yes = Counter((e["relation"], e["b"]) for e in pairs if e["label"] == 1)
        no = Counter((e["relation"], e["b"]) for e in pairs if e["label"] == 0)
        assert yes == no
        cloze = getattr(tasks["fact_cloze"], split)
        right = Counter((e["relation"], e["endings"][e["label"]]) for e in cloze)
        seen = Counter((e["relation"], c) for e in cloze for c in e["endings"])
        off = [k for k in seen if seen[k] != 4 * right[k]]
        assert len(off) <= 0.05 * len(seen), off  # a few repairs where no swap was possible


def test_test_entities_are_never_in_fine_tuning_train(tasks, world):
    split = suite.entity_split(world)
    test_names = {e.name for e in world.entities if split[e.id] == "test"}
    for t in tasks.values():
        train_entities = {e["entity"] for e in t.train}
        assert {e["entity"] for e in t.test} <= test_names
        assert not train_entities & test_names
    # friendship is symmetric: a training pair never names a test person as the friend
    friends = [e for e in tasks["relation_check"].train if e["relation"] == "friend_of"]
    assert friends and not {e["b"] for e in friends} & test_names


def test_test_facts_are_in_the_pretraining_documents_and_not_in_the_input(tasks, world):
    docs = {world.entities[d.entity].name: d.text for d in world.documents}
    for name in ("favourite_colour", "relation_check", "fact_cloze"):
        t = tasks[name]
        for e in t.test:
            assert e["evidence"] in docs[e["entity"]]  # the fact was in the pre-training text
            if t.kind == "single":
                answer, inputs = t.labels[e["label"]], e["text"]
            elif t.kind == "pair":
                answer, inputs = e["evidence"], e["a"] + " " + e["b"]  # the fact is not stated
            else:
                answer, inputs = e["endings"][e["label"]], e["context"]
            assert answer in e["evidence"] and answer not in inputs
            if t.kind == "pair" and e["label"] == 1:
                assert e["b"] in e["evidence"]
    for e in tasks["relation_check"].test:  # negatives are really false
        if e["label"] == 0:
            assert e["b"] not in e["evidence"]
    # the surface task states its answer: the kind word is in every non-person sentence
    words = {"city": " city ", "country": " country ", "organisation": " company "}
    t = tasks["kind_from_sentence"]
    for e in t.test:
        kind = t.labels[e["label"]]
        assert kind == "person" or words[kind] in e["text"]


def test_cloze_candidates_are_distinct_and_of_the_right_kind(tasks, world):
    kinds = {e.name: e.kind for e in world.entities}
    for e in tasks["fact_cloze"].train + tasks["fact_cloze"].test:
        assert len(set(e["endings"])) == len(e["endings"]) == 4
        assert len({kinds.get(x, "attribute") for x in e["endings"]}) == 1


def test_subset_recomputes_the_majority(tasks):
    t = tasks["kind_from_sentence"].subset(40, 20)
    assert len(t.train) == 40 and len(t.test) == 20 and t.test == tasks["kind_from_sentence"].test[:20]
    assert t.majority == pytest.approx(max(t.balance("test").values()))
    with pytest.raises(ValueError):
        t.subset(0, 10)


def test_unknown_task_is_a_clear_error():
    with pytest.raises(ValueError, match="relation_check"):
        suite.get("sentiment")


def test_surface_baseline_solves_the_surface_tasks_only(tasks):
    pytest.importorskip("sklearn")
    for t in tasks.values():
        s = suite.surface_baseline(t)
        assert len(s["predictions"]) == len(t.test)
        if t.needs_pretraining:  # the input's characters alone do not beat a constant answer
            assert s["accuracy"] <= t.majority + 0.05, (t.name, s["accuracy"])
        else:
            assert s["accuracy"] > t.majority + 0.15, (t.name, s["accuracy"])
