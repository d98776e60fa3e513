"""The static book in headless Chromium: offline, no JavaScript errors, widgets that
respond.

Run with ``python -m pytest tests/browser -q`` (the fixtures build the book when
_build/html is missing). Every test is marked ``browser``.
"""

from __future__ import annotations

import json
import re

import pytest

from .conftest import ROOT, SITE, open_page, toc_pages

pytestmark = pytest.mark.browser

PAGES = toc_pages()
MAX_PAGE_BYTES = 1_000_000


@pytest.mark.parametrize("path", PAGES)
def test_page_loads_without_javascript_errors(visits, path):
    v = visits[path]
    assert not v.errors, f"{path}: JavaScript errors:\n" + "\n".join(v.errors)


@pytest.mark.parametrize("path", PAGES)
def test_no_request_leaves_the_machine(visits, path):
    v = visits[path]
    assert len(v.outside) == 0, f"{path} asked other hosts for: {v.outside}"


@pytest.mark.parametrize("path", PAGES)
def test_page_is_under_one_megabyte(site, path):
    size = (site / path).stat().st_size
    assert size < MAX_PAGE_BYTES, f"{path} is {size / 1e6:.2f} MB (budget 1 MB)"


SIGNATURE = """root => {
  const imgs = Array.from(root.querySelectorAll('img')).filter(i => i.offsetParent !== null)
                    .map(i => i.src.slice(-64));
  return root.innerText + '|' + imgs.join(',');
}"""


def move(stepper) -> str:
    """Move a stepper's control one step; returns how."""
    buttons = stepper.locator(".widget-toggle-buttons button")
    if buttons.count() >= 2:
        buttons.nth(1).click()
        return "clicked the second toggle button"
    handle = stepper.locator(".noUi-handle")
    if handle.count():
        handle.first.focus()
        handle.first.press("ArrowRight")
        return "pressed ArrowRight on the slider"
    raise AssertionError("stepper has neither toggle buttons nor a slider")


def pages_with(site, marker: str) -> list[str]:
    """Pages whose HTML (widget state included) mentions ``marker``: only those are
    opened.
    """
    return [p for p in PAGES if marker in (site / p).read_text(encoding="utf-8")]


def each_element(browser, base_url, site, marker: str, selector: str):
    """Yield ``(path, visit, i, element)`` for every element matching ``selector`` on
    the pages that mention ``marker``; each page is opened once and closed after its
    elements.
    """
    for path in pages_with(site, marker):
        page, visit = open_page(browser, base_url, path)
        try:
            found = page.locator(selector)
            for i in range(found.count()):
                yield path, visit, i, found.nth(i)
        finally:
            page.context.close()


def test_every_stepper_changes_what_is_shown(browser, base_url, site):
    moved = 0
    for path, visit, i, s in each_element(
        browser, base_url, site, "ptlm-stepper", ".ptlm-stepper"
    ):
        s.scroll_into_view_if_needed()
        before = s.evaluate(SIGNATURE)
        how = move(s)
        s.page.wait_for_timeout(150)
        after = s.evaluate(SIGNATURE)
        assert after != before, (
            f"{path}: stepper {i}: {how}, but the view did not change"
        )
        assert not visit.errors, f"{path}: errors while moving steppers: {visit.errors}"
        moved += 1
    assert moved > 0, "no stepper found in the book (book/widgets.ipynb shows several)"


def test_bertviz_renders_its_tokens(browser, base_url, site):
    checked = 0
    for path, _, i, v in each_element(
        browser, base_url, site, "ptlm-bertviz", ".ptlm-bertviz"
    ):
        script = v.locator("script").first.text_content()
        params = json.loads(
            re.search(r"const params = (\{.*?\});", script, re.S).group(1)
        )
        tokens = {t.strip() for d in params["attention"] for t in d["left_text"]}
        v.locator("svg text").first.wait_for(timeout=10_000)
        if "ptlm-bertviz-model" in (v.get_attribute("class") or ""):
            # the model view draws thumbnails; a click on one shows that head with its
            # tokens
            v.evaluate("""el => Array.from(el.querySelectorAll('svg rect'))
                .find(r => r.style.opacity === '0')
                .dispatchEvent(new MouseEvent('click', {bubbles: true}))""")
        drawn = {t.strip() for t in v.locator("svg text").all_text_contents()}
        assert tokens <= drawn, (
            f"{path}: bertviz view {i} lacks tokens {tokens - drawn}"
        )
        checked += 1
    assert checked > 0, (
        "no bertviz view found in the book (book/widgets.ipynb shows two)"
    )


