"""MASS's widget (``from ptlm_lite.viz.mass_views import mass_explorer``): the fragment
length k as a slider, over the encoder's input, the decoder's input and positions, the
decoder's self-attention mask and what each prediction may read of the text
(:func:`ptlm_lite.mass.reads`). Every k is drawn in advance and switched in the browser,
so it works in the static book (``chapters/mass.ipynb``).
"""

from __future__ import annotations

from typing import Sequence

from ._html import HTML_FONTS, esc
from .mask_views import OFF, ON
from .stepper import stepper

DEC = "#e07b22"  # read through the decoder (the encoder's is mask_views.ON)
_CSS = (
    "<style>.ptlm-mass{font:12px/1.3 " + HTML_FONTS + ";border-collapse:collapse;"
    "margin:4px 0}.ptlm-mass td,.ptlm-mass th{padding:2px 3px;text-align:center;"
    "border:1px solid #fff;white-space:nowrap}.ptlm-mass th{font-weight:normal;"
    "text-align:right;color:#555}.ptlm-mass td.m{background:#333;color:#fff}"
    ".ptlm-mass td.f{background:#fde3cc}.ptlm-mass small{color:#777}"
    ".ptlm-reads{border-collapse:collapse;margin:6px 12px 4px 0}"
    ".ptlm-reads th{font-weight:normal;padding:1px 4px;white-space:nowrap;"
    "text-align:right}.ptlm-reads thead th{writing-mode:vertical-rl;"
    "transform:rotate(180deg);text-align:left;vertical-align:bottom}"
    ".ptlm-reads td{width:20px;height:20px;padding:0;border:1px solid #fff}"
    ".ptlm-reads td.e{background:" + ON + "}.ptlm-reads td.d{background:" + DEC + "}"
    ".ptlm-reads td.n{background:" + OFF + "}.ptlm-mass-legend{font-size:12px;"
    "margin:2px 0 6px}.ptlm-mass-legend span{display:inline-block;width:12px;"
    "height:12px;vertical-align:middle;margin:0 4px 0 10px}</style>"
)


def _strip(label: str, cells: list[tuple[str, str]], notes=None) -> str:
    """One labelled row of token cells (text, css class), with optional notes below."""
    tds = "".join(f'<td class="{c}">{esc(t)}</td>' for t, c in cells)
    row = f"<tr><th>{esc(label)}</th>{tds}</tr>"
    if notes is not None:
        row += (
            "<tr><th><small>position</small></th>"
            + "".join(f"<td><small>{esc(n)}</small></td>" for n in notes)
            + "</tr>"
        )
    return row


def _grid(values, rows: Sequence[str], cols: Sequence[str], caption: str) -> str:
    """A grid of cells coloured by value: 0 grey, 1 blue, 2 orange."""
    kind = {0: "n", 1: "e", 2: "d"}
    head = "".join(f"<th>{esc(t)}</th>" for t in cols)
    body = "".join(
        f"<tr><th>{esc(rows[i])}</th>"
        + "".join(f'<td class="{kind[int(v)]}"></td>' for v in values[i])
        + "</tr>"
        for i in range(len(rows))
    )
    return (
        '<table class="ptlm-reads"><caption style="caption-side:top;text-align:left;'
        f'font-weight:600">{esc(caption)}</caption><thead><tr><th></th>{head}</tr>'
        f"</thead><tbody>{body}</tbody></table>"
    )


def mass_view(tokens: Sequence[str], k: int, start: int | None = None) -> str:
    """The HTML of one k: the encoder's input (fragment masked), the decoder's input
    at its positions and its target, the decoder's causal mask, and the reads grid
    (blue: through the encoder; orange: through the decoder; grey: not at all)."""
    from ..masks import causal_mask
    from ..mass import reads

    tokens = [str(t) for t in tokens]
    m = len(tokens)
    if not 1 <= k <= m:
        raise ValueError(f"k must be in [1, {m}] for {m} tokens, got {k!r}")
    u = (m - k) // 2 if start is None else start
    frag = tokens[u : u + k]
    enc = [("[MASK]", "m") if u <= i < u + k else (t, "") for i, t in enumerate(tokens)]
    strips = (
        '<table class="ptlm-mass">'
        + _strip("encoder in", enc, notes=range(m))
        + '</table><table class="ptlm-mass">'
        + _strip(
            "decoder in",
            [("[BOS]", "f")] + [(t, "f") for t in frag[:-1]],
            notes=range(u, u + k),
        )  # fmt: skip
        + _strip("predicts", [(t, "f") for t in frag])
        + "</table>"
    )
    grid = _grid(reads(m, u, k), frag, tokens, "what each prediction reads")
    dec = _grid(causal_mask(k).long(), ["[BOS]", *frag[:-1]], ["[BOS]", *frag[:-1]],
                "decoder self-attention")  # fmt: skip
    legend = (
        '<div class="ptlm-mass-legend"><span style="background:'
        + ON
        + '"></span>through'
        ' the encoder<span style="background:' + DEC + '"></span>through the decoder'
        '<span style="background:' + OFF + ';border:1px solid #ccc"></span>not at all'
        "</div>"
    )
    if k == 1:
        note = "k = 1: one token from all the others (BERT's masked LM)"
    elif k == m:
        note = "k = m: the encoder sees only [MASK]; each token from its left (GPT)"
    else:
        note = (
            f"k = {k}: the rest through the encoder, the fragment's left through the "
            "decoder"
        )
    return (
        _CSS + f"<div><b>{esc(note)}</b></div>" + strips + grid + legend
        + '<div style="display:flex;flex-wrap:wrap">' + dec + "</div>"
    )  # fmt: skip


def mass_explorer(tokens: Sequence[str], ks: Sequence[int] | None = None):
    """A slider over the fragment length k (every k from 1 to m by default) for one
    text of ``tokens`` (labels): :func:`mass_view` of each, drawn in advance."""
    if isinstance(tokens, str) or not isinstance(tokens, Sequence) or not tokens:
        raise TypeError("tokens must be a non-empty list of token labels (str)")
    ks = list(range(1, len(tokens) + 1)) if ks is None else list(ks)
    views = {f"k = {k}": mass_view(tokens, k) for k in ks}
    return stepper(views, control="slider", description="k")
