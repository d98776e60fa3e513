"""ptlm_lite.seq2seq (Part IV's house) and Transformer's cached decoding: the decoder run
token by token with its keys and values cached (the encoder's too) gives what running
the whole prefix gives; beam search finds the best sequence when the beam holds them
all; ROUGE against a hand-checked example; the summaries task."""

from __future__ import annotations

import itertools
import re

import numpy as np
import pytest
import torch
from torch import nn

import ptlm_lite as P
from ptlm_lite import seq2seq as S
from ptlm_lite.output import IGNORE
from ptlm_lite.suite.generation import (
    facts_by_field,
    facts_copied,
    summaries,
    summary_of,
    summary_words,
)

PAD, BOS, EOS = 0, 1, 2


def tiny(seed=0, bias=None, vocab=12, **kw):
    cfg = P.Config(
        vocab_size=vocab,
        d_model=16,
        n_head=2,
        n_layer=2,
        d_ff=32,
        max_len=16,
        dropout=0.0,
        pad_id=PAD,
        **kw,
    )
    return P.Transformer(cfg, seed=seed, bias=bias).eval()


class DistanceBias(nn.Module):
    """A learned bias per head and query-key distance (a stand-in for T5's buckets):
    the cached decoder must take the new queries' rows of it."""

    def __init__(self, config, bidirectional):
        super().__init__()
        self.L = config.max_len
        self.w = nn.Embedding(2 * self.L, config.n_head)
        nn.init.normal_(self.w.weight, std=1.0)

    def forward(self, Tq, Tk):
        rel = torch.arange(Tk)[None, :] - torch.arange(Tq)[:, None] + self.L
        return self.w(rel).permute(2, 0, 1)


def full_greedy(model, src, n):
    """Greedy decoding the slow way: the whole prefix through the decoder each step."""
    memory, valid, _ = model.encode(src)
    out = torch.full((src.shape[0], 1), BOS)
    done = torch.zeros(src.shape[0], dtype=torch.bool)
    for _ in range(n):
        logits, _, _ = model.decode(out, memory, valid)
        nxt = logits[:, -1].argmax(-1).masked_fill(done, PAD)
        out = torch.cat([out, nxt[:, None]], 1)
        done |= nxt == EOS
        if bool(done.all()):
            break
    return out[:, 1:]


SRC = torch.tensor([[5, 6, 7, 8, 3, EOS], [9, 4, EOS, PAD, PAD, PAD]])


@pytest.mark.parametrize("bias", [None, DistanceBias], ids=["positions", "bias"])
def test_cached_decoding_equals_recomputing_the_prefix(bias):
    torch.manual_seed(0)
    model = tiny(bias=bias, pos="none" if bias else "sinusoidal")
    tgt = torch.tensor([[BOS, 3, 4, 5, 6], [BOS, 7, 8, 9, 10]])
    memory, valid, _ = model.encode(SRC)
    full, _, _ = model.decode(tgt, memory, valid)
    cache = [{} for _ in range(model.config.n_layer)]
    steps = [
        model.decode(tgt[:, t : t + 1], memory, valid, cache=cache, offset=t)[0]
        for t in range(tgt.shape[1])
    ]
    torch.testing.assert_close(torch.cat(steps, 1), full, rtol=1e-5, atol=1e-5)
    # the encoder's keys and values were projected once and kept per layer
    assert all(c["cross"]["k"].shape[2] == SRC.shape[1] for c in cache)
    assert all(c["k"].shape[2] == tgt.shape[1] for c in cache)
    assert torch.equal(
        model.generate(SRC, BOS, EOS, max_new_tokens=10), full_greedy(model, SRC, 10)
    )


def test_memory_and_cache_together_are_refused():
    block = P.Block(tiny().config)
    x = torch.randn(1, 3, 16)
    with pytest.raises(ValueError, match="memory .* or cache"):
        block(x, memory=torch.randn(1, 2, 16), cache={})


def test_greedy_is_the_models_cached_generate_and_checks_its_input():
    model = tiny()
    assert torch.equal(
        S.greedy(model, SRC, bos_id=BOS, eos_id=EOS, max_new_tokens=6),
        full_greedy(model, SRC, 6),
    )
    with pytest.raises(ValueError, match="eos_id"):
        S.greedy(model, SRC, bos_id=BOS, eos_id=99)
    with pytest.raises(ValueError, match="max_new_tokens"):
        S.greedy(model, SRC, bos_id=BOS, eos_id=EOS, max_new_tokens=16)
    with pytest.raises(ValueError, match="src"):
        S.greedy(model, SRC[0], bos_id=BOS, eos_id=EOS)


