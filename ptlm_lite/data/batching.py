"""From token ids to tensors: packed blocks, sentence pairs, padding and a DataLoader
collate.

One set of batch field names from data to model; every model's ``forward`` takes these:

==============  ===========  =================================================================
``ids``         (B, T) int   token ids, right-padded with the tokenizer's pad id
``valid``       (B, T) bool  True = a real token that may be attended to; False = padding
``segments``    (B, T) int   0 for [CLS], A and its [SEP]; 1 for B and its [SEP]; 0 on padding
``labels``      (B,) int     one label per sequence (classification)
``targets``     (B, T) int   one target per token; ``IGNORE_INDEX`` (-100) = not in the loss
``nsp_labels``  (B,) int     next-sentence / sentence-order label: 0 = IsNext, 1 = NotNext
==============  ===========  =================================================================

One mask polarity (True = real token) and one NSP polarity (0 = B really follows A, as
written; 1 = B is random or the pair is swapped), the same as :mod:`ptlm_lite.corrupt`,
Google's BERT and Hugging Face.
"""

from __future__ import annotations

import random
from typing import Sequence

import torch
import torch.nn.functional as F
from torch.nn.utils.rnn import pad_sequence

from ..output import IGNORE

# Targets equal to this do not count in a loss (F.cross_entropy's default ignore_index).
# It must equal ptlm_lite.output.IGNORE, the package's one constant (a test checks
# it); it is repeated here so that ptlm_lite.data imports nothing from the model side.
IGNORE_INDEX = IGNORE  # the book's one ignore index (ptlm_lite.output)
IS_NEXT = 0  # nsp_labels: B follows A in its document, in order (BERT's "IsNext")
NOT_NEXT = 1  # nsp_labels: B is a random segment (NSP) or A and B are swapped (SOP)
PAIR_TASKS = ("nsp", "sop")
# The names collate() used to emit, and what they are called now.
_RENAMED = {
    "input_ids": "ids",
    "attention_mask": "valid",
    "segment_ids": "segments",
    "token_type_ids": "segments",
    "label": "labels (one per sequence) or nsp_labels (NSP/SOP)",
}


def pack_blocks(ids, block_size: int) -> torch.Tensor:
    """Cut one long token stream into consecutive blocks: ``(N, block_size)``
    LongTensor.

    The tail that does not fill a block is dropped. A language model reads ``x =
    blocks[:, :-1]`` and predicts ``y = blocks[:, 1:]``, which is why ``block_size``
    must be at least 2. Used in the GPT chapter and every chapter that pre-trains a
    language model.
    """
    if (
        not isinstance(block_size, int)
        or isinstance(block_size, bool)
        or block_size < 2
    ):
        raise ValueError(
            f"block_size must be an integer >= 2 (one input and one target token), "
            f"got {block_size!r}"
        )
    ids = torch.as_tensor(ids, dtype=torch.long)
    if ids.dim() != 1:
        raise ValueError(
            f"ids must be a 1-D sequence of token ids, got shape {tuple(ids.shape)}"
        )
    n = ids.numel() // block_size
    if n == 0:
        raise ValueError(
            f"ids has {ids.numel()} tokens, fewer than one block of "
            f"block_size={block_size}: pass more text or a smaller "
            f"block_size"
        )
    return ids[: n * block_size].view(n, block_size)  # (N, block_size)


