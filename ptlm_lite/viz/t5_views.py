"""T5's relative positions, made visible: the bucket of each query-key distance, and
the learned bias of each head (chapter ``chapters/t5.ipynb``)."""

from __future__ import annotations

from .stepper import stepper

__all__ = ["bias_explorer"]


def _curves(title: str, distance, rows: dict, ylabel: str):
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(rows), 1, figsize=(6, 2.3 * len(rows)), sharex=True)
    for ax, (name, values) in zip(axes, rows.items()):
        ax.step(distance, values, where="mid", color="C0")
        ax.plot(distance, values, ".", ms=3, color="C0")
        ax.axvline(0, color="grey", lw=0.8, ls=":")
        ax.set_ylabel(ylabel)
        ax.set_title(name)
    axes[-1].set_xlabel("key position − query position")
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def bias_explorer(enc_bias, dec_bias, span: int = 40):
    """A stepper (works in the static book): "buckets" shows the bucket of each
    distance ``key - query`` in ``[-span, span]`` for the encoder (both directions)
    and the decoder (looking back); "head i" shows head i's learned bias at each
    distance, encoder and decoder. ``enc_bias`` / ``dec_bias``: the model's
    :class:`~ptlm_lite.t5.RelativeBias` modules."""
    import torch

    if not isinstance(span, int) or isinstance(span, bool) or span < 1:
        raise ValueError(f"span must be a positive integer, got {span!r}")
    distance = torch.arange(-span, span + 1)
    views = {}
    with torch.no_grad():
        rows = {}
        tables = {}
        for name, module in (("encoder", enc_bias), ("decoder", dec_bias)):
            # one query at position span, keys at 0 .. 2·span
            buckets = module.buckets(2 * span + 1, 2 * span + 1)[span]
            rows[f"{name}: bucket"] = buckets.numpy()
            table = module.table.weight[buckets].clone()  # (2·span+1, H)
            if name == "decoder":  # keys after the query are masked: no bias shown
                table[distance > 0] = float("nan")
            tables[name] = table.numpy()
        views["buckets"] = _curves(
            "Which bucket each distance uses", distance, rows, "bucket"
        )
        for h in range(tables["encoder"].shape[1]):
            views[f"head {h + 1}"] = _curves(
                f"Head {h + 1}'s learned bias",
                distance,
                {f"{n}: bias": t[:, h] for n, t in tables.items()},
                "bias",
            )
    return stepper(views, description="view")
