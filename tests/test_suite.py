"""The evaluation suite: fixed splits, honest baselines, and test facts that only
pre-training saw.
"""

import re
from collections import Counter

import pytest

from ptlm_lite import suite
from ptlm_lite.data import make_world
from ptlm_lite.data.world import COLOURS, OCCUPATIONS


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
    assert all(
        tasks[n].needs_pretraining
        for n in ("favourite_colour", "relation_check", "fact_cloze", "slot_filler")
    )
    for t in tasks.values():
        assert t.description and t.labels and t.train and t.test
        assert t.chance == pytest.approx(1 / len(t.labels))
        assert all(0 <= e["label"] < t.n_labels for e in t.train + t.test)


def test_splits_are_fixed(tasks):
    again = suite.tasks()
    for name, t in tasks.items():
        assert t.train == again[name].train and t.test == again[name].test
    assert suite.get("fact_cloze").test == tasks["fact_cloze"].test
    assert (
        suite.get("relation_check", world_seed=1).test != tasks["relation_check"].test
    )


def test_balanced_or_majority_reported(tasks):
    for t in tasks.values():
        shares = t.balance("test")
        assert sum(shares.values()) == pytest.approx(1)
        # what a constant answer scores at best
        assert t.majority == pytest.approx(max(shares.values()))
        assert t.majority >= t.chance
    # balanced by construction
    for name in ("relation_check", "fact_cloze", "slot_filler"):
        for split in ("train", "test"):
            assert max(tasks[name].balance(split).values()) <= tasks[name].chance + 0.01
    # mostly people: the majority share is the bar
    assert tasks["kind_from_sentence"].majority > 0.6


def test_no_value_is_more_often_right_than_wrong(tasks):
    """Negatives and distractors are the right answers shuffled: a model that learns how
    often a city or a colour is the answer learns nothing.
    """
    for split in ("train", "test"):
        pairs = getattr(tasks["relation_check"], split)
        yes = Counter((e["relation"], e["b"]) for e in pairs if e["label"] == 1)
        no = Counter((e["relation"], e["b"]) for e in pairs if e["label"] == 0)
        assert yes == no
        cloze = getattr(tasks["fact_cloze"], split)
        right = Counter((e["relation"], e["endings"][e["label"]]) for e in cloze)
        seen = Counter((e["relation"], c) for e in cloze for c in e["endings"])
        off = [k for k in seen if seen[k] != 4 * right[k]]
        # a few repairs where no swap was possible
        assert len(off) <= 0.05 * len(seen), off


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
            # the fact was in the pre-training text
            assert e["evidence"] in docs[e["entity"]]
            if t.kind == "single":
                answer, inputs = t.labels[e["label"]], e["text"]
            elif t.kind == "pair":
                # a claim to check, "a b": true (1) exactly when the evidence has b
                assert (e["b"] in e["evidence"]) == (e["label"] == 1), e
                continue
            else:
                answer, inputs = e["endings"][e["label"]], e["context"]
            assert answer in e["evidence"] and answer not in inputs
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
    assert (
        len(t.train) == 40
        and len(t.test) == 20
        and t.test == tasks["kind_from_sentence"].test[:20]
    )
    assert t.majority == pytest.approx(max(t.balance("test").values()))
    with pytest.raises(ValueError):
        t.subset(0, 10)


def test_unknown_task_is_a_clear_error():
    with pytest.raises(ValueError, match="relation_check"):
        suite.get("sentiment")


def test_surface_controls_are_declared(tasks):
    """The tasks the surface form solves are marked as controls, and only they."""
    assert suite.SURFACE_CONTROLS == ("kind_from_name", "kind_from_sentence", "span_qa")
    for t in tasks.values():
        assert t.surface_control == (not t.needs_pretraining), t.name
    assert suite.get("span_qa").surface_control


def test_surface_baseline_rejects_unknown_features(tasks):
    with pytest.raises(ValueError, match="features"):
        suite.surface_baseline(tasks["slot_filler"], features=("vowels",))


