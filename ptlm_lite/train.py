"""A training loop that knows nothing about any particular model.

``train(model, batches, steps=...)`` runs AdamW with a warm-up schedule, gradient
clipping and a progress bar, and returns a :class:`History` of losses (and of
evaluations, if an ``eval_fn`` is given). A batch is a dict of tensors passed as
``model(**batch)``, and the model's output has a ``.loss`` (or pass ``loss_fn(model,
batch) -> loss``).

Introduced in ``chapters/transformer.ipynb``; every chapter trains with it.
"""

from __future__ import annotations

import contextlib
import math
import numbers
import os
import random
import time
from dataclasses import dataclass, field
from collections.abc import Iterator
from typing import Callable, Iterable

import numpy as np
import torch

from .checks import check_count, check_number, check_weights
from .device import auto_device, autocast_dtype, to_device
from .parallel import in_worker
from .runtime import train_steps

__all__ = [
    "set_seed",
    "lr_schedule",
    "train",
    "History",
    "count_parameters",
    "adamw",
]


def set_seed(seed: int) -> torch.Generator:
    """Seed Python, NumPy and torch (all devices); return a torch.Generator seeded the
    same way. Same seed, same numbers: on one machine and torch version, a chapter
    reproduces its results."""
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        raise TypeError(f"seed must be an int, got {type(seed).__name__}")
    seed = int(seed)  # a NumPy integer as Python's: torch refuses it
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)
    return torch.Generator().manual_seed(seed)


def count_parameters(model: torch.nn.Module) -> int:
    """Trainable parameters, counting tied (shared) tensors once."""
    seen, n = set(), 0
    for p in model.parameters():
        if p.requires_grad and id(p) not in seen:
            seen.add(id(p))
            n += p.numel()
    return n


def lr_schedule(
    name: str, warmup: int = 0, total: int | None = None
) -> Callable[[int], float]:
    """A multiplier of the peak learning rate as a function of the step (1-based).

    * ``constant``: 1 after a linear warm-up;
    * ``inverse_sqrt``: the Transformer paper's  lr = d^-0.5 · min(step^-0.5, step ·
      warmup^-1.5), rescaled so that its peak (at ``step == warmup``) is 1: min(step /
      warmup, √(warmup / step));
    * ``linear``: warm up, then decay linearly towards 0 (BERT);
    * ``cosine``: warm up, then a half cosine towards 0 (GPT-2 and most since).

    The decay starts at the peak on the step after the warm-up and reaches 0 one step
    after ``total``, so that the last of ``total`` steps still learns (as in Hugging
    Face's schedules, which count steps from 0).
    """
    warmup = check_count("warmup", warmup, low=0)  # a number of steps
    integer = isinstance(total, numbers.Integral) and not isinstance(total, bool)
    if name in ("linear", "cosine") and not (integer and total > warmup):
        raise ValueError(
            f"schedule {name!r} needs total (an integer > warmup={warmup}), got "
            f"{total!r}"
        )

    def ramp(step):
        return min(1.0, step / warmup) if warmup else 1.0

    if name == "constant":
        return ramp
    if name == "inverse_sqrt":
        return lambda step: (
            ramp(step) if step <= warmup else math.sqrt(max(warmup, 1) / step)
        )
    if name == "linear":
        return lambda step: (
            ramp(step)
            if step <= warmup
            else max(0.0, (total + 1 - step) / (total - warmup))
        )
    if name == "cosine":
        return lambda step: (
            ramp(step)
            if step <= warmup
            else 0.5
            * (1 + math.cos(math.pi * min(1.0, (step - 1 - warmup) / (total - warmup))))
        )
    raise ValueError(
        f"unknown schedule {name!r}; choose 'constant', 'inverse_sqrt', 'linear' or "
        f"'cosine'"
    )


