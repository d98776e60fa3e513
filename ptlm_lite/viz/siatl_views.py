"""SiATL's two schedules over the steps, for a few settings switched in the browser
(``chapters/siatl.ipynb``): the auxiliary LM loss's weight γ and which layer groups
train under sequential unfreezing.

Every state is drawn in advance from :func:`ptlm_lite.siatl.schedule_table`, so the
slider works in the static book as in a kernel.
"""

from __future__ import annotations

from typing import Sequence

from ._html import figure_to_html, new_figure
from .stepper import stepper


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
        top.set_ylim(0, max(1.05, 1.05 * gamma.max()))  # one scale for every setting
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