@pytest.fixture(scope="module")
def book_tokenizers():
    """The chapters' tokenizers, as they encode a word: GPT's byte-level BPE (a word
    after a space) and BERT's WordPiece.
    """
    from ptlm_lite.recipes import bert, gpt

    return {"bpe": (gpt.tokenizer(), " "), "wordpiece": (bert.tokenizer(), "")}


@pytest.mark.slow
@pytest.mark.parametrize("name", suite.TASKS)
def test_no_surface_shortcut_except_in_the_declared_controls(
    tasks, book_tokenizers, name
):
    """Every surface baseline (character n-grams; lengths in characters, words and
    word pieces of both book tokenizers; first and last characters; all together), a
    candidate's features crossed with its slot, trained on the fine-tuning split: on a
    task that needs pre-training none beats the best constant answer by more than 5
    points; a declared surface control is solved far above it.
    """
    pytest.importorskip("sklearn")
    t = tasks[name]
    sets = [(f,) for f in suite.SURFACE_FEATURES] + [suite.SURFACE_FEATURES]
    acc = {
        f: suite.surface_baseline(t, features=f, tokenizers=book_tokenizers)["accuracy"]
        for f in sets
    }
    bar = max(t.majority, t.chance)
    if t.surface_control:
        assert acc[suite.SURFACE_FEATURES] > bar + 0.15, (name, acc)
    else:
        assert max(acc.values()) <= bar + 0.05, (name, acc)


def test_the_default_surface_baseline_solves_the_surface_tasks_only(tasks):
    """What ``finetune.run`` reports as the surface model (no tokenizers needed)."""
    pytest.importorskip("sklearn")
    for t in tasks.values():
        s = suite.surface_baseline(t)
        assert len(s["predictions"]) == len(t.test)
        if t.surface_control:
            assert s["accuracy"] > t.majority + 0.15, (t.name, s["accuracy"])
        else:
            assert s["accuracy"] <= t.majority + 0.05, (t.name, s["accuracy"])


# ----------------------------------------------------------------------------------
# slot_filler: the kind of word a slot takes, asked about words fine-tuning never shows


def _words(text):
    return set(re.findall(r"[a-z]+", text))


def test_slot_filler_pairs_two_kinds_and_the_right_one_fits(tasks):
    kinds = {**{c: "colour" for c in COLOURS}, **{o: "occupation" for o in OCCUPATIONS}}
    endings = {
        "colour": " is",
        "occupation": "-year-old",
        "born_in": " was born in",
        "works_for": " works for",
        "friend_of": " is a friend of",
    }
    t = tasks["slot_filler"]
    for split in ("train", "test"):
        questions = getattr(t, split)
        for e in questions:
            assert len(set(e["endings"])) == 2 and e["context"].endswith(
                endings[e["slot"]]
            )
            # the right ending fills this slot in some pre-training document
            last = re.sub(r"\d+", "", e["context"].split()[-1])
            right = re.escape(f"{last} {e['endings'][e['label']]}")
            assert re.search(rf"{right}[. ]", e["evidence"]), e
        # every word is as often right as wrong, every slot is asked as often as the
        # other of its pair
        right = Counter(e["endings"][e["label"]] for e in questions)
        wrong = Counter(
            w for e in questions for i, w in enumerate(e["endings"]) if i != e["label"]
        )
        assert right == wrong
        slots = Counter(e["slot"] for e in questions)
        assert len(set(slots.values())) == 1
    assert set(Counter(e["slot"] for e in t.train)) == set(suite.FILLER_TRAIN_SLOTS)
    for e in t.test:  # the test: one colour and one occupation
        assert sorted(kinds[w] for w in e["endings"]) == ["colour", "occupation"]
        assert kinds[e["endings"][e["label"]]] == e["slot"]


