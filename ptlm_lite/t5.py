"""T5 (Raffel et al., 2020): the encoder-decoder Transformer, text to text, with
relative position buckets and span corruption.

    "summarize: <document>"  ──► encoder (bias: buckets, both ways)
    "<X0> span <X1> span"    ◄── decoder (bias: buckets, looking back; cross-attention)

What changes from the 2017 Transformer (:class:`~ptlm_lite.transformer.Transformer`),
each a class passed in, never a flag:

* **positions as a bias** (``pos = "none"``): the distance from query to key falls in
  one of ``rel_buckets`` buckets (exact up to a few tokens, then logarithmic up to
  ``rel_max_distance``), and each bucket holds one learned scalar per head, added to
  the attention logits of every layer (:class:`RelativeBias`);
* **RMSNorm** without bias, pre-LN; **no biases** anywhere; a ReLU feed-forward;
* **unscaled attention**: logits are q·k, not q·k/√d_head. :class:`T5Attention`
  subclasses the book's attention and multiplies q by √d_head before the shared
  function divides by it (exact when √d_head is a power of two); T5's initialisation
  puts the 1/√d_head into W_Q instead, so Hugging Face's weights load unchanged;
* a tied output layer reads the decoder output times d_model^-½.

The objective is a **noise** under :mod:`ptlm_lite.seq2seq`'s contract
(``noise(doc, generator, **params) -> Pair``): :func:`span_corruption` (15% of the
tokens in spans of mean length 3, each span one sentinel in the source, the target the
spans behind their sentinels) and the baseline it is compared with,
:func:`bert_style` (15% of the tokens chosen i.i.d., BERT's 80/10/10, the target the
whole original text).

Chapter: ``chapters/t5.ipynb``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn

from .attention import Dropout, MultiHeadAttention
from .config import Config, register_preset
from .layers import Embeddings, FeedForward
from .seq2seq import Pair, check_document, check_generator
from .stack import Stack
from .transformer import Transformer

__all__ = [
    "T5Config", "T5", "T5Attention", "T5FeedForward", "RelativeBias",
    "relative_position_bucket", "span_corruption", "bert_style", "noise_spans",
]  # fmt: skip


@dataclass
class T5Config(Config):
    rel_buckets: int = 32  # buckets of query-key distance (half per direction)
    rel_max_distance: int = 128  # distances from here on share the last bucket

    RANGES = {**Config.RANGES, "rel_buckets": ">= 2", "rel_max_distance": ">= 2"}


_T5 = dict(pos="none", pre_norm=True, activation="relu", ln_eps=1e-6, tie_weights=True)
register_preset(
    "t5-tiny", config_cls=T5Config, d_model=64, n_layer=2, n_head=4, d_ff=128,
    max_len=256, dropout=0.0, rel_buckets=16, rel_max_distance=64, **_T5,
)  # fmt: skip
register_preset(
    "t5-small", config_cls=T5Config, d_model=256, n_layer=4, n_head=4, d_ff=1024,
    max_len=512, dropout=0.0, **_T5,
)  # fmt: skip
# the paper's T5-Base (220 M weights), for counting only
register_preset(
    "t5-base", config_cls=T5Config, vocab_size=32128, d_model=768, n_layer=12,
    n_head=12, d_ff=3072, max_len=512, dropout=0.1, **_T5,
)  # fmt: skip


def relative_position_bucket(
    relative_position, bidirectional: bool = True, n_buckets: int = 32,
    max_distance: int = 128,
):  # fmt: skip
    """The bucket of each ``key - query`` distance (Hugging Face's
    ``T5Attention._relative_position_bucket``, value for value: a test checks).

    Bidirectional (encoder): half the buckets for keys after the query. Causal
    (decoder): keys after the query all fall in bucket 0 (the mask hides them). Of the
    buckets of one direction, the first half are exact distances 0, 1, 2, ...; the
    rest cover max_exact .. max_distance logarithmically; farther is the last bucket.
    """
    n = n_buckets
    bucket = torch.zeros_like(relative_position)
    if bidirectional:
        n //= 2
        bucket = bucket + (relative_position > 0).long() * n
        distance = relative_position.abs()
    else:
        distance = -relative_position.clamp(max=0)  # how far back the key is
    max_exact = n // 2
    log_ratio = torch.log(distance.float() / max_exact) / math.log(
        max_distance / max_exact
    )
    large = max_exact + (log_ratio * (n - max_exact)).long()
    large = large.clamp(max=n - 1)
    return bucket + torch.where(distance < max_exact, distance, large)


class RelativeBias(nn.Module):
    """One learned scalar per (bucket, head), added to the attention logits of every
    layer: ``bias[h, i, j] = table[bucket(j - i), h]``. Built by
    :class:`~ptlm_lite.transformer.Transformer` as ``bias(config, bidirectional)``.
    """

    def __init__(self, config: T5Config, bidirectional: bool):
        super().__init__()
        self.bidirectional = bidirectional
        self.n_buckets, self.max_distance = config.rel_buckets, config.rel_max_distance
        self.table = nn.Embedding(config.rel_buckets, config.n_head)

    def buckets(self, Tq: int, Tk: int) -> torch.Tensor:
        """(Tq, Tk) bucket ids, query i at position i and key j at position j."""
        device = self.table.weight.device
        rel = (
            torch.arange(Tk, device=device)[None]
            - torch.arange(Tq, device=device)[:, None]
        )
        return relative_position_bucket(
            rel, self.bidirectional, self.n_buckets, self.max_distance
        )

    def forward(self, Tq: int, Tk: int) -> torch.Tensor:
        return self.table(self.buckets(Tq, Tk)).permute(2, 0, 1)  # (H, Tq, Tk)


class T5Attention(MultiHeadAttention):
    """No biases, and logits q·k without the 1/√d_head (T5 scales W_Q at init)."""

    def __init__(self, d_model: int, n_head: int, dropout: float = 0.0):
        super().__init__(d_model, n_head, dropout, bias=False)

    def attend(self, q, k, v, mask=None, bias=None, return_weights=False):
        # the shared function divides by √d_head: multiply first, so nothing is left
        return super().attend(
            q * math.sqrt(q.shape[-1]), k, v, mask, bias, return_weights
        )


class T5FeedForward(FeedForward):
    """relu(x W_i) W_o, no biases, dropout on the hidden layer (T5's DenseReluDense)."""

    def __init__(self, config: Config):
        super().__init__(config)
        self.fc1 = nn.Linear(config.d_model, config.d_ff, bias=False)
        self.fc2 = nn.Linear(config.d_ff, config.d_model, bias=False)
        self.drop = Dropout(config.dropout)

    def forward(self, x):
        return self.fc2(self.drop(self.act(self.fc1(x))))


class TiedHead(nn.Linear):
    """The output layer that shares the embedding matrix reads h · d_model^-½ (the
    embeddings are N(0, 1), not small)."""

    def forward(self, x):
        return super().forward(x * self.in_features**-0.5)


class T5(Transformer):
    """:class:`~ptlm_lite.transformer.Transformer` with T5's parts: unscaled
    embeddings without positions, :class:`T5Attention`, :class:`T5FeedForward`,
    ``nn.RMSNorm`` and a :class:`RelativeBias` per stack. ``encode`` / ``decode`` /
    ``forward`` / ``generate`` are the Transformer's."""

    config_cls = T5Config
    config_example = "preset('t5-tiny', vocab_size=...)"

    def __init__(self, config: T5Config, seed: int | None = None):
        super(Transformer, self).__init__(config, seed)  # Model: checks, seeds
        if config.pos != "none":
            raise ValueError(
                f"T5 takes positions as a bias: pos must be 'none', got {config.pos!r}"
            )
        parts = dict(attention=T5Attention, ff=T5FeedForward, norm=nn.RMSNorm)
        self.embed = Embeddings(config)  # not scaled by √d_model
        self.encoder = Stack(config, **parts)
        self.decoder = Stack(config, cross=True, **parts)
        head = TiedHead if config.tie_weights else nn.Linear
        self.head = head(config.d_model, config.vocab_size, bias=False)
        self.enc_bias = RelativeBias(config, bidirectional=True)
        self.dec_bias = RelativeBias(config, bidirectional=False)
        self.apply(self._init_t5)
        if config.tie_weights:
            self.head.weight = self.embed.tok.weight

    def _init_t5(self, m):
        """T5's initialisation (Mesh TensorFlow's, as Hugging Face writes it)."""
        D, H, dh = self.config.d_model, self.config.n_head, self.config.d_head
        if isinstance(m, nn.Embedding):  # visited before its RelativeBias
            nn.init.normal_(m.weight, std=1.0)
        elif isinstance(m, RelativeBias):
            nn.init.normal_(m.table.weight, std=D**-0.5)
        elif isinstance(m, T5Attention):
            nn.init.normal_(m.qkv.weight, std=D**-0.5)
            m.qkv.weight.data[:D] *= dh**-0.5  # W_Q carries the 1/√d_head
            nn.init.normal_(m.o.weight, std=(H * dh) ** -0.5)
        elif isinstance(m, T5FeedForward):
            nn.init.normal_(m.fc1.weight, std=D**-0.5)
            nn.init.normal_(m.fc2.weight, std=self.config.d_ff**-0.5)
        elif isinstance(m, nn.Linear) and m is self.head:
            nn.init.normal_(m.weight, std=D**-0.5)


def _count(name: str, value, low: float, high: float) -> float:
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not low < value < high
    ):
        raise ValueError(f"{name} must be a number in ({low}, {high}), got {value!r}")
    return float(value)


