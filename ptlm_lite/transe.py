"""TransE (Bordes et al., 2013): a knowledge graph as vectors, relations as shifts.

    head + relation ≈ tail        "Kotheth Sheal" + born_in ≈ "Drothobais"

Each entity and each relation gets a vector of ``dim`` numbers. A triple ``(h, r, t)``
scores ``-‖e_h + r_r - e_t‖_p`` (0 at best): true triples should score higher than
corrupted ones (the head or the tail swapped for a random entity) by a margin γ::

    L = mean( max(0, γ - score(h, r, t) + score(h', r, t')) )

After each step the entity vectors go back onto the unit sphere (the paper's
normalisation), so the loss cannot be lowered by stretching them apart. ERNIE
(Tsinghua) reads these vectors, frozen, as its entity embeddings: what the graph says
about an entity is whatever these ``dim`` numbers kept of it.

Chapter: ``chapters/ernie_thu.ipynb``.
"""

from __future__ import annotations

import torch
from torch import nn

from .device import device_of, scores_on_device

__all__ = [
    "TransE",
    "graph_tensors",
    "corrupt_triples",
    "margin_loss",
    "train_transe",
    "tail_ranks",
]


def _check_triples(triples, n_entities: int, n_relations: int) -> torch.Tensor:
    if (
        not isinstance(triples, torch.Tensor)
        or triples.dtype != torch.long
        or triples.dim() != 2
        or triples.shape[1] != 3
    ):
        raise TypeError(
            "triples must be an (N, 3) long tensor of (head, relation, tail)"
        )
    if triples.numel():
        ents = triples[:, [0, 2]]
        if int(ents.min()) < 0 or int(ents.max()) >= n_entities:
            raise ValueError(f"triples: entity ids must be in [0, {n_entities})")
        rels = triples[:, 1]
        if int(rels.min()) < 0 or int(rels.max()) >= n_relations:
            raise ValueError(f"triples: relation ids must be in [0, {n_relations})")
    return triples


class TransE(nn.Module):
    """Entity and relation vectors; ``score(triples)`` is ``-‖e_h + r - e_t‖_p``.

    ``p``: 1 (the L1 distance, the paper's best on FB15k) or 2. Entities start
    uniform in ``±6/√dim`` as in the paper, relations too (then normalised once).
    Chapter: ``chapters/ernie_thu.ipynb``.
    """

    def __init__(self, n_entities: int, n_relations: int, dim: int = 32, p: int = 1):
        super().__init__()
        for name, v in (("n_entities", n_entities), ("n_relations", n_relations)):
            if not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be a positive integer, got {v!r}")
        if not isinstance(dim, int) or dim < 1:
            raise ValueError(f"dim must be a positive integer, got {dim!r}")
        if p not in (1, 2):
            raise ValueError(f"p (the norm) must be 1 or 2, got {p!r}")
        self.n_entities, self.n_relations, self.dim, self.p = (
            n_entities,
            n_relations,
            dim,
            p,
        )
        bound = 6 / dim**0.5
        self.entity = nn.Embedding(n_entities, dim)
        self.relation = nn.Embedding(n_relations, dim)
        nn.init.uniform_(self.entity.weight, -bound, bound)
        nn.init.uniform_(self.relation.weight, -bound, bound)
        with torch.no_grad():
            self.relation.weight /= self.relation.weight.norm(dim=1, keepdim=True)
            self.normalize()

    @torch.no_grad()
    def normalize(self) -> None:
        """Entity vectors back onto the unit sphere (after every step)."""
        self.entity.weight /= self.entity.weight.norm(dim=1, keepdim=True).clamp_min(
            1e-12
        )

    def score(self, triples: torch.Tensor) -> torch.Tensor:
        """(N, 3) ``(head, relation, tail)`` ids -> (N,) ``-‖e_h + r - e_t‖_p``."""
        _check_triples(triples, self.n_entities, self.n_relations)
        h, r, t = triples.unbind(1)
        diff = self.entity(h) + self.relation(r) - self.entity(t)  # (N, dim)
        return -diff.norm(p=self.p, dim=1)


