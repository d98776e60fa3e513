"""Attention maps: per-layer heatmaps (a stepper of small images) and a bridge to
bertviz.

Introduced in ``chapters/transformer.ipynb``; every model's ``forward(...,
return_attention=True)`` gives ``attentions``, a list over layers of ``(B, H, Tq, Tk)``
tensors, which is what these take.
"""

from __future__ import annotations

import json
import re
from typing import Sequence

from ._html import esc, figure_to_html, new_figure, stable_id
from .stepper import stepper

# The width of the book's text column at a 1280 px window: figures are drawn no wider.
PAGE_PX = 680


def _layers(attentions, batch: int = 0):
    """Normalise attentions to a list over layers of numpy (H, Tq, Tk) float arrays."""
    import numpy as np
    import torch

    if isinstance(attentions, torch.Tensor) or isinstance(attentions, np.ndarray):
        if attentions.ndim != 3:
            raise ValueError(
                "pass attentions as a list over layers of (B, H, Tq, Tk) or (H, Tq, "
                "Tk) "
                f"tensors (or one (H, Tq, Tk) tensor); got a tensor of "
                f"shape {tuple(attentions.shape)}"
            )
        attentions = [attentions]
    if isinstance(attentions, dict) or not isinstance(attentions, (list, tuple)):
        raise TypeError(
            "attentions must be a list over layers of (B, H, Tq, Tk) or (H, Tq, Tk) "
            "tensors, "
            f"got {type(attentions).__name__}"
        )
    if not attentions:
        raise ValueError("attentions is empty: give at least one layer")
    out = []
    for i, a in enumerate(attentions):
        if isinstance(a, torch.Tensor):
            a = a.detach().float().cpu().numpy()
        elif not isinstance(a, np.ndarray):
            raise TypeError(f"attentions[{i}] must be a tensor, got {type(a).__name__}")
        if a.ndim == 4:
            if not 0 <= batch < a.shape[0]:
                raise ValueError(
                    f"batch={batch} is out of range for attentions[{i}] with batch "
                    f"size {a.shape[0]}"
                )
            a = a[batch]
        if a.ndim != 3:
            raise ValueError(
                f"attentions[{i}] must be (B, H, Tq, Tk) or (H, Tq, Tk), got shape "
                f"{tuple(a.shape)}"
            )
        if out and a.shape != out[0].shape:
            raise ValueError(
                f"every layer must have the same (H, Tq, Tk); layer 0 is "
                f"{out[0].shape}, "
                f"layer {i} is {a.shape}"
            )
        out.append(a.astype("float32"))
    return out


def _check_labels(name, labels, n):
    if isinstance(labels, str) or not isinstance(labels, Sequence):
        raise TypeError(
            f"{name} must be a list of token labels (str), got {type(labels).__name__}"
        )
    if len(labels) != n:
        raise ValueError(
            f"{name} must have {n} labels (one per position of the attention), got "
            f"{len(labels)}"
        )


