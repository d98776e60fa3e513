"""The Reformer chapter's recipe and meters, kept apart from the model in
:mod:`ptlm_lite.reformer`: long windows of the plays, next-token training, the number
of hash rounds changed after training, how far LSH attention is from full attention
(and how far buckets that ignore the content are), and the bytes a training step
keeps for its backward pass.

Chapter: ``chapters/reformer.ipynb``.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ..attention import attention
from ..device import device_of, scores_on_device
from ..reformer import LSHAttention, Reformer, hash_buckets, lsh_counts

__all__ = [
    "agreement",
    "closeness",
    "evaluate",
    "pretrain",
    "saved_bytes",
    "set_hashing",
    "token_stream",
    "windows",
]


def token_stream(split: str = "train", chars: int | None = None) -> torch.Tensor:
    """The plays of ``split`` (the first ``chars`` characters) as one (N,) tensor of
    token ids, tokenized with the GPT chapters' byte-level BPE."""
    from ..data import text_stream
    from .gpt import tokenizer

    return torch.tensor(tokenizer().encode(text_stream(split)[:chars]))


def windows(stream: torch.Tensor, n: int, T: int, generator=None) -> torch.Tensor:
    """``n`` windows of ``T + 1`` consecutive tokens at random starts: (n, T + 1)."""
    if stream.numel() < T + 2:
        raise ValueError(f"the stream ({stream.numel()} tokens) is shorter than T={T}")
    start = torch.randint(0, stream.numel() - T - 1, (n,), generator=generator)
    return stream[start[:, None] + torch.arange(T + 1)]


def pretrain(model: Reformer, stream, *, steps: int, T: int, batch: int, lr: float,
             seed: int = 0, progress: bool = True, callback=None):  # fmt: skip
    """Next-token training on random windows of ``T`` tokens of ``stream``. Returns the
    :class:`~ptlm_lite.train.History`."""
    from ..train import train

    g = torch.Generator().manual_seed(seed)

    def batch_at(step):
        x = windows(stream, batch, T, g)
        return {"ids": x[:, :-1], "targets": x[:, 1:]}

    return train(
        model, batch_at, steps=steps, lr=lr, warmup=steps // 10, schedule="cosine",
        betas=(0.9, 0.95), callback=callback, progress=progress, seed=seed,
        desc="training Reformer",
    )  # fmt: skip


@scores_on_device  # on the GPU if there is one
@torch.no_grad()
def evaluate(model: Reformer, blocks: torch.Tensor, seed: int = 0,
             per_block: bool = False):  # fmt: skip
    """Mean next-token loss on ``blocks`` (N, T + 1), hashing with ``seed``; with
    ``per_block=True`` one mean per block, a numpy array (N,): the per-example scores
    of a verdict (every seed is scored on the same validation blocks)."""
    model.eval()
    blocks = blocks.to(device_of(model))
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        out = model(blocks[:, :-1], targets=blocks[:, 1:])
    if not per_block:
        return out.loss.item()
    nll = F.cross_entropy(out.logits.transpose(1, 2), blocks[:, 1:], reduction="none")
    return nll.mean(-1).cpu().numpy()


def set_hashing(model, n_hashes=None, n_buckets=None, chunk=None):
    """Change the rounds, buckets or chunk length of every LSH layer in place (no
    parameter depends on them). One bucket and ``chunk >= T``: full attention, minus
    oneself."""
    for m in model.modules():
        if isinstance(m, LSHAttention):
            m.n_hashes = m.n_hashes if n_hashes is None else n_hashes
            m.n_buckets = m.n_buckets if n_buckets is None else n_buckets
            m.chunk = m.chunk if chunk is None else chunk
    return model


@scores_on_device
@torch.no_grad()
def closeness(model: Reformer, ids: torch.Tensor, n_hashes: int, seed: int = 0,
              random: bool = False, per_block: bool = False) -> dict:  # fmt: skip
    """How close LSH attention with ``n_hashes`` rounds comes to full attention in
    the first layer of ``model`` on ``ids`` (B, T), each a mean over tokens and heads:

    * ``agreement``: the cosine similarity of the two outputs (1 = the same output);
    * ``mass``: the share of full attention's probability that falls on the keys the
      query may see under LSH (1 = hashing kept every key that mattered);
    * ``keys``: the share of its causal keys (oneself excluded) that the query sees
      (queries after the first).

    ``random=True`` is the control: the same buckets shuffled over the positions
    (per head and round), so every bucket keeps its size but no longer depends on the
    content. Its key sets are still unions over the rounds, so they too grow with the
    rounds. ``per_block=True``: each a numpy array (B,), the mean within each row of
    ``ids`` (per-example scores for a verdict)."""
    model.eval()
    ids = ids.to(device_of(model))
    block = model.blocks[0]
    q, k, v = block.attn.project(block.ln1(model.embed(ids)))
    T = ids.shape[1]
    causal = torch.ones(T, T, dtype=torch.bool, device=ids.device).tril()
    eye = torch.eye(T, dtype=torch.bool, device=ids.device)
    one = causal & ~eye  # one bucket, one chunk: every causal key but oneself...
    one[0, 0] = True  # ...unless there is no other (what lsh_counts gives)
    full, w = attention(q, k, v, mask=one, return_weights=True)
    g = torch.Generator(ids.device).manual_seed(seed)  # draws where q lives
    b = hash_buckets(q, block.attn.n_buckets, n_hashes, g)  # (B, H, R, T)
    if random:  # a random permutation of the positions per head and round
        b = b.gather(-1, torch.rand(b.shape, generator=g, device=b.device).argsort(-1))
    n = lsh_counts(b, block.attn.chunk, causal)
    lsh, _ = attention(q, k, v, mask=n > 0, bias=n.log())
    others = torch.arange(1, T, device=ids.device)  # causal keys, oneself excluded
    seen = ((n > 0) & ~eye).sum(-1)
    seen = seen[..., 1:]  # the first token has no other key
    out = {
        "agreement": F.cosine_similarity(lsh, full, dim=-1),  # (B, H, T)
        "mass": (w * (n > 0)).sum(-1),
        "keys": seen / others,
    }
    if per_block:
        return {k: x.flatten(1).mean(-1).cpu().numpy() for k, x in out.items()}
    return {k: x.mean().item() for k, x in out.items()}


def agreement(model: Reformer, ids: torch.Tensor, n_hashes: int, seed: int = 0,
              random: bool = False) -> float:  # fmt: skip
    """``closeness(...)["agreement"]``: the mean cosine similarity of the first
    layer's LSH and full-attention outputs (1 = the same output)."""
    return closeness(model, ids, n_hashes, seed, random)["agreement"]


def saved_bytes(model, ids: torch.Tensor, targets: torch.Tensor) -> int:
    """Bytes of the tensors one forward pass keeps for the backward pass (activation
    memory), parameters not counted and each storage once. Deterministic: it counts
    what autograd saves, not what the allocator happens to hold."""
    params = {p.untyped_storage().data_ptr() for p in model.parameters()}
    seen = {}

    def pack(t):
        ptr = t.untyped_storage().data_ptr()
        if ptr not in params:
            seen[ptr] = t.untyped_storage().nbytes()
        return t

    model.train()
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        loss = model(ids, targets=targets).loss
    loss.backward()
    model.zero_grad(set_to_none=True)
    return sum(seen.values())