def graph_tensors(world):
    """The world's graph (``world.triples()``) as ids: ``(triples (N, 3), entity names,
    relation names)``. Entity id = the world's entity id (``world.entities[i].name``).
    Chapter: ``chapters/ernie_thu.ipynb``.
    """
    names = [e.name for e in world.entities]
    index = {n: i for i, n in enumerate(names)}
    relations = sorted({r for _, r, _ in world.triples()})
    rel_index = {r: i for i, r in enumerate(relations)}
    triples = torch.tensor(
        [[index[h], rel_index[r], index[t]] for h, r, t in world.triples()],
        dtype=torch.long,
    )
    return triples, names, relations


def corrupt_triples(triples, n_entities: int, *, generator) -> torch.Tensor:
    """Each triple with its head or its tail (a coin flip) replaced by a random entity:
    the negatives of the margin loss. A new tensor; ``triples`` is untouched. (A
    replacement may by chance be another true triple; the paper's "unfiltered"
    setting keeps it.)
    Chapter: ``chapters/ernie_thu.ipynb``.
    """
    if not isinstance(generator, torch.Generator):
        raise TypeError("generator must be a torch.Generator (seeded by the caller)")
    n_rel = 1 + int(triples[:, 1].max()) if getattr(triples, "numel", int)() else 1
    triples = _check_triples(triples, n_entities, n_rel)
    n = len(triples)
    out = triples.clone()
    tail = torch.rand(n, generator=generator) < 0.5
    random = torch.randint(n_entities, (n,), generator=generator)
    out[:, 2] = torch.where(tail, random, out[:, 2])
    out[:, 0] = torch.where(tail, out[:, 0], random)
    return out


def margin_loss(positive, negative, margin: float = 1.0) -> torch.Tensor:
    """``mean(max(0, margin - positive + negative))`` over paired (N,) scores.
    Chapter: ``chapters/ernie_thu.ipynb``.
    """
    if not isinstance(margin, (int, float)) or margin <= 0:
        raise ValueError(f"margin must be a positive number, got {margin!r}")
    if positive.shape != negative.shape:
        raise ValueError(
            f"positive and negative must have the same shape, got "
            f"{tuple(positive.shape)} and {tuple(negative.shape)}"
        )
    return torch.relu(margin - positive + negative).mean()


def train_transe(
    triples,
    n_entities: int,
    n_relations: int,
    *,
    dim: int = 32,
    p: int = 1,
    margin: float = 1.0,
    steps: int = 300,
    batch_size: int = 256,
    lr: float = 0.05,
    seed: int = 0,
):
    """Train :class:`TransE` on ``triples`` (N, 3): ``steps`` of ``batch_size`` triples
    and one corruption each, Adam, entities normalised after every step. Returns
    ``(model, losses)``. Chapter: ``chapters/ernie_thu.ipynb``."""
    from .runtime import train_steps

    _check_triples(triples, n_entities, n_relations)
    g = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    model = TransE(n_entities, n_relations, dim, p)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    losses = []
    for _ in range(train_steps(steps)):
        batch = triples[torch.randint(len(triples), (batch_size,), generator=g)]
        negative = corrupt_triples(batch, n_entities, generator=g)
        loss = margin_loss(model.score(batch), model.score(negative), margin)
        opt.zero_grad()
        loss.backward()
        opt.step()
        model.normalize()
        losses.append(float(loss.detach()))
    return model, losses


@scores_on_device  # on the GPU if there is one
@torch.no_grad()
def tail_ranks(model: TransE, triples) -> torch.Tensor:
    """Link prediction: for each ``(h, r, t)``, the rank of ``t`` among every entity as
    the tail of ``(h, r, ?)`` (1 = best; ties count against ``t``). Raw, not filtered:
    another true tail ranked above ``t`` counts too.
    Chapter: ``chapters/ernie_thu.ipynb``.
    """
    triples = _check_triples(triples, model.n_entities, model.n_relations)
    h, r, t = triples.to(device_of(model)).unbind(1)
    query = model.entity(h) + model.relation(r)  # (N, dim)
    dist = torch.cdist(query, model.entity.weight, p=model.p)  # (N, n_entities)
    right = dist.gather(1, t[:, None])
    return (dist <= right).sum(1)
