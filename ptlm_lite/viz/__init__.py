"""Widgets and plots for the book: they work in a live kernel, in Colab and in the
static book.

Every interactive piece is a *stepper* over views rendered in advance and switched in
the browser (``jslink``), because the static book has no kernel to run callbacks. Heavy
libraries (ipywidgets, matplotlib, bertviz, pandas) are imported inside the functions;
model code never imports this package. Introduced in ``book/widgets.ipynb`` ("How to use
the widgets").

* :func:`stepper` - switch among prepared views (HTML, matplotlib figures)
* :func:`mask_explorer`, :func:`permutation_explorer` - attention masks over labelled
  tokens
* :func:`attention_heatmaps`, :func:`bertviz_head_view`, :func:`bertviz_model_view` -
  attention maps
* :func:`comparison_table` - a table that filters and sorts in the browser
* :func:`table` - a DataFrame rounded, its empty cells a dash rather than ``NaN``
* :class:`TrainingCurve`, :func:`live_loss_plot` - a loss curve, live in a kernel, one
  clean figure after
* :func:`diagram` - an architecture diagram drawn from a few lines of text (inline SVG)
"""

from ._html import install_book_figures
from .attention_views import attention_heatmaps
from .bertviz_views import bertviz_head_view, bertviz_model_view
from .curves import TrainingCurve, live_loss_plot
from .diagram import diagram, diagram_svg
from .mask_views import mask_explorer, mask_table_html, permutation_explorer
from .stepper import stepper
from .tables import ComparisonTable, Table, comparison_table, table

__all__ = [
    "stepper",
    "mask_explorer",
    "mask_table_html",
    "permutation_explorer",
    "attention_heatmaps",
    "bertviz_head_view",
    "bertviz_model_view",
    "comparison_table",
    "ComparisonTable",
    "table",
    "Table",
    "TrainingCurve",
    "live_loss_plot",
    "diagram",
    "diagram_svg",
]

install_book_figures()  # the book's figure style and renderer, in a kernel only
