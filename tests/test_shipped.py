"""The shipped models (``ptlm_lite.shipped``): what their JSON states is what they do.

The held-out loss is recomputed on the same held-out text; loading touches neither the
network nor the model cache; the char GPT's samples are mostly words of the plays (a
random-weights model of the same shape fails the same check); the BERT recalls the
favourite colours of the suite's held-out people better than the best constant answer
and fills the BERT chapter's Shakespeare probes from their context.
"""

import json
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors import safe_open

from ptlm_lite import shipped

ROOT = Path(__file__).resolve().parents[1]
GPT, BERT = shipped.NAMES


class _Loaded(dict):
    def __missing__(self, name):  # each model loaded once, when a test first asks
        self[name] = shipped.load(name)
        return self[name]


@pytest.fixture(scope="module")
def loaded():
    return _Loaded()


@pytest.mark.parametrize("name", shipped.NAMES)
def test_files_are_small_fp16_and_described(name):
    info = shipped.info(name)
    weights = shipped.FOLDER / info["weights"]
    assert weights.stat().st_size == info["bytes"] <= 3_000_000
    with safe_open(str(weights), framework="pt") as f:
        names = f.keys()  # safe_open is not iterable
        assert {f.get_tensor(k).dtype for k in names} == {torch.float16}
    for key in ("config", "tokenizer", "command", "train_seconds", "steps", "seed"):
        assert key in info, key
    assert info["command"].startswith("python scripts/train_shipped.py ")
    assert info["heldout"]["loss"] > 0 and info["threads"] == 1


@pytest.mark.parametrize("name", shipped.NAMES)
def test_loads_offline_in_eval_mode_fp32(name, monkeypatch, tmp_path):
    def no_network(*args, **kwargs):
        raise OSError("the network was used")

    monkeypatch.setattr(socket, "socket", no_network)
    monkeypatch.setattr(socket, "create_connection", no_network)
    monkeypatch.setenv("PTLM_CACHE", str(tmp_path / "cache"))
    model, tok, info = shipped.load(name)
    assert not model.training and info["name"] == name
    assert {p.dtype for p in model.parameters()} == {torch.float32}
    assert tok.vocab_size == model.config.vocab_size == info["tokenizer"]["vocab_size"]
    assert not (tmp_path / "cache").exists()  # nothing read from or written to a cache


def test_a_wrong_name_is_a_clear_error():
    with pytest.raises(ValueError, match="name must be one of"):
        shipped.load("shakespeare-gpt")
    with pytest.raises(ValueError, match="name must be one of"):
        shipped.info(None)


def test_a_damaged_weights_file_is_refused(tmp_path, monkeypatch):
    for f in shipped.FOLDER.glob(f"{BERT}*"):
        (tmp_path / f.name).write_bytes(f.read_bytes())
    damaged = tmp_path / f"{BERT}.safetensors"
    damaged.write_bytes(damaged.read_bytes()[:-10] + bytes(10))
    monkeypatch.setattr(shipped, "FOLDER", tmp_path)
    with pytest.raises(RuntimeError, match="SHA-256.*scripts/train_shipped.py bert"):
        shipped.load(BERT)


@pytest.mark.parametrize("name", shipped.NAMES)
def test_heldout_loss_is_the_stated_one(name, loaded):
    model, tok, info = loaded[name]
    got = shipped.heldout_loss(name, model, tok)
    stated = info["heldout"]
    assert stated["what"] == shipped.HELDOUT[name]  # the same held-out text
    assert got["tokens"] == stated["tokens"]
    assert got["loss"] == pytest.approx(stated["loss"], abs=2e-3)
    for k in ("mlm_accuracy", "most_frequent_token_accuracy", "nsp_accuracy"):
        if k in stated:  # bert-fill's, at [MASK] only (most_frequent too)
            assert got[k] == pytest.approx(stated[k], abs=2e-3), k
    assert got.get("mask_tokens") == stated.get("mask_tokens")
    # fp16 storage costs (almost) nothing
    assert abs(stated["loss"] - stated["loss_fp32_weights"]) < 0.01


def test_char_gpt_is_good_enough_to_read(loaded):
    model, _, info = loaded[GPT]
    assert info["heldout"]["loss"] < 1.9  # nats per character on the validation plays
    assert model.config.pre_norm and info["tokenizer"]["kind"] == "char"


def _words(text: str) -> list[str]:
    return [w.strip("'").lower() for w in re.findall(r"[A-Za-z']+", text) if w != "'"]


@pytest.fixture(scope="module")
def play_words():
    from ptlm_lite.data import text_stream

    return set(_words(text_stream("all")))


