"""ULMFiT's learning rates per layer over the steps, for a few settings switched in the
browser (``chapters/ulmfit.ipynb``).

Every state is drawn in advance from :func:`ptlm_lite.ulmfit.lr_table` (slanted
triangular x discriminative, zero while a layer is frozen) and the slider switches
among them: it works in the static book as in a kernel.
"""

from __future__ import annotations

from typing import Sequence

from ._html import figure_to_html, new_figure
from .stepper import stepper


def lr_explorer(
    steps: int,
    lr: float,
    names: Sequence[str],
    cut_fracs: Sequence[float] = (0.05, 0.1, 0.2, 0.4),
    factors: Sequence[float] = (1.0, 2.6),
    ratio: float = 32,
    unfreeze_every: int | None = None,
):
    """A stepper over (cut_frac, factor) settings, each a plot of every layer group's
    learning rate against the step: ``names`` label the groups bottom to top, dashed
    lines mark where gradual unfreezing thaws the next group (``unfreeze_every``).
    """
    from ..ulmfit import lr_table

    names = list(names)
    if not names:
        raise ValueError("names must label at least one layer group, got none")
    if not cut_fracs or not factors:
        raise ValueError("cut_fracs and factors must each hold at least one value")
    views = {}
    for factor in factors:
        for cut in cut_fracs:
            table = lr_table(steps, lr, len(names), factor, cut, ratio, unfreeze_every)
            fig = new_figure((6.4, 3.0))
            ax = fig.add_subplot()
            x = range(1, steps + 1)
            for i in reversed(range(len(names))):  # the top group first in the legend
                ax.plot(x, table[i], label=names[i], lw=1.6)
            if unfreeze_every is not None:
                for s in range(unfreeze_every + 1, steps + 1, unfreeze_every):
                    if s <= unfreeze_every * (len(names) - 1) + 1:
                        ax.axvline(s, color="grey", ls="--", lw=0.7)
            ax.set_xlabel("step")
            ax.set_ylabel("learning rate")
            ax.set_title(f"cut_frac = {cut:g}, factor = {factor:g}")
            ax.legend(fontsize=10, loc="upper right")
            ax.grid(alpha=0.3)
            fig.tight_layout()
            views[f"cut_frac {cut:g}, factor {factor:g}"] = figure_to_html(
                fig, alt=f"learning rates, cut_frac {cut:g}, factor {factor:g}"
            )
    return stepper(views, control="slider", description="setting")


def siatl_explorer(steps: int, settings: Sequence[tuple[float, float]]):
    """A stepper over SiATL's auxiliary-weight settings ``(start, end)``: for each,
    γ against the step (top) and, below, which layer groups train at each step under
    sequential unfreezing in thirds (``chapters/siatl.ipynb``). Drawn in advance from
    :func:`ptlm_lite.siatl.schedule_table`, so it works in the static book."""
    from ..siatl import GROUP_NAMES, schedule_table, sequential_starts

    settings = [tuple(s) for s in settings]
    if not settings or any(len(s) != 2 for s in settings):
        raise ValueError(
            f"settings must be a non-empty list of (start, end) pairs, got {settings!r}"
        )
    starts = sequential_starts(steps, len(GROUP_NAMES))
    views = {}
    for start, end in settings:
        gamma, trains = schedule_table(steps, starts, start, end)
        fig = new_figure((6.4, 4.4))
        top, bottom = fig.subplots(2, 1, sharex=True, height_ratios=(3, 2))
        x = range(1, steps + 1)
        top.plot(x, gamma, lw=1.8, color="C3")
        top.set_ylabel("γ (LM weight)")
        top.set_ylim(0, max(1.05 * max(gamma.max(), 1e-9), 0.1))
        top.set_title(f"γ from {start:g} to {end:g}")
        for i, name in enumerate(GROUP_NAMES):
            on = [s for s, t in zip(x, trains[i]) if t]
            bottom.broken_barh([(s - 0.5, 1) for s in on], (i - 0.35, 0.7), color="C0")
        bottom.set_yticks(range(len(GROUP_NAMES)), GROUP_NAMES)
        bottom.set_xlabel("step (blue: the group trains)")
        for ax in (top, bottom):
            ax.grid(alpha=0.3)
        fig.tight_layout()
        label = f"γ {start:g} → {end:g}"
        views[label] = figure_to_html(fig, alt=f"SiATL schedules, {label}")
    return stepper(views, control="slider", description="setting")