def test_neighbour_explorers_show_each_query(browser, base_url, site):
    """chapters/word_vectors.ipynb: each query button of a neighbour explorer shows
    that word's view (its caption names the query) in the static book."""
    checked = 0
    for path, visit, i, box in each_element(
        browser, base_url, site, "ptlm-neighbours", ".ptlm-neighbours"
    ):
        box.scroll_into_view_if_needed()
        buttons = box.locator(".widget-toggle-buttons button")
        assert buttons.count() >= 2, f"{path}: explorer {i} has no query buttons"
        for b in range(buttons.count()):
            word = buttons.nth(b).inner_text().strip()
            buttons.nth(b).click()
            box.page.wait_for_timeout(150)
            shown = box.evaluate(SIGNATURE)
            assert f"query: {word}" in shown, (
                f"{path}: explorer {i}: clicked {word!r}, but its view is not shown"
            )
        assert not visit.errors, f"{path}: errors in the explorer: {visit.errors}"
        checked += 1
    assert checked > 0, (
        "no neighbour explorer found in the book (chapters/word_vectors.ipynb has one)"
    )


def visible_rows(table):
    return table.locator("tbody tr").evaluate_all(
        "rows => rows.filter(r => r.style.display !== 'none').map(r => r.innerText)"
    )


def test_comparison_tables_filter_and_sort(browser, base_url, site):
    checked = 0
    for path, _, i, t in each_element(
        browser, base_url, site, "ptlm-table", ".ptlm-table"
    ):
        if not t.is_visible():
            continue  # a view a switcher hides: test_synthesis_views_* operates it
        t.scroll_into_view_if_needed()
        rows = visible_rows(t)
        term = t.locator("tbody tr").first.locator("td").first.inner_text().strip()
        t.locator("input.ptlm-filter").fill(term)
        kept = visible_rows(t)
        assert 0 < len(kept) <= len(rows) and all(
            term.lower() in r.lower() for r in kept
        )
        assert (
            t.locator(".ptlm-count").inner_text() == f"{len(kept)} of {len(rows)} rows"
        )
        t.locator("input.ptlm-filter").fill("no row says this 0x9f")
        assert visible_rows(t) == []
        t.locator("input.ptlm-filter").fill("")
        assert len(visible_rows(t)) == len(rows)
        # sorting: a click sorts by the column, a second click reverses the order
        header = t.locator("thead th").first
        header.click()
        up = t.locator("tbody tr td:first-child").all_inner_texts()
        header.click()
        down = t.locator("tbody tr td:first-child").all_inner_texts()
        assert down == up[::-1] and sorted(up) == sorted(down)
        checked += 1
    assert checked > 0, (
        "no comparison table found in the book (book/widgets.ipynb shows one)"
    )


# A Markdown table's delimiter row (``|---|---:|``, ``| --- | --- |``; smartquotes turns
# ``---`` into an em dash, and a paragraph joins the rows into one line): on a page,
# it means a table was shown as raw text instead of rendered (CommonMark has no
# tables).
DELIMITER_ROW = re.compile(r"\|(?:[ \t]*:?[-\u2013\u2014]+:?[ \t]*\|){2,}")
# Pages with no code to run (written in Markdown: the API reference, the timings, ...):
# no launch (Colab, Binder) button. Notebooks have one.
NO_CODE = [p for p in PAGES if (ROOT / p).with_suffix(".md").exists()]


@pytest.mark.parametrize("path", PAGES)
def test_tables_are_html_tables(visits, path):
    raw = DELIMITER_ROW.findall(visits[path].facts["text"])
    assert not raw, (
        f"{path} shows a Markdown table as text (delimiter rows {raw}), not as an HTML "
        f"<table>"
    )


def test_the_timings_page_shows_its_table(visits):
    facts = visits["book/timings.html"].facts
    assert facts["tables"] >= 1, "book/timings.html has no <table>"
    assert "seconds" in facts["text"] and "chapters/transformer.ipynb" in facts["text"]


@pytest.mark.parametrize("path", NO_CODE)
def test_no_launch_button_on_pages_without_code(visits, path):
    assert not visits[path].facts["launch"], (
        f"{path} offers to launch a notebook: {visits[path].facts['launch']}"
    )


