"""The stepper: one control that switches among views prepared in advance.

Introduced in ``book/widgets.ipynb``; every explorer in this package is a stepper.

Why precompute? The static book has no kernel, so a callback (``interact``, ``observe``)
never runs there. A link made with ``jslink`` runs in the browser, though, and the
widget state stored with the notebook keeps every view. So we render all views up front
and let the browser switch: ``ToggleButtons.index`` (or ``SelectionSlider.index``,
whose readout is the selected view's label) is linked to ``Stack.selected_index``.
Colab has shipped ipywidgets 7, which has no ``Stack``; there we fall back to ``Tab``,
which both versions have (its tab bar then doubles as a second control).
"""

from __future__ import annotations

from typing import Mapping, Sequence

from ._html import esc, figure_to_html

STEPPER_CLASS = "ptlm-stepper"  # the browser tests find steppers by this class
SLIDER_CLASS = "ptlm-slider"  # a stepper's slider: its readout is the view's label


def _unique(labels: Sequence[str]) -> list[str]:
    """``labels`` made distinct (a SelectionSlider needs distinct options): a repeated
    label gets " (2)", " (3)", ... appended."""
    seen: dict[str, int] = {}
    out = []
    for label in labels:
        seen[label] = seen.get(label, 0) + 1
        out.append(label if seen[label] == 1 else f"{label} ({seen[label]})")
    return out


def to_html(view, dpi: int = 80) -> str:
    """Turn one view into an HTML string: a str is HTML already; a matplotlib figure
    becomes an embedded PNG; anything with ``_repr_html_`` (pandas,
    IPython.display.HTML) gives its HTML.
    """
    if isinstance(view, str):
        return view
    if hasattr(view, "savefig"):  # a matplotlib Figure
        return figure_to_html(view, dpi=dpi)
    if hasattr(view, "_repr_html_"):
        out = view._repr_html_()
        if out is not None:
            return out
    if hasattr(view, "data") and isinstance(getattr(view, "data"), str):
        return view.data
    raise TypeError(
        "each view must be an HTML string, a matplotlib Figure, an object with "
        "_repr_html_ or an "
        f"ipywidgets widget; got {type(view).__name__}"
    )


def stepper(
    views: Sequence | Mapping,
    labels: Sequence[str] | None = None,
    *,
    control: str = "auto",
    description: str = "",
    dpi: int = 80,
):
    """A widget that shows one of ``views`` at a time, chosen by toggle buttons or a
    slider.

    ``views`` is a list of views or a ``{label: view}`` dict. A view is an HTML string,
    a matplotlib Figure (rendered once to a small PNG and closed), anything with
    ``_repr_html_``, or a widget. ``control`` is ``"buttons"``, ``"slider"`` or
    ``"auto"`` (buttons for a few short labels, else a slider; with a slider each view
    carries its label as a caption). The switching happens in the browser (``jslink``),
    so it works without a kernel: in the static book as in Jupyter or Colab.

    Returns an ``ipywidgets.VBox`` with the CSS class ``ptlm-stepper``.
    """
    import ipywidgets as w

    if isinstance(views, Mapping):
        if labels is not None:
            raise TypeError(
                "give labels either as the keys of a views dict or as labels=, not both"
            )
        labels = [str(k) for k in views.keys()]
        views = list(views.values())
    elif isinstance(views, (str, bytes)) or not isinstance(views, Sequence):
        raise TypeError(
            f"views must be a list of views or a dict {{label: view}}, got "
            f"{type(views).__name__}"
        )
    views = list(views)
    if not views:
        raise ValueError(
            "stepper needs at least one view; got none (an empty list or dict)"
        )
    if labels is None:
        labels = [str(i + 1) for i in range(len(views))]
    labels = [str(x) for x in labels]
    if len(labels) != len(views):
        raise ValueError(
            f"labels must have one entry per view: {len(labels)} labels for "
            f"{len(views)} views"
        )
    if control not in ("auto", "buttons", "slider"):
        raise ValueError(
            f"control must be 'auto', 'buttons' or 'slider', got {control!r}"
        )
    if control == "auto":
        control = (
            "buttons"
            if len(views) <= 8 and sum(len(x) for x in labels) <= 80
            else "slider"
        )

    children = []
    for label, view in zip(labels, views):
        if isinstance(view, w.Widget):
            children.append(view)
            continue
        body = to_html(view, dpi=dpi)
        # the slider shows a number only: let the view say what it is
        if control == "slider":
            body = (
                f'<div style="font-weight:600;margin:2px 0 4px">{esc(label)}</div>'
                + body
            )
        children.append(w.HTML(value=body))

    if hasattr(w, "Stack"):  # ipywidgets >= 8
        pages = w.Stack(children=children, selected_index=0)
    else:  # ipywidgets 7 (Colab): Tab exists in both
        pages = w.Tab(children=children)
        for i, label in enumerate(labels):
            pages.set_title(i, label)
        pages.selected_index = 0

    if control == "buttons":
        ctrl = w.ToggleButtons(
            options=labels,
            description=description,
            style={"button_width": "auto", "description_width": "initial"},
        )
        ctrl.index = 0
        w.jslink((ctrl, "index"), (pages, "selected_index"))
    else:
        # The slider's readout is the label of the view it selects ("τ = 2.0", not
        # "3"): a SelectionSlider over the labels, linked by index (issue 26).
        ctrl = w.SelectionSlider(
            options=_unique(labels),
            index=0,
            description=description,
            continuous_update=True,
            readout=True,
            style={"description_width": "initial"},
        )
        ctrl.add_class(SLIDER_CLASS)
        w.jslink((ctrl, "index"), (pages, "selected_index"))
    box = w.VBox([ctrl, pages])
    box.add_class(STEPPER_CLASS)
    return box