@torch.no_grad()
def sequence_logp(model, src_row, words):
    """sum log p(words | src) under teacher forcing."""
    tgt_in = torch.tensor([[BOS] + words[:-1]])
    out = model(src_row[None], tgt_in).logits.log_softmax(-1)[0]
    return float(out[torch.arange(len(words)), torch.tensor(words)].sum())


def test_beam_search_with_every_prefix_in_the_beam_finds_the_best_sequence():
    # length_penalty 0 scores a hypothesis by its log-probability, which only falls as
    # it grows: with the beam as wide as all prefixes, the search is exhaustive
    V, n = 6, 3
    model = tiny(seed=3, vocab=V)
    src = torch.tensor([[3, 4, 5, EOS]])
    got = S.beam_search(
        model,
        src,
        bos_id=BOS,
        eos_id=EOS,
        beams=V**2,
        max_new_tokens=n,
        length_penalty=0.0,
    )[0].tolist()
    got = got[: got.index(EOS) + 1] if EOS in got else got
    best = max(
        (
            list(w[: w.index(EOS) + 1]) if EOS in w else list(w)
            for k in range(1, n + 1)
            for w in itertools.product(range(V), repeat=k)
            if (EOS not in w[:-1]) and (len(w) == n or w[-1] == EOS)
        ),
        key=lambda w: sequence_logp(model, src[0], w),
    )
    assert got == best


def test_one_beam_is_greedy_and_more_beams_score_at_least_as_well():
    model = tiny(seed=1)
    g = S.greedy(model, SRC, bos_id=BOS, eos_id=EOS, max_new_tokens=8)
    b1 = S.beam_search(model, SRC, bos_id=BOS, eos_id=EOS, beams=1, max_new_tokens=8)
    for a, b in zip(g.tolist(), b1.tolist()):
        assert [t for t in a if t != PAD] == [t for t in b if t != PAD]
    b4 = S.beam_search(
        model,
        SRC,
        bos_id=BOS,
        eos_id=EOS,
        beams=4,
        max_new_tokens=8,
        length_penalty=0.0,
    )

    def words(row):
        row = [t for t in row if t != PAD]
        return row[: row.index(EOS) + 1] if EOS in row else row

    for i in range(len(SRC)):
        greedy_lp = sequence_logp(model, SRC[i], words(g[i].tolist()))
        beam_lp = sequence_logp(model, SRC[i], words(b4[i].tolist()))
        assert beam_lp >= greedy_lp - 1e-5
    with pytest.raises(ValueError, match="beams"):
        S.beam_search(model, SRC, bos_id=BOS, eos_id=EOS, beams=0)


def test_collate_adds_bos_and_eos_and_pads():
    pairs = [S.Pair([5, 6, 7], [8]), S.Pair([9], [10, 11, 12])]
    b = S.collate(pairs, pad_id=PAD, bos_id=BOS, eos_id=EOS, max_src=8, max_tgt=8)
    assert b["src"].tolist() == [[5, 6, 7, EOS], [9, EOS, PAD, PAD]]
    assert b["tgt_in"].tolist() == [[BOS, 8, PAD, PAD], [BOS, 10, 11, 12]]
    assert b["tgt_out"].tolist() == [[8, EOS, IGNORE, IGNORE], [10, 11, 12, EOS]]
    cut = S.collate(pairs, pad_id=PAD, bos_id=BOS, eos_id=EOS, max_src=2, max_tgt=3)
    assert cut["src"].tolist() == [[5, EOS], [9, EOS]]
    assert cut["tgt_out"].tolist() == [[8, EOS, IGNORE], [10, 11, EOS]]
    with pytest.raises(ValueError, match="max_src"):
        S.collate(pairs, pad_id=PAD, bos_id=BOS, eos_id=EOS, max_src=1, max_tgt=3)
    with pytest.raises(TypeError, match="Pair"):
        S.collate(
            [([1], [2])], pad_id=PAD, bos_id=BOS, eos_id=EOS, max_src=4, max_tgt=4
        )


def identity_noise(doc, generator):
    flat = [t for s in doc for t in s]
    return S.Pair(flat, flat)


def test_batches_train_a_transformer_and_are_seeded():
    docs = [[[3, 4, 5], [6, 7]], [[8, 9, 10, 11]], [[3, 9]]]
    kw = {
        "batch_size": 4,
        "pad_id": PAD,
        "bos_id": BOS,
        "eos_id": EOS,
        "max_src": 8,
        "max_tgt": 8,
    }
    a, b = (
        S.batches(docs, identity_noise, seed=1, **kw),
        S.batches(docs, identity_noise, seed=1, **kw),
    )
    for _ in range(3):
        x, y = next(a), next(b)
        assert all(torch.equal(x[k], y[k]) for k in x)
    model = tiny()
    assert model(**next(a)).loss.item() > 0
    with pytest.raises(TypeError, match="doc"):
        next(S.batches([[3, 4]], identity_noise, **kw))
    with pytest.raises(TypeError, match="noise"):
        next(S.batches(docs, "infill", **kw))