def test_notebook_pages_have_a_launch_button(visits):
    """The other side of the test above: the chapters do offer Colab (so its selector
    still works).
    """
    chapters = [p for p in PAGES if p.startswith("chapters/")]
    assert chapters and all(visits[p].facts["launch"] for p in chapters), {
        p: visits[p].facts["launch"] for p in chapters
    }


def test_api_reference_is_documentation(visits):
    """The API pages are autodoc: rendered signatures, and no type's docstring under a
    constant.
    """
    pages = [p for p in PAGES if p.startswith("book/api_")]
    assert len(pages) >= 3, (
        f"the API reference should be one page per module group, found {pages}"
    )
    text = "\n".join(visits[p].facts["text"] for p in pages)
    assert "PRESETS" in text and "causal_mask" in text and "train" in text
    for leak in (
        "dict() -> new empty dictionary",
        "Built-in immutable sequence",
        "str(object='') -> str",
    ):
        assert leak not in text, (
            f"the API reference shows a builtin type's docstring: {leak!r}"
        )


# --- what a reader sees: title first, labels legible, pages that fit a phone

CHAPTERS = [p for p in PAGES if p.startswith("chapters/")]
MIN_LABEL_PX = 10


@pytest.mark.parametrize("path", CHAPTERS)
def test_the_title_comes_first(visits, path):
    first = visits[path].facts["first"]
    assert first and first["tag"] == "H1", (
        f"{path}: the first thing in the article is {first}, not the chapter's title"
    )


def _png(src: str, base_url: str) -> bytes:
    import base64
    import urllib.parse

    if src.startswith("data:"):
        return base64.b64decode(src.split(",", 1)[1])
    path = urllib.parse.unquote(urllib.parse.urlparse(src).path).lstrip("/")
    return (SITE / path).read_bytes()


@pytest.mark.parametrize("width", [1280, 390])
@pytest.mark.parametrize("path", PAGES)
def test_figure_labels_are_at_least_10px(visits, phone_visits, base_url, path, width):
    """Each figure's PNG records its smallest font size at its own resolution
    (``ptlm_lite.viz._html.figure_to_png``); scaled by the width the page shows it at,
    in a 1280-px window and on a 390-px phone, no label may be smaller than 10 CSS px.
    Every PNG must carry the record (inline figures too: the book's renderer). SVG text
    (diagrams, bertviz) is measured as drawn.
    """
    from ptlm_lite.viz._html import FONT_KEY, png_font_px

    visit = (visits if width == 1280 else phone_visits)[path]
    small, unrecorded = [], []
    for img in visit.facts["images"]:
        if not img["src"] or not img["natural"]:
            continue
        data = _png(img["src"], base_url)
        if not data.startswith(b"\x89PNG"):
            continue
        if FONT_KEY.encode() not in data:
            unrecorded.append(img["src"][-60:])
            continue
        px = png_font_px(data)
        if px is None:  # a figure with no text
            continue
        shown = px * min(1.0, img["shown"] / img["natural"])
        if shown < MIN_LABEL_PX - 0.05:
            small.append(
                f"{shown:.1f} px ({img['natural']} px image shown at "
                f"{img['shown']:.0f} px)"
            )
    small += [
        f"SVG text {t['text']!r}: {t['px']:.1f} px"
        for t in visit.facts["svgText"]
        if t["px"] < MIN_LABEL_PX - 0.05
    ]
    # on a phone a diagram may scroll sideways rather than shrink below 10 px
    wide = visit.facts["wideSvg"] if width == 1280 else []
    assert not wide, f"{path}: drawings wider than the text column: {wide} px"
    assert not unrecorded, (
        f"{path}: figures not rendered by the book's renderer (no font record): "
        f"{unrecorded}"
    )
    assert not small, (
        f"{path} at {width} px: labels below {MIN_LABEL_PX} px: {small[:8]}"
    )


@pytest.mark.parametrize("path", PAGES)
def test_no_glyph_is_a_missing_glyph_box(visits, path):
    """Every CJK (or rarer) character the page draws, widgets and hidden stepper views
    included, is drawn from a font that has it: none matches the box drawn for a code
    point no font has (the book's CJK font: scripts/cjk_font.py, scripts/assets.py)."""
    glyphs = visits[path].facts["glyphs"]
    if path == "chapters/xlnet.html":
        assert set("我爱生活") <= set(glyphs["checked"]), "the XLNet example is gone"
    boxes = sorted({f"{b['char']} (U+{ord(b['char']):04X})" for b in glyphs["boxes"]})
    assert not boxes, f"{path}: drawn as missing-glyph boxes: {boxes}"


