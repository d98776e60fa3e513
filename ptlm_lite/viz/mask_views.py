"""Mask explorers: boolean attention masks drawn as grids over labelled tokens.

Introduced in ``chapters/transformer.ipynb`` (padding, causal, bidirectional, cross) and
reused for prefix masks (UniLM), permutation masks (XLNet) and memory (Transformer-XL).
Polarity as everywhere in ``ptlm_lite``: ``True`` = may attend; rows are queries,
columns are keys.
"""

from __future__ import annotations

from typing import Mapping, Sequence

from ._html import HTML_FONTS as FONTS
from ._html import esc
from .stepper import stepper

ON, OFF = "#2f6db5", "#f1f1f1"  # may attend / may not
_STYLE = (
    "<style>.ptlm-mask{border-collapse:collapse;font:12px/1.2 " + FONTS + ";margin:4px "
    "8px 4px 0}"
    ".ptlm-mask td{width:22px;height:22px;padding:0;border:1px solid #fff}"
    ".ptlm-mask th{font-weight:normal;padding:1px 4px;white-space:nowrap}"
    ".ptlm-mask thead "
    "th{writing-mode:vertical-rl;transform:rotate(180deg);text-align:left;vertical-align:bottom}"
    ".ptlm-mask tbody th{text-align:right}"
    ".ptlm-mask td.y{background:" + ON + "}.ptlm-mask td.n{background:" + OFF + "}"
    ".ptlm-legend{font:12px " + FONTS + ";color:#333;margin:2px 0 6px}"
    ".ptlm-legend "
    "span{display:inline-block;width:12px;height:12px;vertical-align:middle;margin:0 "
    "4px 0 10px}"
    "</style>"
)
MAX_TABLE = 48  # above this many tokens a side, draw an image instead of an HTML table


def legend_html(extra: str = "") -> str:
    return (
        f'<div class="ptlm-legend">rows: queries, columns: keys'
        f'<span style="background:{ON}"></span>may attend (True)'
        f'<span style="background:{OFF};border:1px solid #ccc"></span>may not (False){extra}</div>'
    )


def _as_bool_matrix(name: str, mask):
    """Check one mask and return it as a nested list of bools, shape (Tq, Tk)."""
    import numpy as np

    try:
        import torch
    except ImportError:  # pragma: no cover - ptlm_lite needs torch anyway
        torch = None
    if torch is not None and isinstance(mask, torch.Tensor):
        if mask.dtype != torch.bool:
            raise TypeError(
                f"mask {name!r} must be a bool tensor (True = may attend), got "
                f"{mask.dtype}; "
                "use mask.bool() or a comparison such as mask > 0"
            )
        arr = mask.detach().cpu().numpy()
    elif isinstance(mask, np.ndarray):
        if mask.dtype != np.bool_:
            raise TypeError(
                f"mask {name!r} must be a bool array (True = may attend), got "
                f"{mask.dtype}"
            )
        arr = mask
    else:
        raise TypeError(
            f"mask {name!r} must be a bool torch tensor or numpy array of shape (Tq, "
            f"Tk), "
            f"got {type(mask).__name__}"
        )
    # a batch of one, e.g. masks.cross_mask(...)
    if arr.ndim == 3 and arr.shape[0] == 1:
        arr = arr[0]
    if arr.ndim != 2:
        raise ValueError(
            f"mask {name!r} must be 2-D (Tq, Tk) (or (1, Tq, Tk)), got shape "
            f"{tuple(arr.shape)}"
        )
    return arr


