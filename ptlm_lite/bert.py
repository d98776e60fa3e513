"""BERT (Devlin et al., 2018): a Transformer encoder pre-trained to fill in blanks.

    [CLS] the dog [MASK] loud ##ly [SEP] it wanted food [SEP] [PAD] [PAD]     input ids
      0    0   0    0     0    0     0    1    1     1    1      0     0       segment ids
      0    1   2    3     4    5     6    7    8     9   10     11    12       positions
      ■    ■   ■    ■     ■    ■     ■    ■    ■     ■    ■      ·     ·       attention mask

Everything BERT adds to the 2017 encoder fits in this file:

* **inputs**: token + segment (sentence A or B) + learned position embeddings, then LayerNorm;
* **mask**: bidirectional. Every token sees every real token; only padding is hidden
  (:func:`ptlm_lite.masks.padding_mask`). Compare GPT's causal mask: that one line is the
  difference between "reads the whole sentence" and "can generate text";
* **heads**: masked-LM (predict the hidden token, decoder tied to the token embeddings) and
  next-sentence prediction (is segment B the real continuation of A?) on the pooled ``[CLS]``;
  for fine-tuning, a classifier on ``[CLS]``, a start/end scorer for span extraction (SQuAD)
  and a one-score-per-choice head for multiple choice (SWAG).

How the blanks are made (15% of tokens; 80% [MASK], 10% random, 10% unchanged) is not the
model's business: see :mod:`ptlm_lite.corrupt`. The blocks, attention and masks are the shared
ones from :mod:`ptlm_lite.layers` (post-LN, GELU).

Chapter: ``chapters/bert.ipynb``.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from . import masks
from .config import PRESETS, Config, register_preset
from .layers import ACTIVATIONS, Block, Embeddings
from .transformer import Output

__all__ = [
    "BERT_FIELDS", "BertEmbeddings", "Bert", "MLMHead", "BertForPreTraining",
    "BertForSequenceClassification", "BertForSpanExtraction", "BertForMultipleChoice",
    "mean_pool", "best_span", "init_weights",
    "shakespeare_tokenizer", "pretraining_batches", "pretrain", "PRETRAIN_STEPS",
]

# The switches that make a Config a BERT: learned positions, two segments, exact GELU, post-LN.
BERT_FIELDS = dict(pos="learned", n_segment=2, activation="gelu", ln_eps=1e-12, pre_norm=False,
                   tie_weights=True)
# Devlin et al. (2018), section 3: L=12, H=768, A=12 ("110M") and L=24, H=1024, A=16 ("340M"),
# a 30,522-token uncased WordPiece vocabulary and 512 positions.
register_preset("bert-base", vocab_size=30522, d_model=768, n_layer=12, n_head=12, d_ff=3072,
                max_len=512, dropout=0.1, **BERT_FIELDS)
register_preset("bert-large", vocab_size=30522, d_model=1024, n_layer=24, n_head=16, d_ff=4096,
                max_len=512, dropout=0.1, **BERT_FIELDS)
# The book's scales: a chapter sets vocab_size from its tokenizer.
register_preset("bert-tiny", **{**PRESETS["tiny"], **BERT_FIELDS})
register_preset("bert-small", **{**PRESETS["small"], **BERT_FIELDS})


def init_weights(m: nn.Module) -> None:
    """BERT's initialisation: N(0, 0.02) for every matrix, zero biases, LayerNorm = identity."""
    if isinstance(m, (nn.Linear, nn.Embedding)):
        nn.init.normal_(m.weight, std=0.02)
    if isinstance(m, nn.Linear) and m.bias is not None:
        nn.init.zeros_(m.bias)
    if isinstance(m, nn.LayerNorm):
        nn.init.ones_(m.weight)
        nn.init.zeros_(m.bias)


