"""Architecture diagrams drawn from text: a few lines per chapter, rendered as inline
SVG.

    diagram('''
        ids
        Embeddings: token + position
        Stack × N: causal mask
        LayerNorm (GPT-2 only)
        head: tied to the embeddings
        logits
    ''')

Each non-empty line is a box, drawn top to bottom with an arrow to the next; ``name:
note`` puts the note in smaller type under the name; every box is as wide as the
diagram's widest label needs (at least ``BOX_W``). Columns side by side (an encoder
and a decoder) are blocks separated by a line ``---``; ``links=[(from_col, from_row,
to_col, to_row, label)]`` draws extra arrows between them (cross-attention). The SVG is
text in the notebook: it shows the same in a live kernel, in Colab and in the static
book, needs no Graphviz, and its labels are 13-14 px at any page width up to 680 px; on
a narrower screen it shrinks only until its smallest label is 10 px, then scrolls.
Every chapter opens with one (issue "Honest experiments", item 8).
"""

from __future__ import annotations

import math

from ._html import MIN_LABEL_PX as MIN_TEXT_PX
from ._html import esc

__all__ = ["diagram", "diagram_svg"]

BOX_W, BOX_H, GAP, COL_GAP, PAD = 230, 44, 22, 90, 14
TEXT_PAD = 10  # px between a box's widest label and its sides


def _parse(spec: str) -> list[list[tuple[str, str]]]:
    if not isinstance(spec, str) or not spec.strip():
        raise ValueError(
            "spec must be a non-empty string: one box per line, columns separated by "
            "'---'"
        )
    columns, col = [], []
    for line in spec.strip().splitlines():
        line = line.strip()
        if not line:
            continue
        if line == "---":
            columns.append(col)
            col = []
            continue
        name, _, note = line.partition(":")
        col.append((name.strip(), note.strip()))
    columns.append(col)
    if any(not c for c in columns):
        raise ValueError(
            "every column of spec needs at least one box (check the '---' separators)"
        )
    return columns


def _pos(c: int, r: int, box_w: float) -> tuple[float, float]:
    return PAD + c * (box_w + COL_GAP), PAD + r * (BOX_H + GAP)


def text_px(text: str, size: float) -> float:
    """The width in px of ``text`` at ``size`` px in DejaVu Sans: matplotlib's font, and
    the sans-serif a Linux browser draws these labels in (wider than most others)."""
    from matplotlib.font_manager import FontProperties
    from matplotlib.textpath import TextToPath

    prop = FontProperties(family="DejaVu Sans", size=size)
    return TextToPath().get_text_width_height_descent(text, prop, ismath=False)[0]


def _box_width(columns) -> int:
    """``BOX_W``, or wider where a label needs it: every box of a diagram is as wide as
    its widest label (names at 14 px, notes at 12.5) and ``TEXT_PAD`` on each side."""
    widest = max(
        max(text_px(name, 14), text_px(note, 12.5))
        for col in columns
        for name, note in col
    )
    return max(BOX_W, math.ceil(widest + 2 * TEXT_PAD))


def diagram_svg(spec: str, links=(), title: str | None = None) -> str:
    """The SVG markup of :func:`diagram` (a string)."""
    columns = _parse(spec)
    box_w = _box_width(columns)
    rows = max(len(c) for c in columns)
    width = 2 * PAD + len(columns) * box_w + (len(columns) - 1) * COL_GAP
    height = 2 * PAD + rows * BOX_H + (rows - 1) * GAP
    # never shrunk below the width at which its smallest text (12) is 10 px: on a phone
    # the figure scrolls sideways instead (issue 26)
    least = math.ceil(width * MIN_TEXT_PX / 12)
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" width="{width}" '
        f'style="max-width:100%;min-width:{least}px;height:auto;font-family:sans-serif" role="img" aria-label="{esc(title or "architecture")}">',
        '<defs><marker id="ptlm-arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" '
        'orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#555"/></marker></defs>',
    ]
    if title:
        out.append(f"<title>{esc(title)}</title>")
    for c, col in enumerate(columns):
        for r, (name, note) in enumerate(col):
            x, y = _pos(c, r, box_w)
            out.append(
                f'<rect x="{x}" y="{y}" width="{box_w}" height="{BOX_H}" rx="7" fill="#eef3fb" stroke="#4a6fa5"/>'
            )
            if note:
                out.append(
                    f'<text x="{x + box_w / 2}" y="{y + 19}" font-size="14" text-anchor="middle" fill="#1a1a1a">{esc(name)}</text>'
                )
                out.append(
                    f'<text x="{x + box_w / 2}" y="{y + 36}" font-size="12.5" text-anchor="middle" fill="#444">{esc(note)}</text>'
                )
            else:
                out.append(
                    f'<text x="{x + box_w / 2}" y="{y + 27}" font-size="14" text-anchor="middle" fill="#1a1a1a">{esc(name)}</text>'
                )
            if r + 1 < len(col):
                cx = x + box_w / 2
                out.append(
                    f'<line x1="{cx}" y1="{y + BOX_H}" x2="{cx}" y2="{y + BOX_H + GAP - 2}" stroke="#555" '
                    f'stroke-width="1.5" marker-end="url(#ptlm-arrow)"/>'
                )
    for link in links:
        if len(link) not in (4, 5):
            raise ValueError(
                f"links entries must be (from_col, from_row, to_col, to_row[, label]), "
                f"got {link!r}"
            )
        c0, r0, c1, r1 = link[:4]
        for c, r in ((c0, r0), (c1, r1)):
            if not (0 <= c < len(columns) and 0 <= r < len(columns[c])):
                raise ValueError(
                    f"links entry {link!r} points at column {c}, row {r}, which has no "
                    f"box"
                )
        x0, y0 = _pos(c0, r0, box_w)
        x1, y1 = _pos(c1, r1, box_w)
        sx = x0 + (box_w if c1 > c0 else 0)
        ex = x1 + (0 if c1 > c0 else box_w)
        out.append(
            f'<line x1="{sx}" y1="{y0 + BOX_H / 2}" x2="{ex}" y2="{y1 + BOX_H / 2}" stroke="#a5574a" '
            f'stroke-width="1.5" stroke-dasharray="5 3" marker-end="url(#ptlm-arrow)"/>'
        )
        if len(link) == 5:
            out.append(
                f'<text x="{(sx + ex) / 2}" y="{(y0 + y1 + BOX_H) / 2 - 6}" font-size="12" text-anchor="middle" '
                f'fill="#a5574a">{esc(link[4])}</text>'
            )
    out.append("</svg>")
    return "".join(out)


def diagram(spec: str, links=(), title: str | None = None):
    """Display the diagram of ``spec`` (see the module docstring) as inline SVG."""
    from IPython.display import HTML

    return HTML(
        f'<figure class="ptlm-diagram" style="margin:0.5em 0;overflow-x:auto">{diagram_svg(spec, links, title)}</figure>'
    )
