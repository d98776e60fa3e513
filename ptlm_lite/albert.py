"""ALBERT (Lan et al., 2019): BERT with fewer parameters, and a harder pair task.

    BERT    ids ─► V×D table ───────► block 1 ─► block 2 ─► ... ─► block L
    ALBERT  ids ─► V×E table ─► E×D ─► block ──► block ──► ... ─► block
                   (E = 128 ≪ D)       └─ one set of weights, L times ─┘

Everything ALBERT changes fits in this file:

* **factorised embeddings**: tokens live in E dimensions and one E×D matrix lifts them
  to the model's width: V·E + E·D parameters instead of V·D
  (:class:`AlbertEmbeddings`; the MLM head goes back down D -> E -> V);
* **cross-layer sharing** (``AlbertConfig.share``): ``"all"`` runs one block L times,
  ``"attention"`` or ``"ffn"`` share only that sublayer (with its LayerNorm), ``"none"``
  is BERT's L separate blocks (:func:`share_blocks`);
* **sentence-order prediction** (SOP) instead of NSP: both segments come from one
  document, in order or swapped (:func:`sop_pairs`), so topic cannot give the answer;
* **n-gram masking**: whole n-grams of up to 3 words, P(n) ∝ 1/n (:func:`ngram_mask`);
* **no dropout** (the presets set ``dropout=0``).

Chapter: ``chapters/albert.ipynb``.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

import torch
from torch import nn

from .bert import Bert, BertForPreTraining, MLMHead
from .config import PRESETS, Config, register_preset
from .corrupt import Masked, Pair, can_mask, check_generator, mlm_mask, nsp_pairs
from .corrupt import check_special_ids
from .layers import Embeddings, init_weights
from .spanbert import word_starts
from .stack import Model, Stack

__all__ = [
    "AlbertConfig",
    "ALBERT_FIELDS",
    "AlbertEmbeddings",
    "share_blocks",
    "Albert",
    "AlbertForPreTraining",
    "ngram_probs",
    "select_ngrams",
    "ngram_mask",
    "sop_pairs",
]


@dataclass
class AlbertConfig(Config):
    # which sublayers the L layers share: "all" (ALBERT), "attention", "ffn" or "none"
    # (BERT's L separate blocks). share_layers=True, the older switch, is share="all"
    share: str = "none"

    RANGES = {**Config.RANGES, "share": ("all", "attention", "ffn", "none")}

    @property
    def sharing(self) -> str:
        """What is shared: ``share``, or ``"all"`` when ``share_layers`` is set."""
        return "all" if self.share_layers else self.share

    def validate(self) -> None:
        super().validate()
        if self.share_layers and self.share not in ("all", "none"):
            raise ValueError(
                f"share_layers=True shares whole blocks (share='all'); it cannot go "
                f"with share={self.share!r}"
            )


# ALBERT's switches: BERT's inputs and post-LN blocks, GELU (tanh form), no dropout,
# factorised embeddings (E = 128) and every layer shared.
ALBERT_FIELDS = dict(
    pos="learned",
    n_segment=2,
    activation="gelu_tanh",
    ln_eps=1e-12,
    pre_norm=False,
    tie_weights=True,
    dropout=0.0,
    share="all",
)
# Lan et al. (2019), Table 1: a 30,000-token SentencePiece vocabulary, 512 positions.
for _name, (_L, _H, _A) in {
    "base": (12, 768, 12),
    "large": (24, 1024, 16),
    "xlarge": (24, 2048, 16),
    "xxlarge": (12, 4096, 64),
}.items():
    register_preset(
        f"albert-{_name}",
        config_cls=AlbertConfig,
        **ALBERT_FIELDS,
        vocab_size=30000,
        d_model=_H,
        n_layer=_L,
        n_head=_A,
        d_ff=4 * _H,
        max_len=512,
        d_embed=128,
    )
# The book's scales (E = D / 2), deeper than BERT's (a shared layer costs no
# parameters): a chapter sets vocab_size from its tokenizer.
register_preset(
    "albert-tiny",
    config_cls=AlbertConfig,
    **{**PRESETS["tiny"], **ALBERT_FIELDS, "d_embed": 32, "n_layer": 4},
)
register_preset(
    "albert-small",
    config_cls=AlbertConfig,
    **{**PRESETS["small"], **ALBERT_FIELDS, "d_embed": 128, "n_layer": 6},
)


class AlbertEmbeddings(Embeddings):
    """Token + segment + position in E dimensions, LayerNorm (over E), dropout, then
    the one E×D projection up to the model's width: V·E + E·D parameters, not V·D.
    """

    def __init__(self, config: Config):
        super().__init__(config)
        self.ln = nn.LayerNorm(config.d_embed or config.d_model, eps=config.ln_eps)
        self.drop_after_ln, self.drop = self.drop, nn.Identity()
        # the projection moves after the LayerNorm (Hugging Face:
        # encoder.embedding_hidden_mapping_in)
        self.up, self.proj = self.proj or nn.Identity(), None

    def forward(self, ids, segments=None, offset: int = 0):
        x = super().forward(ids, segments, offset)  # (B, T, E)
        return self.up(self.drop_after_ln(self.ln(x)))  # (B, T, D)


def share_blocks(stack: Stack, share: str) -> Stack:
    """Make the blocks of ``stack`` share their attention (``"attention"``: ``attn``
    and the ``ln1`` after it) or their feed-forward (``"ffn"``: ``ff`` and ``ln2``):
    every block then holds block 0's module, the same object. ``"all"`` and ``"none"``
    leave the stack as built (one block run L times, or L blocks).
    """
    parts = {"attention": ("attn", "ln1"), "ffn": ("ff", "ln2")}
    if share not in (*parts, "all", "none"):
        raise ValueError(
            f"share must be 'all', 'attention', 'ffn' or 'none', got {share!r}"
        )
    for block in list(stack)[1:]:
        for name in parts.get(share, ()):
            setattr(block, name, getattr(stack[0], name))
    return stack


class Albert(Bert):
    """ALBERT's encoder: :class:`AlbertEmbeddings`, the shared stack and BERT's pooler;
    ``forward`` is :class:`~ptlm_lite.bert.Bert`'s.
    """

    config_cls = AlbertConfig
    config_example = "preset('albert-tiny', vocab_size=...)"

    def __init__(self, config: AlbertConfig, seed: int | None = None):
        Model.__init__(self, config, seed)  # Bert's parts, ALBERT's versions
        if config.n_segment < 1 or config.pos != "learned":
            raise ValueError(
                "an ALBERT config needs n_segment >= 1 and pos='learned'; start "
                "from preset('albert-tiny') or add ptlm_lite.albert.ALBERT_FIELDS"
            )
        self.embed = AlbertEmbeddings(config)
        # Stack builds one block when share_layers is set ("all"), else n_layer
        stack = Stack(config.replace(share_layers=config.sharing == "all"))
        self.blocks = share_blocks(stack, config.sharing)
        self.pooler = nn.Linear(config.d_model, config.d_model)
        self.apply(init_weights)


class AlbertForPreTraining(BertForPreTraining):
    """ALBERT with its MLM head (D -> E -> V, tied to the E-wide token table) and the
    sentence-order head on the pooled ``[CLS]``, kept under BERT's names (``nsp``,
    ``nsp_labels``: 0 = in order, 1 = swapped) so that BERT's recipe and fine-tuning
    heads take it as it is.
    """

    config_cls = AlbertConfig
    config_example = "preset('albert-tiny', vocab_size=...)"

    def __init__(self, config: AlbertConfig, seed: int | None = None):
        Model.__init__(self, config, seed)
        self.bert = Albert(config)
        self.mlm = MLMHead(config, self.bert.embed.tok)
        self.nsp = nn.Linear(config.d_model, 2)  # SOP: same shape, another task
        self.mlm.apply(init_weights)
        self.nsp.apply(init_weights)


# ----------------------------------------------------------------------------------
# n-gram masking and sentence order


def ngram_probs(max_n: int = 3) -> torch.Tensor:
    """``(max_n,)``: P(n) = (1/n) / Σ_k (1/k) for n = 1..max_n (6/11, 3/11, 2/11 at
    ALBERT's max_n = 3)."""
    if isinstance(max_n, bool) or not isinstance(max_n, int) or max_n < 1:
        raise ValueError(f"max_n must be a positive integer, got {max_n!r}")
    w = 1.0 / torch.arange(1, max_n + 1, dtype=torch.float64)
    return w / w.sum()


def select_ngrams(
    maskable, word_start, p=0.15, *, generator, max_n=3, return_ngrams=False
):
    """``(B, T)`` bool: n-grams of whole words covering ``round(p · n)`` of the ``n``
    maskable tokens of each row (at least one). Repeat: draw n ~ :func:`ngram_probs`,
    a word start not hidden yet, and hide n words from it (never across a special
    token; the last n-gram stops at the budget). ``return_ngrams``: also the list per
    row of ``(start, stop, n drawn)``.
    """
    check_generator(generator)
    for name, x in (("maskable", maskable), ("word_start", word_start)):
        if not isinstance(x, torch.Tensor) or x.dtype != torch.bool or x.dim() != 2:
            raise TypeError(f"{name} must be a (B, T) bool tensor")
    if word_start.shape != maskable.shape:
        raise ValueError("word_start must have the shape of maskable")
    if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0 < p < 1:
        raise ValueError(f"p must be a number in (0, 1), got {p!r}")
    cdf = ngram_probs(max_n).cumsum(0).tolist()
    n = maskable.sum(1)
    budget = (n.double() * p).round().long().clamp(min=1).where(n > 0, 0).tolist()
    rows, drawn = [], []
    for b, k in enumerate(budget):
        ok, start = maskable[b].tolist(), (word_start[b] & maskable[b]).tolist()
        anchors = [i for i, s in enumerate(start) if s] or [
            i for i, o in enumerate(ok) if o
        ]
        sel, count, grams, u = [False] * len(ok), 0, [], []
        while count < k:
            if len(u) < 2:  # uniforms, drawn a row's worth at a time
                u = torch.rand(2 * k + 8, generator=generator).tolist()
            words = min(bisect.bisect(cdf, u.pop()), max_n - 1) + 1  # 1..max_n
            i = anchors[int(u.pop() * len(anchors))]
            if sel[i]:  # hidden already: draw again (or, if every anchor is, any)
                if all(sel[a] for a in anchors):
                    anchors = [a for a, o in enumerate(ok) if o and not sel[a]]
                continue
            j, left = i, words
            while j < len(ok) and ok[j] and count < k:  # n words, or the budget
                if j > i and start[j]:
                    left -= 1
                    if left == 0:
                        break
                count += not sel[j]
                sel[j], j = True, j + 1
            grams.append((i, j, words))
        rows.append(sel)
        drawn.append(grams)
    selected = torch.tensor(rows, dtype=torch.bool).reshape(maskable.shape)
    return (selected, drawn) if return_ngrams else selected


def ngram_mask(
    ids,
    *,
    special_ids,
    mask_id,
    vocab_size,
    generator,
    starts_word=None,
    p=0.15,
    max_n=3,
) -> Masked:
    """ALBERT's corruption of a ``(B, T)`` batch: :func:`select_ngrams` (``starts_word``
    ``(V,)`` bool marks the tokens that begin a word; None: every token is a word),
    then BERT's 80/10/10 per token (:func:`~ptlm_lite.corrupt.mlm_mask`).
    """
    special = check_special_ids(special_ids)
    maskable = can_mask(ids, special)
    if starts_word is None:
        starts_word = torch.ones(vocab_size, dtype=torch.bool)
    elif not isinstance(starts_word, torch.Tensor) or starts_word.shape != (
        vocab_size,
    ):
        raise TypeError(f"starts_word must be a ({vocab_size},) bool tensor or None")
    starts = word_starts(ids, starts_word, special)
    selected = select_ngrams(maskable, starts, p, generator=generator, max_n=max_n)
    return mlm_mask(
        ids,
        special_ids=special,
        mask_id=mask_id,
        vocab_size=vocab_size,
        generator=generator,
        selected=selected,
    )


def sop_pairs(documents, n: int, *, generator, p_swap: float = 0.5) -> list[Pair]:
    """``n`` sentence-order pairs: two consecutive segments of one document, drawn by
    BERT's pair builder (:func:`~ptlm_lite.corrupt.nsp_pairs` with no random B), then
    swapped with probability ``p_swap``. ``Pair.label``: 0 = in order, 1 = swapped.
    """
    if isinstance(p_swap, bool) or not isinstance(p_swap, (int, float)):
        raise TypeError(f"p_swap must be a number in [0, 1], got {p_swap!r}")
    if not 0.0 <= p_swap <= 1.0:
        raise ValueError(f"p_swap must be in [0, 1], got {p_swap!r}")
    pairs = nsp_pairs(documents, n, generator=generator, p_random=0.0)
    swap = (torch.rand(n, generator=generator) < p_swap).tolist()
    return [Pair(q.b, q.a, True) if s else q for q, s in zip(pairs, swap)]
