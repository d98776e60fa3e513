"""Fixtures for the browser tests: the built book served on 127.0.0.1, headless
Chromium, and one visit per page that records JavaScript errors and every request that
tried to leave the machine.

* The book is ``_build/html``; when it is missing, it is built first (``python
  scripts/assets.py`` then ``jupyter-book build .``), and a failed build fails the tests
  with its output.
* Pages are the ones in ``_toc.yml`` (``PTLM_TOC=other_toc.yml`` to test another table
  of contents).
* Chromium is Debian's ``/usr/bin/chromium`` (``PTLM_CHROMIUM`` to use another binary);
  when it is missing the tests fail (they never skip silently) and say how to install
  it.
"""

from __future__ import annotations

import functools
import http.server
import os
import shutil
import socketserver
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SITE = ROOT / "_build" / "html"
CHROMIUM = os.environ.get("PTLM_CHROMIUM", "/usr/bin/chromium")


def toc_path() -> Path:
    return Path(os.environ.get("PTLM_TOC", ROOT / "_toc.yml")).resolve()


def toc_pages() -> list[str]:
    """Every page of the table of contents, as the path of its HTML relative to the
    site.
    """
    import yaml

    toc = yaml.safe_load(toc_path().read_text())
    files = [toc["root"]]

    def walk(node):
        if isinstance(node, dict):
            if "file" in node:
                files.append(node["file"])
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk({k: v for k, v in toc.items() if k != "root"})
    out = []
    for f in files:
        stem = f.rsplit(".", 1)[0] if f.endswith((".ipynb", ".md")) else f
        if stem + ".html" not in out:
            out.append(stem + ".html")
    return out


def build_book() -> None:
    cmds = [
        [sys.executable, "scripts/assets.py"],
        [
            sys.executable,
            "-c",
            "from jupyter_book.cli.main import main; main()",
            "build",
            ".",
        ],
    ]
    if toc_path() != (ROOT / "_toc.yml").resolve():
        cmds[1] += ["--toc", str(toc_path())]
    for cmd in cmds:
        r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
        if r.returncode != 0:
            pytest.fail(
                f"building the book failed: {' '.join(cmd)} (exit {r.returncode})\n"
                f"{r.stdout[-4000:]}\n{r.stderr[-4000:]}",
                pytrace=False,
            )


@pytest.fixture(scope="session")
def site() -> Path:
    if not (SITE / "index.html").exists():
        build_book()
    missing = [p for p in toc_pages() if not (SITE / p).exists()]
    if missing:
        pytest.fail(
            f"_build/html lacks pages listed in {toc_path().name}: {missing}; "
            "rebuild the book (python scripts/assets.py && jupyter-book build .)",
            pytrace=False,
        )
    return SITE


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="session")
def base_url(site):
    handler = functools.partial(_QuietHandler, directory=str(site))
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="session")
def browser():
    if not (Path(CHROMIUM).exists() or shutil.which(CHROMIUM)):
        pytest.fail(
            f"Chromium not found at {CHROMIUM}: install it with `apt-get install "
            f"chromium` "
            "(or set PTLM_CHROMIUM to a Chromium binary)",
            pytrace=False,
        )
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.fail(
            "the browser tests need Python playwright: pip install playwright",
            pytrace=False,
        )
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True)
        yield b
        b.close()


@dataclass
class Visit:
    """What happened while one page loaded: JS errors and requests to other hosts."""

    url: str
    errors: list = field(default_factory=list)
    outside: list = field(default_factory=list)
    seconds: float = 0.0
    facts: dict = field(default_factory=dict)  # what the page shows: see FACTS


