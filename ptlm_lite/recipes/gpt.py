"""GPT's pre-training recipe and its input transformations for fine-tuning.

Pre-training: next-token prediction on random blocks, half Shakespeare and half the
synthetic world's documents in every batch, cached as ``gpt-<scale>-lm``
(:func:`pretrained_gpt`).

Fine-tuning (GPT, section 3.3): no task-specific architecture, only a new way to write
the input::

    classification   [start] text [extract]                        -> Linear -> classes
    entailment       [start] premise [delim] hypothesis [extract]  -> Linear -> 3 labels
    similarity       [start] a [delim] b [extract]  +  [start] b [delim] a [extract]
                     (the two final states summed)                 -> Linear -> labels
    multiple choice  [start] context [delim] answer_k [extract]    -> Linear -> 1 score
                     for each answer k, a softmax over the k

Chapter: ``chapters/gpt.ipynb``.
"""

from __future__ import annotations

import functools

import torch

from ..device import scores_on_device
from ..gpt import GPT, gpt_config
from ..runtime import seeds

__all__ = [
    "PRETRAIN",
    "tokenizer",
    "lm_corpus",
    "pretrain_lm",
    "pretrained_gpt",
    "task_inputs",
    "collate_task",
    "option_scores",
]

# each scale's run: Shakespeare characters, block length, batch, steps, peak learning
# rate
PRETRAIN = {
    # 120 steps: still on the unigram plateau (loss 4.8)
    "tiny": dict(chars=300_000, block=64, batch=16, steps=250, lr=6e-3),
    # small: sized for <= 3 min of the GPT chapter on one H100 (issue 24): 2,500 steps
    # of 32 x 128 tokens (10M tokens, 40x tiny's), about 60 s estimated from the
    # per-step times measured on an H200 (24 ms/step at 4,096 tokens, 7 at a time)
    "small": dict(chars=None, block=128, batch=32, steps=2500, lr=6e-4),
}


def tokenizer():
    """The GPT chapters' tokenizer: the book's 1,024-token byte-level BPE trained on
    Shakespeare.
    """
    from ..data import shakespeare_tokenizer

    return shakespeare_tokenizer("bpe")


def lm_corpus(
    block: int = 64, chars: int | None = None, split: str = "train"
) -> dict[str, torch.Tensor]:
    """``(N, block + 1)`` token blocks of the two pre-training corpora: Shakespeare's
    plays of ``split`` (the first ``chars`` characters) and the synthetic world's
    documents (``make_world(0)`` for training, ``make_world(1)`` otherwise: other names,
    same kind of text).
    """
    return dict(_lm_corpus(block, chars, split))  # a new dict of the cached blocks


@functools.lru_cache(maxsize=4)
def _lm_corpus(block: int, chars: int | None, split: str) -> dict[str, torch.Tensor]:
    # cached: encoding all the plays ("small") takes seconds, and the GPT chapter
    # reads the corpus twice (pre-training, then its unigram baseline)
    from ..data import make_world, pack_blocks, text_stream

    tok = tokenizer()
    world = make_world(0 if split == "train" else 1).text()
    return {
        "shakespeare": pack_blocks(tok.encode(text_stream(split)[:chars]), block + 1),
        "world": pack_blocks(tok.encode(world), block + 1),
    }