def attention_heatmaps(
    attentions,
    tokens: Sequence[str],
    key_tokens: Sequence[str] | None = None,
    *,
    batch: int = 0,
    layers: Sequence[int] | None = None,
    heads: Sequence[int] | None = None,
    per: str = "layer",
    dpi: int = 72,
    cmap: str = "Blues",
    control: str = "auto",
):
    """Attention probabilities as heatmaps, one view per layer (all heads side by side)
    or per head.

    ``attentions``: a list over layers of ``(B, H, Tq, Tk)`` (the models' output;
    ``batch`` picks the example) or ``(H, Tq, Tk)`` tensors. Rows are queries
    (``tokens``), columns keys (``key_tokens``, default ``tokens``). Each view is a
    small embedded PNG, switched in the browser (a stepper).
    """
    L = _layers(attentions, batch)
    H, Tq, Tk = L[0].shape
    _check_labels("tokens", tokens, Tq)
    key_tokens = tokens if key_tokens is None else key_tokens
    _check_labels("key_tokens", key_tokens, Tk)
    layers = list(range(len(L))) if layers is None else list(layers)
    heads = list(range(H)) if heads is None else list(heads)
    for li in layers:
        if not 0 <= li < len(L):
            raise ValueError(f"layer {li} does not exist: there are {len(L)} layers")
    for h in heads:
        if not 0 <= h < H:
            raise ValueError(f"head {h} does not exist: there are {H} heads")
    if per not in ("layer", "head"):
        raise ValueError(f"per must be 'layer' or 'head', got {per!r}")

    # Sized for the page: a figure at most PAGE_PX wide at ``dpi``, so it is never
    # scaled down, and tick labels of 10 pt (>= 10 px at dpi >= 72). Heads wrap into
    # rows, at least two to a row; with more than ~24 tokens the cells are too small for
    # labels and there are none.
    width_in = PAGE_PX / dpi
    per_row = 2 if per == "layer" and len(heads) > 1 else 1  # heads side by side
    cell = min(0.22, max(0.05, (width_in / per_row - 0.95) / max(Tq, Tk)))
    ticks = cell * dpi >= 11
    side_w, side_h = 0.9 + Tk * cell, 0.6 + Tq * cell

    def draw(ax, a, title, ylabels=True):
        ax.imshow(a, cmap=cmap, vmin=0.0, vmax=1.0, interpolation="nearest")
        ax.set_title(title, fontsize=10)
        if ticks:
            ax.set_xticks(range(Tk))
            ax.set_xticklabels([str(t) for t in key_tokens], rotation=90, fontsize=10)
            ax.set_yticks(range(Tq))
            ax.set_yticklabels([str(t) for t in tokens] if ylabels else [], fontsize=10)
        else:
            ax.set_xticks([])
            ax.set_yticks([])
        ax.tick_params(length=0)

    views = {}
    if per == "layer":
        cols = max(1, min(len(heads), int(width_in // side_w)))
        rows = -(-len(heads) // cols)
        for li in layers:
            fig = new_figure((cols * side_w, rows * (side_h + 0.5) + 0.4))
            axes = fig.subplots(rows, cols, squeeze=False).ravel()
            for k, (ax, h) in enumerate(zip(axes, heads)):
                draw(ax, L[li][h], f"head {h}", ylabels=(k % cols == 0))
            for ax in axes[len(heads) :]:
                ax.set_visible(False)
            fig.suptitle(
                f"layer {li}: rows = queries, columns = keys, darker = more attention",
                fontsize=10,
            )
            fig.tight_layout()
            views[f"layer {li}"] = figure_to_html(
                fig, dpi=dpi, alt=f"attention, layer {li}"
            )
    else:
        for li in layers:
            for h in heads:
                fig = new_figure((side_w + 0.4, side_h + 0.4))
                draw(fig.add_subplot(111), L[li][h], f"layer {li}, head {h}")
                views[f"L{li} H{h}"] = figure_to_html(
                    fig, dpi=dpi, alt=f"attention, layer {li}, head {h}"
                )
    return stepper(
        views, control=control, description="layer" if per == "layer" else "head"
    )


# ----------------------------------------------------------------------------------
# bertviz bridge
# ----------------------------------------------------------------------------------
BERTVIZ_CLASS = "ptlm-bertviz"
_CDN = {
    "require": "https://cdnjs.cloudflare.com/ajax/libs/require.js/2.3.6/require.min.js",
    "d3": "https://cdnjs.cloudflare.com/ajax/libs/d3/5.7.0/d3.min",
    "jquery": "https://cdnjs.cloudflare.com/ajax/libs/jquery/2.0.0/jquery.min",
}

# Where to get require.js, d3 and jQuery. In the static book, js/ptlm-book.js (loaded on
# every page; see scripts/assets.py) sets window.ptlmBookJs.base to the book's own
# copies, so nothing leaves the site. Elsewhere that variable is absent and the public
# CDNs bertviz uses are taken; if they cannot be reached, the view says so and how to
# draw it offline (instead of staying blank).
_LOADER = """(function () {
  var cdn = %(cdn)s;
  var book = window.ptlmBookJs;
  var me = document.currentScript;
  function paths() {
    return book ? {d3: book.base + 'vendor/d3.min', jquery: book.base + 'vendor/jquery.min'}
                : {d3: cdn.d3, jquery: cdn.jquery};
  }
  function run() {
    require.config({paths: paths()});
%(body)s
  }
  if (typeof window.requirejs === 'function') { run(); return; }
  var s = document.createElement('script');
  s.src = book ? book.base + 'vendor/require.js' : cdn.require;
  s.onload = run;
  s.onerror = function () {
    var p = document.createElement('p');
    p.className = 'ptlm-bertviz-offline';
    p.textContent = %(offline)s;
    if (me && me.parentNode) me.parentNode.insertBefore(p, me);
  };
  document.head.appendChild(s);
})();"""

_OFFLINE = (
    "bertviz could not load its scripts (require.js, d3, jQuery) from "
    "cdnjs.cloudflare.com: is this machine offline? Run `bash scripts/install.sh` in "
    "the book's folder (it puts copies in book/js/vendor/), restart the kernel and "
    "re-run this cell: the view then carries its own copies."
)

# A view that carries d3 and jQuery itself: no network, no require.js, nothing left in
# the page's globals (jQuery.noConflict(true) gives back whatever jQuery the page had;
# d3 lands in a private object). For a live kernel, where the book's copies are on disk.
_INLINE = """(function () {
  var lib = {};
  (function () { var define, module, exports;
%(d3)s
  }).call(lib);
  (function () { var define, module, exports;
%(jquery)s
  })();
  lib.jquery = window.jQuery.noConflict(true);
  function requirejs(deps, then) {
    then.apply(null, deps.map(function (d) { return lib[d]; }));
  }
%(body)s
})();"""

# PTLM_BERTVIZ_SCRIPTS: "inline" (the view carries d3 and jQuery, ~340 kB: draws
# offline anywhere) or "linked" (the book's copies in the static book, the CDNs
# elsewhere: what the committed notebooks store; scripts/execute.py sets it). Unset:
# inline when the copies are on disk (a checkout after scripts/install.sh), else linked.
SCRIPTS_ENV = "PTLM_BERTVIZ_SCRIPTS"


def vendor_dir():
    """Where scripts/assets.py puts the book's copies of d3 and jQuery (book/js/vendor
    of the checkout this package is in; it may not exist)."""
    from pathlib import Path

    return Path(__file__).resolve().parents[2] / "book" / "js" / "vendor"


def _vendor_sources() -> dict | None:
    files = {"d3": "d3.min.js", "jquery": "jquery.min.js"}
    paths = {k: vendor_dir() / f for k, f in files.items()}
    if not all(p.is_file() for p in paths.values()):
        return None
    return {k: p.read_text(encoding="utf-8") for k, p in paths.items()}


def scripts_mode() -> str:
    """How a bertviz view gets its scripts: "inline" or "linked" (see SCRIPTS_ENV)."""
    import os

    mode = os.environ.get(SCRIPTS_ENV, "").strip().lower()
    if mode not in ("", "inline", "linked"):
        raise ValueError(
            f"{SCRIPTS_ENV} must be 'inline' or 'linked' (or unset), got "
            f"{os.environ[SCRIPTS_ENV]!r}"
        )
    if mode == "inline" and _vendor_sources() is None:
        raise FileNotFoundError(
            f"{SCRIPTS_ENV}=inline needs the book's copies of d3 and jQuery in "
            f"{vendor_dir()}: run `python scripts/assets.py` (or `bash "
            "scripts/install.sh`) in the book's folder, or unset it"
        )
    if mode:
        return mode
    return "inline" if _vendor_sources() is not None else "linked"


def _bertviz_inputs(attentions, tokens, batch):
    import torch

    L = _layers(attentions, batch)
    H, Tq, Tk = L[0].shape
    if Tq != Tk:
        raise ValueError(
            f"bertviz shows self-attention: Tq must equal Tk, got {Tq}x{Tk}"
        )
    _check_labels("tokens", tokens, Tq)
    # (1, H, T, T) each; bertviz writes every weight into the page as JSON text, so
    # round to 4 decimals in float64 (float32 would print ~17 digits): a third of the
    # page's bytes, and nothing a picture can show
    return (
        tuple(torch.from_numpy(a).double().round(decimals=4)[None] for a in L),
        [str(t) for t in tokens],
    )


def _offline_html(html: str, vis_class: str) -> str:
    """Rewrite bertviz's HTML so that it loads its JavaScript from the book, or carries
    it (:func:`scripts_mode`), and never from a CDN when either is there.
    """
    html = re.sub(r'<script src="[^"]*require(\.min)?\.js"></script>', "", html)
    m = re.search(r'<script type="text/javascript">\n(.*)\n</script>', html, flags=re.S)
    if m is None or "requirejs(['jquery', 'd3']" not in m.group(1):
        raise RuntimeError(
            "unexpected bertviz output (its HTML layout changed?); please report the "
            "bertviz version"
        )
    js = m.group(1)
    # we configure paths ourselves
    js = re.sub(r"require\.config\(\{.*?\}\);", "", js, count=1, flags=re.S)
    if scripts_mode() == "inline":
        new_js = _INLINE % {**_vendor_sources(), "body": js}
    else:
        new_js = _LOADER % {
            "cdn": json.dumps(_CDN),
            "body": js,
            "offline": json.dumps(_OFFLINE),
        }
    html = (
        html[: m.start()]
        + '<script type="text/javascript">\n'
        + new_js
        + "\n</script>"
        + html[m.end() :]
    )
    old = re.search(r"bertviz-[0-9a-f]{32}", html)
    # bertviz draws a random uuid; a stable id keeps re-executed notebooks unchanged
    if old:
        html = html.replace(
            old.group(0), stable_id("bertviz", html.replace(old.group(0), ""))
        )
    # bertviz sizes its drawing for a wide notebook; let it scroll inside a narrower
    # book page
    return (
        f'<div class="{BERTVIZ_CLASS} {vis_class}" style="overflow-x:auto">{html}</div>'
    )


def bertviz_head_view(
    attentions,
    tokens: Sequence[str],
    *,
    batch: int = 0,
    layer: int | None = None,
    heads: Sequence[int] | None = None,
    sentence_b_start: int | None = None,
):
    """bertviz's head view (lines from each token to the tokens it attends to, per layer
    and head).

    Takes the book's ``attentions`` (list over layers of ``(B, H, T, T)`` or ``(H, T,
    T)``) and returns an ``IPython.display.HTML`` that works in Jupyter and Colab
    (scripts from bertviz's CDNs) and in the static book, offline (scripts served by the
    book itself).
    """
    from bertviz import head_view
    from IPython.display import HTML

    att, toks = _bertviz_inputs(attentions, tokens, batch)
    out = head_view(
        att,
        toks,
        sentence_b_start=sentence_b_start,
        layer=layer,
        heads=heads,
        html_action="return",
    )
    return HTML(_offline_html(out.data, "ptlm-bertviz-head"))


def bertviz_model_view(
    attentions,
    tokens: Sequence[str],
    *,
    batch: int = 0,
    layers: Sequence[int] | None = None,
    heads: Sequence[int] | None = None,
    sentence_b_start: int | None = None,
    display_mode: str = "light",
):
    """bertviz's model view (a thumbnail per layer and head; click one to enlarge). Same
    inputs and offline behaviour as :func:`bertviz_head_view`.
    """
    from bertviz import model_view
    from IPython.display import HTML

    att, toks = _bertviz_inputs(attentions, tokens, batch)
    out = model_view(
        att,
        toks,
        sentence_b_start=sentence_b_start,
        include_layers=layers,
        include_heads=heads,
        display_mode=display_mode,
        html_action="return",
    )
    # bertviz draws the model view 970 px wide whatever the page: draw it as wide as the
    # book's text column, so that every head is on screen (the thumbnails shrink).
    data = out.data.replace("const DIV_WIDTH = 970;", f"const DIV_WIDTH = {PAGE_PX};")
    return HTML(_offline_html(data, "ptlm-bertviz-model"))
