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
