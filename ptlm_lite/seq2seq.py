"""What every encoder-decoder of Part IV shares: the noising contract, batches, decoding
with a key/value cache, beam search and ROUGE.

    document ──noise──► Pair(source, target) ──collate──► src, tgt_in, tgt_out
                                                           │
                      Transformer(src, tgt_in, tgt_out) ◄──┘  (training: P.train)
                      greedy / beam_search(model, src)        (generation)

**The noising contract.** BERT's corruptions keep the shape (``corrupt.Masked``: the
same positions, some replaced). The denoising encoder-decoders change the length: BART
deletes tokens and replaces spans by one mask, T5 replaces spans by sentinels and asks
for the spans back, PEGASUS removes whole sentences, MASS masks a fragment and asks for
it. Each is a pure function

    noise(doc, generator, **params) -> Pair(source, target)

``doc``: one document as a list of sentences, each a list of token ids (a token-level
noise flattens it); ``generator``: a ``torch.Generator`` (same state, same output); the
argument is never modified. ``source`` and ``target`` are plain lists without BOS/EOS:
:func:`collate` adds them, so every noise is trained by the same loop.

**Generation.** :func:`greedy` and :func:`beam_search` encode the source once and run
the decoder on the newest token only: each decoder layer keeps its self-attention's keys
and values and the encoder's (``cache[i]["cross"]``). They work with any model that has
``Transformer``'s ``encode(src)`` and
``decode(tgt, memory, src_valid, cache=, offset=)``
(BART, T5, PEGASUS and MASS subclass it).

**ROUGE** comes from Google's ``rouge-score`` package (:func:`rouge`), not re-written.

Chapters: ``chapters/bart.ipynb``, ``chapters/t5.ipynb``, ``chapters/pegasus.ipynb``,
``chapters/mass.ipynb``; the decoder cache is introduced with
``chapters/transformer.ipynb``'s model.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch

from .checks import check_generator
from .device import device_of, eval_mode
from .output import IGNORE

__all__ = [
    "Pair",
    "batches",
    "beam_search",
    "check_document",
    "check_generator",
    "collate",
    "greedy",
    "rouge",
]


@dataclass(frozen=True)
class Pair:
    """What a length-changing noise returns: the encoder's input and the decoder's
    target, token ids without BOS/EOS (:func:`collate` adds them)."""

    source: list[int] = field(default_factory=list)
    target: list[int] = field(default_factory=list)


_INT_ONLY = frozenset({int})


def check_document(doc) -> list[list[int]]:
    """A document: a non-empty list of sentences, each a list of int token ids (≥ 0).
    Returns a copy as lists of ints; raises ValueError / TypeError naming ``doc``."""
    if isinstance(doc, (str, bytes)) or not isinstance(doc, Sequence) or not doc:
        raise TypeError(
            "doc must be a non-empty list of sentences, each a list of token ids, "
            f"got {type(doc).__name__}"
        )
    out = []
    for i, sentence in enumerate(doc):
        if type(sentence) is list and _INT_ONLY.issuperset(map(type, sentence)):
            # the usual case, checked in C: a list of plain ints (bool is not int here)
            if not sentence or min(sentence) >= 0:
                out.append(sentence.copy())
                continue
        if isinstance(sentence, torch.Tensor):
            sentence = sentence.tolist()
        if isinstance(sentence, (str, bytes)) or not isinstance(sentence, Sequence):
            raise TypeError(
                f"doc[{i}] must be a list of token ids, got {type(sentence).__name__} "
                "(a flat list of ids is one sentence: pass [ids])"
            )
        for t in sentence:
            if isinstance(t, bool) or not isinstance(t, (int, np.integer)) or t < 0:
                raise ValueError(
                    f"doc[{i}] must hold non-negative int token ids, got {t!r}"
                )
        out.append([int(t) for t in sentence])
    return out


def _limit(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 2:
        raise ValueError(f"{name} must be an integer ≥ 2, got {value!r}")
    return value


def collate(
    pairs: Sequence[Pair],
    *,
    pad_id: int,
    bos_id: int,
    eos_id: int,
    max_src: int,
    max_tgt: int,
) -> dict[str, torch.Tensor]:
    """Pairs -> the three tensors ``Transformer.forward`` takes:

        src     = source + [EOS]          (B, S)  padded with pad_id
        tgt_in  = [BOS] + target          (B, T)  padded with pad_id
        tgt_out = target + [EOS]          (B, T)  padded with IGNORE (-100)

    Each cut to ``max_src`` / ``max_tgt`` tokens (EOS kept); the batch is as long as
    its longest row.
    """
    max_src, max_tgt = _limit("max_src", max_src), _limit("max_tgt", max_tgt)
    if not pairs or not all(isinstance(p, Pair) for p in pairs):
        raise TypeError("pairs must be a non-empty list of seq2seq.Pair")
    src = [list(p.source[: max_src - 1]) + [eos_id] for p in pairs]
    tgt = [list(p.target[: max_tgt - 1]) for p in pairs]
    S, T = max(map(len, src)), max(map(len, tgt)) + 1

    def pad(rows, n, value):
        return torch.tensor([r + [value] * (n - len(r)) for r in rows])

    return {
        "src": pad(src, S, pad_id),
        "tgt_in": pad([[bos_id] + t for t in tgt], T, pad_id),
        "tgt_out": pad([t + [eos_id] for t in tgt], T, IGNORE),
    }


# the noise's generator is seeded ``seed + NOISE_STREAM``: apart from the documents'
NOISE_STREAM = 0x5EED


def batches(
    docs: Sequence,
    noise,
    *,
    batch_size: int,
    seed: int = 0,
    pad_id: int,
    bos_id: int,
    eos_id: int,
    max_src: int,
    max_tgt: int,
) -> Iterator[dict[str, torch.Tensor]]:
    """An endless iterator of collated batches for ``P.train``: each row a document
    drawn at random (seeded) and put through ``noise(doc, generator)``.

    The documents and the noise draw from two generators, so two noises given the same
    ``seed`` read the same documents in the same order, however many random numbers
    each noise takes: a comparison of noises is paired."""
    if (
        isinstance(batch_size, bool)
        or not isinstance(batch_size, int)
        or batch_size < 1
    ):
        raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
    if not callable(noise):
        raise TypeError(
            f"noise must be a function (doc, generator) -> Pair, got {noise!r}"
        )
    docs = [check_document(d) for d in docs]
    if not docs:
        raise ValueError("docs must hold at least one document")
    rows_g = torch.Generator().manual_seed(seed)
    noise_g = torch.Generator().manual_seed(seed + NOISE_STREAM)
    while True:
        rows = torch.randint(len(docs), (batch_size,), generator=rows_g).tolist()
        pairs = [noise(docs[r], noise_g) for r in rows]
        yield collate(
            pairs,
            pad_id=pad_id,
            bos_id=bos_id,
            eos_id=eos_id,
            max_src=max_src,
            max_tgt=max_tgt,
        )


def _check_decoding(model, src, bos_id, eos_id, max_new_tokens) -> int:
    V = model.config.vocab_size
    for name, v in (("bos_id", bos_id), ("eos_id", eos_id)):
        if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v < V:
            raise ValueError(f"{name} must be an int token id in [0, {V}), got {v!r}")
    if not isinstance(src, torch.Tensor) or src.dim() != 2:
        raise ValueError("src must be a (B, S) tensor of token ids")
    limit = model.config.max_len
    if max_new_tokens is None:
        max_new_tokens = limit - 1
    if (
        isinstance(max_new_tokens, bool)
        or not isinstance(max_new_tokens, int)
        or not 0 <= max_new_tokens < limit
    ):
        raise ValueError(
            f"max_new_tokens must be None or an integer in [0, max_len={limit}), "
            f"got {max_new_tokens!r}"
        )
    return max_new_tokens


@torch.no_grad()
def greedy(model, src, *, bos_id: int, eos_id: int, max_new_tokens: int | None = None):
    """The most likely token at each step until EOS. Returns (B, T) ids without BOS,
    padded (``pad_id``) after each row's EOS. The source is encoded once; the decoder
    runs on the newest token only, its keys and values cached (equal to re-running the
    whole prefix: a test checks). ``src`` is moved to wherever the model is."""
    n = _check_decoding(model, src, bos_id, eos_id, max_new_tokens)
    with eval_mode(model):  # no dropout; the model's mode is put back after
        return model.generate(
            src.to(device_of(model)), bos_id, eos_id, max_new_tokens=n
        )


def _reorder(cache: list, rows: torch.Tensor) -> None:
    """Keep the cached keys/values of the beams that survive (self-attention only: the
    encoder's are the same for every beam of a source)."""
    for layer in cache:
        for key in ("k", "v"):
            if key in layer:
                layer[key] = layer[key].index_select(0, rows)


@torch.no_grad()
def beam_search(
    model,
    src,
    *,
    bos_id: int,
    eos_id: int,
    beams: int = 4,
    max_new_tokens: int | None = None,
    length_penalty: float = 1.0,
):
    """Beam search: keep the ``beams`` likeliest prefixes; a prefix that ends in EOS
    is finished with the score ``sum log p / length ** length_penalty`` (the length
    counts the tokens after BOS, EOS included, as Hugging Face's ``generate`` does);
    stop as ``generate(early_stopping=False)`` does (below), or at the limit. Returns
    (B, T) ids without BOS, padded after EOS: each source's best hypothesis.

    ``beams=1`` is greedy decoding.
    """
    n = _check_decoding(model, src, bos_id, eos_id, max_new_tokens)
    if isinstance(beams, bool) or not isinstance(beams, int) or beams < 1:
        raise ValueError(f"beams must be a positive integer, got {beams!r}")
    if not isinstance(length_penalty, (int, float)) or isinstance(length_penalty, bool):
        raise TypeError(f"length_penalty must be a number, got {length_penalty!r}")
    if not math.isfinite(length_penalty):  # NaN scores would pick an arbitrary beam
        raise ValueError(f"length_penalty must be finite, got {length_penalty!r}")
    with eval_mode(model):  # no dropout; the model's mode is put back after
        return _beam_search(model, src, bos_id, eos_id, beams, n, length_penalty)


def _beam_search(model, src, bos_id, eos_id, beams, n, length_penalty):
    """:func:`beam_search` once its arguments are checked (``n``: the new tokens)."""
    src = src.to(device_of(model))  # decoded wherever the model is
    B, K, V = src.shape[0], beams, model.config.vocab_size
    if n == 0:  # nothing to write, as greedy decoding
        return src.new_zeros(B, 0)
    pad = model.config.pad_id
    memory, src_valid, _ = model.encode(src.repeat_interleave(K, dim=0))
    cache = [{} for _ in range(model.decoder.n_layer)]
    seqs = torch.full((B * K, 1), bos_id, dtype=torch.long, device=src.device)
    # only the first beam of each source is alive at the start (all K are equal)
    score = torch.full((B, K), float("-inf"), device=src.device)
    score[:, 0] = 0.0
    finished: list[list[tuple[float, list[int]]]] = [[] for _ in range(B)]
    done = [False] * B
    for step in range(n):
        logits, _, _ = model.decode(
            seqs[:, -1:], memory, src_valid, cache=cache, offset=step
        )
        logp = logits[:, -1].float().log_softmax(-1).view(B, K, V)
        cand = (score[:, :, None] + logp).view(B, K * V)
        top, idx = cand.topk(2 * K, dim=1)  # (B, 2K): room for K that go on
        beam, tok = idx // V, idx % V
        new_score = torch.full((B, K), float("-inf"), device=src.device)
        rows = torch.zeros(B, K, dtype=torch.long, device=src.device)
        toks = torch.full((B, K), pad, dtype=torch.long, device=src.device)
        for b in range(B):
            if done[b]:  # finished sources only carry padding along
                new_score[b], rows[b] = score[b], b * K + torch.arange(K)
                continue
            kept = 0
            for j in range(2 * K):
                s = float(top[b, j])
                if s == float("-inf") or kept == K:
                    break
                r = b * K + int(beam[b, j])
                if int(tok[b, j]) == eos_id:
                    # a finished hypothesis (only from the K best candidates)
                    if j < K:
                        words = seqs[r, 1:].tolist() + [eos_id]
                        finished[b].append((s / len(words) ** length_penalty, words))
                    continue
                new_score[b, kept], rows[b, kept], toks[b, kept] = s, r, tok[b, j]
                kept += 1
            finished[b] = sorted(finished[b], key=lambda h: -h[0])[:K]
        score = new_score
        flat = rows.view(-1)
        seqs = torch.cat([seqs.index_select(0, flat), toks.view(-1, 1)], dim=1)
        _reorder(cache, flat)
        # a source is done when K hypotheses are finished and the best running beam,
        # scored at its present length, does not beat the worst of them: Hugging
        # Face's heuristic (early_stopping=False). Log-probabilities only fall, so with
        # length_penalty <= 0 no running beam could win later; with > 0 a longer one
        # might (its sum is divided by more), and, as there, the search stops anyway
        best_running = score.max(dim=1).values
        for b in range(B):
            done[b] = done[b] or (
                len(finished[b]) == K
                and float(best_running[b]) / (step + 1) ** length_penalty
                <= finished[b][-1][0]
            )
        if all(done):
            break
    out = []
    for b in range(B):
        hyps = list(finished[b])
        if not done[b]:  # the limit came first: the running beams count too
            for k in range(K):
                s = float(score[b, k])
                if s > float("-inf"):
                    words = seqs[b * K + k, 1:].tolist()
                    hyps.append((s / len(words) ** length_penalty, words))
        out.append(max(hyps, key=lambda h: h[0])[1])
    T = max(map(len, out))
    return torch.tensor([w + [pad] * (T - len(w)) for w in out], device=src.device)


_ROUGE_TYPES = ("rouge1", "rouge2", "rougeL")


def rouge(predictions, references, types=_ROUGE_TYPES) -> dict[str, np.ndarray]:
    """Per-example ROUGE F1 (``rouge1``, ``rouge2``, ``rougeL``) of ``predictions``
    against ``references`` (lists of strings of the same length), computed by Google's
    ``rouge-score`` package (lower-cased, punctuation dropped, no stemming). Returns
    ``{type: (N,) array}``: the per-example scores the verdict rule wants."""
    from rouge_score import rouge_scorer

    if isinstance(predictions, str) or isinstance(references, str):
        raise TypeError("predictions and references must be lists of strings")
    predictions, references = list(predictions), list(references)
    if len(predictions) != len(references):
        raise ValueError(
            f"predictions ({len(predictions)}) and references ({len(references)}) "
            "must have the same length"
        )
    for name, texts in (("predictions", predictions), ("references", references)):
        bad = [t for t in texts if not isinstance(t, str)]
        if bad:
            raise TypeError(f"{name} must hold strings, got {type(bad[0]).__name__}")
    if not predictions:  # the mean of no scores is NaN
        raise ValueError("predictions and references are empty: give at least one pair")
    unknown = set(types) - set(_ROUGE_TYPES)
    if unknown or not types:
        raise ValueError(f"types must be among {_ROUGE_TYPES}, got {tuple(types)}")
    scorer = rouge_scorer.RougeScorer(list(types), use_stemmer=False)
    rows = [scorer.score(r, p) for p, r in zip(predictions, references)]
    return {t: np.array([row[t].fmeasure for row in rows], dtype=float) for t in types}