def mask_table_html(
    mask,
    tokens: Sequence[str],
    key_tokens: Sequence[str] | None = None,
    row_notes: Sequence[str] | None = None,
    caption: str = "",
) -> str:
    """One boolean mask as an HTML grid (no styles beyond a small shared ``<style>``)."""
    arr = _as_bool_matrix("mask", mask)
    key_tokens = list(tokens) if key_tokens is None else list(key_tokens)
    Tq, Tk = arr.shape
    if max(Tq, Tk) > MAX_TABLE:
        return _mask_image_html(arr, tokens, key_tokens, caption)
    # tooltips cost bytes; keep them for the small grids people hover over
    tips = max(Tq, Tk) <= 24
    head = "".join(f"<th>{esc(k)}</th>" for k in key_tokens)
    rows = []
    for i in range(Tq):
        label = esc(tokens[i]) + (
            f' <small style="color:#777">{esc(row_notes[i])}</small>'
            if row_notes
            else ""
        )
        cells = []
        for j in range(Tk):
            ok = bool(arr[i, j])
            t = (
                f' title="{esc(tokens[i])} \u2192 {esc(key_tokens[j])}: {"may" if ok else "may not"} attend"'
                if tips
                else ""
            )
            cells.append(f'<td class="{"y" if ok else "n"}"{t}></td>')
        rows.append(f"<tr><th>{label}</th>{''.join(cells)}</tr>")
    cap = (
        f'<caption style="caption-side:top;text-align:left;font-weight:600">{esc(caption)}</caption>'
        if caption
        else ""
    )
    return (
        f'<table class="ptlm-mask" data-shape="{Tq}x{Tk}">{cap}<thead><tr><th></th>{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


def _mask_image_html(arr, tokens, key_tokens, caption):
    from matplotlib.colors import ListedColormap

    from ._html import figure_to_html, new_figure

    Tq, Tk = arr.shape
    fig = new_figure((min(8, 2 + Tk * 0.08), min(8, 2 + Tq * 0.08)))
    ax = fig.add_subplot(111)
    ax.imshow(
        arr, cmap=ListedColormap([OFF, ON]), vmin=0, vmax=1, interpolation="nearest"
    )
    ax.set_xlabel("keys")
    ax.set_ylabel("queries")
    if caption:
        ax.set_title(caption)
    return figure_to_html(fig, alt=caption)


def _check_tokens(name, tokens, n, what):
    if isinstance(tokens, str) or not isinstance(tokens, Sequence):
        raise TypeError(
            f"{name} must be a list of token labels (str), got {type(tokens).__name__}"
        )
    if len(tokens) != n:
        raise ValueError(
            f"{name} must have one label per {what}: the masks have {n}, "
            f"{name} has {len(tokens)} ({list(tokens)!r})"
        )


def mask_explorer(
    masks: Mapping[str, object],
    tokens: Sequence[str],
    key_tokens: Sequence[str] | None = None,
    *,
    control: str = "auto",
    description: str = "mask",
):
    """Switch among named boolean masks drawn over labelled tokens, with a legend.

    ``masks`` maps a name to a bool tensor ``(Tq, Tk)`` (True = may attend; ``(1, Tq,
    Tk)`` is accepted too); all masks must have the same shape. ``tokens`` label the
    rows (queries) and, unless ``key_tokens`` is given (cross attention), the columns
    (keys). Introduced in ``chapters/transformer.ipynb``; see
    :func:`ptlm_lite.viz.stepper` for why it works offline.

    >>> from ptlm_lite import masks
    >>> mask_explorer({"causal": masks.causal_mask(4), "bidirectional": masks.full_mask(4)},
    ...               ["the", "cat", "sat", "."])  # doctest: +SKIP
    """
    if not isinstance(masks, Mapping):
        raise TypeError(
            f"masks must be a dict {{name: bool tensor (Tq, Tk)}}, got "
            f"{type(masks).__name__}"
        )
    if not masks:
        raise ValueError(
            "masks is empty: give at least one {name: bool tensor (Tq, Tk)}"
        )
    arrays = {str(k): _as_bool_matrix(str(k), v) for k, v in masks.items()}
    shapes = {k: tuple(a.shape) for k, a in arrays.items()}
    first = next(iter(shapes))
    for k, s in shapes.items():
        if s != shapes[first]:
            raise ValueError(
                "all masks must have the same shape (Tq, Tk); got "
                + ", ".join(f"{n!r}: {s}" for n, s in shapes.items())
            )
    Tq, Tk = shapes[first]
    _check_tokens("tokens", tokens, Tq, "query (mask row)")
    if key_tokens is None:
        if Tk != Tq:
            raise ValueError(
                f"the masks are {Tq}x{Tk} (queries x keys): pass key_tokens with {Tk} "
                f"labels "
                "for the keys"
            )
        key_tokens = tokens
    else:
        _check_tokens("key_tokens", key_tokens, Tk, "key (mask column)")
    views = {}
    for name, arr in arrays.items():
        n = int(arr.sum())
        views[name] = (
            _STYLE
            + mask_table_html(arr, tokens, key_tokens)
            + legend_html(f" &nbsp;·&nbsp; {n} of {Tq * Tk} pairs may attend")
        )
    return stepper(views, control=control, description=description)


def permutation_explorer(
    tokens: Sequence[str],
    orders: Sequence[Sequence[int]],
    *,
    control: str = "auto",
    description: str = "order",
):
    """XLNet's permutation LM: for each factorisation order, the order and its two
    masks.

    The content stream (``h``) of a position may see itself and every position earlier
    in the order; the query stream (``g``) may see only the earlier ones, never its own
    token, because it has to predict that token. Masks come from
    :func:`ptlm_lite.masks.permutation_masks`. Introduced in the XLNet chapter (the
    articles' "我爱生活" example).
    """
    from ptlm_lite.masks import permutation_masks

    if isinstance(tokens, str) or not isinstance(tokens, Sequence):
        raise TypeError(
            f"tokens must be a list of token labels, got {type(tokens).__name__}"
        )
    if isinstance(orders, (str, bytes)) or not hasattr(orders, "__len__"):
        raise TypeError(
            f"orders must be a list of permutations of range(len(tokens)), got "
            f"{type(orders).__name__}"
        )
    if len(orders) == 0:
        raise ValueError(
            "orders is empty: give at least one permutation of range(len(tokens))"
        )
    T = len(tokens)
    views = {}
    for order in orders:
        order = [
            int(i) for i in (order.tolist() if hasattr(order, "tolist") else order)
        ]
        if len(order) != T:
            raise ValueError(
                f"each order must be a permutation of range({T}) (one entry per "
                f"token); got {order}"
            )
        content, query = permutation_masks(order)
        rank = {pos: r for r, pos in enumerate(order)}
        notes = [f"#{rank[i] + 1}" for i in range(T)]
        label = "\u2192".join(str(i) for i in order)
        steps = " \u2192 ".join(f"{esc(tokens[i])}<sub>{i}</sub>" for i in order)
        body = (
            f'<div style="font:14px {esc(FONTS)};margin:2px 0 6px">factorisation order: {steps}</div>'
            '<div style="display:flex;flex-wrap:wrap;gap:12px">'
            + mask_table_html(
                content,
                tokens,
                row_notes=notes,
                caption="content stream h: sees itself",
            )
            + mask_table_html(
                query, tokens, row_notes=notes, caption="query stream g: not itself"
            )
            + "</div>"
            + legend_html(
                " &nbsp;·&nbsp; #k: the k-th position predicted in this order"
            )
        )
        views[label] = _STYLE + body
    if len(views) != len(orders):
        raise ValueError("orders contains the same permutation twice")
    return stepper(views, control=control, description=description)
