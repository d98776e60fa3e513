"""A small LSTM language model and its classifier: the models of Part II before GPT.

ULMFiT (``chapters/ulmfit.ipynb``) pre-trains this LM, fine-tunes it on the target
domain and then puts a classifier with concat pooling on top; ELMo/CoVe and SiATL reuse
it. These models are not Transformers and do not use :class:`~ptlm_lite.stack.Stack`::

    ids (B, T) ─► Embedding (E) ─► LSTM 1 (H) ─► ... ─► LSTM L (E) ─► decoder
                                                                (tied to the embedding)

One ``nn.LSTM`` per layer, so that a layer can be frozen, or given its own learning
rate, on its own (ULMFiT's gradual unfreezing and discriminative rates). The last layer
has the embedding's width when the decoder is tied to it (AWD-LSTM's layout). Dropout
on the embedding and between layers, and AWD-LSTM's *embedding dropout* (whole rows of
the embedding matrix dropped, the same word dropped everywhere in the batch). AWD-LSTM's
weight drop (DropConnect on the recurrent matrices) is left out: it needs the LSTM
written by hand or patched, and the tiny runs do not need the regularisation.

Introduced in ``chapters/ulmfit.ipynb``.
"""

from __future__ import annotations

import copy
from dataclasses import asdict, dataclass

import torch
import torch.nn as nn

from .output import Output, cross_entropy

__all__ = ["LSTMConfig", "LSTMLM", "LSTMClassifier", "concat_pool"]