class BertEmbeddings(Embeddings):
    """Token + segment + learned position embeddings, then LayerNorm, then dropout.

    The shared :class:`~ptlm_lite.layers.Embeddings` sums the three tables; BERT normalises the
    sum before dropout (the blocks are post-LN, so nothing else would normalise the first input).
    """

    def __init__(self, config: Config):
        super().__init__(config)
        self.ln = nn.LayerNorm(config.d_model, eps=config.ln_eps)
        self.drop_after_ln, self.drop = self.drop, nn.Identity()  # dropout moves after the LayerNorm

    def forward(self, ids, segments=None, offset: int = 0):
        return self.drop_after_ln(self.ln(super().forward(ids, segments, offset)))  # (B, T, D)


class Bert(nn.Module):
    """The encoder: embeddings, ``n_layer`` post-LN blocks, and the ``[CLS]`` pooler.

    ``forward(ids, segments=None, valid=None, return_attention=False)`` returns
    ``(hidden (B, T, D), pooled (B, D), attentions)``; attentions is a list over layers of
    ``(B, H, T, T)`` when asked for, else None.
    """

    def __init__(self, config: Config):
        super().__init__()
        if config.n_segment < 1 or config.pos != "learned":
            raise ValueError("a BERT config needs n_segment >= 1 and pos='learned'; start from "
                             "preset('bert-tiny') or add ptlm_lite.bert.BERT_FIELDS")
        self.config = config
        self.embed = BertEmbeddings(config)
        self.blocks = nn.ModuleList(Block(config) for _ in range(config.n_layer))
        # The pooler: a dense + tanh on the [CLS] vector, trained by NSP, reused by classifiers.
        self.pooler = nn.Linear(config.d_model, config.d_model)
        self.apply(init_weights)

    def forward(self, ids, segments=None, valid=None, return_attention=False):
        ids, segments, valid = self.check_inputs(ids, segments, valid)
        mask = masks.padding_mask(valid)  # (B, 1, T): bidirectional, only padding is hidden
        x, attentions = self.embed(ids, segments), []
        for block in self.blocks:
            x, (w, _) = block(x, mask=mask, return_attention=return_attention)
            attentions.append(w)
        pooled = torch.tanh(self.pooler(x[:, 0]))  # (B, D): the [CLS] position
        return x, pooled, (attentions if return_attention else None)

    def check_inputs(self, ids, segments, valid):
        """Defaults (segment 0 everywhere, valid = not padding) and clear errors for bad input."""
        c = self.config
        if not isinstance(ids, torch.Tensor) or ids.dim() != 2 or ids.dtype not in (torch.int64, torch.int32):
            raise TypeError("ids must be a (B, T) integer tensor, got "
                            + (f"{ids.dtype} of shape {tuple(ids.shape)}" if isinstance(ids, torch.Tensor)
                               else type(ids).__name__))
        if ids.shape[1] > c.max_len:
            raise ValueError(f"ids has {ids.shape[1]} tokens but the position table holds max_len="
                             f"{c.max_len}: truncate the input (BERT's own limit is 512)")
        if int(ids.min()) < 0 or int(ids.max()) >= c.vocab_size:
            raise ValueError(f"ids must be in [0, vocab_size={c.vocab_size}), got values in "
                             f"[{int(ids.min())}, {int(ids.max())}]")
        if segments is None:
            segments = torch.zeros_like(ids)
        elif segments.shape != ids.shape:
            raise ValueError(f"segments must have the shape of ids {tuple(ids.shape)}, got {tuple(segments.shape)}")
        elif int(segments.min()) < 0 or int(segments.max()) >= c.n_segment:
            raise ValueError(f"segments must be in {set(range(c.n_segment))} (0 = sentence A, 1 = sentence B), "
                             f"got values {sorted(set(segments.unique().tolist()))}")
        if valid is None:
            valid = ids != c.pad_id
        elif not isinstance(valid, torch.Tensor) or valid.dtype != torch.bool or valid.shape != ids.shape:
            raise TypeError(f"valid must be a bool tensor of shape {tuple(ids.shape)}, True for real tokens "
                            f"(Hugging Face's attention_mask.bool())")
        return ids, segments, valid


