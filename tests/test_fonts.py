"""The book's CJK font (issue 26): "我爱生活" and the glossary's terms render as
characters, not boxes, on a machine without CJK fonts. The font is a subset of Noto
Sans SC shipped as package data (scripts/cjk_font.py); ptlm_lite.viz registers it with
matplotlib, and scripts/assets.py serves it to the pages (tests/browser checks those).
"""

from __future__ import annotations

import importlib.util
import io
import pathlib
import warnings

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _cjk_font():
    spec = importlib.util.spec_from_file_location("cjk", ROOT / "scripts/cjk_font.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_font_has_every_cjk_character_of_the_book():
    cjk = _cjk_font()
    chars = cjk.book_characters()
    assert set("我爱生活") <= chars  # the XLNet chapter's example is found
    for _, prefix, font, _, ranges in cjk.FONTS:
        lacking = cjk.book_characters(ranges=ranges) - cjk.font_characters(font)
        assert not lacking, (
            f"{font.name} lacks {''.join(sorted(lacking))}: rerun "
            "python scripts/cjk_font.py"
        )
        licence = (cjk.FONT_DIR / f"OFL-{prefix}.txt").read_text()
        assert "SIL Open Font License" in licence


def test_matplotlib_draws_the_characters_with_a_font_that_has_them():
    from matplotlib import font_manager

    from ptlm_lite.viz._html import CJK_FONT, new_figure

    fig = new_figure((3, 1))  # registers the font, as every figure of the package does
    fig.text(0.1, 0.5, "我爱生活 · 哈尔滨 · すでは · 🙂")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fig.savefig(io.BytesIO(), format="png")  # draws every glyph
    missing = [str(w.message) for w in caught if "missing from font" in str(w.message)]
    assert not missing, missing
    found = font_manager.fontManager.findfont(
        font_manager.FontProperties(family=CJK_FONT), fallback_to_default=False
    )
    assert found.endswith("NotoSansSC-book.ttf")
