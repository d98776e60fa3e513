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


# Figures in the book: labels at least 10 px where the reader sees them (issue 12).
# Every PNG the package renders records, in a PNG text chunk, its smallest font size in
# pixels at the image's own resolution; the browser tests scale that by the width the
# page shows the image at and fail below MIN_LABEL_PX.
BOOK_DPI = 100  # inline figures (plt.show) render at this resolution
MIN_LABEL_PX = 10
FONT_KEY = "ptlm:min_font_px"
BOOK_RC = {  # the book's matplotlib style (font sizes in points; 1 pt = dpi / 72 px)
    "figure.figsize": (6.4, 3.4),
    "figure.dpi": BOOK_DPI,
    "font.size": 11,
    "axes.titlesize": 11,
    "axes.labelsize": 11,
    "xtick.labelsize": 10,
    "ytick.labelsize": 10,
    "legend.fontsize": 10,
    "figure.titlesize": 11,
}


def min_font_px(fig, dpi: float) -> float | None:
    """The smallest font size, in pixels at ``dpi``, among the figure's visible texts
    (``None`` when it has none)."""
    from matplotlib.text import Text

    sizes = [
        t.get_fontsize()
        for t in fig.findobj(Text)
        if t.get_visible() and t.get_text().strip() and t.get_figure() is not None
    ]
    return min(sizes) * dpi / 72 if sizes else None


def figure_to_png(fig, dpi: int = 80, colors: int | None = 256) -> bytes:
    """Render a matplotlib figure to PNG bytes, small: a modest dpi and (optionally) a
    palette.

    A 256-colour palette roughly halves heatmaps and line plots with no visible change,
    which keeps pages with a dozen precomputed views under the book's 1 MB budget. The
    PNG carries its smallest font size in pixels (text chunk ``FONT_KEY``).
    """
    px = min_font_px(fig, dpi)
    meta = {FONT_KEY: "none" if px is None else f"{px:.2f}"}
    buf = io.BytesIO()
    fig.savefig(
        buf,
        format="png",
        dpi=dpi,
        bbox_inches="tight",
        facecolor="white",
        metadata=meta,
    )
    data = buf.getvalue()
    if colors:
        try:
            from PIL import Image, PngImagePlugin  # matplotlib depends on Pillow

            img = Image.open(io.BytesIO(data)).convert("RGB")
            info = PngImagePlugin.PngInfo()
            for k, v in meta.items():
                info.add_text(k, v)
            out = io.BytesIO()
            img.quantize(colors=colors, method=Image.Quantize.MEDIANCUT).save(
                out, format="PNG", optimize=True, pnginfo=info
            )
            if out.tell() < len(data):
                data = out.getvalue()
        except Exception:  # any Pillow trouble: keep the plain PNG
            pass
    return data


def png_font_px(png: bytes) -> float | None:
    """Read back the smallest font size recorded by :func:`figure_to_png` (None if
    the PNG has no record or no text)."""
    import struct

    i = 8
    while i + 8 <= len(png):
        (n,) = struct.unpack(">I", png[i : i + 4])
        kind = png[i + 4 : i + 8]
        if kind == b"tEXt":
            key, _, value = png[i + 8 : i + 8 + n].partition(b"\0")
            if key.decode("latin-1") == FONT_KEY:
                v = value.decode("latin-1")
                return None if v == "none" else float(v)
        if kind == b"IEND":
            break
        i += 12 + n
    return None


def install_book_figures() -> None:
    """In an IPython kernel: the book's matplotlib style, and inline figures rendered by
    :func:`figure_to_png` at ``BOOK_DPI`` (so they record their smallest font size).

    pyplot is imported first, so that matplotlib-inline has set up its own PNG
    formatter (once per kernel) before ours replaces it. Outside IPython: nothing.
    """
    try:
        from IPython import get_ipython
    except ImportError:
        return
    ip = get_ipython()
    if ip is None or not hasattr(ip, "display_formatter"):
        return
    import matplotlib
    import matplotlib.pyplot  # noqa: F401  (sets up the inline backend first)
    from matplotlib.figure import Figure

    matplotlib.rcParams.update(BOOK_RC)
    png = ip.display_formatter.formatters["image/png"]
    png.for_type(Figure, lambda fig: figure_to_png(fig, dpi=BOOK_DPI))


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
