"""Training and evaluation loops of ``chapters/xlnet.ipynb``, kept apart from the model.

* :class:`Cities`: a toy language for the paper's "New York" argument: sentences that
  name one of eight two-word cities, whose second word follows from the first;
* :func:`pretrain`: permutation LM (two streams, partial prediction) or BERT-style MLM
  on the same network, the same windows and the same number of predicted tokens;
* :func:`score_names`: hide a whole city name and score it as a permutation LM does
  (context, then the first word, then the second), as MLM does (both words at once,
  independently) or MLM left to right (first word, then the second with the first
  shown).
"""

from __future__ import annotations

import math

import torch

from ..device import device_of, scores_on_device
from ..xlnet import XLNet, partial_prediction, sample_order

__all__ = ["CITIES", "Cities", "pretrain", "score_names"]

CITIES = (
    ("New", "York"), ("San", "Diego"), ("Los", "Angeles"), ("Saint", "Louis"),
    ("Fort", "Worth"), ("Las", "Vegas"), ("Baton", "Rouge"), ("Santa", "Fe"),
)  # fmt: skip
TEMPLATES = (  # {} is the city's two words
    "{} is a city .", "the road to {} is long .", "we sailed to {} .",
    "in {} the king is dead .", "I love {} .",
)  # fmt: skip


class Cities:
    """A toy language in which the hidden tokens depend on each other.

    Every sentence names one of the :data:`CITIES`, uniformly, in one of the
    :data:`TEMPLATES`. The sentence says nothing about *which* city (any of 8:
    log 8 nats for the first word), but the first word fixes the second: "New" is
    always followed by "York". Hide both words and an ideal model pays log 8 nats for
    the pair if it predicts them one after the other, 2·log 8 if it predicts each from
    the sentence alone, as BERT's objective does for two masked tokens.

    Word ids: ``words[i]``; ``mask_id`` is ``[MASK]`` (0).
    """

    def __init__(self):
        self.words = ["[MASK]"]
        for f, s in CITIES:
            self.words += [f, s]
        for t in TEMPLATES:
            self.words += [w for w in t.split() if w not in self.words + ["{}"]]
        self.id = {w: i for i, w in enumerate(self.words)}
        self.mask_id, self.vocab_size = 0, len(self.words)
        self.first = torch.tensor([self.id[f] for f, _ in CITIES])
        self.second = torch.tensor([self.id[s] for _, s in CITIES])

    def encode(self, text: str) -> list[int]:
        """Word ids of a text in this language ("we sailed to New York .")."""
        unknown = [w for w in text.split() if w not in self.id]
        if unknown:
            raise ValueError(f"text: words not in the language: {unknown}")
        return [self.id[w] for w in text.split()]

    def decode(self, ids) -> str:
        return " ".join(self.words[int(i)] for i in ids)

    def _sentence(self, g: torch.Generator) -> tuple[list[int], int]:
        city = CITIES[int(torch.randint(len(CITIES), (1,), generator=g))]
        t = TEMPLATES[int(torch.randint(len(TEMPLATES), (1,), generator=g))]
        return self.encode(t.format(" ".join(city))), t.split().index("{}")

    def stream(self, sentences: int, seed: int) -> torch.Tensor:
        """``sentences`` random sentences as one stream of word ids."""
        g, ids = torch.Generator().manual_seed(seed), []
        for _ in range(sentences):
            ids += self._sentence(g)[0]
        return torch.tensor(ids)

    def windows(self, n: int, T: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
        """``n`` windows of T word ids, each holding one whole sentence with its city at
        a random place, and other sentences around it: ``(ids (n, T), at (n,))``, the
        city's two words at ``at`` and ``at + 1``."""
        if T < 12:
            raise ValueError(f"T must be at least 12 (the longest sentence), got {T}")
        g, out, at = torch.Generator().manual_seed(seed), [], []
        for _ in range(n):
            ids = []
            while len(ids) < T:
                ids += self._sentence(g)[0]
            sentence, i = self._sentence(g)
            start = len(ids)
            ids += sentence
            while len(ids) < start + T:
                ids += self._sentence(g)[0]
            shift = int(torch.randint(0, T - len(sentence) + 1, (1,), generator=g))
            lo = start - shift
            out.append(ids[lo : lo + T])
            at.append(shift + i)
        return torch.tensor(out), torch.tensor(at)

    @property
    def ideal_nats(self) -> dict:
        """What a model that knows the language pays for a hidden name, in nats."""
        one = math.log(len(CITIES))
        return {"one after the other": one, "each from the sentence alone": 2 * one}


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
    eval_fn=None,
    eval_every: int | None = None,
):
    """``objective="plm"``: a random order per window, the last T/K of it predicted by
    the query stream. ``"mlm"``: as many random positions replaced by [MASK] and
    predicted from the content stream, every position seeing every other.
    ``eval_fn(model) -> dict`` runs every ``eval_every`` steps (``History.evals``)."""
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
        at = chosen.nonzero()[:, 1].view(len(ids), -1)  # the same count per row
        targets = ids.gather(1, at)  # logits computed only where predicted
        if objective == "plm":
            return m(ids, order=orders, predict_at=at, targets=targets).loss
        masked = ids.masked_fill(chosen, mask_id)
        return m(masked, targets=targets, two_stream=False, predict_at=at).loss

    return train(
        model,
        make,
        steps=steps,
        lr=lr,
        warmup=steps // 10,
        schedule="cosine",
        loss_fn=loss_fn,
        callback=callback,
        eval_fn=eval_fn,
        eval_every=eval_every,
        progress=progress,
        seed=seed,
        desc=f"training ({objective})",
    )