def _segments(n_items: int, n_segments: int, generator) -> list[int]:
    """``n_items`` cut into ``n_segments`` parts of length >= 1, the cuts at random."""
    cuts = (
        torch.randperm(n_items - 1, generator=generator)[: n_segments - 1] + 1
    ).sort()
    edges = [0, *cuts.values.tolist(), n_items]
    return [b - a for a, b in zip(edges, edges[1:])]


def noise_spans(
    length: int, generator, noise_density: float = 0.15, mean_span: float = 3.0
):
    """T5's ``random_spans_noise_mask``: (L,) bool, True = noise. round(L · density)
    noise tokens in round(noise / mean_span) spans; the text alternates kept, noise,
    kept, noise, ... (it starts with kept tokens and ends with a span), every part at
    least one token long, lengths cut at random."""
    n_noise = min(max(round(length * noise_density), 1), length - 1)
    n_spans = min(max(round(n_noise / mean_span), 1), n_noise, length - n_noise)
    noise = _segments(n_noise, n_spans, generator)
    keep = _segments(length - n_noise, n_spans, generator)
    mask = []
    for k, s in zip(keep, noise):
        mask += [False] * k + [True] * s
    return torch.tensor(mask)


def span_corruption(
    doc, generator, *, sentinel_ids, noise_density: float = 0.15, mean_span: float = 3.0
) -> Pair:
    """T5's objective: each noise span becomes one sentinel in the source; the target
    is each sentinel followed by the span it replaced, in order::

        Thank you for inviting me to your party last week .
        source:  Thank you <X0> me to your party <X1> week .
        target:  <X0> for inviting <X1> last
    """
    tokens = [t for sentence in check_document(doc) for t in sentence]
    check_generator(generator)
    noise_density = _count("noise_density", noise_density, 0, 1)
    mean_span = _count("mean_span", mean_span, 0, math.inf)
    sentinel_ids = list(sentinel_ids)
    if len(tokens) < 2:
        return Pair(tokens, [])
    mask = noise_spans(len(tokens), generator, noise_density, mean_span).tolist()
    n_spans = sum(m and (i == 0 or not mask[i - 1]) for i, m in enumerate(mask))
    if len(sentinel_ids) < n_spans:
        raise ValueError(
            f"sentinel_ids: {n_spans} spans need as many sentinels, got "
            f"{len(sentinel_ids)}"
        )
    source, target, span = [], [], -1
    for i, (t, m) in enumerate(zip(tokens, mask)):
        if m and (i == 0 or not mask[i - 1]):  # a span starts: its sentinel
            span += 1
            source.append(sentinel_ids[span])
            target.append(sentinel_ids[span])
        (target if m else source).append(t)
    return Pair(source, target)


def bert_style(doc, generator, *, mask_id: int, random_ids, rate: float = 0.15) -> Pair:
    """The baseline of T5's Table 4: each token chosen i.i.d. with probability
    ``rate``; a chosen token becomes ``mask_id`` (80%), a token drawn from
    ``random_ids`` (10%) or stays (10%); the target is the whole original text."""
    tokens = [t for sentence in check_document(doc) for t in sentence]
    check_generator(generator)
    rate = _count("rate", rate, 0, 1)
    random_ids = list(random_ids)
    if not random_ids:
        raise ValueError("random_ids must name at least one token id")
    u = torch.rand(len(tokens), 2, generator=generator).tolist()
    picks = torch.randint(len(random_ids), (len(tokens),), generator=generator).tolist()
    source = []
    for t, (chosen, how), r in zip(tokens, u, picks):
        if chosen >= rate:
            source.append(t)
        else:
            source.append(mask_id if how < 0.8 else random_ids[r] if how < 0.9 else t)
    return Pair(source, list(tokens))
