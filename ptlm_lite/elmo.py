"""CoVe and ELMo: contextual word vectors from recurrent networks (Part II).

ELMo (Peters et al., 2018) trains two language models on the same text, **one reading
left to right and one right to left**, each a stack of LSTMs over a character-CNN word
encoder, and gives each word the layers of both::

    word ─► chars ─► CharCNN ─► x_t ─┬─► LSTM→ 1 ─► LSTM→ 2 ─► softmax: word t+1
                                     └─► LSTM← 1 ─► LSTM← 2 ─► softmax: word t-1
    ELMo_t = γ · Σ_j softmax(w)_j · [h→_{t,j}; h←_{t,j}]     (j = 0: [x_t; x_t])

The two directions never meet before the task: one *bidirectional* LSTM predicting
word t+1 from its state at t would read that word through its backward half
(:class:`BiLSTMLM`, the chapter's demonstration of the leak). CoVe (McCann et al.,
2017) takes the encoder of a translation model instead (:class:`CoVe`: a two-layer
bidirectional LSTM encoder, an LSTM decoder with attention); a translation model may
read its whole source.

Introduced in ``chapters/elmo.ipynb``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import torch
import torch.nn as nn

from . import layers
from .output import IGNORE, Output, cross_entropy

__all__ = [
    "ELMoConfig",
    "word_chars",
    "CharCNN",
    "ScalarMix",
    "reverse_padded",
    "check_ids",
    "check_model_inputs",
    "lm_targets",
    "ELMo",
    "BiLSTMLM",
    "CoVe",
]

ALPHABET = "abcdefghijklmnopqrstuvwxyz"  # char ids: 0 pad, 1 <w>, 2 </w>, 3 other, 4+


def word_chars(itos: list[str], width: int = 12) -> torch.Tensor:
    """(V, width) character ids of each word of ``itos``: ``<w>`` word ``</w>``, cut to
    ``width``, padded with 0; ``"<pad>"`` gets only pads (and so a zero vector).
    Chapter elmo."""
    if not isinstance(width, int) or width < 3:
        raise ValueError(f"width must be an integer >= 3, got {width!r}")
    out = torch.zeros(len(itos), width, dtype=torch.long)
    for i, w in enumerate(itos):
        if not isinstance(w, str):
            raise TypeError(f"itos must hold strings, got {type(w).__name__} at {i}")
        if w == "<pad>":
            continue
        ids = [1] + [4 + ALPHABET.index(c) if c in ALPHABET else 3 for c in w] + [2]
        ids = ids[: width - 1] + [2] if len(ids) > width else ids
        out[i, : len(ids)] = torch.tensor(ids)
    return out


@dataclass
class ELMoConfig:
    """ELMo's sizes (the paper: 2,048 filters, 2 layers of 4,096 units projected to
    512; here everything is a few dozen wide)."""

    vocab_size: int = 256
    n_chars: int = 4 + len(ALPHABET)
    d_char: int = 16  # each character's embedding
    widths: tuple = (1, 2, 3, 4)  # the CNN's filter widths, in characters
    filters: int = 32  # filters per width
    d_model: int = 64  # the word vector x_t and every LSTM state
    n_layer: int = 2
    dropout: float = 0.1

    def __post_init__(self):
        for name in (
            "vocab_size",
            "n_chars",
            "d_char",
            "filters",
            "d_model",
            "n_layer",
        ):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise ValueError(f"{name} must be a positive integer, got {v!r}")
        if not 0 <= self.dropout < 1:
            raise ValueError(f"dropout must be in [0, 1), got {self.dropout!r}")
        self.widths = tuple(self.widths)
        if not self.widths or any(
            isinstance(w, bool) or not isinstance(w, int) or w < 1 for w in self.widths
        ):
            raise ValueError(
                f"widths must be a non-empty tuple of positive filter widths (in "
                f"characters), e.g. (1, 2, 3, 4); got {self.widths!r}"
            )

    def replace(self, **changes) -> "ELMoConfig":
        return ELMoConfig(**{**asdict(self), **changes})


class CharCNN(nn.Module):
    """A word from its characters: embed, one 1-D convolution per width, max over
    positions, a highway layer, a projection. ``chars`` (B, T, W) -> (B, T, d_model);
    a word of pads only (padding) gives zeros."""

    def __init__(self, config: ELMoConfig):
        super().__init__()
        c = config
        self.embed = nn.Embedding(c.n_chars, c.d_char, padding_idx=0)
        self.convs = nn.ModuleList(nn.Conv1d(c.d_char, c.filters, w) for w in c.widths)
        d = c.filters * len(c.widths)
        self.highway = nn.Linear(d, 2 * d)  # transform and gate
        self.proj = nn.Linear(d, c.d_model)
        self.width = max(c.widths)

    def forward(self, chars: torch.Tensor) -> torch.Tensor:
        if not isinstance(chars, torch.Tensor) or chars.dim() != 3:
            raise ValueError(
                f"chars must be (B, T, W), got {getattr(chars, 'shape', chars)}"
            )
        B, T, W = chars.shape
        if W < self.width:
            raise ValueError(f"chars must be at least {self.width} wide, got W={W}")
        x = self.embed(chars.reshape(B * T, W)).transpose(1, 2)  # (BT, C, W)
        h = torch.cat([conv(x).relu().amax(-1) for conv in self.convs], -1)  # (BT, F)
        t, g = self.highway(h).chunk(2, -1)
        g = g.sigmoid()
        h = g * t.relu() + (1 - g) * h  # highway: the gate decides how much to change
        out = self.proj(h).view(B, T, -1)  # (B, T, D)
        return out * (chars[..., 0] != 0).unsqueeze(-1)  # padding words are zero


class ScalarMix(nn.Module):
    """ELMo's task-specific mix of layers: ``γ · Σ_j softmax(w)_j · h_j``. ``w`` starts
    at zero (equal weights), γ at one; the task trains both."""

    def __init__(self, n_layers: int):
        super().__init__()
        if not isinstance(n_layers, int) or n_layers < 1:
            raise ValueError(f"n_layers must be a positive integer, got {n_layers!r}")
        self.w = nn.Parameter(torch.zeros(n_layers))
        self.gamma = nn.Parameter(torch.ones(()))

    @property
    def weights(self) -> torch.Tensor:
        return self.w.softmax(0)

    def forward(self, layers) -> torch.Tensor:
        if len(layers) != len(self.w):
            raise ValueError(
                f"layers must hold {len(self.w)} tensors, got {len(layers)}"
            )
        s = self.weights
        return self.gamma * sum(s[j] * h for j, h in enumerate(layers))


def reverse_padded(x: torch.Tensor, valid: torch.Tensor | None) -> torch.Tensor:
    """Reverse each row's real positions (B, T, ...), padding left where it is (on the
    right): the backward LM reads each sentence from its own last word. Its own
    inverse."""
    B, T = x.shape[:2]
    if valid is None:
        return x.flip(1)
    n = valid.sum(1, keepdim=True)  # (B, 1)
    t = torch.arange(T, device=x.device).expand(B, T)
    idx = torch.where(t < n, n - 1 - t, t)  # (B, T)
    return x.gather(1, idx.view(B, T, *[1] * (x.dim() - 2)).expand_as(x))


def check_ids(ids, valid, vocab_size: int) -> None:
    """ids (B, T) in [0, vocab_size) (:func:`ptlm_lite.layers.check_ids`), valid None or
    a (B, T) bool tensor. Chapter elmo."""
    layers.check_ids(ids, vocab_size)
    if valid is not None and (
        not isinstance(valid, torch.Tensor)
        or valid.shape != ids.shape
        or valid.dtype != torch.bool
    ):
        raise TypeError(
            f"valid must be a (B, T) bool tensor like ids {tuple(ids.shape)}, got "
            f"{getattr(valid, 'dtype', type(valid).__name__)} of shape "
            f"{tuple(getattr(valid, 'shape', ()))}"
        )
    if valid is not None:  # the backward LM reverses each row's first n positions
        t = torch.arange(ids.shape[1], device=valid.device)
        if not torch.equal(valid, t < valid.sum(1, keepdim=True)):
            raise ValueError(
                "valid must be True on a prefix of each row: pad on the right"
            )


def lm_targets(ids, valid=None) -> tuple[torch.Tensor, torch.Tensor]:
    """The two LMs' targets, (B, T) each: the forward LM at t predicts word t+1, the
    backward LM word t-1; ``IGNORE`` where there is none (the ends) and at every
    padding position: the backward state there has read the whole sentence, the last
    word included, so it must predict nothing. int64 whatever the ids' type (what
    cross-entropy takes). Chapter elmo."""
    ids = ids.long()
    keep = ids if valid is None else ids.masked_fill(~valid, IGNORE)
    pad = torch.full_like(ids[:, :1], IGNORE)
    nxt, prev = torch.cat([keep[:, 1:], pad], 1), torch.cat([pad, keep[:, :-1]], 1)
    if valid is None:
        return nxt, prev
    return nxt.masked_fill(~valid, IGNORE), prev.masked_fill(~valid, IGNORE)


def check_model_inputs(config, chars) -> None:
    """What :class:`ELMo` and :class:`BiLSTMLM` are built from: an ELMoConfig and
    its vocabulary's (vocab_size, W) character ids."""
    if not isinstance(config, ELMoConfig):
        raise TypeError(f"config must be an ELMoConfig, got {type(config).__name__}")
    if (
        not isinstance(chars, torch.Tensor)
        or chars.dim() != 2
        or chars.shape[0] != config.vocab_size
    ):
        raise ValueError(
            f"chars must be a (vocab_size={config.vocab_size}, W) tensor, got "
            f"{getattr(chars, 'shape', chars)}"
        )