@scores_on_device  # on the GPU if there is one
@torch.no_grad()
def score_names(
    model: XLNet, ids, at, how: str, mask_id: int = 0, second_only: bool = False
) -> dict:
    """Hide the two words of each window's city (``ids[i, at[i]:at[i] + 2]``) and
    score them. ``how``:

    * ``"plm"``: the order is the context, then the first word, then the second; one
      pass, the query stream predicts both (the second sees the first);
    * ``"mlm at once"``: both replaced by [MASK], each predicted from the context
      alone, independently (BERT's objective for two masked tokens);
    * ``"mlm left to right"``: both masked for the first word, then the first shown
      and only the second masked.

    Returns, per name (means over windows): ``"name nats"`` = -log p(first, second |
    context) as that factorisation gives it, ``"second | first nats"`` (-log p(second
    | first, context); for MLM from the pass with only the second masked), and
    ``"exact match"`` (both words right, greedy, the second after the guessed first),
    and the same three per window, for a verdict on the same test windows:
    ``"name nats per window"``, ``"second | first nats per window"`` and ``"exact
    match per window"`` (lists of n floats). ``second_only=True``: only the two
    "second | first" entries, from one pass (what the training curves read).
    """
    if how not in ("plm", "mlm at once", "mlm left to right"):
        raise ValueError(
            f"how must be 'plm', 'mlm at once' or 'mlm left to right', got {how!r}"
        )
    model.eval()
    ids, at = ids.to(device_of(model)), torch.as_tensor(at).to(device_of(model))
    n, T = ids.shape
    rows, f, s = torch.arange(n, device=ids.device), at, at + 1
    at, at_s = torch.stack([f, s], 1), s[:, None]  # logits only at the name

    def logp(logits, k, tokens):  # logits (n, P, V): at the k-th predicted position
        return logits[:, k].log_softmax(-1).gather(-1, tokens[:, None])[:, 0]

    if how == "plm":
        pos = torch.arange(T, device=ids.device)
        name = (pos == f[:, None]) | (pos == s[:, None])
        order = (pos + name * T).argsort(dim=-1, stable=True)  # context, first, second
        logits = model(ids, order=order, predict_at=at).logits  # (n, 2, V)
        second_lp = logp(logits, 1, ids[rows, s])
    else:
        both = ids.clone()
        both[rows, f] = both[rows, s] = mask_id
        only_second = ids.clone()
        only_second[rows, s] = mask_id

        def mlm(x, where):
            return model(x, two_stream=False, predict_at=where).logits

        second_lp = logp(mlm(only_second, at_s), 0, ids[rows, s])
    second = {
        "second | first nats": -second_lp.mean().item(),
        "second | first nats per window": (-second_lp).tolist(),
    }
    if second_only:
        return second
    if how == "plm":
        first_lp = logp(logits, 0, ids[rows, f])
        guess = ids.clone()
        guess[rows, f] = logits[:, 0].argmax(-1)
        guess[rows, s] = (
            model(guess, order=order, predict_at=at_s).logits[:, 0].argmax(-1)
        )
    else:
        at_once = mlm(both, at)  # (n, 2, V)
        first_lp = logp(at_once, 0, ids[rows, f])
        guess = both.clone()
        guess[rows, f] = at_once[:, 0].argmax(-1)
        if how == "mlm at once":
            name_s = logp(at_once, 1, ids[rows, s])
            guess[rows, s] = at_once[:, 1].argmax(-1)
        else:
            guess[rows, s] = mlm(guess, at_s)[:, 0].argmax(-1)
    name_lp = first_lp + (name_s if how == "mlm at once" else second_lp)
    right = (guess[rows, f] == ids[rows, f]) & (guess[rows, s] == ids[rows, s])
    return {
        "name nats": -name_lp.mean().item(),
        "second | first nats": second["second | first nats"],
        "exact match": right.float().mean().item(),
        "name nats per window": (-name_lp).tolist(),
        "second | first nats per window": second["second | first nats per window"],
        "exact match per window": right.float().tolist(),
    }