# Read once per page after it rendered, for the tests that look at what a reader sees.
FACTS = """() => {
  const article = document.querySelector('article') || document.querySelector('main') || document.body;
  return {
    text: article.innerText,                                   // what the reader sees, as text
    tables: article.querySelectorAll('table').length,
    launch: Array.from(document.querySelectorAll(
        '.dropdown-launch-buttons, a[href*="colab.research.google.com"], a[href*="mybinder.org"]'))
        .map(e => e.className || e.getAttribute('href')),
    // the first element of the article that shows anything: a chapter's title
    first: (() => {
      const walker = document.createTreeWalker(article, NodeFilter.SHOW_ELEMENT);
      for (let e = walker.nextNode(); e; e = walker.nextNode()) {
        if (/^H[1-6]$/.test(e.tagName) || e.tagName === 'PRE' || e.tagName === 'IMG'
            || e.tagName === 'TABLE' || e.tagName === 'P' || e.tagName === 'svg')
          if (e.offsetParent !== null && (e.innerText || e.tagName).trim())
            return {tag: e.tagName, text: (e.innerText || '').trim().slice(0, 80)};
      }
      return null;
    })(),
    // every image: its source, natural width and the width it is shown at (a hidden
    // stepper view: its declared width, at most as wide as the nearest shown box)
    images: Array.from(article.querySelectorAll('img')).map(img => {
      let box = img.parentElement;
      while (box && !box.getBoundingClientRect().width) box = box.parentElement;
      const declared = parseFloat(img.getAttribute('width')) || parseFloat(img.style.width)
                       || img.naturalWidth;
      return {
        src: img.currentSrc || img.src,
        natural: img.naturalWidth,
        shown: img.getBoundingClientRect().width
               || Math.min(declared, box ? box.getBoundingClientRect().width : article.clientWidth),
      };
    }),
    // drawings wider than the article (cut off or scrolled: bertviz, diagrams)
    wideSvg: Array.from(article.querySelectorAll('svg')).filter(svg =>
        svg.getBoundingClientRect().width > article.clientWidth + 1)
      .map(svg => Math.round(svg.getBoundingClientRect().width)),
    // every link of the article (the home page must lead to every chapter)
    links: Array.from(article.querySelectorAll('a[href]')).map(a => a.href.split('#')[0]),
    // code (a cell's input, the package's source shown by a cell), not printed output: how
    // many columns fit its box, whether it scrolls sideways, its font size
    code: Array.from(article.querySelectorAll(
        'div.highlight-ipython3 div.highlight pre, div.highlight-python div.highlight pre'))
      .filter(p => p.offsetParent !== null && p.clientWidth > 0)
      .map(p => {
        const cs = getComputedStyle(p);
        const probe = document.createElement('span');
        probe.style.cssText = 'position:absolute;visibility:hidden;white-space:pre';
        probe.textContent = 'x'.repeat(100);
        p.appendChild(probe);
        const ch = probe.getBoundingClientRect().width / 100;
        probe.remove();
        const inner = p.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight);
        return {cols: Math.floor(inner / ch + 0.01), scrolls: p.scrollWidth > p.clientWidth + 1,
                px: parseFloat(cs.fontSize), start: p.textContent.trim().slice(0, 40)};
      }),
    // text drawn in SVG (diagrams, bertviz): font size times the SVG's scale
    svgText: Array.from(article.querySelectorAll('svg text')).filter(t => t.textContent.trim())
      .map(t => {
        const svg = t.ownerSVGElement, vb = svg.viewBox && svg.viewBox.baseVal;
        const scale = vb && vb.width ? svg.getBoundingClientRect().width / vb.width : 1;
        const size = parseFloat(getComputedStyle(t).fontSize);
        return {text: t.textContent.trim().slice(0, 30), px: size * scale,
                shown: svg.getBoundingClientRect().width > 0};
      }).filter(t => t.shown),
  };
}"""