def pad_sequences(
    seqs: Sequence[Sequence[int]], pad_id: int = 0, max_len: int | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-pad lists of ids to one length: ``ids (B, T)`` long and ``valid (B, T)``
    bool.

    ``valid`` is True on real tokens and False on padding. ``max_len`` truncates longer
    sequences; by default T is the longest sequence.
    Used in the BERT chapter and everywhere batches mix lengths.
    """
    if len(seqs) == 0:
        raise ValueError("seqs is empty: pass at least one sequence of token ids")
    seqs = [torch.as_tensor(s, dtype=torch.long).flatten() for s in seqs]
    T = max(s.numel() for s in seqs) if max_len is None else max_len
    seqs = [s[:T] for s in seqs]
    lengths = torch.tensor([s.numel() for s in seqs])
    ids = pad_sequence(seqs, batch_first=True, padding_value=pad_id)  # (B, longest)
    ids = F.pad(ids, (0, T - ids.shape[1]), value=pad_id)  # (B, T)
    valid = torch.arange(T)[None, :] < lengths[:, None]  # (B, T), True = real token
    return ids, valid


def encode_pair(
    a: Sequence[int], b: Sequence[int], cls_id: int, sep_id: int, max_len: int = 128
) -> tuple[list[int], list[int]]:
    """BERT's pair input ``[CLS] a [SEP] b [SEP]`` and its segments ``0...0 1...1``.

    If too long, the longer segment loses tokens from its end first (BERT's rule), so both
    segments keep something. Returns ``(ids, segments)``, two lists of equal length <= max_len::

        ids       [CLS] a1 a2 [SEP] b1 b2 b3 [SEP]
        segments    0    0  0   0    1  1  1   1
    """
    if max_len < 5:
        raise ValueError(
            f"max_len must be >= 5 ([CLS], [SEP], [SEP] and a token of each), got "
            f"{max_len}"
        )
    a, b = list(a), list(b)
    while len(a) + len(b) > max_len - 3:
        (a if len(a) > len(b) else b).pop()
    ids = [cls_id] + a + [sep_id] + b + [sep_id]
    segments = [0] * (len(a) + 2) + [1] * (len(b) + 1)
    return ids, segments


def sentence_pairs(
    documents: Sequence[Sequence[str]], task: str = "nsp", seed: int = 0
) -> list[tuple[str, str, int]]:
    """Text pairs ``(a, b, label)`` for next-sentence or sentence-order prediction.

    ``label`` is ``IS_NEXT`` (0) when b really follows a, as written, and ``NOT_NEXT``
    (1) when it does not: the polarity of Google's BERT, Hugging Face and
    :mod:`ptlm_lite.corrupt`.

    - ``"nsp"`` (BERT): b is the segment after a (0), or a random segment from another
      document (1). The negative is often solvable by topic alone, ALBERT's critique.
    - ``"sop"`` (ALBERT): a and b are consecutive, in order (0) or swapped (1): same
      topic both ways, so only coherence tells them apart.

    About half the pairs are positives. ``documents`` are ordered segment lists, e.g.
    :func:`ptlm_lite.data.shakespeare.documents`. Used in the BERT and ALBERT chapters.
    """
    if task not in PAIR_TASKS:
        raise ValueError(f"unknown task {task!r}; task must be one of {PAIR_TASKS}")
    docs = [list(d) for d in documents if len(d) >= 2]
    if len(docs) < 2:
        raise ValueError(
            "documents must contain at least two documents with >= 2 segments each"
        )
    rng = random.Random(seed)
    pairs = []
    for d, doc in enumerate(docs):
        for i in range(len(doc) - 1):
            a, b = doc[i], doc[i + 1]
            if rng.random() < 0.5:
                pairs.append((a, b, IS_NEXT))
            elif task == "sop":
                pairs.append((b, a, NOT_NEXT))
            else:
                other = rng.randrange(len(docs) - 1)
                other += other >= d  # any document but this one
                pairs.append((a, rng.choice(docs[other]), NOT_NEXT))
    return pairs


def make_pair_examples(
    documents: Sequence[Sequence[str]],
    tokenizer,
    task: str = "nsp",
    max_len: int = 128,
    seed: int = 0,
) -> list[dict]:
    """Tokenized NSP/SOP examples ready for :func:`collate`, one dict per pair:
    ``{"ids": [CLS] a [SEP] b [SEP], "segments": 0..0 1..1, "nsp_labels": 0 (IsNext) or
    1 (NotNext)}``.

    ``tokenizer``: anything with ``encode_batch``, ``cls_id`` and ``sep_id``.
    Used in the BERT and ALBERT chapters.
    """
    pairs = sentence_pairs(documents, task, seed)
    a_ids = tokenizer.encode_batch([a for a, _, _ in pairs])
    b_ids = tokenizer.encode_batch([b for _, b, _ in pairs])
    out = []
    for (_, _, label), a, b in zip(pairs, a_ids, b_ids):
        ids, segments = encode_pair(a, b, tokenizer.cls_id, tokenizer.sep_id, max_len)
        out.append({"ids": ids, "segments": segments, "nsp_labels": label})
    return out


def collate(batch: Sequence[dict], pad_id: int = 0) -> dict[str, torch.Tensor]:
    """Stack a list of example dicts into a batch dict; use as a DataLoader
    ``collate_fn``.

    A field with one value per example (``labels``, ``nsp_labels``) becomes a ``(B,)``
    tensor. A field with a sequence per example becomes ``(B, T)``, right-padded to its
    own longest (an encoder-decoder's ``targets`` need not be as long as its ``ids``):
    ``ids`` with ``pad_id``, fields whose name ends in ``targets`` with ``IGNORE_INDEX``
    (so padding never counts in a loss), anything else (``segments``, ...) with 0.
    ``valid (B, T)`` bool, True on real tokens, is added from the lengths of ``ids``
    unless the examples carry their own. For a tokenizer whose pad id is not 0:
    ``DataLoader(ds, collate_fn=functools.partial(collate, pad_id=tok.pad_id))``.
    """
    if len(batch) == 0 or not all(isinstance(ex, dict) for ex in batch):
        raise TypeError("batch must be a non-empty list of dicts (one per example)")
    keys = list(batch[0])
    for i, ex in enumerate(batch):
        if set(ex) != set(keys):
            raise ValueError(
                f"batch[{i}] has fields {sorted(ex)} but batch[0] has {sorted(keys)}: "
                f"every example needs the same fields"
            )
    for key in keys:
        if key in _RENAMED:
            raise ValueError(
                f"field {key!r} is called {_RENAMED[key]!r} in ptlm_lite: the batch "
                f"fields are ids, valid, segments, labels, targets, "
                f"nsp_labels"
            )
    out: dict[str, torch.Tensor] = {}
    for key in keys:
        rows = [torch.as_tensor(ex[key]) for ex in batch]
        if all(r.dim() == 0 for r in rows):  # one value per example
            out[key] = torch.tensor([r.item() for r in rows])  # (B,)
            continue
        if any(r.dim() != 1 for r in rows):
            raise ValueError(
                f"field {key!r} must hold one number or one 1-D sequence per example, "
                f"got shapes {sorted({tuple(r.shape) for r in rows})}"
            )
        if key in ("labels", "nsp_labels"):
            raise ValueError(
                f"field {key!r} holds one label per sequence; name a per-token field "
                f"'targets' (padded with IGNORE_INDEX={IGNORE_INDEX})"
            )
        fill = (
            pad_id if key == "ids" else IGNORE_INDEX if key.endswith("targets") else 0
        )
        out[key] = _pad(rows, fill)  # (B, T)
        if key == "ids" and "valid" not in keys:
            out["valid"] = _pad(
                [torch.ones(len(r), dtype=torch.bool) for r in rows], False
            )
    return out


def _pad(rows: list[torch.Tensor], fill) -> torch.Tensor:
    """Right-pad 1-D tensors to the longest: ``(B, T)``, in the dtype of the first
    non-empty row (an empty list is a float tensor to torch, which must not turn token
    ids into floats).
    """
    dtype = next((r.dtype for r in rows if r.numel()), rows[0].dtype)
    out = torch.full((len(rows), max(r.numel() for r in rows)), fill, dtype=dtype)
    for b, r in enumerate(rows):
        out[b, : r.numel()] = r
    return out
