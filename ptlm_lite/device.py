"""Where the book's models run: one device, chosen once, by default everywhere.

:func:`auto_device` picks the GPU when there is one (``PTLM_DEVICE`` overrides);
:func:`ptlm_lite.train.train` trains there and hands the model back where it was;
functions that score a model run there through :func:`scores_on_device`;
:func:`autocast_dtype` is the precision switch (bf16 on a GPU that has it, fp32 on the
CPU). A chapter never names a device (issue 24; ``tests/test_device.py``).
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import os
import re
from collections.abc import Callable

import torch

__all__ = [
    "auto_device",
    "autocast_dtype",
    "BF16_MIN_PARAMS",
    "on_device",
    "scores_on_device",
    "to_device",
    "device_of",
    "eval_mode",
]


def auto_device(prefer: str | None = None) -> torch.device:
    """The device every training and evaluation function uses by default: CUDA, then
    Apple's MPS, then the CPU.

    ``prefer`` (or, when it is None, the environment variable ``PTLM_DEVICE``, e.g.
    ``PTLM_DEVICE=cpu`` on a GPU machine) overrides the choice.
    """
    source = "prefer"
    if prefer is None and os.environ.get("PTLM_DEVICE", "").strip():
        prefer, source = os.environ["PTLM_DEVICE"].strip().lower(), "PTLM_DEVICE"
    if prefer is not None:
        if not isinstance(prefer, str) or not re.fullmatch(
            r"cuda(:\d+)?|mps|cpu", prefer
        ):
            raise ValueError(
                f"{source} must be 'cuda', 'cuda:N', 'mps' or 'cpu', got {prefer!r}"
            )
        if prefer.startswith("cuda") and not torch.cuda.is_available():
            raise ValueError(
                f"{source}={prefer!r} but this PyTorch sees no CUDA GPU: use 'cpu', or "
                "install a CUDA build of PyTorch"
            )
        return torch.device(prefer)
    if torch.cuda.is_available():
        return torch.device("cuda")
    if (
        getattr(torch.backends, "mps", None) is not None
        and torch.backends.mps.is_available()
    ):
        return torch.device("mps")
    return torch.device("cpu")


# "auto" turns bf16 on from this many trainable parameters: measured on an H200
# (benchmarks/README.md, "On a GPU"), bf16 autocast is 3x faster than fp32 for a
# 124M-parameter GPT-2 but 1.4x slower for the "small" preset (a few million), whose
# steps are too small to pay for the casts.
BF16_MIN_PARAMS = 20_000_000


def autocast_dtype(
    device, precision: str = "auto", params: int | None = None
) -> torch.dtype | None:
    """The dtype :func:`~ptlm_lite.train.train` autocasts to on ``device``, or None
    for plain fp32.

    ``precision``: ``"auto"`` (bf16 on a CUDA GPU that supports it for a model of at
    least :data:`BF16_MIN_PARAMS` trainable parameters (``params``); fp32 everywhere
    else: on a CPU, on a T4, which has no bf16, and for small models, where bf16 is
    slower), ``"bf16"`` (an error where the device has none) or ``"fp32"``. The
    environment variable ``PTLM_PRECISION`` overrides ``"auto"``. Weights and
    optimizer state stay fp32 either way.
    """
    if precision == "auto" and os.environ.get("PTLM_PRECISION", "").strip():
        precision = os.environ["PTLM_PRECISION"].strip().lower()
    if precision not in ("auto", "bf16", "fp32"):
        raise ValueError(
            f"precision must be 'auto', 'bf16' or 'fp32', got {precision!r}"
        )
    device = torch.device(device)
    cuda_bf16 = device.type == "cuda" and torch.cuda.is_bf16_supported()
    if precision == "auto":
        big = params is None or params >= BF16_MIN_PARAMS
        return torch.bfloat16 if cuda_bf16 and big else None
    if precision == "fp32":
        return None
    if device.type == "cuda" and not cuda_bf16:
        raise ValueError(
            "precision='bf16' but this GPU has no bf16 (a T4, say): use 'fp32' or "
            "'auto'"
        )
    return torch.bfloat16


def device_of(model) -> torch.device:
    """Where ``model``'s weights are (the CPU for a model without any)."""
    try:
        return next(model.parameters()).device
    except (AttributeError, StopIteration):
        return torch.device("cpu")


@contextlib.contextmanager
def on_device(model, device=None):
    """``with on_device(model) as device:`` runs the block with ``model`` on ``device``
    (by default :func:`auto_device`: the GPU if there is one), then hands it back where
    it was."""
    home = device_of(model)
    device = torch.device(device) if device is not None else auto_device()
    if isinstance(model, torch.nn.Module):
        model.to(device)
    try:
        yield device
    finally:
        if isinstance(model, torch.nn.Module):
            model.to(home)


@contextlib.contextmanager
def eval_mode(model):
    """``with eval_mode(model):`` runs the block with ``model`` in ``eval()`` mode
    (no dropout), then puts back the mode it had, even if the block raises."""
    was_training = model.training
    model.eval()
    try:
        yield model
    finally:
        model.train(was_training)


def scores_on_device(fn: Callable) -> Callable:
    """Decorate a function that scores its argument ``model`` and moves its inputs to
    wherever the model is: the call runs with the model on :func:`auto_device`, its
    tensor results come back on the CPU and the model goes back where it was. On the
    CPU this changes nothing; on a GPU a chapter's evaluation runs there without the
    chapter naming a device."""
    sig = inspect.signature(fn)
    if "model" not in sig.parameters:
        raise TypeError(f"{fn.__name__} has no argument named 'model'")

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        model = sig.bind(*args, **kwargs).arguments["model"]
        device = auto_device()
        if device.type == "cpu" and device_of(model).type == "cpu":
            return fn(*args, **kwargs)  # the CPU: exactly the plain call
        with on_device(model, device):
            return to_device(fn(*args, **kwargs), "cpu")

    wrapper.scores_on_device = True  # tests/test_device.py lists the scorers
    return wrapper


def to_device(batch, device):
    """``batch`` (a tensor, or dicts, lists and tuples of them) on ``device``; other
    values as they are."""
    if isinstance(batch, torch.Tensor):
        return batch.to(device)
    if isinstance(batch, dict):
        return {k: to_device(v, device) for k, v in batch.items()}
    if isinstance(batch, (list, tuple)):
        return type(batch)(to_device(v, device) for v in batch)
    return batch