class ELMo(nn.Module):
    """ELMo's biLM: a forward and a backward LSTM LM over one character-CNN word
    encoder, and one softmax (both shared by the two directions, as in the paper;
    here the softmax is tied to the character CNN).

    ``model(ids, valid=None)`` -> Output: ``logits`` (B, T, V) of the forward LM (word
    t+1), ``loss`` the mean of both directions' losses, ``extra["backward_logits"]``
    (word t-1). ``model.layers(ids, valid)``: [x; x], then [h→; h←] per layer, each
    (B, T, 2·d_model). ``chars``: (V, W) character ids of the vocabulary
    (:func:`word_chars`), kept as a buffer."""

    def __init__(
        self, config: ELMoConfig, chars: torch.Tensor, seed: int | None = None
    ):
        super().__init__()
        check_model_inputs(config, chars)
        if seed is not None:
            torch.manual_seed(seed)
        self.config = c = config
        self.register_buffer("chars", chars.long())
        self.encoder = CharCNN(c)
        lstm = lambda: nn.LSTM(c.d_model, c.d_model, batch_first=True)  # noqa: E731
        self.fwd = nn.ModuleList(lstm() for _ in range(c.n_layer))
        self.bwd = nn.ModuleList(lstm() for _ in range(c.n_layer))
        self.drop = nn.Dropout(c.dropout)
        self.bias = nn.Parameter(torch.zeros(c.vocab_size))

    def _check(self, ids, valid):
        check_ids(ids, valid, self.config.vocab_size)

    def softmax(self, h: torch.Tensor) -> torch.Tensor:
        """(B, T, D) -> (B, T, V) logits: the output vector of each word is its own
        character-CNN vector (the input's weights, tied; a CNN softmax), so a rare word
        needs no output row of its own."""
        words = self.encoder(self.chars.unsqueeze(0))[0]  # (V, D)
        return h @ words.T + self.bias

    def directions(self, ids, valid=None) -> tuple[torch.Tensor, list, list]:
        """``(x, forward states, backward states)``: x (B, T, D) and one (B, T, D) per
        layer and direction. h→ at t has read words 0..t; h← at t, words t..end."""
        self._check(ids, valid)
        x = self.encoder(self.chars[ids])  # (B, T, D)
        out = {}
        for name, stack, seq in (
            ("f", self.fwd, x),
            ("b", self.bwd, reverse_padded(x, valid)),
        ):
            states = []
            for j, lstm in enumerate(stack):
                h, _ = lstm(self.drop(seq))
                seq = h + seq if j > 0 else h  # ELMo's residual between LSTM layers
                states.append(seq)
            out[name] = states
        back = [reverse_padded(h, valid) for h in out["b"]]  # back in reading order
        return x, out["f"], back

    def layers(self, ids, valid=None) -> list[torch.Tensor]:
        """ELMo's L + 1 representations of each word, each (B, T, 2·D)."""
        x, f, b = self.directions(ids, valid)
        return [torch.cat([x, x], -1)] + [torch.cat(h, -1) for h in zip(f, b)]

    def forward(self, ids, valid=None) -> Output:
        x, f, b = self.directions(ids, valid)
        fwd_logits = self.softmax(self.drop(f[-1]))  # (B, T, V): word t+1
        bwd_logits = self.softmax(self.drop(b[-1]))  # (B, T, V): word t-1
        next_ids, prev_ids = lm_targets(ids, valid)
        loss = (
            cross_entropy(fwd_logits, next_ids) + cross_entropy(bwd_logits, prev_ids)
        ) / 2
        return Output(fwd_logits, loss, extra={"backward_logits": bwd_logits})


