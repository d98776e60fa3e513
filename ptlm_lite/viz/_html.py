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
import math

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


# Figures in the book: labels at least 10 CSS px where the reader sees them, on a
# desktop and on a phone (issues 12 and 26). Every PNG the package renders records, in a
# PNG text chunk, its smallest font size in pixels at the image's own resolution; the
# browser tests scale that by the width the page shows the image at (1280 and 390 px
# windows) and fail below MIN_LABEL_PX.
BOOK_DPI = 100  # CSS px per inch of an inline figure (plt.show): 6.4 in -> 640 px
PIXEL_RATIO = 2  # inline figures render at 2x BOOK_DPI and are shown at half: sharp
# The narrowest column a figure is shown in: a cell's output is 358 CSS px wide on a
# 390-px phone, a widget's view a little less. A wider figure shrinks to fit, and its
# text with it, so figure_to_png narrows a figure until its smallest text keeps
# MIN_LABEL_PX there (see fit_for_phone).
PHONE_PX = 340
MIN_LABEL_PX = 10
FONT_KEY = "ptlm:min_font_px"
# The book's CJK and emoji fonts (scripts/cjk_font.py): Noto Sans SC and Noto Emoji cut
# to the characters the book uses, fallbacks after matplotlib's own font, so "我爱生活"
# is not drawn as boxes on a machine without CJK fonts.
CJK_FONT = "Noto Sans SC Book"
BOOK_FONTS = {CJK_FONT: "NotoSansSC-book.ttf", "Noto Emoji Book": "NotoEmoji-book.ttf"}
# the font stack of the widgets' own HTML: the book's pages serve the two fonts
# (scripts/assets.py); elsewhere the names are skipped
HTML_FONTS = 'sans-serif, "Noto Sans SC Book", "Noto Emoji Book"'
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


def register_fonts() -> str | None:
    """Register the book's CJK and emoji fonts (package data) with matplotlib and add
    them to ``font.family`` as fallbacks; returns the CJK font file's path (``None``
    when the package lacks it). Called by the kernel's set-up and :func:`new_figure`."""
    from pathlib import Path

    import matplotlib
    from matplotlib import font_manager

    folder = Path(__file__).resolve().parents[1] / "data" / "fonts"
    known = {f.name for f in font_manager.fontManager.ttflist}
    family = list(matplotlib.rcParams["font.family"])
    for name, file in BOOK_FONTS.items():
        if not (folder / file).exists():
            continue
        if name not in known:
            font_manager.fontManager.addfont(str(folder / file))
        if name not in family:
            family.append(name)
    matplotlib.rcParams["font.family"] = family
    path = folder / BOOK_FONTS[CJK_FONT]
    return str(path) if path.exists() else None


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


def _save_png(fig, dpi: float) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight", facecolor="white")
    return buf.getvalue()


def _with_text(png: bytes, meta: dict) -> bytes:
    """``png`` with one ``tEXt`` chunk per item of ``meta``, right after its header
    (the font size is known only once the figure is drawn, and drawing it a second time
    to pass it to ``savefig`` would cost a third of the rendering)."""
    import struct
    import zlib

    chunks = b""
    for key, value in meta.items():
        body = b"tEXt" + key.encode("latin-1") + b"\0" + value.encode("latin-1")
        crc = struct.pack(">I", zlib.crc32(body))
        chunks += struct.pack(">I", len(body) - 4) + body + crc
    # the signature (8 bytes) and the IHDR chunk (25) always come first
    return png[:33] + chunks + png[33:]


def png_size(png: bytes) -> tuple[int, int]:
    """(width, height) in pixels, from the PNG's header."""
    import struct

    return struct.unpack(">II", png[16:24])


def _relayout(fig) -> None:
    # a layout engine (constrained, tight) runs again at the next draw by itself; a
    # figure laid out once (plt.tight_layout()) or never is laid out tight again
    engine = fig.get_layout_engine()
    if engine is None or type(engine).__name__ == "PlaceHolderLayoutEngine":
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fig.tight_layout()


def fit_for_phone(png: bytes, font_px: float | None, scale: float) -> float:
    """How many pixels of ``png`` to take off its width so that, shown at most
    ``PHONE_PX`` CSS px wide (``1 / scale`` CSS px per pixel), its smallest text
    (``font_px`` pixels) is still ``MIN_LABEL_PX``; 0 when it already is."""
    if font_px is None:
        return 0.0
    width = png_size(png)[0]
    if font_px * min(width / scale, PHONE_PX) / width >= MIN_LABEL_PX:
        return 0.0
    return width - font_px * PHONE_PX / MIN_LABEL_PX


