"""Tokenizers: one interface over four kinds, fixed special ids, offsets, caching, bad
input, and the same ids in every process.
"""

import json
import os
import subprocess
import sys
import time

import pytest

from ptlm_lite.data import tokenizer as tk
from ptlm_lite.data.world import make_world

TEXTS = [d.text for d in make_world(0).documents] + [
    "To be, or not to be: that is the question.",
    "Hamlet's friend Horatio.",
]
SAMPLE = "Hamlet's friend Horatio is a 34-year-old baker."


@pytest.fixture(autouse=True)
def tmp_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("PTLM_CACHE", str(tmp_path / "cache"))


@pytest.fixture(scope="module", params=tk.KINDS)
def tok(request):
    return tk.train_tokenizer(request.param, TEXTS, vocab_size=400, n_sentinels=5)


def test_special_ids_are_the_same_for_every_kind(tok):
    assert tok.special_ids == {
        "pad": 0,
        "unk": 1,
        "cls": 2,
        "sep": 3,
        "mask": 4,
        "bos": 5,
        "eos": 6,
    }
    assert tok.token_to_id("[MASK]") == tok.mask_id == 4
    assert tok.sentinel_ids == [7, 8, 9, 10, 11]
    assert [tok.token_to_id(f"<extra_id_{i}>") for i in range(5)] == tok.sentinel_ids
    assert tok.token_to_id("<extra_id_5>") is None  # only the configured number exists


def test_encode_decode_round_trip_and_batch(tok):
    ids = tok.encode(SAMPLE)
    assert all(isinstance(i, int) and 0 <= i < tok.vocab_size for i in ids)
    decoded = tok.decode(ids)
    if tok.kind == "wordpiece":  # BERT's decoder puts spaces around punctuation
        assert decoded.replace(" ", "") == SAMPLE.replace(" ", "")
    else:
        assert decoded == SAMPLE
    assert tok.encode_batch([SAMPLE, "baker"]) == [ids, tok.encode("baker")]
    assert tok.encode("") == []
    assert tok.decode([tok.cls_id] + ids, skip_special_tokens=False) != tok.decode(ids)


def test_offsets_and_word_ids_cover_the_text(tok):
    enc = tok.encode_with_offsets(SAMPLE)
    assert enc.ids == tok.encode(SAMPLE)
    assert len(enc.ids) == len(enc.offsets) == len(enc.word_ids) == len(enc.tokens)
    for (start, end), word in zip(enc.offsets, enc.word_ids):
        assert 0 <= start <= end <= len(SAMPLE)
        # BPE: a lone "Ġ" is empty
        if word is not None and end > start and tok.kind != "unigram":
            assert SAMPLE[start:end].strip() != ""
    # "Horatio" is one word: all its tokens share one word id (whole-word masking needs
    # this).
    h = SAMPLE.index("Horatio")
    words = {
        w
        for (s, e), w in zip(enc.offsets, enc.word_ids)
        if s >= h and e <= h + 7 and e > s
    }
    assert len(words) == 1


def test_save_load_round_trip(tok, tmp_path):
    path = tmp_path / f"{tok.kind}.json"
    tok.save(path)
    again = tk.Tokenizer.load(path)
    assert again.vocab_size == tok.vocab_size and again.encode(SAMPLE) == tok.encode(
        SAMPLE
    )


def test_get_tokenizer_trains_once_then_loads_fast(tmp_path):
    start = time.perf_counter()
    first = tk.get_tokenizer("bpe", vocab_size=400, corpus="world", n_sentinels=3)
    path = tmp_path / "cache" / "tokenizers" / "world-bpe-400-s3.json"
    assert path.exists()
    mtime = path.stat().st_mtime_ns
    start = time.perf_counter()
    second = tk.get_tokenizer("bpe", vocab_size=400, corpus="world", n_sentinels=3)
    assert time.perf_counter() - start < 0.5
    assert path.stat().st_mtime_ns == mtime  # loaded, not retrained
    assert second.encode(SAMPLE) == first.encode(SAMPLE)


def test_corrupted_cached_tokenizer_is_retrained(tmp_path):
    tk.get_tokenizer("wordpiece", vocab_size=300, corpus="world", n_sentinels=0)
    path = tk.tokenizer_path("wordpiece", 300, "world", 0)
    assert path.parent == tmp_path / "cache" / "tokenizers"
    path.write_text(path.read_text()[:100])  # truncated
    with pytest.warns(RuntimeWarning, match="damaged"):
        tok = tk.get_tokenizer(
            "wordpiece", vocab_size=300, corpus="world", n_sentinels=0
        )
    assert (
        tok.vocab_size <= 300 and tk.Tokenizer.load(path).vocab_size == tok.vocab_size
    )