@dataclass
class History:
    """Losses per step, learning rates per step, and evaluations ``(step, {name:
    value})``.
    """

    losses: list = field(default_factory=list)
    lrs: list = field(default_factory=list)
    evals: list = field(default_factory=list)
    grad_norms: list = field(default_factory=list)
    seconds: float = 0.0
    # train(compile=True): the first step, compiling included
    compile_seconds: float | None = None

    def smoothed(self, window: int = 20) -> np.ndarray:
        x = np.asarray(self.losses, dtype=float)
        if len(x) < window:
            return x
        return np.convolve(x, np.ones(window) / window, mode="valid")

    def final_loss(self, window: int = 20) -> float:
        """The mean of the last ``window`` (>= 1) training losses."""
        window = check_count("window", window)
        if not self.losses:
            raise ValueError("final_loss: no loss recorded yet (train first)")
        return float(np.mean(self.losses[-window:]))

    def plot(
        self, ax=None, label: str | None = None, window: int = 20, log: bool = True
    ):
        """Loss curve (raw, faint; smoothed, solid). Returns the matplotlib Axes."""
        import matplotlib.pyplot as plt  # lazy: models never need matplotlib

        if ax is None:
            _, ax = plt.subplots(figsize=(6, 3.2))
        (line,) = ax.plot(
            np.arange(1, len(self.losses) + 1), self.losses, alpha=0.25, lw=0.8
        )
        s = self.smoothed(window)
        ax.plot(
            np.arange(len(self.losses) - len(s) + 1, len(self.losses) + 1),
            s,
            color=line.get_color(),
            label=label,
        )
        ax.set_xlabel("step")
        ax.set_ylabel("training loss")
        if log:
            ax.set_yscale("log")
        if label:
            ax.legend()
        ax.grid(alpha=0.3)
        return ax


def adamw(params, lr: float, betas=(0.9, 0.98), device=None) -> torch.optim.Optimizer:
    """AdamW with PyTorch's fused kernel where the device has one (CPU and CUDA): one
    pass over all parameters instead of a loop of small ops, 4-5x faster per step on
    this book's models (``benchmarks/README.md``). Falls back to the default
    implementation elsewhere.
    """
    params = list(params)  # a generator would be spent by a failed first try
    device = torch.device(device or "cpu")
    if device.type in ("cpu", "cuda"):
        try:
            return torch.optim.AdamW(params, lr=lr, betas=betas, fused=True)
        except (RuntimeError, TypeError, ValueError):
            pass
    return torch.optim.AdamW(params, lr=lr, betas=betas)


def _log_steps(model, desc, planned, steps, batch, hist, device, cast) -> None:
    """Append one line about this run to ``$PTLM_STEP_LOG``: the steps asked for
    (before any cap), the trainable parameters and the tokens of one batch, so that a
    chapter's training work at a scale can be counted without running it in full
    (``benchmarks/chapter_times.py`` sizes ``SCALE = "small"`` from it)."""
    import json

    sizes = [
        v.numel()
        for v in (batch.values() if isinstance(batch, dict) else [batch])
        if isinstance(v, torch.Tensor) and not v.is_floating_point() and v.dim() >= 2
    ]
    line = {
        "desc": desc,
        "steps": planned,
        "ran": steps,
        "params": count_parameters(model),
        "tokens": max(sizes, default=None),
        "seconds": round(hist.seconds, 3),
        "device": str(device),
        "autocast": str(cast) if cast else None,
    }
    with open(os.environ["PTLM_STEP_LOG"], "a") as f:
        f.write(json.dumps(line) + "\n")


def _check_settings(lr, clip, weight_decay, betas, warmup) -> int:
    """``warmup`` as an int; a negative clip would be gradient ascent, an inf lr NaN."""
    check_number("lr", lr, strict=True)
    check_number("clip", clip, none=True)  # 0 or None: no clipping
    check_number("weight_decay", weight_decay)
    if not (isinstance(betas, (tuple, list)) and len(betas) == 2):
        raise TypeError(f"betas must be a pair (beta1, beta2), got {betas!r}")
    for i, b in enumerate(betas):
        check_number(f"betas[{i}]", b, high=1)
    return check_count("warmup", warmup, low=0)


def _default_loss(model, batch):
    out = model(**batch) if isinstance(batch, dict) else model(*batch)
    loss = out.loss if hasattr(out, "loss") else out[1]
    if loss is None:
        raise ValueError(
            "the model returned no loss: pass targets in the batch, or give loss_fn"
        )
    return loss