class MLMHead(nn.Module):
    """Masked-LM head: dense + GELU + LayerNorm, then the vocabulary projection.

    The projection's matrix *is* the token embedding table (``tie_weights``), so an input token and
    the output that predicts it share a vector; only a per-token bias is new.
    """

    def __init__(self, config: Config, embedding: nn.Embedding):
        super().__init__()
        self.dense = nn.Linear(config.d_model, config.d_model)
        self.act = ACTIVATIONS[config.activation]
        self.ln = nn.LayerNorm(config.d_model, eps=config.ln_eps)
        self.decoder = nn.Linear(config.d_model, config.vocab_size)
        if config.tie_weights:
            self.decoder.weight = embedding.weight

    def forward(self, hidden):  # (B, T, D) -> (B, T, V)
        return self.decoder(self.ln(self.act(self.dense(hidden))))


class BertForPreTraining(nn.Module):
    """BERT with its two pre-training heads: masked LM and next-sentence prediction.

    ``forward(ids, segments=None, valid=None, targets=None, nsp_labels=None, return_attention=False)``

    * ``targets``: ``(B, T)`` original ids at the masked positions, -100 elsewhere (from
      :func:`ptlm_lite.corrupt.mlm_mask`); only those positions count, BERT's "15% per step".
    * ``nsp_labels``: ``(B,)``, 0 = B really follows A ("IsNext"), 1 = B is a random segment
      ("NotNext"), as in Google's code and Hugging Face.

    Returns an :class:`~ptlm_lite.transformer.Output`: ``logits`` are the MLM logits, ``(B, T, V)``
    without ``targets`` and ``(N, V)`` at the N masked positions (row-major order) with them;
    ``loss`` = MLM loss + NSP loss (those whose labels were given);
    ``extra`` holds ``nsp_logits (B, 2)``, ``mlm_loss``, ``nsp_loss``, ``hidden``, ``pooled``.
    """

    def __init__(self, config: Config):
        super().__init__()
        self.config = config
        self.bert = Bert(config)
        self.mlm = MLMHead(config, self.bert.embed.tok)
        self.nsp = nn.Linear(config.d_model, 2)
        self.mlm.apply(init_weights)  # (re-initialises the tied matrix too: same N(0, 0.02))
        self.nsp.apply(init_weights)

    def forward(self, ids, segments=None, valid=None, targets=None, nsp_labels=None,
                return_attention=False) -> Output:
        hidden, pooled, attentions = self.bert(ids, segments, valid, return_attention)
        nsp_logits = self.nsp(pooled)  # (B, 2)
        extra = {"nsp_logits": nsp_logits, "hidden": hidden, "pooled": pooled}
        losses = []
        if targets is None:
            logits = self.mlm(hidden)  # (B, T, V)
        else:
            # Only the masked positions are scored (Google's code gathers them too): the other
            # ~85% would cost a vocabulary-sized softmax each and count for nothing.
            selected = targets != -100                 # (B, T)
            logits = self.mlm(hidden[selected])         # (N, V), N = number of masked positions
            extra["mlm_loss"] = F.cross_entropy(logits, targets[selected])
            losses.append(extra["mlm_loss"])
        if nsp_labels is not None:
            extra["nsp_loss"] = F.cross_entropy(nsp_logits, nsp_labels)
            losses.append(extra["nsp_loss"])
        return Output(logits, sum(losses) if losses else None, attentions, extra)


class _FineTuned(nn.Module):
    """A task head on a (pre-trained) :class:`Bert`; ``from_pretrained`` copies the encoder."""

    @classmethod
    def from_pretrained(cls, pretrained: nn.Module, **kwargs):
        """A fresh head on a copy of ``pretrained.bert`` (any model of this file has one)."""
        encoder = pretrained.bert if hasattr(pretrained, "bert") else pretrained
        model = cls(encoder.config, **kwargs)
        model.bert.load_state_dict(encoder.state_dict())
        return model