def test_slot_filler_every_prefix_of_four_is_balanced(tasks):
    """Chapters score the first n test questions (Task.subset: 192, 200 or 256): each
    block of four asks each slot twice, its right ending once in each position, so a
    model that always picks the colour (mostly the shorter word) or always the first ending
    scores exactly the majority, half, on any such prefix (it scored 52.6% of the first
    192 when only the whole test was balanced)."""
    test = tasks["slot_filler"].test
    assert len(test) % 4 == 0
    every = {(s, label) for s in ("colour", "occupation") for label in (0, 1)}
    for i in range(0, len(test), 4):
        block = Counter((e["slot"], e["label"]) for e in test[i : i + 4])
        assert set(block) == every and set(block.values()) == {1}, (i, block)
    for n in (192, 200, 256):
        sub = tasks["slot_filler"].subset(n_test=n)
        always_colour = sum(e["slot"] == "colour" for e in sub.test) / n
        always_first = sum(e["label"] == 0 for e in sub.test) / n
        assert always_colour == always_first == sub.majority == 0.5


def test_slot_filler_fine_tuning_never_shows_a_colour_an_occupation_or_a_test_slot(
    tasks,
):
    t = tasks["slot_filler"]
    test_words = {w for e in t.test for w in e["endings"]}
    assert test_words == set(COLOURS + OCCUPATIONS)
    seen = set().union(
        *(_words(e["context"] + " " + " ".join(e["endings"])) for e in t.train)
    )
    assert not test_words & seen  # not as an ending, not inside a context either
    assert not {"colour", "favourite", "year", "old"} & seen
    assert not {e["slot"] for e in t.train} & {e["slot"] for e in t.test}


def test_slot_filler_words_fill_their_slot_in_the_pretraining_documents(tasks, world):
    """What pre-training can teach: each test word fills its slot in a few documents
    or more.
    """
    text = world.text()
    for c in COLOURS:
        assert (
            len(re.findall(rf"favourite colour of [A-Za-z ]+ is {c}\.", text)) >= 10
        ), c
    for o in OCCUPATIONS:
        assert len(re.findall(rf"-year-old {o}\.", text)) >= 5, o
    for e in tasks["slot_filler"].train + tasks["slot_filler"].test:
        assert e["evidence"] in text


@pytest.mark.slow
def test_slot_filler_words_differ_in_form_which_is_why_fine_tuning_avoids_them(
    book_tokenizers,
):
    """The reason for the design: in both book tokenizers every occupation has at
    least as many word pieces as any colour, and only occupations end in -er, -or, -ot
    or -ian. A fine-tuning set of colours and occupations would teach that form.
    """
    for tok, prefix in book_tokenizers.values():
        n = {w: len(tok.encode(prefix + w)) for w in COLOURS + OCCUPATIONS}
        assert min(n[o] for o in OCCUPATIONS) >= max(n[c] for c in COLOURS), n
    assert all(re.search(r"(er|or|ot|ian)$", o) for o in OCCUPATIONS)
    assert not any(re.search(r"(er|or|ot|ian)$", c) for c in COLOURS)


@pytest.mark.parametrize("share", ["0.3", 0, 1, float("nan"), True])
def test_entity_split_refuses_a_share_outside_zero_one(world, share):
    """'0.3' failed with a comparison error between str and int."""
    with pytest.raises((TypeError, ValueError), match="test_share"):
        suite.entity_split(world, share)


def test_each_slot_filler_test_word_fills_its_slot_5_to_20_times_and_nowhere_else(
    world,
):
    """What the task's description and the MASS and UniLM chapters say of the
    pre-training documents (world 0's, which those chapters pre-train on)."""
    text = " ".join(d.text for d in world.documents)
    for words, slot in (
        (COLOURS, r"favourite colour of [^.]* is "),
        (OCCUPATIONS, r"-year-old "),
    ):
        for w in words:
            in_slot = len(re.findall(rf"{slot}{w}\b", text))
            assert 5 <= in_slot <= 20, (w, in_slot)
            assert len(re.findall(rf"\b{w}\b", text, flags=re.I)) == in_slot, w