def figure_to_png(
    fig,
    dpi: int = 80,
    colors: int | None = 256,
    *,
    scale: float = 1,
    fit: bool = True,
) -> bytes:
    """Render a matplotlib figure to PNG bytes, small: a modest dpi and (optionally) a
    palette.

    ``dpi`` is CSS px per inch where the page shows the figure; ``scale`` pixels per CSS
    px (2: a sharp image, shown at half its pixel width). With ``fit`` a figure too wide
    for its smallest text to stay legible on a phone is narrowed (its fonts unchanged,
    the layout redone: :func:`fit_for_phone`), but not below 55% of its width or 3.2
    in: a figure that would need more (a legend outside the axes) stays as it is, and
    the browser tests say so. A 256-colour palette roughly halves
    heatmaps and line plots with no visible change, which keeps pages with a dozen
    precomputed views under the book's 1 MB budget. The PNG carries its smallest font
    size in pixels at its own resolution (text chunk ``FONT_KEY``).
    """
    render = dpi * scale
    w0 = fig.get_size_inches()[0]
    for _ in range(6):
        data = _save_png(fig, render)
        px = min_font_px(fig, render)  # after the save: tick labels get text when drawn
        excess = fit_for_phone(data, px, scale) if fit else 0.0
        if excess <= 0:
            break
        # take the excess off the figure's width (text and legends outside the axes
        # keep their size, so a plain scale would not do), the height in proportion
        w, h = fig.get_size_inches()
        narrower = w - 1.05 * excess / render
        if narrower < max(3.2, 0.55 * w0):
            break  # text that does not shrink (an outside legend) fills it: redraw it
        fig.set_size_inches(narrower, h * narrower / w)
        _relayout(fig)
    meta = {FONT_KEY: "none" if px is None else f"{px:.2f}"}
    data = _with_text(data, meta)
    if colors:
        try:
            from PIL import Image, PngImagePlugin  # matplotlib depends on Pillow

            img = Image.open(io.BytesIO(data)).convert("RGB")
            info = PngImagePlugin.PngInfo()
            for key, v in meta.items():
                info.add_text(key, v)
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


def book_png(fig):
    """The inline PNG of a figure in the book: rendered at ``PIXEL_RATIO`` x
    ``BOOK_DPI``, narrowed for a phone when needed, and shown at ``BOOK_DPI`` (the
    ``width`` metadata); returns ``(png, metadata)`` for IPython's PNG formatter."""
    png = figure_to_png(fig, dpi=BOOK_DPI, colors=None, scale=PIXEL_RATIO)
    return png, {"width": round(png_size(png)[0] / PIXEL_RATIO)}


def install_book_figures() -> None:
    """In an IPython kernel: the book's matplotlib style, and inline figures rendered by
    :func:`book_png` (so they are sharp, fit a phone and record their smallest font).

    matplotlib loads its backend lazily, on the first figure, and matplotlib-inline then
    installs its own PNG formatter: the backend is loaded here first
    (``pyplot.switch_backend``), so that ours, installed after, stays. Outside IPython:
    nothing.
    """
    try:
        from IPython import get_ipython
    except ImportError:
        return
    ip = get_ipython()
    if ip is None or not hasattr(ip, "display_formatter"):
        return
    import matplotlib
    import matplotlib.pyplot as plt
    from matplotlib.figure import Figure

    plt.switch_backend(matplotlib.get_backend())  # load it now: see above
    matplotlib.rcParams.update(BOOK_RC)
    register_fonts()
    png = ip.display_formatter.formatters["image/png"]
    png.for_type(Figure, book_png)


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
    # never shrunk below the width at which its smallest text is MIN_LABEL_PX: on a
    # narrower screen (a phone) the figure scrolls sideways in its box instead (issue 26)
    width, px = png_size(png)[0], png_font_px(png)
    least = min(width, math.ceil(width * MIN_LABEL_PX / px)) if px else 0
    return (
        f'<div style="overflow-x:auto"><img src="data:image/png;base64,{b64}" '
        f'alt="{esc(alt)}" style="max-width:{max_width};min-width:{least}px;'
        f'height:auto"></div>'
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

    register_fonts()  # before any text exists: its font family is fixed when it is made
    return Figure(figsize=figsize)