@pytest.mark.parametrize("path", PAGES)
def test_page_fits_a_phone(browser, base_url, site, path):
    """At 390 px (a phone), the page is no wider than the screen: wide things (code,
    tables, figures) scroll inside their own box or shrink."""
    context = browser.new_context(viewport={"width": 390, "height": 844})
    page = context.new_page()
    try:
        page.goto(base_url + path, wait_until="load")
        page.wait_for_timeout(500)
        width = page.evaluate("document.documentElement.scrollWidth")
        culprits = page.evaluate(
            """() => Array.from(document.querySelectorAll('article *'))
                 .filter(e => e.getBoundingClientRect().right > 392)
                 .filter(e => !e.closest('pre, .highlight, .table-wrapper, .cell_output, .output'))
                 .slice(0, 5).map(e => e.tagName + '.' + e.className)"""
        )
    finally:
        context.close()
    assert width <= 391, f"{path} is {width} px wide at a 390 px screen: {culprits}"


def test_each_slider_shows_the_value_it_selects(browser, base_url, site):
    """A stepper's slider reads out the label of the view it shows ("τ = 2.0"), not
    an index ("3"), at every position (issue 26)."""
    checked = 0
    for path, _, i, s in each_element(
        browser, base_url, site, "ptlm-stepper", ".ptlm-stepper"
    ):
        if not s.locator(".noUi-handle").count():
            continue
        s.scroll_into_view_if_needed()
        handle = s.locator(".noUi-handle").first
        seen = []
        for _ in range(40):
            readout = s.locator(".widget-readout").first.inner_text().strip()
            caption = s.evaluate(
                """el => { const v = Array.from(el.querySelectorAll('.widget-html-content'))
                             .find(h => h.offsetParent !== null);
                           const c = v && v.firstElementChild;
                           return c ? c.innerText.trim() : null; }"""
            )
            assert readout == caption, (
                f"{path}: slider {i} reads {readout!r} beside a view captioned "
                f"{caption!r}"
            )
            if seen and readout == seen[-1]:
                break  # the last position
            seen.append(readout)
            handle.focus()
            handle.press("ArrowRight")
            s.page.wait_for_timeout(80)
        assert len(seen) >= 2, f"{path}: slider {i} did not move"
        checked += 1
    assert checked > 0, "no slider found in the book (book/widgets.ipynb has one)"


def test_slider_readouts_are_whole_on_a_phone(browser, base_url, site):
    """At 390 px, every position of every stepper's slider reads out its whole label
    (ipywidgets' 148-px readout cut ELMo's "mix: probe: word class" to "mix: probe:
    word c"; book/css/ptlm-book.css), and the slider stays on the screen."""
    checked = 0
    for path in pages_with(site, "ptlm-slider"):
        page, _ = open_page(browser, base_url, path, width=390)
        try:
            sliders = page.locator(".ptlm-slider")
            for i in range(sliders.count()):
                s = sliders.nth(i)
                s.scroll_into_view_if_needed()
                handle, seen = s.locator(".noUi-handle").first, []
                for _ in range(40):
                    readout = s.locator(".widget-readout").first
                    text = readout.inner_text().strip()
                    cut, right = readout.evaluate(
                        "e => [e.scrollWidth > e.clientWidth + 1, "
                        "e.getBoundingClientRect().right]"
                    )
                    assert not cut and right <= 392, (
                        f"{path}: slider {i} shows {text!r} cut or off the screen "
                        f"(right edge {right:.0f} px at a 390 px screen)"
                    )
                    if seen and text == seen[-1]:
                        break  # the last position
                    seen.append(text)
                    handle.focus()
                    handle.press("ArrowRight")
                    page.wait_for_timeout(60)
                checked += 1
        finally:
            page.context.close()
    assert checked > 0, "no slider found in the book (book/widgets.ipynb has one)"