def _param_groups(model, groups, lr, multiplier, weight_decay) -> list[dict]:
    """AdamW's groups: each of ``groups`` (and one for the parameters in none of them)
    split into matrices (weight decay) and vectors (biases, LayerNorm gains: none), with
    its peak ``lr`` and ``schedule``. Frozen parameters are included (see ``train``)."""
    named, seen = [], set()
    for i, g in enumerate(groups or []):
        if not isinstance(g, dict) or "params" not in g:
            raise TypeError(
                f"param_groups[{i}] must be a dict with 'params' (and optionally 'lr', "
                f"'schedule'), got {g!r}"
            )
        unknown = sorted(set(g) - {"params", "lr", "schedule"})
        if unknown:
            raise ValueError(
                f"param_groups[{i}] has unknown keys {unknown}: it takes 'params', "
                "'lr' and 'schedule'"
            )
        ps = g["params"]
        ps = list(ps.parameters() if isinstance(ps, torch.nn.Module) else ps)
        g_lr = g.get("lr", lr)
        if not (
            isinstance(g_lr, (int, float))
            and not isinstance(g_lr, bool)
            and g_lr >= 0
            and math.isfinite(g_lr)
        ):
            raise ValueError(
                f"param_groups[{i}]['lr'] must be a number >= 0, got {g_lr!r}"
            )
        if g.get("schedule") is not None and not callable(g["schedule"]):
            raise TypeError(f"param_groups[{i}]['schedule'] must be step -> multiplier")
        ps = [p for p in ps if id(p) not in seen]
        seen.update(id(p) for p in ps)
        named.append((ps, g_lr, g.get("schedule") or multiplier))
    rest = [p for p in model.parameters() if id(p) not in seen]
    if rest or not named:
        named.append((rest, lr, multiplier))
    out = []
    for ps, g_lr, f in named:
        for decay, wd in ((True, weight_decay), (False, 0.0)):
            part = [p for p in ps if (p.dim() >= 2) == decay]
            # No weight decay on biases, LayerNorm gains and other 1-D parameters.
            out.append({"params": part, "weight_decay": wd, "lr": g_lr, "schedule": f})
    return [g for g in out if g["params"]] or out[:1]