def test_lm_choice_scores_each_ending_per_token_as_the_gpt_does():
    """suite.zero_shot: the mean log-probability per token of an ending is GPT's own
    log_likelihood of it divided by its length, and the choice is the likeliest."""
    import torch

    import ptlm_lite as P
    from ptlm_lite.gpt import GPT
    from ptlm_lite.recipes.gpt import tokenizer
    from ptlm_lite.suite import zero_shot

    tok = tokenizer()
    lm = GPT(P.preset("gpt-tiny", vocab_size=tok.vocab_size, dropout=0.0), seed=0)
    lm.train()
    questions = suite.get("slot_filler").test[:6]
    for k in (0, 1):
        got = zero_shot.ending_logprob(lm, tok, questions, k)
        for i, e in enumerate(questions):
            head = tok.encode(e["context"])
            full = head + tok.encode(" " + e["endings"][k])
            with torch.no_grad():
                ll = lm.eval().log_likelihood(torch.tensor([full]), len(head))
            lm.train()
            want = ll.item() / (len(full) - len(head))
            assert abs(got[i].item() - want) < 1e-4, (i, k)
    assert lm.training  # the model is given back in the mode it came in
    right = zero_shot.lm_choice(lm, tok, questions)
    a, b = (zero_shot.ending_logprob(lm, tok, questions, k) for k in (0, 1))
    labels = torch.tensor([e["label"] for e in questions])
    assert right.tolist() == ((b > a).long() == labels).float().tolist()


def test_mlm_choice_masks_each_piece_of_the_ending_in_turn():
    """suite.zero_shot.masked_ending_logprob: the pseudo-log-likelihood per piece,
    batched and padded, is what one unpadded row per masked piece gives (a padded
    row's score does not read its padding), and the choice is the likeliest."""
    import torch

    import ptlm_lite as P
    from ptlm_lite.bert import BertForPreTraining
    from ptlm_lite.recipes.bert import tokenizer
    from ptlm_lite.suite import zero_shot

    tok = tokenizer()
    s = tok.special_ids
    mlm = BertForPreTraining(P.preset("bert-tiny", vocab_size=tok.vocab_size), seed=0)
    mlm.train()
    questions = suite.get("slot_filler").test[:6]
    lengths = set()
    for k in (0, 1):
        got = zero_shot.masked_ending_logprob(mlm, tok, questions, k)
        for i, e in enumerate(questions):
            head = [s["cls"], *tok.encode(e["context"])]
            ending = tok.encode(" " + e["endings"][k])
            want = []
            for j, piece in enumerate(ending):
                row = head + ending[:j] + [s["mask"]] + ending[j + 1 :] + [s["sep"]]
                lengths.add(len(row))
                with torch.no_grad():
                    logits = mlm.eval()(torch.tensor([row])).logits[0, len(head) + j]
                want.append(logits.log_softmax(-1)[piece].item())
            mlm.train()
            assert abs(got[i].item() - sum(want) / len(want)) < 1e-5, (i, k)
    assert len(lengths) > 1  # the batch was padded
    assert mlm.training  # the model is given back in the mode it came in
    right = zero_shot.mlm_choice(mlm, tok, questions)
    a, b = (zero_shot.masked_ending_logprob(mlm, tok, questions, k) for k in (0, 1))
    labels = torch.tensor([e["label"] for e in questions])
    assert right.tolist() == ((b > a).long() == labels).float().tolist()
    with pytest.raises(ValueError, match="as many endings"):
        zero_shot.mlm_choice(
            mlm, tok, [dict(questions[0], endings=["a", "b", "c"]), questions[1]]
        )


def test_lm_choice_names_what_it_takes():
    from ptlm_lite.suite import zero_shot

    with pytest.raises(ValueError, match="at least one"):
        zero_shot.lm_choice(None, None, [])
    with pytest.raises(TypeError, match="'context', 'endings' and 'label'"):
        zero_shot.lm_choice(None, None, [{"text": "a", "label": 0}])
    with pytest.raises(ValueError, match="as many endings"):
        zero_shot.lm_choice(
            None,
            None,
            [
                {"context": "a", "endings": ["b", "c"], "label": 0},
                {"context": "a", "endings": ["b", "c", "d"], "label": 0},
            ],
        )