class BiLSTMLM(nn.Module):
    """The wrong way to train both directions: one bidirectional LSTM whose state at t,
    ``[h→_t; h←_t]``, predicts word t+1 (and word t-1), as a single model would. h←_t
    has read words t..end, word t+1 among them (and h→_t word t-1): the label leaks
    through the other direction, and the loss falls towards zero without learning the
    language. ``model(ids, valid=None)`` -> Output as :class:`ELMo`'s."""

    def __init__(
        self, config: ELMoConfig, chars: torch.Tensor, seed: int | None = None
    ):
        super().__init__()
        check_model_inputs(config, chars)
        if seed is not None:
            torch.manual_seed(seed)
        self.config = c = config
        self.register_buffer("chars", chars.long())
        self.encoder = CharCNN(c)
        self.lstm = nn.LSTM(
            c.d_model, c.d_model, c.n_layer, batch_first=True, bidirectional=True
        )
        self.next_word = nn.Linear(2 * c.d_model, c.d_model)
        self.prev_word = nn.Linear(2 * c.d_model, c.d_model)
        self.bias = nn.Parameter(torch.zeros(c.vocab_size))

    softmax = ELMo.softmax

    def states(self, ids, valid=None) -> torch.Tensor:
        """The top layer's ``[h→; h←]``, (B, T, 2D)."""
        check_ids(ids, valid, self.config.vocab_size)
        h, _ = self.lstm(self.encoder(self.chars[ids]))
        return h

    def forward(self, ids, valid=None) -> Output:
        h = self.states(ids, valid)
        logits = self.softmax(self.next_word(h))  # (B, T, V)
        back = self.softmax(self.prev_word(h))
        next_ids, prev_ids = lm_targets(ids, valid)
        loss = (cross_entropy(logits, next_ids) + cross_entropy(back, prev_ids)) / 2
        return Output(logits, loss, extra={"backward_logits": back})