class BertForSequenceClassification(_FineTuned):
    """Single sentences or pairs (sentiment, entailment): a linear layer on the pooled ``[CLS]``.

    ``forward(ids, segments=None, valid=None, labels=None)`` -> logits ``(B, n_labels)``.
    """

    def __init__(self, config: Config, n_labels: int = 2):
        super().__init__()
        self.config, self.n_labels = config, n_labels
        self.bert = Bert(config)
        self.drop = nn.Dropout(config.dropout)
        self.classifier = nn.Linear(config.d_model, n_labels)
        self.classifier.apply(init_weights)

    def forward(self, ids, segments=None, valid=None, labels=None, return_attention=False) -> Output:
        _, pooled, attentions = self.bert(ids, segments, valid, return_attention)
        logits = self.classifier(self.drop(pooled))  # (B, n_labels)
        loss = F.cross_entropy(logits, labels) if labels is not None else None
        return Output(logits, loss, attentions, {"pooled": pooled})


class BertForSpanExtraction(_FineTuned):
    """SQuAD: question as sentence A, passage as sentence B; the answer is a span of B.

    Two learned vectors S and E score every token: start_i = S·h_i, end_j = E·h_j; the answer is the
    span i <= j maximising start_i + end_j (:func:`best_span`); training maximises the
    log-likelihood of the true start and end (the mean of two cross-entropies over positions).
    ``forward(ids, segments=None, valid=None, start=None, end=None)`` -> logits ``(B, T, 2)``;
    ``extra`` holds ``start_logits`` and ``end_logits`` ``(B, T)``, -inf on padding.
    """

    def __init__(self, config: Config):
        super().__init__()
        self.config = config
        self.bert = Bert(config)
        self.span = nn.Linear(config.d_model, 2)  # rows: S and E
        self.span.apply(init_weights)

    def forward(self, ids, segments=None, valid=None, start=None, end=None, return_attention=False) -> Output:
        ids, segments, valid = self.bert.check_inputs(ids, segments, valid)
        hidden, _, attentions = self.bert(ids, segments, valid, return_attention)
        logits = self.span(hidden).masked_fill(~valid[..., None], float("-inf"))  # (B, T, 2)
        start_logits, end_logits = logits.unbind(-1)
        loss = None
        if start is not None and end is not None:
            loss = (F.cross_entropy(start_logits, start) + F.cross_entropy(end_logits, end)) / 2
        return Output(logits, loss, attentions, {"start_logits": start_logits, "end_logits": end_logits})


def best_span(start_logits, end_logits, max_answer_len: int = 30, allowed=None):
    """The highest-scoring span ``i <= j < i + max_answer_len``: ``(start (B,), end (B,))``.

    ``allowed`` (``(B, T)`` bool, e.g. ``segments == 1``) restricts both ends to the passage.
    """
    B, T = start_logits.shape
    score = start_logits[:, :, None] + end_logits[:, None, :]  # (B, T_start, T_end)
    i, j = torch.arange(T)[:, None], torch.arange(T)[None, :]
    ok = (j >= i) & (j < i + max_answer_len)
    if allowed is not None:
        ok = ok & allowed[:, :, None] & allowed[:, None, :]
    flat = score.masked_fill(~ok, float("-inf")).flatten(1).argmax(-1)
    return flat // T, flat % T


class BertForMultipleChoice(_FineTuned):
    """SWAG: each of C choices is paired with the context (``[CLS] context [SEP] choice [SEP]``);
    one learned vector scores each pooled ``[CLS]``, and a softmax over the C scores picks one.

    ``forward(ids, segments=None, valid=None, labels=None)`` with ``ids`` of shape ``(B, C, T)``
    -> logits ``(B, C)``.
    """

    def __init__(self, config: Config):
        super().__init__()
        self.config = config
        self.bert = Bert(config)
        self.drop = nn.Dropout(config.dropout)
        self.score = nn.Linear(config.d_model, 1)
        self.score.apply(init_weights)

    def forward(self, ids, segments=None, valid=None, labels=None, return_attention=False) -> Output:
        if not isinstance(ids, torch.Tensor) or ids.dim() != 3:
            raise ValueError(f"ids must be (B, C, T): a batch of C choices each, got shape "
                             f"{tuple(getattr(ids, 'shape', ()))}")
        B, C, T = ids.shape
        flat = lambda t: None if t is None else t.reshape(B * C, T)  # noqa: E731
        _, pooled, attentions = self.bert(flat(ids), flat(segments), flat(valid), return_attention)
        logits = self.score(self.drop(pooled)).view(B, C)  # (B, C): one score per choice
        loss = F.cross_entropy(logits, labels) if labels is not None else None
        return Output(logits, loss, attentions)


