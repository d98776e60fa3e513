"""The synthesis chapter's widgets (``chapters/synthesis.ipynb``): tables with several
views switched in the browser, the probe's dependence matrices in a stepper, and the
timeline of the models.

Every view is rendered in advance: :func:`table_views` puts several
:func:`~ptlm_lite.viz.tables.comparison_table` s (each one filters and sorts) behind a
row of buttons, a few lines of inline JavaScript that show one and hide the rest, so
they work in the static book as in a kernel; :func:`probe_explorer` is a
:func:`~ptlm_lite.viz.stepper` over the matrices ``D[i, j]``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping

from ._html import BOOK_DPI, MIN_LABEL_PX, PIXEL_RATIO, esc, figure_to_png, new_figure
from ._html import png_font_px, png_size
from ._html import stable_id
from .stepper import stepper
from .tables import comparison_table

_LINK = re.compile(r"<td>([a-z0-9_]+\.html(?:#[a-z0-9-]*)?)</td>")
VIEWS_CLASS = "ptlm-views"  # the browser tests find the view switchers by this
PROBE_CLASS = "ptlm-probe"

_JS = """<script>(function () {
  var s = document.currentScript;
  var root = (s && s.previousElementSibling && s.previousElementSibling.id === %(id)s)
             ? s.previousElementSibling : document.getElementById(%(id)s);
  if (!root || root.dataset.ready) return;
  root.dataset.ready = '1';
  var buttons = root.querySelectorAll('button.ptlm-view-button');
  var panes = root.querySelectorAll('div.ptlm-view-pane');
  function show(k) {
    Array.prototype.forEach.call(panes, function (p, i) {
      p.style.display = i === k ? '' : 'none'; });
    Array.prototype.forEach.call(buttons, function (b, i) {
      b.setAttribute('aria-pressed', i === k ? 'true' : 'false');
      b.style.fontWeight = i === k ? '700' : '400'; });
  }
  Array.prototype.forEach.call(buttons, function (b, i) {
    b.addEventListener('click', function () { show(i); }); });
  show(0);
})();</script>"""


class Views:
    """What :func:`table_views` returns: displays as HTML; ``.html`` the string,
    ``.tables`` the {label: ComparisonTable}."""

    def __init__(self, tables, html: str):
        self.tables, self.html = tables, html

    def _repr_html_(self) -> str:
        return self.html

    def __repr__(self) -> str:
        return f"Views({list(self.tables)})"


def table_views(
    frames: Mapping, *, captions: Mapping | None = None, links=(), **kw
) -> Views:
    """Several views of a table behind buttons: ``frames`` is {label: DataFrame}, each
    shown as a :func:`~ptlm_lite.viz.comparison_table` (``kw`` passed on) whose
    caption starts with "view: <label>". The cells of the ``links`` columns that hold
    a relative page address (``gpt.html#section``) become links. Works without a
    kernel. Chapter: the synthesis."""
    if not isinstance(frames, Mapping) or not frames:
        raise ValueError("frames must be a non-empty dict {label: DataFrame}")
    tables = {}
    for label, df in frames.items():
        cap = f"view: {label}" + (f". {captions[label]}" if captions else "")
        tables[label] = t = comparison_table(df, caption=cap, **kw)
        cols = [str(c) for c in df.columns]
        if any(c in cols for c in links):
            t.html = _LINK.sub(r'<td><a href="\1">\1</a></td>', t.html)
    vid = stable_id("ptlm-views", list(frames))
    buttons = "".join(
        f'<button type="button" class="ptlm-view-button" data-view="{i}" '
        f'style="margin:2px 4px 2px 0;padding:2px 8px;font-size:13px">{esc(k)}</button>'
        for i, k in enumerate(tables)
    )
    panes = "".join(
        f'<div class="ptlm-view-pane" data-label="{esc(k)}">{t.html}</div>'
        for k, t in tables.items()
    )
    html = (
        f'<div class="{VIEWS_CLASS}" id="{vid}"><div role="group" '
        f'aria-label="views" style="display:flex;flex-wrap:wrap">{buttons}</div>'
        f"{panes}</div>" + _JS % {"id": repr(vid)}
    )
    return Views(tables, html)


def _matrix_figure(D, title: str):
    import numpy as np

    fig = new_figure((3.6, 3.4))
    ax = fig.add_subplot()
    ax.imshow(np.asarray(D, dtype=float), cmap="Blues", vmin=0, vmax=1.3)
    T = D.shape[0]
    ax.set_xticks(range(0, T, 2))
    ax.set_yticks(range(0, T, 2))
    ax.set_xlabel("token j changed")
    ax.set_ylabel("output i")
    ax.set_title(title)
    fig.tight_layout()
    return fig


def probe_explorer(measured: Mapping, names: Mapping | None = None):
    """A stepper with one view per measurement: ``measured`` is {chapter: the list of
    :func:`ptlm_lite.synthesis.probe_chapter`}; each view draws ``D[i, j]`` (blue:
    output i moved when token j changed) with its kind. Chapter: the synthesis."""
    from .word_views import stepper_view

    views = {}
    for stem, found in measured.items():
        for m in found:
            name = (names or {}).get(stem, stem)
            label = f"{name}: {m['label']}" if len(found) > 1 else name
            fig = _matrix_figure(m["found"].D, m["kind"])
            cap = (
                f"<div>view: {esc(label)}; the probe found <b>{esc(m['kind'])}</b> "
                f"(measured on: {esc(m['weights'])})</div>"
            )
            views[label] = stepper_view(fig, cap)
    if not views:
        raise ValueError("measured must hold at least one measurement")
    box = stepper(views, control="slider", description="model")
    box.add_class(PROBE_CLASS)
    return box


def timeline_figure(df):
    """The models by year (``df``: columns ``model``, ``year``, ``family``,
    ``highlight``), one row each in order of year, one colour per family, with what
    changed written beside it. Chapter: the synthesis."""
    rows = df.dropna(subset=["year"]).sort_values(["year", "family", "model"])
    families = list(dict.fromkeys(rows["family"]))
    palette = ["#2f6db5", "#d1603d", "#3b9a57", "#8a5bb5", "#b58a2f", "#555", "#c2417a"]
    colours = {f: palette[i % len(palette)] for i, f in enumerate(families)}
    n = len(rows)
    fig = new_figure((5.0, 1.4 + 0.24 * n))
    ax = fig.add_subplot()
    years = sorted({int(y) for y in rows["year"]})
    for k, (_, r) in enumerate(rows.iterrows()):
        y = int(r["year"])
        ax.scatter(years.index(y), -k, s=36, color=colours[r["family"]], zorder=3)
        what = str(r.get("highlight", ""))
        what = what if len(what) <= 34 else what[:33] + "…"
        ax.annotate(f"{r['model']}: {what}", (years.index(y), -k), xytext=(8, -4),
                    textcoords="offset points")  # fmt: skip
    ax.set_xticks(range(len(years)), [str(y) for y in years])
    ax.set_xlim(-0.4, len(years) + 3.2)
    ax.set_ylim(-n + 0.3, 0.8)
    ax.set_yticks([])
    ax.set_title("The book's models by year")
    for f, c in colours.items():
        ax.scatter([], [], color=c, label=f)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.04), ncol=2, frameon=False)
    for side in ("top", "right", "left"):
        ax.spines[side].set_visible(False)
    fig.tight_layout()
    return fig


def timeline(df):
    """:func:`timeline_figure` as an inline image in a 256-colour palette (a third of
    the plain PNG: the page carries many views). Displays as HTML. Chapter: the
    synthesis."""
    import base64

    from IPython.display import HTML

    png = figure_to_png(timeline_figure(df), dpi=BOOK_DPI, scale=PIXEL_RATIO)
    width, px = round(png_size(png)[0] / PIXEL_RATIO), png_font_px(png)
    # never narrower than the width at which its smallest text is 10 CSS px (a phone
    # scrolls it sideways instead), as figure_to_html does
    least = (
        min(width, math.ceil(width * MIN_LABEL_PX / (px / PIXEL_RATIO))) if px else 0
    )
    b64 = base64.b64encode(png).decode("ascii")
    return HTML(
        f'<div style="overflow-x:auto"><img src="data:image/png;base64,{b64}" '
        f'alt="the book\'s models by year" width="{width}" '
        f'style="max-width:100%;min-width:{least}px;height:auto"></div>'
    )