class CoVe(nn.Module):
    """CoVe's translation model: a two-layer bidirectional LSTM encoder over word
    embeddings (the paper: GloVe), an LSTM decoder with dot-product attention.

    ``model(src, src_valid, tgt_in, tgt_out)`` -> Output (teacher forcing; ``tgt_out``
    uses ``IGNORE`` where nothing counts). ``model.encode(src, src_valid)``: the CoVe
    vectors, (B, T, 2·d) (both directions of the top layer)."""

    def __init__(
        self, src_vocab: int, tgt_vocab: int, d: int = 64, seed: int | None = None
    ):
        super().__init__()
        if seed is not None:
            torch.manual_seed(seed)
        self.src_embed = nn.Embedding(src_vocab, d)
        self.encoder = nn.LSTM(d, d, 2, batch_first=True, bidirectional=True)
        self.tgt_embed = nn.Embedding(tgt_vocab, d)
        self.decoder = nn.LSTM(d, 2 * d, batch_first=True)
        self.out = nn.Linear(4 * d, tgt_vocab)

    def encode(self, src, src_valid) -> torch.Tensor:
        lengths = src_valid.sum(1).cpu()
        packed = nn.utils.rnn.pack_padded_sequence(
            self.src_embed(src), lengths, batch_first=True, enforce_sorted=False
        )
        h, _ = self.encoder(packed)  # padding never enters either direction
        return nn.utils.rnn.pad_packed_sequence(h, True, total_length=src.shape[1])[0]

    def forward(self, src, src_valid, tgt_in, tgt_out=None) -> Output:
        memory = self.encode(src, src_valid)  # (B, S, 2d)
        q, _ = self.decoder(self.tgt_embed(tgt_in))  # (B, T, 2d)
        scores = q @ memory.transpose(1, 2)  # (B, T, S)
        scores = scores.masked_fill(~src_valid.unsqueeze(1), float("-inf"))
        context = scores.softmax(-1) @ memory  # (B, T, 2d)
        logits = self.out(torch.cat([q, context], -1))  # (B, T, V)
        loss = None if tgt_out is None else cross_entropy(logits, tgt_out)
        return Output(logits, loss)
