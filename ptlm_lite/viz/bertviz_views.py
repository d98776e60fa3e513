"""bertviz's head and model views for the book's attentions, drawn in a live kernel
(Jupyter, Colab, VS Code) and in the static book, with or without a network.

Introduced in ``chapters/transformer.ipynb``; the inputs are those of
:func:`~ptlm_lite.viz.attention_views.attention_heatmaps` (a list over layers of
``(B, H, T, T)`` attention weights). How a view gets its JavaScript (require.js, d3,
jQuery) is :func:`scripts_mode`: carried inline from the checkout's copies, or linked to
the book's copies (the static book) or the public CDNs (elsewhere).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Sequence

from ._html import stable_id
from .attention_views import PAGE_PX, attention_layers, check_labels

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
  function offline() {
    var at = me && me.parentNode;
    if (!at || at.querySelector('.ptlm-bertviz-offline')) return;
    var p = document.createElement('p');
    p.className = 'ptlm-bertviz-offline';
    p.textContent = %(offline)s;
    at.insertBefore(p, me);
  }
  function paths() {
    return book ? {d3: book.base + 'vendor/d3.min', jquery: book.base + 'vendor/jquery.min'}
                : {d3: cdn.d3, jquery: cdn.jquery};
  }
  function run() {
    var rq = window.requirejs;
    rq.config({paths: paths()});
    // bertviz calls requirejs(deps, then): with an errback, a d3 or jQuery that cannot
    // be loaded (a page that has require.js, as Classic Notebook, but no network) says so
    var requirejs = function (deps, then) { rq(deps, then, offline); };
%(body)s
  }
  if (typeof window.requirejs === 'function') { run(); return; }
  var s = document.createElement('script');
  s.src = book ? book.base + 'vendor/require.js' : cdn.require;
  s.onload = run;
  s.onerror = offline;
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


# The book's copies, as scripts/assets.py names them in book/js/vendor/ (the package
# cannot import scripts/; tests/test_viz.py checks that the two agree)
VENDOR_FILES = {"d3": "d3.min.js", "jquery": "jquery.min.js"}


def vendor_dir() -> Path:
    """Where scripts/assets.py puts the book's copies of d3 and jQuery (book/js/vendor
    of the checkout this package is in; it may not exist)."""
    return Path(__file__).resolve().parents[2] / "book" / "js" / "vendor"


def _vendor_paths() -> dict | None:
    """The copies' paths, or None unless both are there."""
    paths = {k: vendor_dir() / f for k, f in VENDOR_FILES.items()}
    return paths if all(p.is_file() for p in paths.values()) else None


def scripts_mode() -> str:
    """How a bertviz view gets its scripts: "inline" or "linked" (see SCRIPTS_ENV)."""
    mode = os.environ.get(SCRIPTS_ENV, "").strip().lower()
    if mode not in ("", "inline", "linked"):
        raise ValueError(
            f"{SCRIPTS_ENV} must be 'inline' or 'linked' (or unset), got "
            f"{os.environ[SCRIPTS_ENV]!r}"
        )
    if mode == "inline" and _vendor_paths() is None:
        raise FileNotFoundError(
            f"{SCRIPTS_ENV}=inline needs the book's copies of d3 and jQuery in "
            f"{vendor_dir()}: run `python scripts/assets.py` (or `bash "
            "scripts/install.sh`) in the book's folder, or unset it"
        )
    if mode:
        return mode
    return "inline" if _vendor_paths() is not None else "linked"


def _bertviz_inputs(attentions, tokens, batch):
    import torch

    L = attention_layers(attentions, batch)
    H, Tq, Tk = L[0].shape
    if Tq != Tk:
        raise ValueError(
            f"bertviz shows self-attention: Tq must equal Tk, got {Tq}x{Tk}"
        )
    check_labels("tokens", tokens, Tq)
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
        sources = {k: p.read_text(encoding="utf-8") for k, p in _vendor_paths().items()}
        new_js = _INLINE % {**sources, "body": js}
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