def mean_pool(hidden, valid):
    """The average of the real tokens' vectors: ``(B, T, D), (B, T) bool -> (B, D)``.

    The alternative to the ``[CLS]`` vector as a sentence embedding (Sentence-BERT's choice).
    """
    w = valid.to(hidden.dtype)[..., None]  # (B, T, 1)
    return (hidden * w).sum(1) / w.sum(1).clamp(min=1.0)


# ----------------------------------------------------------------------------------------------
# Pre-training on Shakespeare + the synthetic world: the chapter's recipe, cached so that later
# chapters (WWM, RoBERTa, ALBERT, ELECTRA) start from the same model:
# ``ptlm_lite.cache.get("bert-tiny-shakespeare")``.

PRETRAIN_VOCAB = 1024  # a small WordPiece vocabulary trained on the training plays (no T5 sentinels)
RECIPE_VERSION = "2"   # bump when the recipe below changes: the cache retrains


def shakespeare_tokenizer():
    """The WordPiece tokenizer of the BERT chapter: 1,024 tokens trained on the training plays
    (trained once, then loaded from the cache). A small vocabulary means every token is seen often
    enough for a tiny model to learn it in a few hundred steps."""
    from .data import get_tokenizer

    return get_tokenizer("wordpiece", vocab_size=PRETRAIN_VOCAB, n_sentinels=0)


def world_documents(seed: int = 0) -> list[list[str]]:
    """The synthetic world's documents (``make_world(seed)``) as ordered lists of sentences."""
    import re

    from .data import make_world

    return [re.split(r"(?<=\.) ", d.text) for d in make_world(seed).documents]