def test_two_noises_with_one_seed_read_the_same_documents():
    """A comparison of noises is paired: a noise that draws many random numbers and one
    that draws none are given the same documents in the same order (with one shared
    generator, the first would shift every later document draw)."""
    docs = [[[d + 3, d + 4]] for d in range(20)]  # document d starts with token d + 3
    kw = {"pad_id": PAD, "bos_id": BOS, "eos_id": EOS, "max_src": 8, "max_tgt": 8}

    def greedy_noise(doc, generator):  # draws ten numbers, then changes nothing
        torch.rand(10, generator=generator)
        return identity_noise(doc, generator)

    a = S.batches(docs, identity_noise, batch_size=6, seed=3, **kw)
    b = S.batches(docs, greedy_noise, batch_size=6, seed=3, **kw)
    for _ in range(5):
        assert torch.equal(next(a)["tgt_out"], next(b)["tgt_out"])


def test_no_new_tokens_is_an_empty_answer_for_both_decoders():
    model = tiny(seed=1)
    for decode in (S.greedy, S.beam_search):
        out = decode(model, SRC, bos_id=BOS, eos_id=EOS, max_new_tokens=0)
        assert out.shape == (len(SRC), 0)


def test_check_document_and_generator():
    doc = [[3, 4], [5]]
    assert S.check_document(doc) == doc and S.check_document(doc) is not doc
    out = S.check_document(doc)
    out[0].append(9)  # a copy down to the sentences
    assert doc == [[3, 4], [5]]
    # numpy integers and tensors are token ids too, returned as plain ints
    mixed = S.check_document(
        [np.array([3, 4]).tolist(), [np.int64(5)], torch.tensor([6])]
    )
    assert mixed == [[3, 4], [5], [6]] and type(mixed[1][0]) is int
    for bad, exc in (
        ([], TypeError),
        ("abc", TypeError),
        ([[3, -1]], ValueError),
        ([[3, 1.5]], ValueError),
        ([3, 4], TypeError),
        ([[3, True]], ValueError),  # a bool is not a token id
        ([[2], [3, -4]], ValueError),
    ):
        with pytest.raises(exc, match="doc"):
            S.check_document(bad)
    with pytest.raises(TypeError, match="generator"):
        S.check_generator(0)


def test_rouge_against_a_hand_checked_example():
    # prediction "the cat sat", reference "the cat sat on the mat":
    # ROUGE-1: P 3/3, R 3/6 -> F 2/3; ROUGE-2: P 2/2, R 2/5 -> F 4/7; ROUGE-L: LCS 3 -> 2/3
    r = S.rouge(["the cat sat", "dog"], ["The cat sat on the mat.", "a cat"])
    np.testing.assert_allclose(r["rouge1"], [2 / 3, 0.0])
    np.testing.assert_allclose(r["rouge2"], [4 / 7, 0.0])
    np.testing.assert_allclose(r["rougeL"], [2 / 3, 0.0])
    with pytest.raises(ValueError, match="same length"):
        S.rouge(["a"], ["a", "b"])
    with pytest.raises(TypeError, match="strings"):
        S.rouge("a", "a")
    with pytest.raises(ValueError, match="types"):
        S.rouge(["a"], ["a"], types=("bleu",))


def test_summaries_copy_facts_from_a_shuffled_document_with_a_distractor():
    from ptlm_lite.data import make_world
    from ptlm_lite.suite.build import entity_split

    task = summaries(0)
    assert summaries(0) == task
    world = make_world(0)
    split = entity_split(world)
    people = {e.name: e for e in world.of_kind("person")}
    assert len(task["train"]) + len(task["test"]) == len(people)
    for part in ("train", "test"):
        for ex in task[part]:
            person = people[ex["person"]]
            assert split[person.id] == part
            assert ex["summary"] == summary_of(world, person)
            a = person.attributes
            assert (
                f"{ex['person']} is a {a['age']}-year-old {a['occupation']}."
                in (ex["document"])
            )
            # the distractor: a second person's age and occupation
            assert len(re.findall(r"-year-old", ex["document"])) == 2
            assert facts_copied([ex["summary"]], [ex])[0] == 1.0
    # the copy is not "the first age in the text" for many of them
    first_is_right = [
        re.search(r"(\d+)-year-old", ex["document"]).group(1)
        == re.search(r"(\d+)-year-old", ex["summary"]).group(1)
        for ex in task["train"]
    ]
    assert 0.3 < np.mean(first_is_right) < 0.7
    with pytest.raises(ValueError, match="person"):
        summary_of(world, world.of_kind("city")[0])


