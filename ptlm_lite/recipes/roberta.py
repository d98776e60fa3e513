"""RoBERTa's recipe (Liu et al., 2019): how the data reaches BERT's network.

The paper kept BERT's network and changed the training. Three of its ablations are
about how the training rows are made, and each is one function here::

    SEGMENT-PAIR + NSP  [CLS] s1 s2 [SEP] s3 s4 [SEP]     B follows A, or half the
                                                          time comes from elsewhere
    FULL-SENTENCES      [CLS] s1 s2 s3 [SEP] t1 t2 [SEP]  contiguous sentences, across
                                                          documents; no NSP
    DOC-SENTENCES       [CLS] s1 s2 s3 [SEP]              the same, within a document

    static masking      epoch 1: the [MASK] barks    epoch 2: the [MASK] barks
    dynamic masking     epoch 1: the [MASK] barks    epoch 2: [MASK] dog barks

* :func:`segment_pairs`: BERT's pairs of *segments* (runs of whole sentences split at a
  sentence boundary), with a random B half of the time (the NSP label);
* :func:`full_sentences`: rows packed with whole sentences up to ``max_len``, one extra
  ``[SEP]`` where a document ends (``cross_documents=False``: DOC-SENTENCES);
* :func:`static_masks` and :func:`epoch_batches`: a fixed set of rows read epoch after
  epoch, masked once in advance (static; BERT wrote 10 masked copies, each read 4
  times in 40 epochs) or afresh every time a row is read (dynamic).

Everything takes an explicit ``torch.Generator`` (or a seed) and never modifies its
input. :func:`heldout_mlm` scores a model on held-out rows masked once, the same way for
every model. The model is :mod:`ptlm_lite.roberta`; the corruption is BERT's
(:func:`ptlm_lite.recipes.bert.mlm_corruption`).

Chapter: ``chapters/roberta.ipynb``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
import torch
from torch import nn

from ..bert import init_weights
from ..checks import check_count, check_flag, check_generator, check_ints, check_number
from ..corrupt import MASKED, Masked, Pair
from ..device import eval_mode, scores_on_device
from ..output import Output, cross_entropy
from ..roberta import RobertaForMaskedLM

__all__ = [
    "segment_pairs",
    "full_sentences",
    "static_masks",
    "epoch_batches",
    "heldout_mlm",
    "unigram_baseline",
    "RobertaWithNSP",
    "pretrain",
]


def _check_documents(documents) -> None:
    if isinstance(documents, (str, torch.Tensor)) or not isinstance(
        documents, Sequence
    ):
        raise TypeError(
            "documents must be a list of documents, each a list of sentences, each a "
            f"list of token ids; got {type(documents).__name__}"
        )
    if not any(len(s) for d in documents for s in d):
        raise ValueError("documents holds no token: every sentence is empty")
    for d in documents:
        for s in d:
            if len(s):  # ints >= 0 (a list, a tuple or a tensor of them)
                check_ints("documents' token ids", s)


def _rand(k: int, generator) -> int:
    return int(torch.randint(k, (1,), generator=generator))


def segment_pairs(
    documents,
    n: int,
    max_tokens: int,
    *,
    generator: torch.Generator,
    p_random: float = 0.5,
) -> list[Pair]:
    """``n`` SEGMENT-PAIR inputs (BERT's ``create_pretraining_data.py``, simplified).

    Take whole sentences from a random place in a document until they would pass
    ``max_tokens`` (at least two), split them at a random sentence boundary into A and
    B. With probability ``p_random``, B is replaced by a run of whole sentences from
    another document, filling what A left of ``max_tokens`` (label 1, NotNext);
    otherwise B is the real continuation (label 0, IsNext). Pack the pairs with
    :func:`ptlm_lite.corrupt.pack_pairs`, which trims the longer side to its
    ``max_len``.
    """
    check_generator(generator)
    _check_documents(documents)
    n = check_count("n", n)  # not True
    max_tokens = check_count("max_tokens", max_tokens, low=2)
    if not 0.0 <= check_number("p_random", p_random) <= 1.0:
        raise ValueError(f"p_random must be in [0, 1], got {p_random!r}")
    docs = [[list(s) for s in d if len(s)] for d in documents]
    with_pairs = [i for i, d in enumerate(docs) if len(d) >= 2]
    if not with_pairs or sum(1 for d in docs if d) < 2:
        raise ValueError(
            "documents must hold at least two non-empty documents, one of them with "
            "two or more sentences"
        )

    def run(doc, start, budget):  # whole sentences from start, at least one
        out = list(doc[start])
        for s in doc[start + 1 :]:
            if len(out) + len(s) > budget:
                break
            out += s
        return out

    pairs = []
    for _ in range(n):
        d = with_pairs[_rand(len(with_pairs), generator)]
        doc = docs[d]
        i = _rand(len(doc) - 1, generator)
        chunk = [doc[i], doc[i + 1]]
        total = len(doc[i]) + len(doc[i + 1])
        for s in doc[i + 2 :]:
            if total + len(s) > max_tokens:
                break
            chunk.append(s)
            total += len(s)
        cut = 1 + _rand(len(chunk) - 1, generator)  # A: chunk[:cut], B: the rest
        a = [t for s in chunk[:cut] for t in s]
        if float(torch.rand(1, generator=generator)) < p_random:
            others = [j for j, o in enumerate(docs) if o and j != d]
            other = docs[others[_rand(len(others), generator)]]
            b = run(other, _rand(len(other), generator), max(1, max_tokens - len(a)))
            pairs.append(Pair(a, b, True))
        else:
            pairs.append(Pair(a, [t for s in chunk[cut:] for t in s], False))
    return pairs


def full_sentences(
    documents,
    max_len: int,
    *,
    cls_id: int,
    sep_id: int,
    pad_id: int,
    cross_documents: bool = True,
    generator: torch.Generator | None = None,
) -> dict:
    """Pack whole sentences into rows ``[CLS] s1 s2 ... [SEP]`` of at most ``max_len``.

    FULL-SENTENCES (``cross_documents=True``): sentences are read contiguously; when a
    document ends the next one continues the row after one extra ``[SEP]``. DOC-
    SENTENCES (``False``): a row never crosses a document's end (rows near the end of
    a document come out shorter). A sentence longer than a row is cut into row-sized
    pieces, so every token is used exactly once, in order. ``generator`` (optional)
    shuffles the documents first. Returns ``ids``, ``valid`` (True on real tokens) and
    ``segments`` (all 0), padded to the longest row.
    """
    _check_documents(documents)
    max_len = check_count("max_len", max_len, low=3)
    cross_documents = check_flag("cross_documents", cross_documents)  # not "no"
    for name, v in (("cls_id", cls_id), ("sep_id", sep_id), ("pad_id", pad_id)):
        check_count(name, v, low=0)
    order = list(range(len(documents)))
    if generator is not None:
        check_generator(generator)
        order = torch.randperm(len(documents), generator=generator).tolist()
    budget = max_len - 2  # room between [CLS] and the final [SEP]
    rows, row = [], []

    def flush():
        if row:
            rows.append([cls_id] + row + [sep_id])
        row.clear()

    for d in order:
        pieces = [
            list(s[k : k + budget])
            for s in documents[d]
            for k in range(0, len(s), budget)
        ]
        pieces = [p for p in pieces if p]
        if not pieces:
            continue
        if not cross_documents:
            flush()
        elif row:  # the document boundary: one extra [SEP], if the next piece fits
            if len(row) + 1 + len(pieces[0]) > budget:
                flush()
            else:
                row.append(sep_id)
        for p in pieces:
            if len(row) + len(p) > budget:
                flush()
            row.extend(p)
    flush()
    T = max(len(r) for r in rows)
    ids = torch.full((len(rows), T), pad_id, dtype=torch.long)
    valid = torch.zeros((len(rows), T), dtype=torch.bool)
    for i, r in enumerate(rows):
        ids[i, : len(r)] = torch.tensor(r)
        valid[i, : len(r)] = True
    return {"ids": ids, "valid": valid, "segments": torch.zeros_like(ids)}


def static_masks(
    ids: torch.Tensor, corrupt: Callable, *, copies: int = 1, generator: torch.Generator
) -> list[Masked]:
    """Mask the whole dataset ``ids`` (N, T) in advance, ``copies`` times: BERT's static
    masking (``dupe_factor = 10`` copies, each with its own mask). ``corrupt(ids,
    generator=g) -> Masked``, e.g. :func:`ptlm_lite.recipes.bert.mlm_corruption`.
    """
    check_generator(generator)
    if not isinstance(copies, int) or copies < 1:
        raise ValueError(f"copies must be a positive integer, got {copies!r}")
    return [corrupt(ids, generator=generator) for _ in range(copies)]


def epoch_batches(
    data: dict,
    *,
    batch_size: int,
    corrupt: Callable,
    masking: str = "dynamic",
    copies: int = 1,
    seed: int = 0,
) -> Callable[[int], dict]:
    """``step -> batch`` over a fixed dataset ``data`` (a dict of tensors with N rows,
    ``ids`` among them), epoch after epoch.

    Each epoch reads every row once (the last ``N % batch_size`` rows of the epoch's
    order wait for the next epoch), in an order shuffled by ``(seed, epoch)``. The
    masking:

    * ``"dynamic"`` (RoBERTa): ``corrupt`` is applied to each batch as it is read, with
      a generator seeded by ``(seed, step)``, so a row comes back with a new mask every
      epoch;
    * ``"static"`` (BERT): :func:`static_masks` made ``copies`` masked copies in advance
      (seeded by ``seed``); epoch ``e`` reads copy ``e % copies``, so with ``copies=1``
      a row has the same mask in every epoch.

    The batch holds ``data``'s fields for the rows read, with ``ids`` corrupted and
    ``targets`` (−100 where nothing is predicted). The function's
    ``steps_per_epoch`` attribute says how many steps make an epoch.
    """
    if masking not in ("dynamic", "static"):
        raise ValueError(f"masking must be 'dynamic' or 'static', got {masking!r}")
    seed = check_count("seed", seed, low=0)
    if not isinstance(data, dict) or "ids" not in data:
        raise TypeError("data must be a dict of tensors with an 'ids' entry")
    n = len(data["ids"])
    if any(len(v) != n for v in data.values()):
        raise ValueError("every tensor of data must have the same number of rows")
    batch_size = check_count("batch_size", batch_size)  # a NumPy count as Python's
    if batch_size > n:
        raise ValueError(
            f"batch_size must be <= {n} (the rows of data), got {batch_size}"
        )
    per_epoch = n // batch_size
    masked = None
    if masking == "static":
        g = torch.Generator().manual_seed(seed)
        masked = static_masks(data["ids"], corrupt, copies=copies, generator=g)

    def batch(step: int) -> dict:
        step = check_count("step", step)  # train counts from 1
        epoch, k = divmod(step - 1, per_epoch)
        g = torch.Generator().manual_seed(seed * 1_000_003 + epoch)
        rows = torch.randperm(n, generator=g)[k * batch_size : (k + 1) * batch_size]
        out = {name: v[rows] for name, v in data.items()}
        if masked is None:
            g = torch.Generator().manual_seed(seed * 1_000_003 + 500_000 + step)
            m = corrupt(out["ids"], generator=g)
            return {**out, "ids": m.inputs, "targets": m.targets}
        m = masked[epoch % copies]
        return {**out, "ids": m.inputs[rows], "targets": m.targets[rows]}

    batch.steps_per_epoch = per_epoch
    return batch


@torch.no_grad()
def _row_scores(row_sums, counts) -> np.ndarray:
    """``(R,)`` per-row scores whose mean over rows is the per-token mean
    (``row_sum · R / total tokens``): what :func:`ptlm_lite.verdict.verdict` takes as
    per-example scores, so that its interval counts the held-out rows, with the tokens
    of a row kept together (they share a context, so they are not independent)."""
    row_sums = np.asarray(row_sums, dtype=float)
    return row_sums * len(row_sums) / max(1.0, float(np.sum(counts)))


@scores_on_device  # on the GPU if there is one
def heldout_mlm(
    model, data: dict, corrupt: Callable, *, seed: int = 0, batch_size: int = 64
) -> dict:
    """Masked-LM cross-entropy (nats per masked token) and top-1 accuracy of ``model``
    on held-out rows ``data``, masked once with ``seed``: every model is scored on the
    same positions with the same corruption, at the positions that read ``[MASK]``
    only (:func:`scored_targets`). Returns ``{"loss", "accuracy",
    "tokens", "row_loss", "row_accuracy"}``; ``row_loss`` and ``row_accuracy`` are
    ``(R,)`` per-row scores whose means are ``loss`` and ``accuracy`` (a row's sum
    over its masked tokens, scaled by ``R / tokens``): the per-example input of a
    verdict.
    """
    batch_size = check_count("batch_size", batch_size)
    if not isinstance(data, dict) or not {"ids", "valid"} <= set(data):
        raise TypeError("data must be a dict of tensors with 'ids' and 'valid' entries")
    device = next(model.parameters(), torch.empty(0)).device
    m = corrupt(data["ids"], generator=torch.Generator().manual_seed(seed))
    targets = scored_targets(m)
    losses, hits, counts = [], [], []
    # a RoBERTa masked LM given the targets scores the masked positions only: the same
    # (N, V) logits as selecting them afterwards, without the head over every position
    selects = isinstance(model, RobertaForMaskedLM)
    with eval_mode(model), torch.no_grad():
        for i in range(0, len(m.inputs), batch_size):
            t = targets[i : i + batch_size].to(device)
            inputs = m.inputs[i : i + batch_size].to(device)
            valid = data["valid"][i : i + batch_size].to(device)
            if selects:
                logits = model(inputs, valid=valid, targets=t).logits  # (N, V)
            else:
                logits = model(inputs, valid=valid).logits[t != -100]  # row-major
            want = t[t != -100]
            row = (t != -100).nonzero()[:, 0]  # each masked token's row in the batch
            nll = torch.nn.functional.cross_entropy(logits, want, reduction="none")
            right = (logits.argmax(-1) == want).double()
            n = len(t)
            losses.append(
                torch.zeros(n, dtype=torch.double).index_add_(
                    0, row.cpu(), nll.double().cpu()
                )
            )
            hits.append(
                torch.zeros(n, dtype=torch.double).index_add_(0, row.cpu(), right.cpu())
            )
            counts.append((t != -100).sum(1).cpu())
    losses, hits = torch.cat(losses).numpy(), torch.cat(hits).numpy()
    counts = torch.cat(counts).numpy()
    if not counts.sum():
        raise ValueError(
            f"heldout_mlm: corrupt masked no token of data's {len(m.inputs)} rows "
            f"(seed {seed}): give rows with maskable tokens, or a corruption that masks"
        )
    count = int(counts.sum())
    return {
        "loss": float(losses.sum() / count),
        "accuracy": float(hits.sum() / count),
        "tokens": int(counts.sum()),
        "row_loss": _row_scores(losses, counts),
        "row_accuracy": _row_scores(hits, counts),
    }


def scored_targets(m: Masked) -> torch.Tensor:
    """``m.targets`` at the positions that read ``[MASK]``, ``-100`` elsewhere: what a
    held-out score counts. Of BERT's chosen tokens, 10% stay unchanged in the input,
    where a model could copy its answer without reading any context (such a copier
    beats the unigram floor here), and 10% are replaced by a random token: training
    asks for all three, a test of what the context taught asks at ``[MASK]`` only."""
    return torch.where(m.action == MASKED, m.targets, torch.full_like(m.targets, -100))


def unigram_baseline(
    train_ids,
    data: dict,
    corrupt: Callable,
    *,
    seed: int = 0,
    special_ids=(),
    vocab_size: int | None = None,
) -> dict:
    """What a model that ignores the context can do on :func:`heldout_mlm`'s targets
    (the ``[MASK]`` positions, where the input shows nothing of the answer):
    the cross-entropy of the training text's token frequencies (add-one smoothed over
    the ``vocab_size`` tokens a model can answer; without it, over the ids seen) and
    the accuracy of always answering the most frequent token; ``row_loss``: per-row
    scores as :func:`heldout_mlm`'s.
    """
    seen = int(max(int(train_ids.max()), int(data["ids"].max()))) + 1
    if vocab_size is not None and (
        isinstance(vocab_size, bool) or not isinstance(vocab_size, int)
        or vocab_size < seen
    ):  # fmt: skip
        raise ValueError(
            f"vocab_size must be an int covering every id seen (>= {seen}), got "
            f"{vocab_size!r}"
        )
    V = vocab_size or seen
    special = torch.tensor(sorted(special_ids), dtype=train_ids.dtype)
    ids = train_ids[~torch.isin(train_ids, special)]
    counts = torch.bincount(ids.flatten(), minlength=V).double() + 1.0
    logp = (counts / counts.sum()).log()
    m = corrupt(data["ids"], generator=torch.Generator().manual_seed(seed))
    targets = scored_targets(m)
    chosen = targets != -100
    want = targets[chosen]
    if not len(want):
        raise ValueError(
            f"unigram_baseline: corrupt masked no token of data's {len(m.targets)} "
            f"rows (seed {seed}): there is nothing to score"
        )
    nll = torch.where(chosen, -logp[targets.clamp(min=0)], 0.0)  # (R, T)
    return {
        "loss": float(-logp[want].mean()),
        "accuracy": float((want == counts.argmax()).double().mean()),
        "tokens": len(want),
        "row_loss": _row_scores(nll.sum(1).numpy(), chosen.sum(1).numpy()),
    }


class RobertaWithNSP(RobertaForMaskedLM):
    """The SEGMENT-PAIR + NSP condition of the chapter's ablation: the same network
    (``seed`` gives the same initial weights as :class:`RobertaForMaskedLM`) plus
    BERT's next-sentence head on the pooled ``[CLS]``; the loss is MLM + NSP. RoBERTa
    has one segment type, so A and B are told apart by the ``[SEP]`` between them.
    """

    def __init__(self, config, seed: int | None = None):
        super().__init__(config, seed)
        self.nsp = nn.Linear(config.d_model, 2)  # drawn last: the rest is unchanged
        self.nsp.apply(init_weights)

    def forward(
        self,
        ids,
        segments=None,
        valid=None,
        targets=None,
        nsp_labels=None,
        return_attention=False,
    ) -> Output:
        out = super().forward(ids, segments, valid, targets, return_attention)
        out.extra["nsp_logits"] = self.nsp(out.pooled)  # (B, 2)
        if nsp_labels is not None:
            out.extra["nsp_loss"] = cross_entropy(
                out.extra["nsp_logits"], nsp_labels, name="nsp_labels"
            )
            out.loss = out.extra["nsp_loss"] + (0 if out.loss is None else out.loss)
        return out


def pretrain(
    model,
    batches: Callable[[int], dict],
    *,
    steps: int,
    lr: float = 5e-3,
    warmup: float = 0.1,
    nsp: bool = False,
    seed: int = 0,
    **train_kw,
):
    """Pre-train ``model`` on ``batches`` for ``steps`` steps: linear warm-up over the
    first ``warmup`` share of the steps, then linear decay to 0 (the paper's schedule,
    so runs of different lengths, as in the batch-size ablation, follow the same
    shape). ``nsp=False`` drops ``nsp_labels`` from the batches (no NSP loss; a
    RoBERTa model has no NSP head). Returns the :class:`~ptlm_lite.train.History`.
    """
    from ..runtime import train_steps
    from ..train import train

    if isinstance(warmup, bool) or not (
        isinstance(warmup, (int, float)) and 0 <= warmup < 1
    ):
        raise ValueError(
            f"warmup must be the share of the steps spent warming up, a number in "
            f"[0, 1), got {warmup!r} (0.1: the first tenth)"
        )
    get = batches
    if not nsp:

        def get(step):
            return {k: v for k, v in batches(step).items() if k not in ("nsp_labels",)}

    steps = train_steps(steps)  # PTLM_MAX_STEPS: the schedule fits the capped run
    return train(
        model,
        get,
        steps=steps,
        lr=lr,
        # at least one warm-up step, and never the whole run (a 1-step run: none)
        warmup=min(steps - 1, max(1, math.ceil(warmup * steps))),
        schedule="linear",
        seed=seed,
        desc=train_kw.pop("desc", "pre-training"),
        **train_kw,
    )