def test_no_stepper_is_taller_than_two_phone_screens(browser, base_url, site):
    """At 390 x 844 px, a stepper (its control and the view it shows) fits in two
    screens, whichever view is shown: a taller view scrolls its control out of sight
    while the reader compares (FastBERT's exit view listed 60 names in one 80-px
    column: 4,000 px)."""
    limit, tall = 2 * 844, []
    for path in pages_with(site, "ptlm-stepper"):
        page, _ = open_page(browser, base_url, path, width=390)
        try:
            steppers = page.locator(".ptlm-stepper")
            for i in range(steppers.count()):
                s = steppers.nth(i)
                buttons = s.locator(".widget-toggle-buttons button")
                handle = s.locator(".noUi-handle").first
                n, heights, shown = buttons.count(), [], None
                for k in range(40):  # every view: each button, or each slider step
                    heights.append(s.bounding_box()["height"])
                    if n >= 2:
                        if k + 1 >= n:
                            break
                        buttons.nth(k + 1).click()
                    elif s.locator(".noUi-handle").count():
                        label = s.locator(".widget-readout").first.inner_text()
                        if label == shown:
                            break  # the slider's last position
                        shown = label
                        handle.focus()
                        handle.press("ArrowRight")
                    else:
                        break
                    page.wait_for_timeout(60)
                if max(heights) > limit:
                    tall.append(f"{path}: stepper {i}, {max(heights):.0f} px")
        finally:
            page.context.close()
    assert not tall, f"steppers taller than {limit} px at 390 px: {tall}"


def test_every_chapter_has_a_widget(site):
    """Every chapter promises a widget that works in the static book: a stepper
    (explorers are steppers), which the test above moves on every page."""
    bare = [p for p in CHAPTERS if "ptlm-stepper" not in (site / p).read_text("utf-8")]
    assert not bare, f"chapters without a widget: {bare}"


# --- code that fits the page, and a home page that leads in (issue 26)

CODE_COLUMNS = 88  # ruff's line length (pyproject.toml): the package and the chapters
MIN_CODE_PX = 12


@pytest.mark.parametrize("path", CHAPTERS)
def test_code_fits_the_text_column(visits, path):
    """At 1280 px (a desktop window) every code block holds ruff's 88 columns, in a
    font of at least 12 px, and none scrolls sideways (book/css/ptlm-book.css; a longer
    line, a string or comment ruff does not split, wraps). On a phone code may scroll
    inside its box: test_page_fits_a_phone checks that the page itself does not."""
    code = visits[path].facts["code"]
    assert code, f"{path}: no code block found (has the theme's markup changed?)"
    narrow = [c for c in code if c["cols"] < CODE_COLUMNS]
    scrolls = [c for c in code if c["scrolls"]]
    small = [c for c in code if c["px"] < MIN_CODE_PX - 0.01]
    assert not narrow, (
        f"{path}: {len(narrow)} of {len(code)} code blocks hold fewer than "
        f"{CODE_COLUMNS} columns at 1280 px: {narrow[:3]}"
    )
    assert not scrolls, (
        f"{path}: {len(scrolls)} of {len(code)} code blocks scroll sideways at 1280 px: "
        f"{scrolls[:3]}"
    )
    assert not small, f"{path}: code set below {MIN_CODE_PX} px: {small[:3]}"


def test_the_home_page_links_every_chapter(visits, base_url):
    """The home page (the root of _toc.yml) links each chapter of the table of contents
    from its text, not only from the menu (which a phone hides)."""
    home = PAGES[0]
    links = set(visits[home].facts["links"])
    missing = [p for p in CHAPTERS if base_url + p not in links]
    assert CHAPTERS and not missing, (
        f"{home} does not link these chapters of _toc.yml: {missing}"
    )


def test_elmo_explorer_shows_each_view(browser, base_url, site):
    """chapters/elmo.ipynb: each view of the ELMo explorer (scalar-mix weights per
    task, a word's contextual neighbours) is shown in the static book when its control
    is chosen (toggle buttons, or the slider stepped from end to end)."""
    checked = 0
    for path, visit, i, box in each_element(
        browser, base_url, site, "ptlm-elmo", ".ptlm-elmo"
    ):
        box.scroll_into_view_if_needed()
        buttons = box.locator(".widget-toggle-buttons button")
        handle = box.locator(".noUi-handle")
        assert buttons.count() >= 2 or handle.count(), (
            f"{path}: explorer {i}: no control"
        )
        seen = []
        if buttons.count() >= 2:
            for b in range(buttons.count()):
                label = buttons.nth(b).inner_text().strip()
                buttons.nth(b).click()
                box.page.wait_for_timeout(150)
                shown = box.evaluate(SIGNATURE)
                assert f"view: {label}" in shown, (
                    f"{path}: ELMo explorer {i}: clicked {label!r}, its view is not shown"
                )
                seen.append(shown)
        else:
            handle.first.focus()
            handle.first.press("Home")
            for _ in range(12):
                box.page.wait_for_timeout(150)
                shown = box.evaluate(SIGNATURE)
                if seen and shown == seen[-1]:
                    break  # the last view: one more step changes nothing
                seen.append(shown)
                handle.first.press("ArrowRight")
        views = [re.search(r"view: ([^;<\n]+)", v) for v in seen]
        assert all(views), f"{path}: ELMo explorer {i}: a view without its label"
        labels = [v.group(1) for v in views]
        assert len(set(labels)) == len(labels) >= 3, (
            f"{path}: ELMo explorer {i}: views shown {labels}"
        )
        assert not visit.errors, f"{path}: errors in the explorer: {visit.errors}"
        checked += 1


