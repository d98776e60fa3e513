"""ptlm_lite: the small PyTorch package behind ptlm-book.

Each model is a mask, a corruption and a head on top of the same few blocks. The
chapters of the book import this package and display its code; nothing is defined twice.

Submodules and names load on first use (``import ptlm_lite as P; P.GPT`` imports
``ptlm_lite.gpt`` then), so a chapter imports only the modules it uses, and
``scripts/execute.py`` re-executes a chapter only when one of those modules changed.
"""

from __future__ import annotations

import importlib

from . import runtime as _runtime

# A function with its module's name is bound now: importing the submodule later would
# not rebind it.
from .attention import attention
from .train import train

__version__ = "0.2.0"

# name -> module that defines it (the public surface; kept small and stable)
_NAMES = {
    "MultiHeadAttention": "attention",
    "Config": "config",
    "PRESETS": "config",
    "preset": "config",
    "register_preset": "config",
    "Block": "layers",
    "Embeddings": "layers",
    "FeedForward": "layers",
    "sinusoidal_positions": "layers",
    "Stack": "stack",
    "Memory": "stack",
    "Output": "output",
    "IGNORE": "output",
    "Transformer": "transformer",
    "label_smoothed_loss": "transformer",
    "GPT": "gpt",
    "GPTForTask": "gpt",
    "Bert": "bert",
    "BertForPreTraining": "bert",
    "BertForSequenceClassification": "heads",
    "BertForSpanExtraction": "heads",
    "BertForMultipleChoice": "heads",
    "show_source": "source",
    "History": "train",
    "auto_device": "device",
    "count_parameters": "train",
    "lr_schedule": "train",
    "set_seed": "train",
    "seeds": "runtime",
    "capped": "runtime",
    "capped_sizes": "runtime",
    "Timer": "runtime",
    "pmap": "parallel",
    "state_of": "parallel",
    "take_state": "parallel",
}
_MODULES = {
    "attention",
    "bert",
    "calibration",
    "cache",
    "config",
    "corrupt",
    "data",
    "device",
    "exercises",
    "generate",
    "gpt",
    "heads",
    "hf",
    "icl",
    "layers",
    "masks",
    "output",
    "recipes",
    "runtime",
    "source",
    "stack",
    "tasks",
    "train",
    "transformer",
    "viz",
    "finetune",
    "suite",
    "verdict",
    "parallel",
}

__all__ = sorted(_NAMES) + ["attention", "train"]


def _is_submodule(name: str) -> bool:
    """A later chapter's model file (``P.roberta``) loads like the core modules."""
    import importlib.util

    return not name.startswith("_") and (
        importlib.util.find_spec(f"{__name__}.{name}") is not None
    )


def __getattr__(name: str):
    if name in _NAMES:
        value = getattr(importlib.import_module(f".{_NAMES[name]}", __name__), name)
    elif name in _MODULES or _is_submodule(name):
        value = importlib.import_module(f".{name}", __name__)
    else:
        raise AttributeError(f"module 'ptlm_lite' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_NAMES) | _MODULES)
