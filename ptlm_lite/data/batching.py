"""From token ids to tensors: packed blocks, sentence pairs, padding and a DataLoader collate.

One mask polarity everywhere in ptlm_lite: ``attention_mask`` is boolean and True means
"a real token, may be attended to"; padding is False. Labels that must not count in a loss are
``-100`` (PyTorch's ``ignore_index``).
"""

from __future__ import annotations

import random
from typing import Sequence

import torch

IGNORE_INDEX = -100  # F.cross_entropy's default ignore_index
PAIR_TASKS = ("nsp", "sop")


def pack_blocks(ids, block_size: int) -> torch.Tensor:
    """Cut one long token stream into consecutive blocks: ``(N, block_size)`` LongTensor.

    The tail that does not fill a block is dropped. A language model reads ``x = blocks[:, :-1]``
    and predicts ``y = blocks[:, 1:]``, which is why ``block_size`` must be at least 2.
    Used in the GPT chapter and every chapter that pre-trains a language model.
    """
    if not isinstance(block_size, int) or isinstance(block_size, bool) or block_size < 2:
        raise ValueError(f"block_size must be an integer >= 2 (one input and one target token), "
                         f"got {block_size!r}")
    ids = torch.as_tensor(ids, dtype=torch.long)
    if ids.dim() != 1:
        raise ValueError(f"ids must be a 1-D sequence of token ids, got shape {tuple(ids.shape)}")
    n = ids.numel() // block_size
    if n == 0:
        raise ValueError(f"ids has {ids.numel()} tokens, fewer than one block of "
                         f"block_size={block_size}: pass more text or a smaller block_size")
    return ids[: n * block_size].view(n, block_size)  # (N, block_size)


def pad_sequences(seqs: Sequence[Sequence[int]], pad_id: int = 0,
                  max_len: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-pad lists of ids to one length: ``ids (B, T)`` and ``attention_mask (B, T)`` bool.

    ``max_len`` truncates longer sequences; by default T is the longest sequence.
    Used in the BERT chapter and everywhere batches mix lengths.
    """
    if len(seqs) == 0:
        raise ValueError("seqs is empty: pass at least one sequence of token ids")
    seqs = [torch.as_tensor(s, dtype=torch.long).flatten() for s in seqs]
    T = max(s.numel() for s in seqs) if max_len is None else max_len
    ids = torch.full((len(seqs), T), pad_id, dtype=torch.long)  # (B, T)
    mask = torch.zeros((len(seqs), T), dtype=torch.bool)  # (B, T), True = real token
    for b, s in enumerate(seqs):
        s = s[:T]
        ids[b, : s.numel()] = s
        mask[b, : s.numel()] = True
    return ids, mask


def encode_pair(a: Sequence[int], b: Sequence[int], cls_id: int, sep_id: int,
                max_len: int = 128) -> tuple[list[int], list[int]]:
    """BERT's pair input ``[CLS] a [SEP] b [SEP]`` with segment ids ``0...0 1...1``.

    If too long, the longer segment loses tokens from its end first (BERT's rule), so both
    segments keep something. Returns ``(input_ids, segment_ids)``, equal lengths <= max_len.
    """
    if max_len < 5:
        raise ValueError(f"max_len must be >= 5 ([CLS], [SEP], [SEP] and a token of each), got {max_len}")
    a, b = list(a), list(b)
    while len(a) + len(b) > max_len - 3:
        (a if len(a) > len(b) else b).pop()
    input_ids = [cls_id] + a + [sep_id] + b + [sep_id]
    segment_ids = [0] * (len(a) + 2) + [1] * (len(b) + 1)
    return input_ids, segment_ids


def sentence_pairs(documents: Sequence[Sequence[str]], task: str = "nsp",
                   seed: int = 0) -> list[tuple[str, str, int]]:
    """Text pairs ``(a, b, label)`` for next-sentence or sentence-order prediction.

    ``label`` is 1 when the pair is as written and 0 when it is not (one polarity, like masks):

    - ``"nsp"`` (BERT): b is the segment after a (1), or a random segment from another
      document (0). The negative is often solvable by topic alone, ALBERT's critique.
    - ``"sop"`` (ALBERT): a and b are consecutive, in order (1) or swapped (0): same topic both
      ways, so only coherence tells them apart.

    ``documents`` are ordered segment lists, e.g. :func:`ptlm_lite.data.shakespeare.documents`.
    Used in the BERT and ALBERT chapters.
    """
    if task not in PAIR_TASKS:
        raise ValueError(f"unknown task {task!r}; task must be one of {PAIR_TASKS}")
    docs = [list(d) for d in documents if len(d) >= 2]
    if len(docs) < 2:
        raise ValueError("documents must contain at least two documents with >= 2 segments each")
    rng = random.Random(seed)
    pairs = []
    for d, doc in enumerate(docs):
        for i in range(len(doc) - 1):
            a, b = doc[i], doc[i + 1]
            if rng.random() < 0.5:
                pairs.append((a, b, 1))
            elif task == "sop":
                pairs.append((b, a, 0))
            else:
                other = rng.randrange(len(docs) - 1)
                other += other >= d  # any document but this one
                pairs.append((a, rng.choice(docs[other]), 0))
    return pairs


def make_pair_examples(documents: Sequence[Sequence[str]], tokenizer, task: str = "nsp",
                       max_len: int = 128, seed: int = 0) -> list[dict]:
    """Tokenized NSP/SOP examples ready for :func:`collate`:
    ``{"input_ids", "segment_ids", "label"}`` per pair. Used in the BERT and ALBERT chapters."""
    pairs = sentence_pairs(documents, task, seed)
    a_ids = tokenizer.encode_batch([a for a, _, _ in pairs])
    b_ids = tokenizer.encode_batch([b for _, b, _ in pairs])
    out = []
    for (_, _, label), a, b in zip(pairs, a_ids, b_ids):
        input_ids, segment_ids = encode_pair(a, b, tokenizer.cls_id, tokenizer.sep_id, max_len)
        out.append({"input_ids": input_ids, "segment_ids": segment_ids, "label": label})
    return out


def collate(batch: Sequence[dict], pad_id: int = 0) -> dict[str, torch.Tensor]:
    """Stack a list of example dicts into a batch dict; use as a DataLoader ``collate_fn``.

    Sequence fields are right-padded: ``input_ids`` with ``pad_id``, fields whose name ends in
    ``labels`` with -100 (ignored by the loss), anything else (segment ids, ...) with 0. Scalar
    fields become a 1-D tensor. ``attention_mask`` (B, T) bool is added from the lengths of
    ``input_ids``. For a tokenizer whose pad id is not 0:
    ``DataLoader(ds, collate_fn=functools.partial(collate, pad_id=tok.pad_id))``.
    """
    if len(batch) == 0 or not all(isinstance(ex, dict) for ex in batch):
        raise TypeError("batch must be a non-empty list of dicts (one per example)")
    keys = batch[0].keys()
    out: dict[str, torch.Tensor] = {}
    for key in keys:
        values = [ex[key] for ex in batch]
        first = torch.as_tensor(values[0])
        if first.dim() == 0:  # one label per example
            out[key] = torch.as_tensor(values)
            continue
        fill = pad_id if key == "input_ids" else IGNORE_INDEX if key.endswith("labels") else 0
        out[key], mask = pad_sequences(values, fill)
        if key == "input_ids":
            out["attention_mask"] = mask  # (B, T) bool, True = real token
    return out
