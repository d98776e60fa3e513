"""A training curve that updates live in a kernel and leaves one clean figure in the
static book.

Introduced in ``chapters/transformer.ipynb``. Pass it as the training loop's callback::

    curve = TrainingCurve("Transformer, tiny")
    hist = train(model, batches, steps=300, callback=curve)
    curve.finish()

While training, the cell shows one image that is replaced every ``min_interval`` seconds
(one display with a ``display_id``, updated in place; no pile of figures). ``finish()``
draws the final figure into that same place, so the notebook stores just that one image,
which is what the static book, GitHub and Colab (before running) show.
"""

from __future__ import annotations

import time

from ._html import figure_to_png, new_figure


def _in_kernel() -> bool:
    try:
        from IPython import get_ipython

        ip = get_ipython()
        return ip is not None and getattr(ip, "kernel", None) is not None
    except ImportError:
        return False


class TrainingCurve:
    """Live loss plot: ``curve(step, loss)`` records (and, in a kernel, redraws at most
    every ``min_interval`` s); ``curve.log(step, val_loss=...)`` adds points to other
    named series; ``curve.finish()`` leaves the final figure in the cell's output.

    ``window`` smooths the training loss (raw in faint colour, moving average solid);
    ``log`` puts the loss on a log scale. ``live=None`` means live only inside a Jupyter
    kernel.
    """

    def __init__(
        self,
        title: str = "",
        *,
        window: int = 20,
        log: bool = True,
        min_interval: float = 1.0,
        live: bool | None = None,
        dpi: int = 80,
        figsize=(6.0, 3.2),
        ylabel: str = "loss",
    ):
        if window < 1:
            raise ValueError(f"window must be >= 1, got {window!r}")
        self.title, self.window, self.logscale = title, int(window), log
        self.min_interval, self.dpi, self.figsize, self.ylabel = (
            float(min_interval),
            dpi,
            figsize,
            ylabel,
        )
        self.live = _in_kernel() if live is None else bool(live)
        self.steps: list[int] = []
        self.losses: list[float] = []
        self.series: dict[str, tuple[list, list]] = {}
        self._handle = None
        self._last = float("-inf")
        self._cost = 0.0
        self.finished = False

    # -- recording
    # -------------------------------------------------------------------------
    def __call__(self, step: int, loss: float) -> None:
        """The training-loop hook: ``callback(step, loss)``."""
        loss = float(loss)
        self.steps.append(int(step))
        self.losses.append(loss)
        self._maybe_draw()

    def log(self, step: int, **values: float) -> None:
        """Record other curves at ``step``, e.g. ``curve.log(200, val_loss=2.1)``."""
        for name, v in values.items():
            xs, ys = self.series.setdefault(name, ([], []))
            xs.append(int(step))
            ys.append(float(v))
        self._maybe_draw()

    @classmethod
    def from_history(cls, history, title: str = "", **kw) -> "TrainingCurve":
        """A finished curve from a :class:`ptlm_lite.train.History` (losses per step,
        evaluations).
        """
        curve = cls(title, live=False, **kw)
        for i, loss in enumerate(history.losses, start=1):
            curve(i, loss)
        for step, metrics in getattr(history, "evals", []):
            curve.log(
                step,
                **{k: v for k, v in metrics.items() if isinstance(v, (int, float))},
            )
        return curve

    # -- drawing
    # ---------------------------------------------------------------------------
    def figure(self):
        """The current curve as a matplotlib Figure (not registered with pyplot)."""
        import numpy as np

        fig = new_figure(self.figsize)
        ax = fig.add_subplot(111)
        if self.losses:
            x, y = np.asarray(self.steps), np.asarray(self.losses)
            (raw,) = ax.plot(x, y, lw=0.8, alpha=0.3)
            if len(y) >= self.window > 1:
                s = np.convolve(y, np.ones(self.window) / self.window, mode="valid")
                ax.plot(
                    x[self.window - 1 :],
                    s,
                    color=raw.get_color(),
                    label=f"training (mean of {self.window})",
                )
            else:
                raw.set_alpha(1.0)
                raw.set_label("training")
        for name, (xs, ys) in self.series.items():
            ax.plot(xs, ys, "o-", ms=3, lw=1.2, label=name)
        if (
            self.logscale
            and (self.losses or self.series)
            and min(
                [*self.losses, *[v for _, ys in self.series.values() for v in ys]]
                or [1]
            )
            > 0
        ):
            ax.set_yscale("log")
            from matplotlib.ticker import LogFormatter

            # 0.5, not 5x10^-1 (matplotlib decides which ticks get labels)
            class Plain(LogFormatter):
                def _num_to_string(self, x, vmin, vmax):
                    return f"{x:g}"

            ax.yaxis.set_major_formatter(Plain(labelOnlyBase=False))
            ax.yaxis.set_minor_formatter(
                Plain(labelOnlyBase=False, minor_thresholds=(1.5, 0.5))
            )
        ax.set_xlabel("step")
        ax.set_ylabel(self.ylabel)
        ax.grid(alpha=0.3)
        if self.title:
            ax.set_title(self.title)
        if ax.get_legend_handles_labels()[0]:
            ax.legend()
        fig.tight_layout()
        return fig

    def _image(self):
        from IPython.display import Image

        return Image(data=figure_to_png(self.figure(), dpi=self.dpi), format="png")

    def _maybe_draw(self, force: bool = False) -> None:
        if not self.live:
            return
        now = time.monotonic()
        # Drawing costs ~0.3 s on a small CPU: wait at least 4x that long between
        # redraws, so the live plot never takes more than ~20% of the training time.
        if not force and now - self._last < max(self.min_interval, 4 * self._cost):
            return
        from IPython.display import display

        image = self._image()
        if self._handle is None:
            self._handle = display(image, display_id=True)
        else:
            self._handle.update(image)
        self._last = time.monotonic()
        self._cost = self._last - now

    def finish(self) -> None:
        """Draw the final figure in place of the live one (in a kernel). Returns None,
        so a cell ending in ``curve.finish()`` stores exactly one image; use
        :meth:`figure` for the Figure.
        """
        self.finished = True
        if self.live:
            self._maybe_draw(force=True)

    def _repr_png_(self):  # ``curve`` as the last line of a cell shows the figure
        return figure_to_png(self.figure(), dpi=self.dpi)


def live_loss_plot(title: str = "", **kw) -> TrainingCurve:
    """Shorthand for :class:`TrainingCurve` (the callback for
    ``ptlm_lite.train.train``).
    """
    return TrainingCurve(title, **kw)
