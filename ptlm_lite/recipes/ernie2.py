"""ERNIE 2.0's recipe on the book's data: six small pre-training tasks, their batches,
the continual and sequential runs, and held-out scores per task.

    group       task                 example                                    head
    word        knowledge_masking    ERNIE 1.0's phrase masking                 mlm
    word        capitalisation       "kuzin vu was born in shefemo ." -> 110001 token
    word        token_document       does this token occur in another sentence
                                     of the document?                           token
    structure   sentence_reordering  1-3 consecutive sentences, shuffled: which
                                     of the 9 orders?                           sequence
    structure   sentence_distance    adjacent / same document / other document  sequence
    semantic    relevance            an entity's name + a sentence: about it /
                                     mentions it / neither                      sequence

The documents are the synthetic world's biographies (``make_world(0)``; held out:
``make_world(1)``) and scenes of the plays (training or validation plays), as in the
BERT chapter's pre-training. ``relevance`` uses the world only (its documents have a
subject). Capitalisation reads the lowercased sentence: the input no longer shows the
answer.

Chapter: ``chapters/ernie2.ipynb``.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import numpy as np
import torch

from ..corrupt import pack_pairs
from ..data import pad_sequences
from ..device import device_of, eval_mode, scores_on_device
from ..ernie2 import Labelled, distance_pairs, draw_tasks, reorder_groups
from ..output import IGNORE
from . import ernie as ernie_recipe
from .bert import world_documents

__all__ = [
    "TASK_HEADS",
    "GROUPS",
    "STAGES",
    "Corpus",
    "corpus",
    "capitalisation_example",
    "token_document_example",
    "relevance_pools",
    "relevance_pairs",
    "pack_segments",
    "task_batches",
    "train_schedule",
    "encoder_for_finetuning",
    "task_scores",
    "mean_scores",
]

TASK_HEADS = {
    "knowledge_masking": "mlm",
    "capitalisation": ("token", 2),
    "token_document": ("token", 2),
    "sentence_reordering": ("sequence", 9),
    "sentence_distance": ("sequence", 3),
    "relevance": ("sequence", 3),
}
GROUPS = {
    "knowledge_masking": "word-aware",
    "capitalisation": "word-aware",
    "token_document": "word-aware",
    "sentence_reordering": "structure-aware",
    "sentence_distance": "structure-aware",
    "relevance": "semantic-aware",
}
# the new tasks of each stage: task 1, then the other word-aware tasks, then the rest
STAGES = (
    ("knowledge_masking",),
    ("capitalisation", "token_document"),
    ("sentence_reordering", "sentence_distance", "relevance"),
)


@dataclass
class Corpus:
    """One split's documents: ``texts`` (sentences), ``ids`` (their tokens), the
    world's ``names`` (tokens of each world document's subject; None for a scene) and
    ``rows`` for knowledge masking (:func:`ptlm_lite.recipes.ernie.encode_rows`)."""

    texts: list
    ids: list
    names: list
    rows: list


def corpus(tok, split: str = "train", n_scenes: int = 60, max_len: int = 32):
    """The documents of ``split`` ("train": world 0 and training plays; "validation":
    world 1 and held-out plays), multi-sentence ones only."""
    from ..data import documents, make_world

    if split not in ("train", "validation"):
        raise ValueError(f"split must be 'train' or 'validation', got {split!r}")
    world = make_world(0 if split == "train" else 1)
    wdocs = world_documents(world.seed)
    texts = [d for d in wdocs if len(d) >= 2]
    names = [tok.encode(world.entities[d.entity].name) for d, t in
             zip(world.documents, wdocs) if len(t) >= 2]  # fmt: skip
    scenes = [d for d in documents(split, "sentence") if len(d) >= 3][:n_scenes]
    texts += scenes
    names += [None] * len(scenes)
    flat = tok.encode_batch([s for d in texts for s in d])
    ids, i = [], 0
    for d in texts:
        ids.append([t[: max_len // 2] for t in flat[i : i + len(d)]])
        i += len(d)
    items = ernie_recipe.world_sentences(world)  # as many play sentences as world ones
    items += [(s, ()) for d in scenes for s in d][: len(items)]
    rows = ernie_recipe.encode_rows(tok, items, max_len=max_len)
    return Corpus(texts, ids, names, rows)


def capitalisation_example(tok, text: str, max_len: int = 32):
    """``(ids, targets)`` for the lowercased ``text`` with [CLS] and [SEP], at most
    ``max_len`` tokens: at each word's first token 1 if the word was capitalised, 0 if
    not; IGNORE elsewhere (later pieces, punctuation, specials)."""
    enc = tok.encode_with_offsets(text.lower())
    targets, last, keep = [IGNORE], None, max_len - 2
    for w, (s, e) in zip(enc.word_ids[:keep], enc.offsets[:keep]):
        first = w != last and text[s:e][:1].isalpha()
        targets.append(int(text[s].isupper()) if first else IGNORE)
        last = w
    cls, sep = tok.special_ids["cls"], tok.special_ids["sep"]
    return [cls] + enc.ids[:keep] + [sep], targets + [IGNORE]


def token_document_example(doc, i: int, cls: int, sep: int, special=()):
    """``(ids, targets)`` for sentence ``i`` of ``doc`` (lists of token ids): 1 where
    the token also occurs in another sentence of the document, 0 where not, IGNORE on
    [CLS], [SEP] and ``special`` ids."""
    others = {t for j, s in enumerate(doc) if j != i for t in s}
    targets = [IGNORE if t in special else int(t in others) for t in doc[i]]
    return [cls] + list(doc[i]) + [sep], [IGNORE] + targets + [IGNORE]


def relevance_pools(docs, names) -> dict:
    """For each document ``d`` with a subject (``names[d]``, its tokens): the
    sentences of its own document, of other documents that mention the name, and of
    documents that do not: ``{d: (own, mentions, neither)}``."""

    def text(ids):  # token ids as a string, so a name is found by `in`
        return "," + ",".join(map(str, ids)) + ","

    flat = [(e, s, text(s)) for e, doc in enumerate(docs) for s in doc]
    pools = {}
    for d, name in enumerate(names):
        if name:
            key = text(name)
            pools[d] = (list(docs[d]), [], [])
            for e, s, t in flat:
                if e != d:
                    pools[d][1 if key in t else 2].append(s)
    return pools


def relevance_pairs(docs, names, n: int, *, generator, pools=None):
    """``n`` (name, sentence) pairs, a third of each class: 0, the sentence is from the
    document about that entity; 1, from another document that mentions its name; 2,
    from a document that does not mention it (IR relevance's strong / weak / none).
    ``pools``: :func:`relevance_pools` of the same documents, computed once."""
    pools = relevance_pools(docs, names) if pools is None else pools
    if not pools:
        raise ValueError("names must give at least one document a subject")
    subjects = list(pools)
    rand = lambda k: int(torch.randint(k, (1,), generator=generator))  # noqa: E731
    out = []
    for k in range(n):
        d = subjects[rand(len(subjects))]
        label = k % 3
        pool = pools[d][label] or pools[d][2]  # nobody mentions it: an unrelated one
        label = label if pools[d][label] else 2
        out.append(Labelled((list(names[d]), list(pool[rand(len(pool))])), label))
    return out


def pack_segments(groups, cls: int, sep: int, pad: int):
    """``[CLS] s1 [SEP] s2 [SEP] ...`` per group (segments 0, 1, 0, ...) as ids,
    segments, valid and labels tensors."""
    rows, segs = [], []
    for g in groups:
        row, seg = [cls], [0]
        for j, s in enumerate(g.segments):
            row += list(s) + [sep]
            seg += [j % 2] * (len(s) + 1)
        rows.append(row)
        segs.append(seg)
    ids, valid = pad_sequences(rows, pad_id=pad)
    segments, _ = pad_sequences(segs, pad_id=0)
    labels = torch.tensor([g.label for g in groups])
    return {"ids": ids, "segments": segments, "valid": valid, "labels": labels}


def task_batches(tok, data: Corpus, batch_size: int = 16, seed: int = 0) -> dict:
    """``{task: step -> batch}`` over ``data``: each step's batch drawn from ``(seed,
    step)``, so it never changes. Fields as :class:`~ptlm_lite.ernie2.Ernie2` reads
    them."""
    sp = tok.special_ids
    cls, sep, pad = sp["cls"], sp["sep"], sp["pad"]
    special = set(tok.all_special_ids)
    sentences = [(d, i) for d, doc in enumerate(data.ids) for i in range(len(doc))]
    world = [d for d, nm in enumerate(data.names) if nm]
    wdocs, wnames = [data.ids[d] for d in world], [data.names[d] for d in world]
    pools = relevance_pools(wdocs, wnames)
    caps = [capitalisation_example(tok, s) for doc in data.texts for s in doc]
    masking = ernie_recipe.knowledge_batches(
        tok, data.rows, "phrase", batch_size=batch_size, seed=seed
    )

    def gen(step, salt):
        return torch.Generator().manual_seed((seed * 1_000_003 + step) * 7 + salt)

    def tokens(pairs):  # (ids, targets) lists -> a padded batch
        ids, valid = pad_sequences([p[0] for p in pairs], pad_id=pad)
        targets, _ = pad_sequences([p[1] for p in pairs], pad_id=IGNORE)
        return {"ids": ids, "valid": valid, "targets": targets}

    def pick(k, g):
        return torch.randint(k, (batch_size,), generator=g).tolist()

    def pairs(made):
        b = pack_pairs(made, cls_id=cls, sep_id=sep, pad_id=pad, max_len=64)
        b["labels"] = b.pop("nsp_labels")
        return b

    return {
        "knowledge_masking": masking,
        "capitalisation": lambda s: tokens(
            [caps[j] for j in pick(len(caps), gen(s, 1))]
        ),
        "token_document": lambda s: tokens(
            [
                token_document_example(data.ids[d], i, cls, sep, special)
                for d, i in (sentences[j] for j in pick(len(sentences), gen(s, 2)))
            ]
        ),
        "sentence_reordering": lambda s: pack_segments(
            reorder_groups(data.ids, batch_size, generator=gen(s, 3)), cls, sep, pad
        ),
        "sentence_distance": lambda s: pairs(
            distance_pairs(data.ids, batch_size, generator=gen(s, 4))
        ),
        "relevance": lambda s: pairs(
            relevance_pairs(wdocs, wnames, batch_size, generator=gen(s, 5), pools=pools)
        ),
    }


def train_schedule(
    model, plan, batches: dict, *, seed: int = 0, offset: int = 0, **train_kw
):
    """Train ``model`` (an :class:`~ptlm_lite.ernie2.Ernie2`) through ``plan`` (a
    schedule): the task of each step from :func:`~ptlm_lite.ernie2.draw_tasks`, its
    batch from ``batches`` (step numbers start after ``offset``: a later stage never
    repeats an earlier stage's batches). Returns the History with ``tasks`` (the task
    of every step)."""
    from ..train import train

    order = draw_tasks(plan, seed)
    missing = {t for t in order if t not in batches or t not in model.heads}
    if missing:
        raise ValueError(f"plan has tasks without batches or a head: {missing}")

    def batch(step):  # steps count from 1
        task = order[step - 1]
        return {"task": task, **batches[task](seed * 100_003 + offset + step)}

    kw = dict(desc="ERNIE 2.0: pre-training", progress=False, seed=seed)
    hist = train(model, batch, steps=len(order), **{**kw, **train_kw})
    hist.tasks = order[: len(hist.losses)]
    return hist


def encoder_for_finetuning(model, task_id: int = 0):
    """A copy of ``model``'s encoder (with its task embeddings, task ``task_id``'s row
    from now on) for a fine-tuning head: ``BertForMultipleChoice(encoder)``."""
    bert = copy.deepcopy(model.bert)
    bert.embed.task_id = task_id
    return bert


@scores_on_device  # on the GPU if there is one
@torch.no_grad()
def task_scores(model, test: dict, measure: str = "accuracy") -> dict:
    """``{task: per-example array}`` on fixed held-out batches ``test`` (``{task:
    batch}``): per scored token for token and masking tasks, per input otherwise;
    ``measure`` "accuracy" (1 if the top class is right, else 0) or "loss" (the
    negative log-likelihood of the right class)."""
    if measure not in ("accuracy", "loss"):
        raise ValueError(f"measure must be 'accuracy' or 'loss', got {measure!r}")
    with eval_mode(model):
        device = device_of(model)
        out = {}
        for task, batch in test.items():
            b = {k: v.to(device) for k, v in batch.items()}
            logits = model(task, **{k: v for k, v in b.items() if k != "labels"}).logits
            if "targets" in b:
                gold = b["targets"][b["targets"] != IGNORE]  # (N,) the scored tokens
            else:
                gold = b["labels"]
            if measure == "loss":
                score = -logits.float().log_softmax(-1).gather(1, gold[:, None])[:, 0]
            else:
                score = (logits.argmax(-1) == gold).float()
            out[task] = score.cpu().numpy()
    return out


def mean_scores(scores: dict) -> dict:
    """``{task: mean}`` of :func:`task_scores`."""
    return {t: float(np.mean(v)) for t, v in scores.items()}