@pytest.mark.parametrize(
    "call, err, match",
    [
        (lambda: tk.get_tokenizer("sentencepiece"), ValueError, "kind must be one of"),
        (
            lambda: tk.shakespeare_tokenizer("sentencepiece"),
            ValueError,
            "kind 'sentencepiece'.*kind must be one of.*wordpiece.*bpe.*unigram.*char",
        ),
        (
            lambda: tk.get_tokenizer("bpe", 1000, corpus="wikipedia"),
            ValueError,
            "corpus must be one of",
        ),
        (
            lambda: tk.train_tokenizer("wordpiece", TEXTS, vocab_size=50),
            ValueError,
            "vocab_size=50 is too small.*pass vocab_size >=",
        ),
        (
            lambda: tk.train_tokenizer("bpe", TEXTS, vocab_size=300, n_sentinels=100),
            ValueError,
            "too small",
        ),
        (
            lambda: tk.train_tokenizer("wordpiece", [], vocab_size=500, n_sentinels=0),
            ValueError,
            "texts is empty",
        ),
        (
            lambda: tk.train_tokenizer(
                "wordpiece", ["  "], vocab_size=500, n_sentinels=0
            ),
            ValueError,
            "texts is empty",
        ),
        (lambda: tk.train_tokenizer("char", [b"bytes"]), TypeError, "must be a str"),
        (
            lambda: tk.train_tokenizer("char", TEXTS).encode(42),
            TypeError,
            "text must be a str",
        ),
        (
            lambda: tk.train_tokenizer("char", TEXTS).encode_batch("one string"),
            TypeError,
            "list of strings",
        ),
    ],
)
def test_bad_inputs(call, err, match):
    with pytest.raises(err, match=match):
        call()


def test_load_of_a_non_tokenizer_file_is_a_clear_error(tmp_path):
    bad = tmp_path / "x.json"
    bad.write_text("{}")
    with pytest.raises(RuntimeError, match="cannot load a tokenizer"):
        tk.Tokenizer.load(bad)


def test_decode_of_an_id_outside_the_vocabulary_is_a_clear_error(tok):
    import torch

    assert tok.decode(torch.tensor(tok.encode("Hamlet"))) == tok.decode(
        tok.encode("Hamlet")
    )
    for bad in ([tok.vocab_size], [-1], [5, 10**12]):
        with pytest.raises(
            ValueError, match=rf"ids\[\d\] = {bad[-1]} .*\[0, {tok.vocab_size}\)"
        ):
            tok.decode(bad)
    with pytest.raises(TypeError, match="ids must be"):
        tok.decode([1.5])
    with pytest.raises(TypeError, match="ids must be"):
        tok.decode("Hamlet")


def test_shakespeare_tokenizer_is_the_books_cached_tokenizer(monkeypatch):
    """One factory per kind, with the arguments (hence the cache file and ids) that the
    GPT and BERT chapters' own factories used.
    """
    calls = []
    monkeypatch.setattr(
        tk, "get_tokenizer", lambda *a, **k: calls.append((a, k)) or "tok"
    )
    assert tk.shakespeare_tokenizer("bpe") == "tok"
    tk.shakespeare_tokenizer("wordpiece")
    tk.shakespeare_tokenizer("unigram", vocab_size=2000, n_sentinels=100)
    assert calls == [
        (("bpe", 1024), {"corpus": "shakespeare", "n_sentinels": 0}),
        (("wordpiece", 1024), {"corpus": "shakespeare", "n_sentinels": 0}),
        (("unigram", 2000), {"corpus": "shakespeare", "n_sentinels": 100}),
    ]
    # GPT's cached BPE keeps its file name: existing caches stay valid.
    assert (
        tk.tokenizer_path("bpe", 1024, "shakespeare", 0).name
        == "shakespeare-bpe-1024-s0.json"
    )


_TRAIN_ALL = """
import json, sys
from ptlm_lite.data import tokenizer as tk
from ptlm_lite.data.world import make_world
texts = [d.text for d in make_world(0).documents]
print(json.dumps({k: tk.train_tokenizer(k, texts, 400, n_sentinels=5).to_json() for k in tk.KINDS}))
"""


def test_every_kind_trains_to_the_same_ids_in_every_process():
    """Hugging Face's trainers iterate hash maps seeded per process (Rust's seed, not
    Python's): before the fix, WordPiece learned different tokens and Unigram gave
    different ids from run to run. Two fresh processes, different hash seeds and thread
    counts, must agree exactly.
    """
    runs = []
    for seed, threads in (("1", "1"), ("2", "2")):
        env = {**os.environ, "PYTHONHASHSEED": seed, "RAYON_NUM_THREADS": threads}
        done = subprocess.run(
            [sys.executable, "-c", _TRAIN_ALL],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert done.returncode == 0, done.stderr[-2000:]
        runs.append(json.loads(done.stdout.splitlines()[-1]))
    for kind in tk.KINDS:
        first, second = (json.loads(r[kind]) for r in runs)
        assert first == second, (
            f"{kind} trained to different tokenizers in two processes"
        )
    # after 7 + 5 specials
    unigram = json.loads(runs[0]["unigram"])["hf"]["model"]["vocab"][12:]
    # by score, then string
    assert unigram == sorted(unigram, key=lambda ps: (-ps[1], ps[0]))


def test_char_tokenizer_trained_line_by_line_still_writes_line_breaks():
    tok = tk.train_tokenizer("char", ["ROMEO:", "O, she doth teach"], n_sentinels=0)
    text = "ROMEO:\nO, she doth teach\n"
    ids = tok.encode(text)
    assert tok.unk_id not in ids
    assert tok.decode(ids) == text
