"""Views as a live kernel shows them (Jupyter, Colab, VS Code), outside the static book:
in headless Chromium with every request refused, as on a machine with no network.

Every test is marked ``browser``; they need Chromium and playwright, not the built book.
"""

from __future__ import annotations

import pytest
import torch

pytestmark = pytest.mark.browser

TOKENS = ["[CLS]", "the", "cat", "sat", "[SEP]"]


def _attentions(layers=2, heads=2):
    T = len(TOKENS)
    g = torch.Generator().manual_seed(0)
    return [torch.rand(1, heads, T, T, generator=g).softmax(-1) for _ in range(layers)]


def _offline_page(browser, html: str):
    """A page holding ``html`` (as a notebook's output cell would), every request
    aborted and recorded, a jQuery of the page's own in place first."""
    page = browser.new_context().new_page()
    outside, errors = [], []

    def refuse(route):
        outside.append(route.request.url)
        route.abort()

    page.route("**/*", refuse)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.set_content(
        "<html><head><script>window.jQuery = window.$ = 'the page own';</script>"
        f"</head><body>{html}</body></html>"
    )
    return page, outside, errors


@pytest.mark.parametrize("view", ["bertviz_head_view", "bertviz_model_view"])
def test_bertviz_in_a_kernel_draws_with_no_network(browser, monkeypatch, view):
    pytest.importorskip("bertviz")
    from ptlm_lite import viz

    monkeypatch.delenv("PTLM_BERTVIZ_SCRIPTS", raising=False)  # a reader's kernel
    html = getattr(viz, view)(_attentions(), TOKENS).data
    page, outside, errors = _offline_page(browser, html)
    try:
        page.locator(".ptlm-bertviz svg text").first.wait_for(timeout=10_000)
        if view == "bertviz_model_view":  # thumbnails: a click shows one head's tokens
            page.evaluate("""() => Array.from(document.querySelectorAll('svg rect'))
                .find(r => r.style.opacity === '0')
                .dispatchEvent(new MouseEvent('click', {bubbles: true}))""")
        drawn = {t.strip() for t in page.locator("svg text").all_text_contents()}
        assert set(TOKENS) <= drawn, f"tokens not drawn: {set(TOKENS) - drawn}"
        assert not outside, f"requests left the machine: {outside}"
        assert not errors, errors
        # bertviz's jQuery and d3 stay inside the view: the page's own are untouched
        assert page.evaluate("[window.jQuery, window.$, typeof window.d3]") == [
            "the page own",
            "the page own",
            "undefined",
        ]
    finally:
        page.context.close()


def test_bertviz_linked_view_says_why_it_is_empty_offline(browser, monkeypatch):
    """A stored view opened in Jupyter on a machine with no network: its scripts come
    from the CDNs, which fail; the view says so and how to draw it offline."""
    pytest.importorskip("bertviz")
    from ptlm_lite import viz

    monkeypatch.setenv("PTLM_BERTVIZ_SCRIPTS", "linked")
    html = viz.bertviz_head_view(_attentions(), TOKENS).data
    page, outside, _ = _offline_page(browser, html)
    try:
        note = page.locator(".ptlm-bertviz-offline")
        note.wait_for(timeout=10_000)
        assert "scripts/install.sh" in note.text_content()
        assert any("cdnjs" in u for u in outside)  # it tried the CDN, and only that
    finally:
        page.context.close()


def test_bertviz_linked_view_says_why_it_is_empty_where_require_js_is_loaded(
    browser, monkeypatch
):
    """Classic Notebook loads require.js itself: offline, the view's d3 and jQuery are
    what fails to load, and the view says so too."""
    pytest.importorskip("bertviz")
    from ptlm_lite import viz
    from ptlm_lite.viz import bertviz_views

    require = bertviz_views.vendor_dir() / "require.js"  # scripts/assets.py puts it
    if not require.is_file():
        pytest.fail(f"no {require}: run python scripts/assets.py", pytrace=False)
    monkeypatch.setenv("PTLM_BERTVIZ_SCRIPTS", "linked")
    html = viz.bertviz_head_view(_attentions(), TOKENS).data
    script = f"<script>{require.read_text(encoding='utf-8')}</script>"
    page, outside, errors = _offline_page(browser, script + html)
    try:
        assert page.evaluate("typeof window.requirejs") == "function"
        note = page.locator(".ptlm-bertviz-offline")
        note.wait_for(timeout=10_000)
        assert "scripts/install.sh" in note.text_content()
        assert note.count() == 1
        assert any("cdnjs" in u and "d3" in u for u in outside), outside
        assert not errors, errors  # the errback took the failure: no uncaught error
    finally:
        page.context.close()
