"""Small HTML helpers shared by the widgets: figures as embedded images, escaping, ids.

Everything here returns plain strings, so a view works the same in a live kernel, in
Colab and in the static book (where there is no kernel, only the HTML stored in the
notebook).
"""

from __future__ import annotations

import base64
import hashlib
import html
import io
import itertools

_counter = itertools.count()


def esc(text) -> str:
    """HTML-escape any value (tokens such as ``<pad>`` must show as text, not tags)."""
    return html.escape(str(text), quote=True)


def stable_id(prefix: str, *content) -> str:
    """An element id that depends on the content and on how many ids this kernel made
    before.

    Unlike a random uuid it is the same every time a notebook runs top to bottom, so
    stored outputs do not change for nothing (and nbval can compare them).
    """
    h = hashlib.sha1(repr(content).encode()).hexdigest()[:8]
    return f"{prefix}-{h}-{next(_counter)}"


def figure_to_png(fig, dpi: int = 80, colors: int | None = 256) -> bytes:
    """Render a matplotlib figure to PNG bytes, small: a modest dpi and (optionally) a
    palette.

    A 256-colour palette roughly halves heatmaps and line plots with no visible change,
    which keeps pages with a dozen precomputed views under the book's 1 MB budget.
    """
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight", facecolor="white")
    data = buf.getvalue()
    if colors:
        try:
            from PIL import Image  # matplotlib depends on Pillow, so it is there

            img = Image.open(io.BytesIO(data)).convert("RGB")
            out = io.BytesIO()
            img.quantize(colors=colors, method=Image.Quantize.MEDIANCUT).save(
                out, format="PNG", optimize=True
            )
            if out.tell() < len(data):
                data = out.getvalue()
        except Exception:  # any Pillow trouble: keep the plain PNG
            pass
    return data


def figure_to_html(
    fig, dpi: int = 80, alt: str = "", close: bool = True, max_width: str = "100%"
) -> str:
    """A matplotlib figure as an ``<img>`` with the PNG embedded (a data URI: no file,
    no server).
    """
    png = figure_to_png(fig, dpi=dpi)
    if close:
        _close(fig)
    b64 = base64.b64encode(png).decode("ascii")
    return (
        f'<img src="data:image/png;base64,{b64}" alt="{esc(alt)}" '
        f'style="max-width:{max_width};height:auto">'
    )


def _close(fig) -> None:
    # Figures made with matplotlib.figure.Figure are not known to pyplot; those made
    # with pyplot are, and would be shown a second time at the end of the cell by the
    # inline backend.
    try:
        import matplotlib.pyplot as plt

        plt.close(fig)
    except Exception:
        pass


def new_figure(figsize):
    """A figure pyplot does not know about: nothing is displayed unless we display it."""
    from matplotlib.figure import Figure

    return Figure(figsize=figsize)