def pretrain_lm(
    model: GPT, scale: str = "tiny", progress: bool = True, callback=None, seed: int = 0
):
    """Next-token pre-training on random blocks, half Shakespeare and half the synthetic
    world's documents in every batch. Returns the :class:`History`; ``history.evals``
    holds the validation loss on held-out plays and on another world's documents.
    """
    from ..train import train

    run = PRETRAIN[scale]
    corpora = lm_corpus(run["block"], run["chars"])
    val = {
        k: v[:32]
        for k, v in lm_corpus(run["block"], 100_000, split="validation").items()
    }
    g = torch.Generator().manual_seed(seed)

    def batch(step):
        parts = [
            c[torch.randint(len(c), (run["batch"] // 2,), generator=g)]
            for c in corpora.values()
        ]
        # (B, block + 1)
        b = torch.cat(parts)
        return {"ids": b[:, :-1], "targets": b[:, 1:]}

    def evaluate(m):
        return {
            f"val_{k}": m(v[:, :-1], targets=v[:, 1:]).loss.item()
            for k, v in val.items()
        }

    return train(
        model,
        batch,
        steps=run["steps"],
        lr=run["lr"],
        warmup=run["steps"] // 10,
        schedule="cosine",
        betas=(0.9, 0.95),
        eval_fn=evaluate,
        callback=callback,
        progress=progress,
        seed=seed,
        desc=f"pre-training GPT ({scale})",
    )


def pretrained_gpt(scale: str = "tiny", retrain: bool = False) -> GPT:
    """The book's pre-trained GPT at ``scale`` from the trained-model cache (recipe
    ``gpt-<scale>-lm``, trained on first use; ``model.history`` holds the run when it
    was trained in this process).
    """
    from .. import cache

    if scale not in PRETRAIN:
        raise ValueError(f"scale must be one of {sorted(PRETRAIN)}, got {scale!r}")

    (seed,) = seeds((0,))  # another under PTLM_SEED_SET=fresh: another cache entry

    def train_fn(model):
        model.history = pretrain_lm(model, scale, seed=seed)

    config = gpt_config(f"gpt-{scale}", vocab_size=tokenizer().vocab_size)
    cache.register(f"gpt-{scale}-lm", GPT, config, train_fn, str(PRETRAIN[scale]), seed)
    return cache.get(f"gpt-{scale}-lm", retrain=retrain)


def task_inputs(
    task: str, example: dict, encode, start: int, delim: int, extract: int
) -> list[list[int]]:
    """GPT's input transformations: one example as a list of token-id sequences (one per
    choice, two for similarity, else one). ``encode(str) -> list[int]``;
    ``start/delim/extract`` are ids.
    """
    if task == "classification":
        return [[start, *encode(example["text"]), extract]]
    if task in ("entailment", "similarity"):
        a, b = (
            (example["premise"], example["hypothesis"])
            if task == "entailment"
            else (example["a"], example["b"])
        )
        # similarity has no order
        pairs = [(a, b)] if task == "entailment" else [(a, b), (b, a)]
        return [[start, *encode(x), delim, *encode(y), extract] for x, y in pairs]
    if task == "multiple_choice":
        ctx = encode(example["context"])
        return [
            [start, *ctx, delim, *encode(ending), extract]
            for ending in example["endings"]
        ]
    raise ValueError(
        f"task must be 'classification', 'entailment', 'similarity' or "
        f"'multiple_choice', got {task!r}"
    )


def collate_task(seqs: list[list[list[int]]], labels=None, pad_id: int = 0) -> dict:
    """Right-pad ``task_inputs`` of a batch to ``ids`` (B, C, T) with ``last`` (B, C),
    the position of each [extract] token. Right padding needs no padding mask in a
    causal model: real tokens never see the pads that come after them.
    """
    C = len(seqs[0])
    if any(len(s) != C for s in seqs):
        raise ValueError(
            "every example of a batch must have the same number of sequences (choices)"
        )
    T = max(len(x) for s in seqs for x in s)
    ids = torch.full((len(seqs), C, T), pad_id, dtype=torch.long)
    for b, s in enumerate(seqs):
        for c, x in enumerate(s):
            ids[b, c, : len(x)] = torch.tensor(x)
    last = torch.tensor([[len(x) - 1 for x in s] for s in seqs])
    batch = {"ids": ids, "last": last}
    if labels is not None:
        batch["labels"] = torch.as_tensor(labels)
    return batch


@scores_on_device  # on the GPU if there is one
@torch.no_grad()
def option_scores(model, tok, prompts, options, pad_id: int = 0) -> torch.Tensor:
    """``log P(option | prompt)`` for every prompt and option, ``(len(prompts),
    len(options))``: how GPT-2 answers a multiple-choice question zero-shot (the
    highest-scoring option wins; GPT-2 chapter).

    Each score is a sum over the option's tokens, so a model that has learnt nothing
    prefers the shortest option for every prompt: pass the argmax to
    :func:`ptlm_lite.finetune.scores`, which flags a constant answer (a test checks).
    """
    model.eval()
    p_ids = [tok.encode(p) for p in prompts]
    o_ids = [tok.encode(o) for o in options]
    # a GPT's own forward (not a subclass's), every prompt and option non-empty
    if type(model).forward is GPT.forward and all(p_ids) and all(o_ids):
        return _shared_prompt_scores(model, p_ids, o_ids, pad_id)
    return _option_scores_one_by_one(model, p_ids, o_ids, pad_id)


def _option_scores_one_by_one(model, p_ids, o_ids, pad_id):
    # the plain way: one sequence prompt + option per (prompt, option) pair
    seqs, starts, ends = [], [], []
    for p in p_ids:
        for o in o_ids:
            seqs.append(p + o)
            starts.append(len(p))
            ends.append(len(p) + len(o))
    ids = torch.full((len(seqs), max(map(len, seqs))), pad_id, dtype=torch.long)
    for i, s in enumerate(seqs):
        ids[i, : len(s)] = torch.tensor(s)
    dev = next(model.parameters()).device
    ll = model.log_likelihood(
        ids.to(dev), torch.tensor(starts).to(dev), torch.tensor(ends).to(dev)
    )
    return ll.view(len(p_ids), len(o_ids))


def _shared_prompt_scores(model: GPT, p_ids, o_ids, pad_id):
    # The same scores with each prompt run once: one row per prompt, the prompt then
    # every option after it, each option at the positions it would have right after
    # the prompt and attending to the prompt and to its own earlier tokens only
    # (a (B, T, T) mask). Equal to the plain way up to float rounding (a test checks).
    lens = [len(o) for o in o_ids]
    T = max(map(len, p_ids)) + sum(lens)
    ids = torch.full((len(p_ids), T), pad_id, dtype=torch.long)
    pos = torch.zeros(len(p_ids), T, dtype=torch.long)
    # pads attend to themselves: no row of the mask is empty
    mask = torch.eye(T, dtype=torch.bool).repeat(len(p_ids), 1, 1)
    prev = torch.zeros(len(p_ids), T, dtype=torch.long)  # where each is predicted
    which = torch.zeros(len(p_ids), T, dtype=torch.long)  # option k + 1; 0: not one
    for b, p in enumerate(p_ids):
        P = len(p)
        ids[b, :P] = torch.tensor(p)
        pos[b, :P] = torch.arange(P)
        mask[b, :P, :P] = torch.ones(P, P, dtype=torch.bool).tril()
        s = P
        for k, o in enumerate(o_ids):
            n = len(o)
            ids[b, s : s + n] = torch.tensor(o)
            pos[b, s : s + n] = torch.arange(P, P + n)
            mask[b, s : s + n, :P] = True
            mask[b, s : s + n, s : s + n] = torch.ones(n, n, dtype=torch.bool).tril()
            prev[b, s : s + n] = torch.tensor([P - 1, *range(s, s + n - 1)])
            which[b, s : s + n] = k + 1
            s += n
    dev = next(model.parameters()).device
    ids, pos, mask = ids.to(dev), pos.to(dev), mask.to(dev)
    prev, which = prev.to(dev), which.to(dev)
    logp = model(ids, mask=mask, positions=pos).logits.log_softmax(-1)  # (B, T, V)
    rows = torch.arange(len(p_ids), device=dev)[:, None]
    tok = logp[rows, prev, ids]  # (B, T): log P(ids[t] | what precedes it)
    out = torch.zeros(len(p_ids), len(o_ids) + 1, dtype=tok.dtype, device=dev)
    return out.scatter_add_(1, which, tok)[:, 1:]  # (B, options): sums per option