def test_a_random_weights_model_scores_near_the_floor_on_summaries():
    tok = P.data.tokenizer.get_tokenizer(
        "wordpiece", 512, corpus="world", n_sentinels=0
    )
    s = tok.special_ids
    test = summaries(0)["test"][:8]
    cfg = P.preset("tiny", vocab_size=tok.vocab_size, pad_id=s["pad"], max_len=64)
    model = P.Transformer(cfg, seed=0).eval()
    src = torch.tensor(
        [tok.encode(e["document"])[: cfg.max_len - 1] + [s["eos"]] for e in test[:1]]
    )
    out = S.greedy(model, src, bos_id=s["bos"], eos_id=s["eos"], max_new_tokens=20)
    text = tok.decode([t for t in out[0].tolist() if t not in (s["pad"], s["eos"])])
    assert S.rouge([text], [test[0]["summary"]])["rouge1"][0] < 0.3


def test_facts_copied_counts_each_fact_and_ignores_spacing():
    ex = summaries(0)["test"][0]
    f = ex["facts"]
    wrong = {
        "name": "Zz Qq",
        "age": "999",
        "occupation": "astronaut",
        "employer": "Nope Ltd",
    }
    assert facts_copied([ex["summary"].upper().replace("-", " - ")], [ex])[0] == 1.0
    # the words the scorer reads: a decoded "47 - year - old ." is the reference's
    # "47-year-old." (MASS counts a summary's length in them)
    assert (
        summary_words("Ann Bo, a 47 - year - old pilot .")
        == summary_words("Ann Bo, a 47-year-old pilot.")
        == ["ann", "bo", "a", "47", "year", "old", "pilot"]
    )
    # the template with another person's facts: ROUGE-1 about half, facts 0
    other = ex["summary"]
    for k in f:
        other = other.replace(f[k], wrong[k])
    assert facts_copied([other], [ex])[0] == 0.0
    assert S.rouge([other], [ex["summary"]])["rouge1"][0] > 0.3
    half = ex["summary"].replace(f["age"], "999").replace(f["employer"], "Nope Ltd")
    assert facts_copied([half], [ex])[0] == 0.5
    with pytest.raises(ValueError, match="same length"):
        facts_copied(["a"], [ex, ex])
    with pytest.raises(TypeError, match="facts"):
        facts_copied(["a"], [{"summary": "a"}])
    # which facts: the age and the employer were replaced, the name and job kept
    by = facts_by_field([half, ex["summary"]], [ex, ex])
    assert {k: v.tolist() for k, v in by.items()} == {
        "name": [1.0, 1.0],
        "age": [0.0, 1.0],
        "occupation": [1.0, 1.0],
        "employer": [0.0, 1.0],
    }
    with pytest.raises(TypeError, match="list of strings"):
        facts_by_field("a summary", [ex])


def test_constant_summary_is_chosen_on_training_summaries_and_scored_per_example():
    from ptlm_lite.suite.generation import constant_summary

    data = summaries(0)
    train, test = data["train"], data["test"][:12]
    c = constant_summary(train, test, candidates=3)
    refs = [e["summary"] for e in train]
    assert c["text"] in refs[:3]  # a training summary, never a test one
    best = max(
        S.rouge([r] * len(refs), refs, ("rougeL",))["rougeL"].mean() for r in refs[:3]
    )
    got = S.rouge([c["text"]] * len(refs), refs, ("rougeL",))["rougeL"].mean()
    assert got == best
    for k in ("facts", "rouge1", "rouge2", "rougeL"):
        assert c[k].shape == (len(test),)
    assert np.array_equal(c["facts"], facts_copied([c["text"]] * len(test), test))
    assert c["facts"].mean() < 0.25  # the floor: another person's facts, mostly
    with pytest.raises(ValueError, match="candidates"):
        constant_summary(train, test, candidates=0)
    with pytest.raises(ValueError, match="non-empty"):
        constant_summary([], test)


def test_decoding_puts_the_models_mode_back_and_refuses_a_nan_penalty():
    model, src = tiny(), SRC
    model.train()
    S.greedy(model, src, bos_id=BOS, eos_id=EOS, max_new_tokens=3)
    assert model.training  # decoding ran without dropout, then gave the mode back
    S.beam_search(model, src, bos_id=BOS, eos_id=EOS, beams=2, max_new_tokens=3)
    assert model.training
    for bad in (float("nan"), float("inf")):
        with pytest.raises(ValueError, match="length_penalty must be finite"):
            S.beam_search(model, src, bos_id=BOS, eos_id=EOS, length_penalty=bad)


def test_rouge_of_nothing_is_an_error_not_nan():
    with pytest.raises(ValueError, match="empty"):
        S.rouge([], [])
