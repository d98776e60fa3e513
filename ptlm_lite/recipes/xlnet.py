"""Training and evaluation loops of ``chapters/xlnet.ipynb``, kept apart from the model.

* :func:`world_stream`: the synthetic world's documents as one token stream, with the
  multi-token entity names marked (the paper's "New York" tokens);
* :func:`pretrain`: permutation LM (two streams, partial prediction) or BERT-style MLM
  on the same network, the same windows and the same number of predicted tokens;
* :func:`entity_windows` and :func:`score_entities`: hide a whole entity name and
  predict it, independently (MLM) or one token after the other (permutation LM).
"""

from __future__ import annotations

import torch

from ..output import IGNORE
from ..xlnet import XLNet, partial_prediction, sample_order

__all__ = ["entity_windows", "pretrain", "score_entities", "world_stream"]


def world_stream(tok, docs: range) -> tuple[torch.Tensor, list[tuple[int, int]]]:
    """Documents ``docs`` of ``make_world(0)`` as one stream of token ids, and the
    (start, end) token ranges of every entity name of two tokens or more.
    """
    from ..data import make_world

    world = make_world(0)
    ids, spans = [], []
    for d in (world.documents[i] for i in docs):
        enc = tok.encode_with_offsets(d.text)
        for s in d.spans:
            if s.label.startswith("phrase:"):
                continue
            inside = [i for i, (a, b) in enumerate(enc.offsets) if s.start <= a < s.end]
            if len(inside) >= 2:
                spans.append((len(ids) + inside[0], len(ids) + inside[-1] + 1))
        ids += enc.ids
    return torch.tensor(ids), spans


def pretrain(
    model: XLNet,
    stream,
    *,
    objective: str,
    steps: int,
    mask_id: int,
    batch: int = 32,
    T: int = 32,
    K: float = 6.4,
    lr: float = 5e-3,
    seed: int = 0,
    progress: bool = True,
    callback=None,
):
    """``objective="plm"``: a random order per window, the last T/K of it predicted by
    the query stream. ``"mlm"``: as many random positions replaced by [MASK] and
    predicted from the content stream, every position seeing every other."""
    from ..train import train

    if objective not in ("plm", "mlm"):
        raise ValueError(f"objective must be 'plm' or 'mlm', got {objective!r}")
    g = torch.Generator().manual_seed(seed)

    def make(step):
        start = torch.randint(0, len(stream) - T, (batch,), generator=g)
        ids = torch.stack([stream[s : s + T] for s in start.tolist()])
        orders = sample_order(batch, T, g)
        chosen = partial_prediction(orders, K)  # MLM: the same count, at random
        return ids, orders, chosen

    def loss_fn(m, b):
        ids, orders, chosen = b
        targets = ids.masked_fill(~chosen, IGNORE)
        if objective == "plm":
            return m(ids, order=orders, targets=targets).loss
        return m(
            ids.masked_fill(chosen, mask_id), targets=targets, two_stream=False
        ).loss

    return train(
        model,
        make,
        steps=steps,
        lr=lr,
        warmup=steps // 10,
        schedule="cosine",
        loss_fn=loss_fn,
        callback=callback,
        progress=progress,
        seed=seed,
        desc=f"training ({objective})",
    )


def entity_windows(stream, spans, T: int = 32, n: int = 200, seed: int = 0):
    """Up to ``n`` windows of T tokens, each holding one entity name at a random place:
    ``(ids (n, T), span (n, 2))`` with the name at ``ids[i, span[i, 0]:span[i, 1]]``.
    """
    g = torch.Generator().manual_seed(seed)
    ids, where = [], []
    for i in torch.randperm(len(spans), generator=g)[:n].tolist():
        a, b = spans[i]
        if b - a > T // 2:
            continue
        shift = int(torch.randint(0, T - (b - a), (1,), generator=g))
        lo = min(max(0, a - shift), len(stream) - T)  # the name stays inside
        ids.append(stream[lo : lo + T])
        where.append((a - lo, b - lo))
    return torch.stack(ids), torch.tensor(where)


@torch.no_grad()
def score_entities(model: XLNet, ids, span, objective: str, mask_id: int) -> dict:
    """Hide each window's entity name and predict it greedily. MLM: every token at once
    from [MASK]s; PLM: the context first, then the name left to right, each token
    conditioned on the ones already predicted. Returns exact-match share of whole
    names, token accuracy and the mean negative log-likelihood per token (nats, the
    true name fed in)."""
    model.eval()
    n, T = ids.shape
    pos = torch.arange(T)
    hide = (pos >= span[:, :1]) & (pos < span[:, 1:])  # (n, T)
    guess = ids.clone()
    if objective == "mlm":
        logits = model(ids.masked_fill(hide, mask_id), two_stream=False).logits
        guess = torch.where(hide, logits.argmax(-1), ids)
        logp = logits.log_softmax(-1).gather(-1, ids[..., None])[..., 0]
    else:  # order: the context (by position), then the name left to right
        orders = (pos + hide * T).argsort(dim=-1, stable=True)
        logp = model(ids, order=orders).logits.log_softmax(-1)
        logp = logp.gather(-1, ids[..., None])[..., 0]
        for k in range(int((span[:, 1] - span[:, 0]).max())):
            at = (span[:, 0] + k).clamp(max=T - 1)
            live = span[:, 0] + k < span[:, 1]
            logits = model(guess, order=orders).logits[torch.arange(n), at]
            guess[torch.arange(n)[live], at[live]] = logits.argmax(-1)[live]
    right = (guess == ids) | ~hide
    nll = -(logp * hide).sum() / hide.sum()
    return {
        "exact match": right.all(-1).float().mean().item(),
        "token accuracy": ((guess == ids) & hide).sum().item() / hide.sum().item(),
        "nll per token": nll.item(),
    }