def _real_word_share(model, tok, vocabulary, seed=0) -> tuple[float, str]:
    text = shipped.generate(model, tok, "\n", 400, temperature=0.8, seed=seed)
    words = [w for w in _words(text) if w]
    return sum(w in vocabulary for w in words) / len(words), text


def test_char_gpt_writes_words_of_the_plays(loaded, play_words):
    model, tok, _ = loaded[GPT]
    share, text = _real_word_share(model, tok, play_words)
    assert share >= 0.85, (share, text)
    # same seed, same text
    assert shipped.generate(model, tok, "\n", 50, temperature=0.8, seed=0) == text[:51]
    # play format: a speaker's name in capitals on its own line, then verse lines
    assert re.search(r"^[A-Z][A-Z' ]+:$", text, re.MULTILINE), text
    assert text.count("\n") >= 6, text
    # the check can fail: the same network with random weights writes non-words
    from ptlm_lite.gpt import GPT as GPTModel

    untrained = GPTModel(model.config, seed=0).eval()
    assert _real_word_share(untrained, tok, play_words)[0] < 0.5


def _heldout_facts(slot: str) -> list[tuple[str, str, str]]:
    """(before, answer, after) for each held-out person of the suite: the document's
    sentence that states the fact, the answer cut out."""
    from ptlm_lite import suite
    from ptlm_lite.data import make_world

    world = make_world(0)
    split = suite.entity_split(world)
    docs = {d.entity: d.text for d in world.documents}
    out = []
    for e in world.of_kind("person"):
        if split[e.id] != "test":
            continue
        answer = e.attributes[slot]
        if slot == "colour":
            sentence = f"The favourite colour of {e.name} is {answer}."
        else:
            sentence = f"{e.name} is a {e.attributes['age']}-year-old {answer}."
        assert sentence in docs[e.id]  # stated once in the pre-training documents
        cut = sentence.rindex(answer)
        out.append((sentence[:cut], answer, sentence[cut + len(answer) :]))
    return out


def test_bert_recalls_heldout_favourite_colours_better_than_a_constant(loaded):
    """The suite's held-out people (never in a fine-tuning set): each favourite colour
    is stated once in pre-training. Top-1 (every piece right) against the best
    constant answer, with a one-sided binomial test. (Occupations, 12 classes, stay
    near the constant answer: 9 of 39 against 6 of 39; not asserted.)"""
    from scipy.stats import binomtest

    model, tok, _ = loaded[BERT]
    facts = _heldout_facts("colour")
    answers = [a for _, a, _ in facts]
    majority = max(answers.count(a) for a in set(answers)) / len(answers)
    right = sum(shipped.fill(model, tok, b, a, e) == a for b, a, e in facts)
    assert len(facts) >= 30 and right / len(facts) > majority + 0.1, (right, majority)
    assert binomtest(right, len(facts), majority, alternative="greater").pvalue < 0.01


def test_bert_uses_the_context_of_shakespeare_lines(loaded):
    model, tok, info = loaded[BERT]
    probes = [  # the BERT chapter's probes: its 40-second model answers "," to each
        "To be, or not to [MASK].",
        "I pray you, [MASK] me.",
        "Good morrow, my [MASK] lord.",
        "What is your [MASK]?",
        "The king is [MASK].",
    ]
    top1 = []
    for probe in probes:
        before, after = probe.split("[MASK]")
        top1.append(shipped.fill(model, tok, before, after=after)[0][0])
    assert len(set(top1)) >= 4 and all(t.isalpha() for t in top1), top1
    held = info["heldout"]  # masked pieces of held-out plays and another world
    assert held["mlm_accuracy"] > held["most_frequent_token_accuracy"] + 0.2


@pytest.mark.slow
def test_training_is_deterministic_and_writes_a_loadable_pair(tmp_path):
    def run(out):
        cmd = [sys.executable, "scripts/train_shipped.py", "gpt-char", "--steps", "3"]
        subprocess.run(
            cmd + ["--out", str(out), "--no-progress"],
            cwd=ROOT,
            check=True,
            capture_output=True,
        )
        return json.loads((out / f"{GPT}.json").read_text())

    a, b = run(tmp_path / "a"), run(tmp_path / "b")
    assert a["sha256"] == b["sha256"] and a["heldout"] == b["heldout"]
    assert a["steps"] == 3 and a["command"].endswith("--steps 3")
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == sorted(
        f"{GPT}{s}" for s in (".json", ".safetensors", ".tokenizer.json")
    )
