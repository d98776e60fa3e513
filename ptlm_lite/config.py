"""One flat configuration for every model in the book, with named presets.

Every model in ``ptlm_lite`` is built from a :class:`Config`. The field names are the same across
models (``d_model, n_layer, n_head, d_ff, vocab_size, max_len, dropout``) so that a reader who knows
one chapter can read the next. A flag exists only where two papers differ by exactly that switch
(``pre_norm``, ``tie_weights``, ``pos``).

Presets come in three kinds:

* ``tiny``  - seconds on a 2-core CPU (the book's default scale);
* ``small`` - a GPU, or a patient CPU;
* the paper's real sizes (``transformer-base``, ``gpt2``, ``bert-base``, ...) - for counting
  parameters, never trained here.

Introduced in ``chapters/transformer.ipynb``.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

__all__ = ["Config", "PRESETS", "preset", "register_preset"]


@dataclass
class Config:
    vocab_size: int = 64        # size of the token vocabulary (embedding rows, output columns)
    d_model: int = 64           # width of the residual stream
    n_layer: int = 2            # blocks in the stack (per side, for an encoder-decoder)
    n_head: int = 4             # attention heads; d_model must divide by it
    d_ff: int = 256             # hidden width of the position-wise feed-forward (4 * d_model usual)
    max_len: int = 64           # longest sequence the position table covers
    dropout: float = 0.1        # on embeddings, attention weights and residual branches
    pre_norm: bool = False      # False: post-LN as in Vaswani et al. (2017); True: pre-LN as in GPT-2
    tie_weights: bool = True    # share the embedding matrix with the output projection
    pos: str = "sinusoidal"     # "sinusoidal" (fixed) or "learned" position embeddings
    activation: str = "relu"    # feed-forward non-linearity: "relu" (Transformer), "gelu" (BERT), "gelu_tanh" (GPT)
    ln_eps: float = 1e-5        # LayerNorm epsilon (BERT uses 1e-12)
    n_segment: int = 0          # segment (token type) embeddings; BERT uses 2
    label_smoothing: float = 0.0  # epsilon of label-smoothed cross-entropy (0.1 in the paper)
    pad_id: int = 0             # the padding token id (its loss is ignored)

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        """Raise a ValueError naming the field and what it accepts."""
        for name in ("vocab_size", "d_model", "n_layer", "n_head", "d_ff", "max_len"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if self.d_model % self.n_head != 0:
            raise ValueError(
                f"d_model ({self.d_model}) must be divisible by n_head ({self.n_head}): each head "
                f"gets d_model // n_head dimensions. Try n_head in "
                f"{[h for h in range(1, 17) if self.d_model % h == 0]}."
            )
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {self.dropout!r}")
        if not 0.0 <= self.label_smoothing < 1.0:
            raise ValueError(f"label_smoothing must be in [0, 1), got {self.label_smoothing!r}")
        if self.pos not in ("sinusoidal", "learned"):
            raise ValueError(f"pos must be 'sinusoidal' or 'learned', got {self.pos!r}")
        if self.activation not in ("relu", "gelu", "gelu_tanh"):
            raise ValueError(f"activation must be 'relu', 'gelu' or 'gelu_tanh', got {self.activation!r}")
        if self.n_segment < 0:
            raise ValueError(f"n_segment must be >= 0, got {self.n_segment!r}")
        if not 0 <= self.pad_id < self.vocab_size:
            raise ValueError(f"pad_id must be in [0, vocab_size={self.vocab_size}), got {self.pad_id!r}")

    @property
    def d_head(self) -> int:
        return self.d_model // self.n_head

    def replace(self, **changes) -> "Config":
        """A copy with some fields changed (validated again)."""
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "Config":
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(d) - known)
        if unknown:
            raise ValueError(f"unknown Config fields {unknown}; known fields are {sorted(known)}")
        return cls(**d)


# Named presets. Values are only the fields that differ from the defaults above.
PRESETS: dict[str, dict] = {
    # The book's scales (model-agnostic: a chapter picks the preset and sets vocab_size).
    "tiny": dict(d_model=64, n_layer=2, n_head=4, d_ff=256, max_len=64, dropout=0.1),
    "small": dict(d_model=256, n_layer=4, n_head=8, d_ff=1024, max_len=256, dropout=0.1),
    # Vaswani et al. (2017), Table 3. Shared source/target BPE vocabulary of about 37k tokens.
    "transformer-base": dict(vocab_size=37000, d_model=512, n_layer=6, n_head=8, d_ff=2048,
                             max_len=512, dropout=0.1, label_smoothing=0.1),
    "transformer-big": dict(vocab_size=37000, d_model=1024, n_layer=6, n_head=16, d_ff=4096,
                            max_len=512, dropout=0.3, label_smoothing=0.1),
}


def register_preset(name: str, **fields) -> None:
    """Add a named preset (model modules register the sizes of their papers)."""
    Config(**fields)  # validate now, not when a reader first asks for it
    PRESETS[name] = dict(fields)


def preset(name: str, **overrides) -> Config:
    """The named preset as a :class:`Config`, with ``overrides`` applied.

    >>> preset("tiny", vocab_size=100).d_model
    64
    """
    if name not in PRESETS:
        raise ValueError(f"unknown preset {name!r}; choose one of {sorted(PRESETS)}")
    return Config(**{**PRESETS[name], **overrides})