def train(
    model: torch.nn.Module,
    batches: Iterable | Callable[[int], object],
    *,
    steps: int,
    lr: float = 1e-3,
    warmup: int = 0,
    schedule: str = "constant",
    weight_decay: float = 0.01,
    betas: tuple = (0.9, 0.98),
    clip: float | None = 1.0,
    loss_fn: Callable | None = None,
    eval_fn: Callable[[torch.nn.Module], dict] | None = None,
    eval_every: int | None = None,
    callback: Callable[[int, float], None] | None = None,
    device: str | torch.device | None = None,
    seed: int | None = 0,
    progress: bool = True,
    desc: str = "training",
    optimizer: torch.optim.Optimizer | None = None,
    compile: bool = False,
    param_groups: list[dict] | None = None,
    on_step: Callable[..., None] | None = None,
    precision: str = "auto",
) -> History:
    """Train ``model`` for ``steps`` optimizer steps and return its :class:`History`.

    ``batches`` is an iterable of batches (cycled if it runs out) or a function ``step
    -> batch``. ``eval_fn(model) -> dict`` runs in eval mode under ``no_grad`` every
    ``eval_every`` steps and at the end. ``callback(step, loss)`` is called after every
    step (live plots use it); ``on_step(model=, optimizer=, step=, loss=, history=)``
    too, with the trainer's state (unfreeze a layer; a learning rate set there lasts
    one step, the schedule sets the next: a group's own goes in ``param_groups``).
    Non-finite losses stop training with an error rather than silently producing NaN
    weights, and so do weights that are not finite after the last step.
    ``lr`` > 0, ``weight_decay`` >= 0 and ``clip`` >= 0 (0 or None: no clipping) are
    checked first: finite numbers, not bools. A batch in which no target counts has
    loss 0 and no gradient (:func:`~ptlm_lite.output.no_loss`): its step changes
    nothing.

    ``param_groups``: a list of ``{"params": a module or parameters, "lr": peak
    learning rate, "schedule": step -> multiplier}`` (``lr`` and ``schedule`` optional:
    the defaults are ``lr`` and the ``schedule`` named above), e.g. ULMFiT's
    discriminative learning rates, one group per layer. Parameters in no group train at
    ``lr``. Every parameter enters the optimizer, frozen or not: one unfrozen later
    (``p.requires_grad_(True)`` in ``on_step``) trains from the next step on (AdamW
    skips a parameter while it has no gradient).

    ``compile=True`` trains through ``torch.compile(model)`` (the first step's compile
    time is kept apart in ``history.compile_seconds``; where compiling fails, a warning
    and the eager model). On this book's CPU models it does not pay: measured in
    ``benchmarks/README.md``.

    ``device``: where to train; by default :func:`auto_device` (a GPU if there is
    one; ``PTLM_DEVICE`` overrides), or, with ``optimizer=``, wherever the model is.
    The model is handed back on the device it came on, so the code around a ``train``
    call never needs to know where it ran (moving a small model takes milliseconds).
    Batches given as a list are moved to the device once; batches made by a function,
    once per step. ``precision``: see :func:`~ptlm_lite.device.autocast_dtype` (bf16
    autocast on a CUDA GPU that has it, for models where it pays; fp32 on the CPU:
    the book's CPU numbers do not depend on it). On a GPU the loss is read back every
    few steps, not every step, so the host does not wait for the device (a non-finite
    loss still stops training, a few steps later).

    ``seed`` fixes what happens during training (batches drawn from torch's generator,
    dropout); the initial weights are fixed where the model is built: ``GPT(config,
    seed=0)``, or :func:`set_seed` before building it.
    """
    steps = check_count("steps", steps)  # a NumPy integer as Python's
    planned = steps  # before any cap: what the chapter asks for (PTLM_STEP_LOG)
    if train_steps(steps) < steps:  # PTLM_MAX_STEPS (a crash test): ptlm_lite.runtime
        steps = train_steps(steps)
        warmup = min(warmup, steps - 1)  # a schedule still fits in the capped run
    warmup = _check_settings(lr=lr, clip=clip, weight_decay=weight_decay,
                             betas=betas, warmup=warmup)  # fmt: skip
    if eval_every is not None:
        eval_every = check_count("eval_every", eval_every)
    multiplier = lr_schedule(schedule, warmup, steps)
    if seed is not None:
        set_seed(seed)
    home = next(model.parameters(), torch.empty(0)).device
    if device is None:
        device = home if optimizer is not None else auto_device()
    device = torch.device(device)
    cast = autocast_dtype(device, precision, params=count_parameters(model))
    model.to(device)
    try:
        loss_fn = loss_fn or _default_loss

        if optimizer is None:
            groups = _param_groups(model, param_groups, lr, multiplier, weight_decay)
            optimizer = adamw(
                [{k: v for k, v in g.items() if k != "schedule"} for g in groups],
                lr=lr,
                betas=betas,
                device=device,
            )
            schedules = [g["schedule"] for g in groups]
        else:
            if param_groups is not None:
                raise ValueError("pass param_groups or optimizer, not both")
            schedules = [multiplier] * len(optimizer.param_groups)
        # the learning rate of every group, step by step (LambdaLR counts from 0)
        scheduler = torch.optim.lr_scheduler.LambdaLR(
            optimizer, [lambda e, f=f: f(e + 1) for f in schedules]
        )

        if callable(batches) and not hasattr(batches, "__iter__"):
            get_batch = batches
        else:
            source = batches
            if isinstance(batches, (list, tuple)):  # moved to the device once
                source = [to_device(b, device) for b in batches]
            one_shot, saved = isinstance(source, Iterator), []  # read once: kept

            def cycle():
                first = True
                while True:
                    empty = True
                    for b in saved if one_shot and not first else source:
                        empty = False
                        if one_shot and first:
                            saved.append(b)
                        yield b
                    if empty:
                        raise ValueError("batches is empty: give at least one batch")
                    first = False

            it = cycle()
            get_batch = lambda step: next(it)  # noqa: E731

        hist = History()
        run_model = torch.compile(model) if compile else model
        bar = None
        if progress and not in_worker():  # a pmap worker: pmap shows one bar
            from tqdm.auto import tqdm

            bar = tqdm(total=steps, desc=desc, leave=True, mininterval=0.5)
        # On a GPU, reading the loss makes the host wait for the device: read every few
        # steps (every step where a callback wants it, and on the CPU, where it's free).
        every = 1 if device.type == "cpu" or callback or on_step else 16
        pending: list[tuple[int, torch.Tensor, torch.Tensor]] = []
        autocast = (
            torch.autocast(device.type, dtype=cast)
            if cast is not None
            else contextlib.nullcontext()
        )

        def read_back():
            if not pending:
                return
            values = torch.stack([torch.stack((l.float(), g.float())) for _, l, g in
                                  pending]).tolist()  # fmt: skip
            for (step, _, _), (loss, gn) in zip(pending, values):
                if not math.isfinite(loss):
                    raise FloatingPointError(
                        f"loss became {loss} at step {step}: lower lr (now "
                        f"{optimizer.param_groups[0]['lr']:.3g}), add warm-up, "
                        f"or check the inputs"
                    )
                hist.losses.append(loss)
                hist.grad_norms.append(gn)
            pending.clear()

        start = time.perf_counter()
        model.train()
        params = list(model.parameters())  # once: walking the modules every step costs
        for step in range(1, steps + 1):
            batch = to_device(get_batch(step), device)
            # the first call compiles: timed apart, eager if it fails
            if compile and step == 1:
                t0 = time.perf_counter()
                try:
                    with autocast:
                        loss = loss_fn(run_model, batch)
                # noqa: BLE001 - any compiler failure: fall back, say so
                except Exception as e:
                    import warnings

                    warnings.warn(
                        f"torch.compile failed ({type(e).__name__}: {e}); training the "
                        f"eager model"
                    )
                    run_model = model
                    with autocast:
                        loss = loss_fn(model, batch)
                hist.compile_seconds = time.perf_counter() - t0
            else:
                with autocast:
                    loss = loss_fn(run_model, batch)
            if every == 1 and not torch.isfinite(loss):
                raise FloatingPointError(
                    f"loss became {loss.item()} at step {step}: lower lr (now "
                    f"{optimizer.param_groups[0]['lr']:.3g}), add warm-up, "
                    f"or check the inputs"
                )
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            gn = torch.nn.utils.clip_grad_norm_(params, clip if clip else float("inf"))
            optimizer.step()
            pending.append((step, loss.detach(), gn.detach()))
            hist.lrs.append(optimizer.param_groups[0]["lr"])
            scheduler.step()
            if step % every == 0 or step == steps:
                read_back()
            if callback is not None:
                callback(step, hist.losses[-1])
            if on_step is not None:
                on_step(
                    model=model,
                    optimizer=optimizer,
                    step=step,
                    loss=hist.losses[-1],
                    history=hist,
                )
            if bar is not None:
                bar.update(1)
                if hist.losses and (step % 10 == 0 or step == steps):
                    bar.set_postfix(loss=f"{hist.losses[-1]:.3f}", refresh=False)
            if eval_fn is not None and (
                (eval_every and step % eval_every == 0) or step == steps
            ):
                if not hist.evals or hist.evals[-1][0] != step:
                    # evaluated where the caller put the model, with the caller's data
                    model.eval().to(home)
                    with torch.no_grad():
                        hist.evals.append((step, dict(eval_fn(model))))
                    model.to(device).train()
        if bar is not None:
            bar.close()
        check_weights(model, steps)
        model.eval()
        hist.seconds = time.perf_counter() - start
        if os.environ.get("PTLM_STEP_LOG"):
            _log_steps(model, desc, planned, steps, batch, hist, device, cast)
        return hist
    finally:
        model.to(home)  # handed back where it came from