@dataclass
class LSTMConfig:
    """The LSTM LM's sizes (ULMFiT's AWD-LSTM: E = 400, H = 1150, 3 layers)."""

    vocab_size: int = 1024
    d_embed: int = 64  # E: the embedding, and the last layer when the decoder is tied
    d_hidden: int = 128  # H: the layers in between
    n_layer: int = 3
    dropout: float = 0.1  # on the embedding's output and between layers
    embed_dropout: float = 0.0  # AWD-LSTM's: whole embedding rows, per batch
    tie_weights: bool = True  # decoder = embedding matrix (Press & Wolf; AWD-LSTM)

    def __post_init__(self):
        for name in ("vocab_size", "d_embed", "d_hidden", "n_layer"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise ValueError(f"{name} must be a positive integer, got {v!r}")
        for name in ("dropout", "embed_dropout"):
            v = getattr(self, name)
            if not isinstance(v, (int, float)) or not 0 <= v < 1:
                raise ValueError(f"{name} must be a number in [0, 1), got {v!r}")

    def replace(self, **changes) -> "LSTMConfig":
        return LSTMConfig(**{**asdict(self), **changes})


class LSTMLM(nn.Module):
    """A left-to-right LSTM language model: ``logits, loss = model(ids, targets)``.

    ``model(ids, targets=None, return_hidden=False)`` returns an
    :class:`~ptlm_lite.output.Output`: next-token ``logits`` (B, T, V), the loss when
    ``targets`` (B, T) are given (``IGNORE`` = -100 where nothing counts), and with
    ``return_hidden`` every layer's outputs in ``hidden`` (the embedding first, then one
    (B, T, ·) tensor per LSTM layer: ELMo mixes them). ``seed`` fixes the initial
    weights.
    """

    def __init__(self, config: LSTMConfig, seed: int | None = None):
        super().__init__()
        if not isinstance(config, LSTMConfig):
            raise TypeError(
                f"config must be an LSTMConfig, got {type(config).__name__}"
            )
        self.config = c = config
        if seed is not None:
            torch.manual_seed(seed)
        self.embed = nn.Embedding(c.vocab_size, c.d_embed)
        # PyTorch's N(0, 1), not AWD-LSTM's uniform(±0.1): at this size the small init
        # sits on the unigram plateau for hundreds of steps (measured)
        last = c.d_embed if c.tie_weights else c.d_hidden
        sizes = [c.d_embed] + [c.d_hidden] * (c.n_layer - 1) + [last]
        # one nn.LSTM per layer: each can be frozen or given its own learning rate
        self.layers = nn.ModuleList(
            nn.LSTM(sizes[i], sizes[i + 1], batch_first=True) for i in range(c.n_layer)
        )
        self.drop = nn.Dropout(c.dropout)
        self.decoder = nn.Linear(last, c.vocab_size)
        if c.tie_weights:
            self.decoder.weight = self.embed.weight

    @property
    def d_out(self) -> int:
        """The width of the last layer's outputs."""
        return self.layers[-1].hidden_size

    def embedding(self, ids: torch.Tensor) -> torch.Tensor:
        """(B, T) ids -> (B, T, E), with AWD-LSTM's embedding dropout in training: a
        dropped word is dropped at every position of the batch."""
        w = self.embed.weight
        p = self.config.embed_dropout
        if self.training and p > 0:
            keep = torch.empty(w.shape[0], 1, device=w.device).bernoulli_(1 - p)
            w = w * keep / (1 - p)
        return nn.functional.embedding(ids, w)

    def encode(self, ids: torch.Tensor) -> list[torch.Tensor]:
        """Every layer's outputs, bottom to top: [embedding (B, T, E), layer 1 (B, T,
        H), ..., layer L (B, T, E or H)]. Position t depends on ids[:, :t + 1] only."""
        if not isinstance(ids, torch.Tensor) or ids.dim() != 2:
            raise ValueError(
                "ids must be a (B, T) integer tensor, got "
                + (
                    str(tuple(ids.shape))
                    if isinstance(ids, torch.Tensor)
                    else repr(ids)
                )
            )
        if ids.numel() and (
            int(ids.min()) < 0 or int(ids.max()) >= self.config.vocab_size
        ):
            raise ValueError(
                f"ids must be in [0, {self.config.vocab_size}), got values in "
                f"[{int(ids.min())}, {int(ids.max())}]"
            )
        x = self.drop(self.embedding(ids))  # (B, T, E)
        hidden = [x]
        for layer in self.layers:
            x, _ = layer(x)  # (B, T, H): the state at t has read tokens 0..t
            x = self.drop(x)
            hidden.append(x)
        return hidden

    def forward(
        self,
        ids: torch.Tensor,
        targets: torch.Tensor | None = None,
        return_hidden: bool = False,
    ) -> Output:
        hidden = self.encode(ids)
        logits = self.decoder(hidden[-1])  # (B, T, V)
        loss = None if targets is None else cross_entropy(logits, targets)
        return Output(logits, loss, hidden=hidden if return_hidden else None)


def concat_pool(
    hidden: torch.Tensor, valid: torch.Tensor | None = None
) -> torch.Tensor:
    """ULMFiT's concat pooling: [h_last, max over t, mean over t] of the last layer,
    padding ignored. ``hidden`` (B, T, D), ``valid`` (B, T) bool (True = a real token;
    None = all real; the real tokens need not come first). Returns (B, 3·D).
    """
    if not isinstance(hidden, torch.Tensor) or hidden.dim() != 3:
        raise ValueError(
            f"hidden must be a (B, T, D) tensor, got {getattr(hidden, 'shape', hidden)}"
        )
    B, T, _ = hidden.shape
    if valid is None:
        valid = torch.ones(B, T, dtype=torch.bool, device=hidden.device)
    if valid.shape != (B, T) or valid.dtype != torch.bool:
        raise ValueError(
            f"valid must be a (B, T) = {(B, T)} bool tensor, got "
            f"{tuple(valid.shape)} {valid.dtype}"
        )
    if not valid.any(1).all():
        raise ValueError("valid must mark at least one real token in every row")
    m = valid.unsqueeze(-1)  # (B, T, 1)
    # the last real position of each row: the largest t where valid
    t = torch.arange(T, device=hidden.device)
    last = torch.where(valid, t, -1).argmax(1)  # (B,)
    h_last = hidden[torch.arange(B, device=hidden.device), last]  # (B, D)
    h_max = hidden.masked_fill(~m, float("-inf")).amax(1)  # (B, D)
    h_mean = (hidden * m).sum(1) / m.sum(1)  # (B, D)
    return torch.cat([h_last, h_max, h_mean], -1)  # (B, 3D)


class LSTMClassifier(nn.Module):
    """An LSTM LM with ULMFiT's classifier head: concat pooling, then two linear layers.

    ``source``: a trained :class:`LSTMLM` (deep-copied: the original stays as it was)
    or an :class:`LSTMConfig` (random weights). ``mode="classify"`` gives ``n_labels``
    logits for ``ids`` (B, T); ``mode="choice"`` scores each candidate of ``ids``
    (N, C, T) and returns (N, C) logits (a softmax over the candidates). The LM, decoder
    included, stays in ``self.lm``: ``model.lm(ids, targets)`` still measures it
    (forgetting). ``forward(ids, last=None, valid=None, labels=None)`` takes
    :func:`ptlm_lite.finetune.decoder_batch`'s batches (GPT's input transformations:
    ``last`` is the index of each sequence's final token, padding after it) or ``valid``
    (True = a real token).
    """

    def __init__(
        self,
        source: LSTMLM | LSTMConfig,
        n_labels: int = 2,
        mode: str = "classify",
        d_head: int = 50,
        dropout: float = 0.1,
    ):
        super().__init__()
        if mode not in ("classify", "choice"):
            raise ValueError(f"mode must be 'classify' or 'choice', got {mode!r}")
        if not isinstance(n_labels, int) or n_labels < 2:
            raise ValueError(f"n_labels must be an integer >= 2, got {n_labels!r}")
        if isinstance(source, LSTMConfig):
            self.lm = LSTMLM(source)
        elif isinstance(source, LSTMLM):
            self.lm = copy.deepcopy(source)
        else:
            raise TypeError(
                "source must be an LSTMLM or an LSTMConfig, got "
                f"{type(source).__name__}"
            )
        self.config, self.mode = self.lm.config, mode
        D = self.lm.d_out
        self.head = nn.Sequential(
            nn.Dropout(dropout),
            nn.Linear(3 * D, d_head),
            nn.ReLU(),
            nn.Dropout(dropout),
            nn.Linear(d_head, 1 if mode == "choice" else n_labels),
        )

    def forward(self, ids, last=None, valid=None, labels=None) -> Output:
        shape = ids.shape
        if self.mode == "choice" and ids.dim() != 3:
            raise ValueError(
                f"ids must be (N, C, T) in choice mode, got {tuple(shape)}"
            )
        if self.mode == "classify" and ids.dim() not in (2, 3):
            raise ValueError(f"ids must be (B, T) or (B, 1, T), got {tuple(shape)}")
        flat = ids.reshape(-1, shape[-1])  # (B, T), B = N·C for choices
        if last is not None:  # positions up to `last` are real
            t = torch.arange(shape[-1], device=ids.device)
            valid = t <= last.reshape(-1, 1)  # (B, T)
        if valid is not None:
            valid = valid.reshape(flat.shape)
        pooled = concat_pool(self.lm.encode(flat)[-1], valid)  # (B, 3D)
        logits = self.head(pooled)
        # (N, C) for choices; (B, n_labels) otherwise
        logits = logits.view(shape[0], -1)
        loss = None if labels is None else cross_entropy(logits, labels, "labels")
        return Output(logits, loss, extra={"pooled": pooled})