# Every character the article draws (stepper views not shown included), grouped by the
# font stack it is drawn with; each is drawn on a canvas in that stack, once the page's
# web fonts for it have loaded, and compared with a character no font has: the same
# pixels and width mean a missing-glyph box.
TOFU = r"""async () => {
  const article = document.querySelector('article') || document.body;
  const stacks = new Map();
  const walker = document.createTreeWalker(article, NodeFilter.SHOW_TEXT);
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    const el = n.parentElement;
    if (!el || el.closest('script, style')) continue;
    const family = getComputedStyle(el).fontFamily;
    for (const ch of n.textContent) {
      const cp = ch.codePointAt(0);
      if (cp < 0x2E80 || (cp >= 0xFE00 && cp <= 0xFE0F)) continue;  // CJK and beyond
      if (!stacks.has(family)) stacks.set(family, new Set());
      stacks.get(family).add(ch);
    }
  }
  const canvas = document.createElement('canvas');
  canvas.width = 64; canvas.height = 64;
  const ctx = canvas.getContext('2d', {willReadFrequently: true});
  const draw = (font, ch) => {
    ctx.clearRect(0, 0, 64, 64); ctx.font = font; ctx.fillStyle = '#000';
    ctx.fillText(ch, 8, 44);
    return [ctx.measureText(ch).width, Array.from(ctx.getImageData(0, 0, 64, 64).data).join()];
  };
  const boxes = [], checked = [];
  for (const [family, chars] of stacks) {
    const font = '32px ' + family, text = Array.from(chars).join('');
    try { await document.fonts.load(font, text); } catch (e) {}
    const [w0, px0] = draw(font, '\u{10FFFD}');  // a private-use code point: no glyph
    for (const ch of chars) {
      const [w, px] = draw(font, ch);
      checked.push(ch);
      if (w === w0 && px === px0) boxes.push({char: ch, family: family});
    }
  }
  return {boxes, checked};
}"""


def open_page(browser, base_url: str, path: str, width: int = 1280):
    """Open ``path`` with every non-local request aborted and counted; wait for the
    widgets.

    Returns ``(page, visit)``; the caller closes the page (``page.context.close()``)."""
    context = browser.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    visit = Visit(base_url + path)

    def route(r):
        if r.request.url.startswith(base_url) or r.request.url.startswith("data:"):
            r.continue_()
        else:
            visit.outside.append(r.request.url)
            r.abort()

    page.route("**/*", route)
    page.on(
        "console",
        lambda m: (
            visit.errors.append(
                f"console.error: {m.text} @ {m.location.get('url', '')}"
            )
            if m.type == "error"
            else None
        ),
    )
    page.on("pageerror", lambda e: visit.errors.append(f"pageerror: {e}"))
    page.on(
        "response",
        lambda r: (
            visit.errors.append(f"HTTP {r.status}: {r.url}")
            if r.status >= 400
            else None
        ),
    )
    t = time.perf_counter()
    page.goto(visit.url, wait_until="load")
    # Widgets render after 'load': wait until every stored widget view has been replaced
    # by a rendered widget, and bertviz has drawn its SVG.
    try:
        page.wait_for_function(
            """() => document.querySelectorAll('script[type="application/vnd.jupyter.widget-view+json"]').length
                 <= document.querySelectorAll('.widget-subarea > *').length
             && Array.from(document.querySelectorAll('.ptlm-bertviz')).every(b => b.querySelector('svg'))""",
            timeout=20_000,
        )
    # playwright's TimeoutError: report it as a failure of this page
    except Exception as e:
        visit.errors.append(f"widgets or bertviz did not render within 20 s: {e}")
    page.wait_for_timeout(300)  # late errors (fonts, lazy MathJax parts) still count
    visit.seconds = time.perf_counter() - t
    visit.facts = page.evaluate(FACTS)
    if width == 1280:
        visit.facts["glyphs"] = page.evaluate(TOFU)
    return page, visit


@pytest.fixture(scope="session")
def visits(browser, base_url):
    """Each page of the book opened once; the tests below read what happened."""
    out = {}
    for path in toc_pages():
        page, visit = open_page(browser, base_url, path)
        page.context.close()
        out[path] = visit
    return out


@pytest.fixture(scope="session")
def phone_visits(browser, base_url):
    """Each page opened once in a 390-px window (a phone), for what it shows there."""
    out = {}
    for path in toc_pages():
        page, visit = open_page(browser, base_url, path, width=390)
        page.context.close()
        out[path] = visit
    return out