def pretraining_batches(tok, *, batch_size: int = 24, max_len: int = 32, n_docs: int = 120,
                        proportions=(0.8, 0.1, 0.1), p: float = 0.15, seed: int = 0,
                        split: str = "train", corpora=("shakespeare", "world")):
    """``step -> batch``: fresh NSP pairs, half from Shakespeare's scenes and half from the synthetic
    world's documents, freshly masked each step.

    A document (a scene, or a world entity's short biography) is a list of ordered sentences. Each
    step draws ``batch_size // len(corpora)`` pairs from each corpus (half with a random second
    sentence from another document of the same corpus), packs ``[CLS] A [SEP] B [SEP]`` into at most
    ``max_len`` tokens and masks them. Shakespeare alone is too hard for a tiny model in a few hundred
    steps (it learns the token frequencies and little else); the world's regular sentences and facts
    are learnable, as in the GPT chapter. ``split="validation"`` gives held-out plays and another
    world (``make_world(1)``: other names, same kind of text). The generator is seeded by
    ``(seed, step)``, so a step's batch never changes (Google's BERT masked each example once and
    stored it; RoBERTa's dynamic masking draws a new corruption every time an example comes back,
    which is what happens here).
    """
    from .corrupt import mlm_mask, nsp_pairs, pack_pairs
    from .data import documents

    unknown = set(corpora) - {"shakespeare", "world"}
    if not corpora or unknown:
        raise ValueError(f"corpora must be a non-empty subset of ('shakespeare', 'world'), got {corpora!r}")
    if batch_size < len(corpora):
        raise ValueError(f"batch_size must be at least {len(corpora)} (one pair per corpus), got {batch_size}")
    texts = {"shakespeare": lambda: documents(split, "sentence")[:n_docs],  # the first n_docs scenes
             "world": lambda: world_documents(0 if split == "train" else 1)}
    all_docs = []
    for name in corpora:
        docs = texts[name]()
        flat = tok.encode_batch([s for d in docs for s in d])
        token_docs, i = [], 0
        for d in docs:
            token_docs.append([t for t in flat[i:i + len(d)] if t])
            i += len(d)
        all_docs.append(token_docs)
    ids = tok.special_ids
    share = [batch_size // len(corpora)] * len(corpora)
    share[0] += batch_size - sum(share)

    def batch(step: int) -> dict:
        g = torch.Generator().manual_seed(seed * 1_000_003 + step)
        pairs = [pair for docs, n in zip(all_docs, share) for pair in nsp_pairs(docs, n, generator=g)]
        b = pack_pairs(pairs, cls_id=ids["cls"], sep_id=ids["sep"], pad_id=ids["pad"], max_len=max_len)
        m = mlm_mask(b["ids"], special_ids=tok.all_special_ids, mask_id=ids["mask"],
                     vocab_size=tok.vocab_size, p=p, proportions=proportions, generator=g)
        return {**b, "ids": m.inputs, "targets": m.targets}

    return batch


def pretrain(model, *, steps: int, batch_size: int = 24, max_len: int = 32, lr: float = 5e-3,
             warmup: int = 40, proportions=(0.8, 0.1, 0.1), nsp: bool = True, seed: int = 0,
             keep: tuple = (), tok=None, corpora=("shakespeare", "world"), **train_kw):
    """Pre-train ``model`` (a :class:`BertForPreTraining`) with MLM (+ NSP) on Shakespeare and the
    synthetic world, half and half (:func:`pretraining_batches`).

    Linear warm-up for ``warmup`` steps, then a constant learning rate, so that a run of N steps is
    exactly the first N steps of a longer run (the chapter compares ablations with an early
    checkpoint). The tiny model needs a high rate (5e-3) to get past the unigram plateau in a few
    hundred steps. ``nsp=False`` drops the NSP loss (as RoBERTa does). ``keep``: steps whose weights
    are copied into ``history.checkpoints[step]``. Returns the :class:`~ptlm_lite.train.History`.
    """
    from .train import train

    batches = pretraining_batches(tok or shakespeare_tokenizer(), batch_size=batch_size,
                                  max_len=max_len, proportions=proportions, seed=seed, corpora=corpora)
    get = batches if nsp else (lambda step: {k: v for k, v in batches(step).items() if k != "nsp_labels"})
    checkpoints = {}

    def callback(step, loss):
        if step in keep:
            checkpoints[step] = {k: v.detach().clone() for k, v in model.state_dict().items()}

    history = train(model, get, steps=steps, lr=lr, warmup=min(warmup, steps - 1), schedule="constant",
                    seed=seed, desc="pre-training BERT", callback=callback, **train_kw)
    history.checkpoints = checkpoints
    return history


PRETRAIN_STEPS = {"tiny": 400, "small": 3000}


def _train_tiny(model):
    model.history = pretrain(model, steps=PRETRAIN_STEPS["tiny"], keep=(100, 200), progress=True)


def _train_small(model):
    model.history = pretrain(model, steps=PRETRAIN_STEPS["small"], batch_size=64, max_len=128,
                             lr=1e-3, warmup=200, keep=(1500,), progress=True)


def _register_recipes():
    from . import cache

    cache.register("bert-tiny-shakespeare", BertForPreTraining,
                   Config(**{**PRESETS["bert-tiny"], "vocab_size": PRETRAIN_VOCAB}), _train_tiny,
                   version=RECIPE_VERSION)
    cache.register("bert-small-shakespeare", BertForPreTraining,
                   Config(**{**PRESETS["bert-small"], "vocab_size": PRETRAIN_VOCAB}), _train_small,
                   version=RECIPE_VERSION)


_register_recipes()
