"""ERNIE (Tsinghua; Zhang et al., 2019): knowledge-graph entities fused into BERT.

    tokens    [CLS] Kotheth Sheal was born in Drothobais . [SEP]
    entities    ·   e(Kotheth Sheal)  ·   ·  ·  e(Drothobais) · ·     (TransE vectors)

    tokens ──► T-Encoder (BERT blocks) ──┐
                                         ├─► K-Encoder (fusion) ──► tokens', entities'
    entities (aligned, frozen TransE) ───┘

A sentence's entity mentions are linked to the knowledge graph, and each linked
entity's TransE vector (:mod:`ptlm_lite.transe`) sits at the **first token** of its
mention; every other position has none. The T-Encoder is the ordinary stack of BERT
blocks over the tokens. Each block of the K-Encoder (a :class:`FusionBlock`) runs two
attentions, one per stream (the entities see only the other entities), then the
paper's *information fusion*, which takes the place of the feed-forward::

    h_j = GELU(W_t t_j + W_e e_k + b)     (e_k: the entity aligned with token j, or 0)
    t_j' = LN(t_j + W_t' h_j)             e_k' = LN(e_k + W_e' h_j)

so what the graph says about an entity flows into the token stream at its mention.
Both streams travel through the one :class:`~ptlm_lite.stack.Stack` packed side by
side in one tensor ``(B, T, D + D_e)``, with the pair of masks as its ``mask``.

Pre-training adds the **denoising entity auto-encoder** (dEA) to BERT's masked LM: some
token-entity alignments are masked (15%) or replaced by a random entity (5%), and
every aligned token predicts its entity among the entities of its sentence
(:func:`dea_corrupt`, :class:`ErnieThuForPreTraining`).

Chapter: ``chapters/ernie_thu.ipynb``.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, replace

import torch
from torch import nn

from . import masks
from .bert import BERT_FIELDS, BertEmbeddings, MLMHead
from .config import PRESETS, Config, register_preset
from .layers import ACTIVATIONS, init_weights
from .output import IGNORE, Output, cross_entropy
from .stack import Model, Stack

__all__ = [
    "ErnieThuConfig",
    "span_alignment",
    "FusionBlock",
    "ErnieThu",
    "Dea",
    "dea_corrupt",
    "ErnieThuForPreTraining",
    "ErnieThuForSequenceClassification",
]
KEEP, MASKED, REPLACED = 0, 1, 2  # Dea.action codes (-1: no alignment there)


@dataclass
class ErnieThuConfig(Config):
    d_entity: int = 32  # width of the entity stream (the TransE vectors)
    n_knowledge: int = 1  # K-Encoder blocks; the T-Encoder has n_layer - n_knowledge
    n_entities: int = 1  # rows of the entity table besides row 0 (no entity)

    RANGES = {**Config.RANGES, "d_entity": ">= 1", "n_knowledge": ">= 1"}
    RANGES["n_entities"] = ">= 1"

    def validate(self) -> None:
        super().validate()
        if self.d_entity % self.n_head:
            raise ValueError(
                f"d_entity ({self.d_entity}) must be divisible by n_head "
                f"({self.n_head})"
            )


for _scale in ("tiny", "small"):  # BERT's sizes, the last block a fusion block
    register_preset(
        f"ernie-thu-{_scale}",
        config_cls=ErnieThuConfig,
        **{**PRESETS[_scale], **BERT_FIELDS},
    )


def span_alignment(offsets, spans, n_tokens: int | None = None) -> list[int]:
    """Token-entity alignment from annotated spans: ``entity + 1`` at the first token of
    each entity mention (``span.entity`` set), 0 elsewhere. ``offsets``: ``(start,
    end)`` characters per token; a mention no token overlaps is dropped.
    Chapter: ``chapters/ernie_thu.ipynb``.
    """
    out = [0] * (len(offsets) if n_tokens is None else n_tokens)
    for s in spans:
        if s.entity is None:
            continue
        first = next(
            (i for i, (a, b) in enumerate(offsets) if a < s.end and b > s.start), None
        )
        if first is not None and first < len(out):
            out[first] = s.entity + 1
    return out


class FusionBlock(nn.Module):
    """One K-Encoder block: token attention, entity attention, information fusion.

    ``x`` (B, T, D + D_e) holds the token stream and the entity stream side by side;
    ``mask`` is a pair: ``(token mask, entity mask)``, the entity mask ``(B, 1, T)``
    True at positions with an aligned entity (the entities attend to each other only).
    Positions without an entity keep a zero entity vector. With ``return_attention`` the
    weights are the pair ``(token weights, entity weights)``, each (B, H, T, T).
    Chapter: ``chapters/ernie_thu.ipynb``.
    """

    def __init__(self, config, cross=False, attention=None, norm=nn.LayerNorm):
        super().__init__()
        from .attention import MultiHeadAttention

        attention = attention or MultiHeadAttention
        D, De, H, eps = config.d_model, config.d_entity, config.n_head, config.ln_eps
        self.D, self.De = D, De
        self.attn_t = attention(D, H, config.dropout)
        self.attn_e = attention(De, H, config.dropout)
        self.ln_t, self.ln_e = norm(D, eps=eps), norm(De, eps=eps)
        self.w_t = nn.Linear(D, config.d_ff)  # the fusion: W_t t + W_e e + b
        self.w_e = nn.Linear(De, config.d_ff, bias=False)
        self.out_t, self.out_e = nn.Linear(config.d_ff, D), nn.Linear(config.d_ff, De)
        self.ln_t2, self.ln_e2 = norm(D, eps=eps), norm(De, eps=eps)
        self.act, self.drop = ACTIVATIONS[config.activation], nn.Dropout(config.dropout)

    def forward(self, x, mask=None, return_attention=False, **unused):
        if not (isinstance(mask, tuple) and len(mask) == 2):
            raise TypeError("mask must be the pair (token mask, entity mask (B, 1, T))")
        t, e = x.split([self.D, self.De], dim=-1)  # (B, T, D), (B, T, D_e)
        has = mask[1][:, 0, :, None].to(x.dtype)  # (B, T, 1): an entity is there
        a_t, w_t = self.attn_t(t, mask=mask[0], return_weights=return_attention)
        a_e, w_e = self.attn_e(e, mask=mask[1], return_weights=return_attention)
        t = self.ln_t(t + self.drop(a_t))
        e = self.ln_e(e + self.drop(a_e)) * has
        h = self.act(self.w_t(t) + self.w_e(e))  # (B, T, d_ff): the fused state
        t = self.ln_t2(t + self.drop(self.out_t(h)))
        e = self.ln_e2(e + self.drop(self.out_e(h))) * has
        weights = (w_t, w_e) if return_attention else None
        return torch.cat([t, e], dim=-1), (weights, None)


class ErnieThu(Model):
    """The knowledgeable encoder: BERT's embeddings, the T-Encoder (``n_layer -
    n_knowledge`` BERT blocks) and the K-Encoder (``n_knowledge`` fusion blocks), both
    the one :class:`~ptlm_lite.stack.Stack`; the entity table is frozen (TransE's).

    ``forward(ids, segments=None, valid=None, entities=None, return_attention=False)``
    -> :class:`~ptlm_lite.output.Output` with ``last_hidden`` (B, T, D), ``pooled``
    (B, D), ``extra["entities"]`` (B, T, D_e) and, when asked, ``attentions``: the
    T-Encoder's maps, then one ``(token, entity)`` pair per fusion block.
    ``entities`` (B, T): ``i + 1`` at the first token of a mention of entity ``i``, 0
    elsewhere; when None, ``self.linker(ids)`` finds them (e.g.
    :class:`ptlm_lite.recipes.ernie_thu.EntityLinker`).
    """

    config_cls = ErnieThuConfig
    config_example = "preset('ernie-thu-tiny', vocab_size=..., n_entities=...)"

    def __init__(self, config, seed=None):
        super().__init__(config, seed)
        c = config
        if c.n_knowledge >= c.n_layer:
            raise ValueError(
                f"config.n_knowledge ({c.n_knowledge}) must be below n_layer "
                f"({c.n_layer}): the T-Encoder needs at least one block"
            )
        self.embed = BertEmbeddings(c)
        self.t_encoder = Stack(replace(c, n_layer=c.n_layer - c.n_knowledge))
        self.k_encoder = Stack(replace(c, n_layer=c.n_knowledge), block=FusionBlock)
        self.pooler = nn.Linear(c.d_model, c.d_model)
        self.apply(init_weights)
        self.entity_table = nn.Embedding(c.n_entities + 1, c.d_entity, padding_idx=0)
        self.entity_table.weight.requires_grad_(False)  # TransE's, frozen
        nn.init.zeros_(self.entity_table.weight)
        self.linker = None

    @torch.no_grad()
    def load_entities(self, vectors: torch.Tensor) -> None:
        """Copy the (n_entities, d_entity) TransE vectors into rows 1.. of the table."""
        want = (self.config.n_entities, self.config.d_entity)
        if not isinstance(vectors, torch.Tensor) or tuple(vectors.shape) != want:
            raise ValueError(f"vectors must be a tensor of shape {want}")
        self.entity_table.weight[1:] = vectors

    def forward(
        self, ids, segments=None, valid=None, entities=None, return_attention=False
    ):
        if entities is None:
            if self.linker is None:
                raise ValueError("pass entities (B, T), or set model.linker")
            entities = self.linker(ids)
        if not isinstance(entities, torch.Tensor) or entities.shape != ids.shape:
            raise TypeError(
                f"entities must be a tensor of the shape of ids {ids.shape}"
            )
        if int(entities.min()) < 0 or int(entities.max()) > self.config.n_entities:
            raise ValueError(f"entities must be in [0, {self.config.n_entities}]")
        valid = ids != self.config.pad_id if valid is None else valid
        token_mask = masks.padding_mask(valid)  # (B, 1, T)
        entity_mask = masks.padding_mask(valid & (entities > 0))  # (B, 1, T)
        ask = {"return_attention": return_attention}
        t = self.t_encoder(self.embed(ids, segments), mask=token_mask, **ask)
        x = torch.cat([t.last_hidden, self.entity_table(entities)], dim=-1)
        k = self.k_encoder(x, mask=(token_mask, entity_mask), **ask)
        tokens, ents = k.last_hidden.split(
            [self.config.d_model, self.config.d_entity], -1
        )
        return Output(
            last_hidden=tokens,
            pooled=torch.tanh(self.pooler(tokens[:, 0])),
            attentions=t.attentions + k.attentions if return_attention else None,
            extra={"entities": ents},
        )


@dataclass
class Dea:
    """One dEA corruption: ``inputs`` (B, T) the alignments the model reads,
    ``targets`` (B, T) the index of the true entity in ``candidates`` (B, C) at every
    aligned token (IGNORE elsewhere), ``action`` (B, T): KEEP, MASKED, REPLACED, -1.
    Chapter: ``chapters/ernie_thu.ipynb``.
    """

    inputs: torch.Tensor
    targets: torch.Tensor
    candidates: torch.Tensor
    action: torch.Tensor


def dea_corrupt(entities, n_entities, *, generator, p_mask=0.15, p_replace=0.05):
    """The denoising entity auto-encoder's corruption (a pure function): of the
    token-entity alignments in ``entities`` (B, T; 0 = none), ``p_mask`` are masked (set
    to 0), ``p_replace`` replaced by a random entity of ``1..n_entities``, the rest
    kept. The candidates are each row's distinct entities (0-padded). ``entities`` is
    never modified.
    Chapter: ``chapters/ernie_thu.ipynb``.
    """
    if not isinstance(generator, torch.Generator):
        raise TypeError("generator must be a torch.Generator (seeded by the caller)")
    if not isinstance(entities, torch.Tensor) or entities.dim() != 2:
        raise TypeError("entities must be a (B, T) integer tensor")
    if not (0 <= p_mask and 0 <= p_replace and p_mask + p_replace <= 1):
        raise ValueError("p_mask and p_replace must be >= 0 and sum to at most 1")
    aligned = entities > 0
    u = torch.rand(entities.shape, generator=generator)
    masked, replaced = aligned & (u < p_mask), aligned & (u >= 1 - p_replace)
    random = torch.randint(1, n_entities + 1, entities.shape, generator=generator)
    inputs = torch.where(replaced, random, entities.masked_fill(masked, 0))
    rows = [sorted(set(r) - {0}) for r in entities.tolist()]
    C = max(1, max(len(r) for r in rows))
    candidates = torch.tensor([r + [0] * (C - len(r)) for r in rows])  # (B, C)
    targets = (entities[:, :, None] == candidates[:, None, :]).long().argmax(-1)
    targets = targets.masked_fill(~aligned, IGNORE)
    action = torch.full_like(entities, -1).masked_fill(aligned, KEEP)
    action = action.masked_fill(masked, MASKED).masked_fill(replaced, REPLACED)
    return Dea(inputs, targets, candidates, action)


class ErnieThuForPreTraining(Model):
    """ERNIE with BERT's masked-LM head and the dEA head: each aligned token's output,
    projected to D_e, scores the sentence's candidate entities by a dot product with
    their (frozen) vectors. ``forward(ids, entities, segments=None, valid=None,
    targets=None, dea_targets=None, candidates=None)``: ``loss`` = MLM + dEA (those
    given); ``extra`` holds ``mlm_loss``, ``dea_loss``, ``dea_logits`` (N, C).
    Chapter: ``chapters/ernie_thu.ipynb``.
    """

    config_cls = ErnieThuConfig
    config_example = ErnieThu.config_example

    def __init__(self, config, seed=None):
        super().__init__(config, seed)
        self.ernie = ErnieThu(config)
        self.mlm = MLMHead(config, self.ernie.embed.tok)
        self.dea = nn.Linear(config.d_model, config.d_entity)
        self.mlm.apply(init_weights)
        self.dea.apply(init_weights)

    def forward(
        self, ids, entities, segments=None, valid=None, targets=None, **dea
    ) -> Output:
        out = self.ernie(ids, segments, valid, entities)
        hidden, extra, losses = out.last_hidden, {}, []
        if targets is not None:
            sel = targets != IGNORE
            extra["mlm_loss"] = cross_entropy(self.mlm(hidden[sel]), targets[sel])
            losses.append(extra["mlm_loss"])
        if dea.get("dea_targets") is not None:
            tgt, cands = dea["dea_targets"], dea["candidates"]
            sel = tgt != IGNORE  # (B, T): the aligned tokens
            query = self.dea(hidden[sel])  # (N, D_e)
            vecs = self.ernie.entity_table(cands)[sel.nonzero()[:, 0]]  # (N, C, D_e)
            logits = torch.einsum("nd,ncd->nc", query, vecs)
            logits = logits.masked_fill(cands[sel.nonzero()[:, 0]] == 0, -1e4)
            extra["dea_logits"] = logits
            extra["dea_loss"] = cross_entropy(logits, tgt[sel], name="dea_targets")
            losses.append(extra["dea_loss"])
        loss = sum(losses) if losses else None
        return Output(None, loss, extra=extra, last_hidden=hidden, pooled=out.pooled)


class ErnieThuForSequenceClassification(Model):
    """A linear layer on ERNIE's pooled ``[CLS]``; the entities come from the model's
    linker, so it takes BERT's batches (``ptlm_lite.finetune.run``).
    ``from_pretrained(pretrained, n_labels)``: a fresh head on a copy.
    Chapter: ``chapters/ernie_thu.ipynb``.
    """

    config_cls = ErnieThuConfig
    config_example = ErnieThu.config_example

    def __init__(self, config, n_labels: int = 2, seed=None):
        super().__init__(config, seed)
        self.ernie = ErnieThu(config)
        self.drop = nn.Dropout(config.dropout)
        self.classifier = nn.Linear(config.d_model, n_labels)
        self.classifier.apply(init_weights)

    @classmethod
    def from_pretrained(cls, pretrained, n_labels: int = 2):
        model = cls(pretrained.config, n_labels)
        model.ernie = copy.deepcopy(getattr(pretrained, "ernie", pretrained))
        return model

    def forward(self, ids, segments=None, valid=None, labels=None, entities=None):
        pooled = self.ernie(ids, segments, valid, entities).pooled
        logits = self.classifier(self.drop(pooled))  # (B, n_labels)
        loss = None if labels is None else cross_entropy(logits, labels, name="labels")
        return Output(logits, loss)
