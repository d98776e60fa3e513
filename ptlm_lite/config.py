"""One flat configuration for every model in the book, with named presets.

Every model in ``ptlm_lite`` is built from a :class:`Config`. The field names are the
same across models (``d_model, n_layer, n_head, d_ff, vocab_size, max_len, dropout``) so
that a reader who knows one chapter can read the next. A flag exists only where two
papers differ by exactly that switch (``pre_norm``, ``tie_weights``, ``share_layers``,
``pos``).

Every field is checked when a config is made: by its declared type (``int``, ``float``, ``bool``
or ``str``, nothing looser: ``pre_norm="False"`` is an error, not True) and by its rule in
:attr:`Config.RANGES`. A family that needs more fields subclasses the config and registers its
presets with it::

    @dataclass
    class XLConfig(Config):
        mem_len: int = 0    # Transformer-XL: hidden states kept from the previous segment

    register_preset("txl-tiny", config_cls=XLConfig, mem_len=16, d_model=64)
    preset("txl-tiny").mem_len          # 16, checked like every other field

Presets come in three kinds:

* ``tiny``  - seconds on a 2-core CPU (the book's default scale);
* ``small`` - a GPU, or a patient CPU;
* the paper's real sizes (``transformer-base``, ``gpt2``, ``bert-base``, ...) - for
  counting parameters, never trained here.

Introduced in ``chapters/transformer.ipynb``.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import operator
import re
import typing
from dataclasses import dataclass
from typing import ClassVar

__all__ = ["Config", "PRESETS", "preset", "register_preset"]


@dataclass
class Config:
    # size of the token vocabulary (embedding rows, output columns)
    vocab_size: int = 64
    d_model: int = 64  # width of the residual stream
    n_layer: int = 2  # blocks in the stack (per side, for an encoder-decoder)
    n_head: int = 4  # attention heads; d_model must divide by it
    # hidden width of the position-wise feed-forward (4 * d_model usual)
    d_ff: int = 256
    max_len: int = 64  # longest sequence the position table covers
    dropout: float = 0.1  # on embeddings, attention weights and residual branches
    # False: post-LN as in Vaswani et al. (2017); True: pre-LN as in GPT-2
    pre_norm: bool = False
    tie_weights: bool = True  # share the embedding matrix with the output projection
    pos: str = "sinusoidal"  # "sinusoidal" (fixed), "learned", or "none" (T5: a bias)
    # feed-forward non-linearity: "relu" (Transformer), "gelu" (BERT), "gelu_tanh" (GPT)
    activation: str = "relu"
    ln_eps: float = 1e-5  # LayerNorm epsilon (BERT uses 1e-12)
    n_segment: int = 0  # segment (token type) embeddings; BERT uses 2
    # epsilon of label-smoothed cross-entropy (0.1 in the paper)
    label_smoothing: float = 0.0
    pad_id: int = 0  # the padding token id (its loss is ignored)
    # embedding width; 0 = d_model. ALBERT/ELECTRA factorise embeddings (d_embed <
    # d_model)
    d_embed: int = 0
    share_layers: bool = False  # ALBERT: one block's weights used by every layer

    # What each field accepts beyond its type: ">= 1", "> 0", "in [0, 1)" (any of [ ] (
    # ) ends), a tuple of allowed strings, or None for "any value of the type". A
    # field not named here gets the default for its type: ints and floats ">= 0",
    # strings and bools anything. A subclass extends the rules:  RANGES =
    # {**Config.RANGES, "mem_len": ">= 1"}
    RANGES: ClassVar[dict[str, object]] = {
        "vocab_size": ">= 1",
        "d_model": ">= 1",
        "n_layer": ">= 1",
        "n_head": ">= 1",
        "d_ff": ">= 1",
        "max_len": ">= 1",
        "dropout": "in [0, 1)",
        "label_smoothing": "in [0, 1)",
        "ln_eps": "> 0",  # 0 divides by zero on a constant input: NaN logits
        "n_segment": ">= 0",
        "pad_id": ">= 0",
        "d_embed": ">= 0",
        "pos": ("sinusoidal", "learned", "none"),
        "activation": ("relu", "gelu", "gelu_tanh"),
    }

    def __post_init__(self) -> None:
        hints = _hints(type(self))
        # 0 and 0.0 must be one config (one cache key)
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if hints[f.name] is float and type(value) is int:
                setattr(self, f.name, float(value))
        self.validate()

    def validate(self) -> None:
        """Raise a TypeError or ValueError naming the field, the value and what it
        accepts.

        Every field is checked by its annotation and its rule in :attr:`RANGES`; then
        the rules that tie two fields together. A subclass adds its own cross-field
        rules by overriding this method and calling ``super().validate()`` first.
        """
        hints = _hints(type(self))
        for f in dataclasses.fields(self):
            _check_field(f.name, getattr(self, f.name), hints[f.name], self.RANGES)
        if self.d_model % self.n_head != 0:
            raise ValueError(
                f"d_model ({self.d_model}) must be divisible by n_head "
                f"({self.n_head}): each head "
                f"gets d_model // n_head dimensions. Try n_head in "
                f"{[h for h in range(1, 17) if self.d_model % h == 0]}."
            )
        if self.pad_id >= self.vocab_size:
            raise ValueError(
                f"pad_id must be in [0, vocab_size={self.vocab_size}), got "
                f"{self.pad_id!r}"
            )

    @property
    def d_head(self) -> int:
        return self.d_model // self.n_head

    def replace(self, **changes) -> "Config":
        """A copy with some fields changed (validated again)."""
        _check_known(type(self), changes)
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "Config":
        """The inverse of :meth:`to_dict`; fields missing from ``d`` take their
        defaults.
        """
        _check_known(cls, d)
        return cls(**d)


# ----------------------------------------------------------------------------------
# Checking one field


_TYPE_WORDS = {
    int: "an int",
    float: "a float",
    bool: "a bool (True or False)",
    str: "a str",
}
_DEFAULT_RULES = {int: ">= 0", float: ">= 0", bool: None, str: None}
_COMPARE = {">=": operator.ge, ">": operator.gt, "<=": operator.le, "<": operator.lt}


@functools.lru_cache(maxsize=None)
def _hints(cls: type) -> dict[str, type]:
    """The fields' annotations as types (they are strings under ``from __future__ import
    annotations``).

    Also checks, once per class, that the class is one this module can check.
    """
    hints = typing.get_type_hints(cls)
    names = [f.name for f in dataclasses.fields(cls)]
    for name in names:
        if hints.get(name) not in _TYPE_WORDS:
            raise TypeError(
                f"{cls.__name__}.{name} is annotated {hints.get(name)!r}; config "
                f"fields are flat: "
                f"int, float, bool or str (use 0 or '' for 'not set', as d_embed does)"
            )
    stray = sorted(set(cls.RANGES) - set(names))
    if stray:
        raise TypeError(
            f"{cls.__name__}.RANGES names {stray}, which are not fields of "
            f"{cls.__name__}"
        )
    return hints


def _check_field(name: str, value, kind: type, ranges: dict) -> None:
    rule = ranges.get(name, _DEFAULT_RULES[kind])
    # bool is a subclass of int in Python, so "is it an int" must rule out True and
    # False by hand.
    ok_type = {
        int: type(value) is not bool and isinstance(value, int),
        float: type(value) is not bool and isinstance(value, (int, float)),
        bool: isinstance(value, bool),
        str: isinstance(value, str),
    }[kind]
    if not ok_type:
        accepts = (
            _TYPE_WORDS[kind]
            + {type(None): "", tuple: ", "}.get(type(rule), " ")
            + _rule_words(rule)
        )
        raise TypeError(
            f"{name} must be {accepts}, got {value!r} ({type(value).__name__})"
        )
    if kind is float and not math.isfinite(value):
        raise ValueError(f"{name} must be a finite float, got {value!r}")
    if rule is not None and not _satisfies(value, rule):
        raise ValueError(f"{name} must be {_rule_words(rule)}, got {value!r}")


def _rule_words(rule) -> str:
    if rule is None:
        return ""
    if isinstance(rule, tuple):
        return "one of " + ", ".join(repr(choice) for choice in rule)
    return rule


def _satisfies(value, rule) -> bool:
    """Whether ``value`` obeys ``rule``: ``">= 1"``, ``"> 0"``, ``"in [0, 1)"`` or a
    tuple of choices.
    """
    if isinstance(rule, tuple):
        return value in rule
    bound = re.fullmatch(r"(>=|>|<=|<)\s*(\S+)", rule)
    if bound:
        return _COMPARE[bound[1]](value, float(bound[2]))
    interval = re.fullmatch(
        r"in\s*([\[(])\s*([^,\s]+)\s*,\s*([^\])\s]+)\s*([\])])", rule
    )
    if interval:
        low_ok = (operator.ge if interval[1] == "[" else operator.gt)(
            value, float(interval[2])
        )
        high_ok = (operator.le if interval[4] == "]" else operator.lt)(
            value, float(interval[3])
        )
        return low_ok and high_ok
    raise ValueError(
        f"range rule {rule!r} is not understood; write '>= 1', '> 0', 'in [0, 1)', "
        f"a tuple of allowed strings, or None"
    )


def _check_known(cls: type, names) -> None:
    known = [f.name for f in dataclasses.fields(cls)]
    unknown = sorted(set(names) - set(known))
    if unknown:
        raise TypeError(
            f"unknown {cls.__name__} field{'s' if len(unknown) > 1 else ''} "
            f"{', '.join(unknown)}; known fields are {', '.join(known)}"
        )


# ----------------------------------------------------------------------------------
# Named presets


# Values are only the fields that differ from the defaults of the preset's class; a
# plain dict, so a preset can be built on: register_preset("bert-tiny",
# **{**PRESETS["tiny"], **BERT_FIELDS}).
PRESETS: dict[str, dict] = {
    # The book's scales (model-agnostic: a chapter picks the preset and sets
    # vocab_size).
    "tiny": dict(d_model=64, n_layer=2, n_head=4, d_ff=256, max_len=64, dropout=0.1),
    "small": dict(
        d_model=256, n_layer=4, n_head=8, d_ff=1024, max_len=256, dropout=0.1
    ),
    # Vaswani et al. (2017), Table 3. Shared source/target BPE vocabulary of about 37k
    # tokens.
    "transformer-base": dict(
        vocab_size=37000,
        d_model=512,
        n_layer=6,
        n_head=8,
        d_ff=2048,
        max_len=512,
        dropout=0.1,
        label_smoothing=0.1,
    ),
    "transformer-big": dict(
        vocab_size=37000,
        d_model=1024,
        n_layer=6,
        n_head=16,
        d_ff=4096,
        max_len=512,
        dropout=0.3,
        label_smoothing=0.1,
    ),
}
# The config class of each preset registered with one other than Config (a family's
# subclass).
_PRESET_CLASSES: dict[str, type] = {}


def register_preset(name: str, config_cls: type = Config, **fields) -> None:
    """Add (or replace) a named preset; model modules register the sizes of their
    papers.

    ``config_cls`` is the family's config class (a :class:`Config` subclass with its own
    fields). The preset is built once now, so a bad value fails here, not when a reader
    first asks for it.
    """
    if not (isinstance(config_cls, type) and issubclass(config_cls, Config)):
        raise TypeError(
            f"config_cls must be Config or a subclass of it, got {config_cls!r}"
        )
    config_cls.from_dict(fields)
    PRESETS[name] = dict(fields)
    _PRESET_CLASSES[name] = config_cls


def preset(name: str, **overrides) -> Config:
    """The named preset as an instance of its config class, with ``overrides`` applied.

    >>> preset("tiny", vocab_size=100).d_model
    64
    """
    if name not in PRESETS:
        raise ValueError(f"unknown preset {name!r}; choose one of {sorted(PRESETS)}")
    return _PRESET_CLASSES.get(name, Config).from_dict({**PRESETS[name], **overrides})