def test_synthesis_views_switch_filter_and_sort(browser, base_url, site):
    """chapters/synthesis.ipynb: each table switcher (``ptlm-views``) shows one view
    per button, the one clicked, and the table in it filters and sorts in the static
    book; the scoreboard's links lead to a chapter's section."""
    checked, links = 0, 0
    for path, visit, i, box in each_element(
        browser, base_url, site, "ptlm-views", ".ptlm-views"
    ):
        box.scroll_into_view_if_needed()
        buttons = box.locator("button.ptlm-view-button")
        panes = box.locator("div.ptlm-view-pane")
        assert buttons.count() >= 2 and buttons.count() == panes.count()
        for b in range(buttons.count()):
            label = buttons.nth(b).inner_text().strip()
            buttons.nth(b).click()
            shown = [k for k in range(panes.count()) if panes.nth(k).is_visible()]
            assert shown == [b], f"{path}: switcher {i}: clicked {label!r}, saw {shown}"
            pane = panes.nth(b)
            assert f"view: {label}" in pane.locator("caption").inner_text()
            table = pane.locator(".ptlm-table")
            rows = visible_rows(table)
            if not rows:
                continue
            term = table.locator("tbody tr").first.locator("td").first.inner_text()
            table.locator("input.ptlm-filter").fill(term.strip())
            kept = visible_rows(table)
            assert 0 < len(kept) <= len(rows)
            assert all(term.strip().lower() in r.lower() for r in kept)
            table.locator("input.ptlm-filter").fill("")
            assert len(visible_rows(table)) == len(rows)
            header = table.locator("thead th").first
            header.click()
            up = table.locator("tbody tr td:first-child").all_inner_texts()
            header.click()
            down = table.locator("tbody tr td:first-child").all_inner_texts()
            assert down == up[::-1]
            for a in pane.locator("td a[href*='.html#']").all()[:3]:
                href = a.get_attribute("href")
                target = (site / path).parent / href.split("#")[0]
                assert target.exists(), f"{path}: a link to {href} leads nowhere"
                anchor = href.split("#")[1]
                html = target.read_text(encoding="utf-8")
                assert f'id="{anchor}"' in html, f"{path}: no section {href}"
                links += 1
        assert not visit.errors, f"{path}: errors in the switcher: {visit.errors}"
        checked += 1
    assert checked >= 2, "chapters/synthesis.ipynb shows at least two switchers"
    assert links > 0, "no link to a chapter's section was checked"


def test_gap_explorer_shows_each_strategy(browser, base_url, site):
    """chapters/pegasus.ipynb: the gap-sentence explorer shows, for each strategy's
    button, that strategy's view (its label, the highlighted sentences, the source and
    the target) in the static book."""
    checked = 0
    for path, visit, i, box in each_element(
        browser, base_url, site, "ptlm-gaps", ".ptlm-gaps"
    ):
        box.scroll_into_view_if_needed()
        buttons = box.locator(".widget-toggle-buttons button")
        assert buttons.count() >= 3, f"{path}: gap explorer {i}: no strategy buttons"
        seen = []
        for b in range(buttons.count()):
            label = buttons.nth(b).inner_text().strip()
            buttons.nth(b).click()
            box.page.wait_for_timeout(150)
            shown = box.evaluate(SIGNATURE)
            assert f"view: {label}" in shown and "target" in shown, (
                f"{path}: gap explorer {i}: clicked {label!r}, its view is not shown"
            )
            seen.append(shown)
        assert len(set(seen)) == len(seen), f"{path}: gap explorer {i}: views repeat"
        assert not visit.errors, f"{path}: errors in the explorer: {visit.errors}"
        checked += 1
    assert checked, "no gap-sentence explorer found in the built book"
