#!/usr/bin/env python3
"""Put the JavaScript the static book needs into book/js/, so no page needs a CDN.

    python scripts/assets.py            # npm ci (if needed) + copy
    python scripts/assets.py --check    # only verify book/js/ is complete

What and why:

* ``@jupyter-widgets/html-manager`` (1.0.x, the match for ipywidgets 8.1):
  ``embed-amd.js`` renders the widget state stored in executed notebooks, plus its icon
  fonts.
* ``requirejs``: embed-amd.js and bertviz are AMD modules.
* ``d3@5`` and ``jquery@3``: bertviz asks require.js for ``d3`` and ``jquery`` (d3 is
  UMD and registers itself as an AMD module when require.js loads it, which is what
  bertviz expects).
* ``mathjax@3``: ``tex-mml-chtml.js`` and the folders it loads lazily (``mathjax_path``
  in ``_config.yml``); Sphinx would otherwise load MathJax from a CDN on every page with
  math.
* ``ptlm-book.js`` (ours, written below): tells our bertviz bridge where these files are
  (``window.ptlmBookJs.base``), so it never falls back to a CDN inside the book.
* ``ptlm-fonts.css`` and ``fonts/`` (ours): the book's CJK font (package data,
  ``ptlm_lite/data/fonts/``, made by ``scripts/cjk_font.py``) as an ``@font-face`` at the
  end of every font stack of the page and of the widgets, so "我爱生活" is drawn, not
  boxes, on a machine without CJK fonts (issue 26).

The versions come from book/package.json + book/package-lock.json (``npm ci``).
Third-party files are copied, never committed: book/js/ is git-ignored. ``_config.yml``
serves book/js/ as a static path (``html_static_path``), so book/js/vendor/x.js is
``_static/vendor/x.js`` in the site; the folder is deliberately not called ``_static``
(Jupyter Book would then add every .js in it to every page, in an order that breaks
require.js).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BOOK = ROOT / "book"
NODE = BOOK / "node_modules"
OUT = BOOK / "js"
VENDOR = OUT / "vendor"
CSS = BOOK / "css" / "ptlm-book.css"  # the book's own style sheet (html_css_files)

HTML_MANAGER = "@jupyter-widgets/html-manager"
# (package, file inside the package, name in book/js/vendor/). ptlm_lite/viz/bertviz_views.py
# looks for d3's and jQuery's under these names (VENDOR_FILES; tests/test_viz.py checks)
FILES = [
    (HTML_MANAGER, "dist/embed-amd.js", "embed-amd.js"),
    ("requirejs", "require.js", "require.js"),
    ("d3", "dist/d3.min.js", "d3.min.js"),
    ("jquery", "dist/jquery.min.js", "jquery.min.js"),
]
# MathJax 3 (Sphinx's default math renderer loads it from a CDN): the combined file plus
# the folders it lazy-loads from its own location (TeX extensions, fonts, menu,
# accessibility).
MATHJAX_FILES = ["tex-mml-chtml.js"]
MATHJAX_DIRS = ["input", "output", "ui", "a11y", "adaptors", "sre"]
# embed-amd.js loads these next to itself
FONT_SUFFIXES = (".woff2", ".woff", ".ttf", ".eot", ".svg")
LICENSES = ("LICENSE", "LICENSE.txt", "LICENSE.md")

PTLM_BOOK_JS = """\
// Written by scripts/assets.py; loaded on every page of the static book before the widget
// manager (html_js_files, priority 400). Three small jobs:
(function () {
  var s = document.currentScript;
  var src = s ? s.src.split('?')[0] : '';
  var base = src.slice(0, src.lastIndexOf('/') + 1);
  // 1. Tell ptlm_lite.viz's bertviz bridge where the book's own require.js, d3 and jQuery are,
  //    so nothing is fetched from a CDN (in Jupyter and Colab this is absent: bertviz's CDNs).
  window.ptlmBookJs = {base: base};
  // 2. Configuration for require.js, read when it loads (only pages with widgets load it): the
  //    widget manager's AMD modules resolve to vendor/, where its icon fonts are (otherwise it
  //    looks for them next to the page), and d3/jQuery for bertviz are the book's copies.
  var paths = {'@jupyter-widgets/html-manager/dist': base + 'vendor',
               d3: base + 'vendor/d3.min', jquery: base + 'vendor/jquery.min'};
  if (typeof window.require === 'undefined') { window.require = {paths: paths}; }
  window.__jupyter_widgets_assets_path__ = base + 'vendor/';
  // 3. The widget manager typesets labels with MathJax 2's MathJax.Hub.Queue; Sphinx loads
  //    MathJax 3, which has no Hub (an uncaught TypeError per widget). Give every MathJax object
  //    that appears on window (Sphinx's config object, then MathJax itself) a small Hub.
  function shim(mj) {
    if (mj && typeof mj === 'object' && !mj.Hub) {
      mj.Hub = {Queue: function (job) {
        var el = job && job[2], m = window.MathJax;
        if (m && m.typesetPromise) { m.typesetPromise(el ? [el] : undefined).catch(function () {}); }
      }};
    }
    return mj;
  }
  var current = shim(window.MathJax);
  try {
    Object.defineProperty(window, 'MathJax', {
      configurable: true, enumerable: true,
      get: function () { return current; },
      set: function (v) { current = shim(v); }
    });
  } catch (e) { /* MathJax already defined as non-configurable: leave it */ }
})();
"""


def run_npm_ci() -> None:
    npm = shutil.which("npm")
    if npm is None:
        sys.exit(
            "scripts/assets.py: npm not found. Install Node.js (e.g. `apt-get install "
            "nodejs npm`), "
            "then run this again."
        )
    print("assets: npm ci (book/) ...", flush=True)
    r = subprocess.run(
        [npm, "ci", "--no-audit", "--no-fund", "--ignore-scripts"], cwd=BOOK
    )
    if r.returncode != 0:
        sys.exit(f"scripts/assets.py: `npm ci` failed in {BOOK} (exit {r.returncode})")


def installed_matches_lock() -> bool:
    """node_modules is there and holds exactly the versions in package-lock.json."""
    lock = json.loads((BOOK / "package-lock.json").read_text())
    if not (BOOK / "package-lock.json").exists():
        sys.exit(
            "scripts/assets.py: book/package-lock.json is missing (run `npm install` "
            "in book/ once)"
        )
    for name in json.loads((BOOK / "package.json").read_text())["dependencies"]:
        want = lock["packages"].get(f"node_modules/{name}", {}).get("version")
        pj = NODE / name / "package.json"
        if (
            want is None
            or not pj.exists()
            or json.loads(pj.read_text())["version"] != want
        ):
            return False
    return True


FONTS = ROOT / "ptlm_lite" / "data" / "fonts"
CJK_FAMILY = '"Noto Sans SC Book", "Noto Emoji Book"'  # scripts/cjk_font.py
# Appended to every font stack: the theme's (pydata-sphinx-theme variables) and the
# widgets' (ipywidgets' --jp-* variables, set on :root by the widget manager's CSS, which
# loads later: ``html:root`` outranks it).
PTLM_FONTS_CSS = f"""\
/* Written by scripts/assets.py: the book's CJK font, a fallback in every font stack. */
@font-face {{
  font-family: "Noto Sans SC Book";
  src: url("fonts/NotoSansSC-book.ttf") format("truetype");
  font-display: swap;
  unicode-range: U+2E80-9FFF, U+F900-FAFF, U+FF00-FFEF;
}}
@font-face {{
  font-family: "Noto Emoji Book";
  src: url("fonts/NotoEmoji-book.ttf") format("truetype");
  font-display: swap;
  unicode-range: U+1F000-1FAFF;
}}
/* the mask explorers' tables, drawn before their font stack named these fonts */
html .ptlm-mask, html .ptlm-legend {{
  font-family: sans-serif, {CJK_FAMILY};
}}
html:root {{
  --pst-font-family-base: var(--pst-font-family-base-system), {CJK_FAMILY};
  --pst-font-family-heading: var(--pst-font-family-base-system), {CJK_FAMILY};
  --pst-font-family-monospace: var(--pst-font-family-monospace-system),
    {CJK_FAMILY};
  --jp-ui-font-family: "Helvetica Neue", Helvetica, Arial, sans-serif, {CJK_FAMILY};
  --jp-content-font-family: system-ui, -apple-system, "Segoe UI", sans-serif,
    {CJK_FAMILY};
  --jp-code-font-family: monospace, {CJK_FAMILY};
  --jp-widgets-font-family: system-ui, -apple-system, "Segoe UI", sans-serif,
    {CJK_FAMILY};
}}
"""


def copy_fonts() -> list[Path]:
    """The CJK font, its licence and ``ptlm-fonts.css`` into book/js/."""
    (OUT / "fonts").mkdir(parents=True, exist_ok=True)
    written = []
    for font in sorted(FONTS.glob("*.ttf")) + sorted(FONTS.glob("OFL-*.txt")):
        shutil.copyfile(font, OUT / "fonts" / font.name)
        written.append(OUT / "fonts" / font.name)
    (OUT / "ptlm-fonts.css").write_text(PTLM_FONTS_CSS)
    return written + [OUT / "ptlm-fonts.css"]


def copy_all() -> list[Path]:
    if OUT.exists():
        shutil.rmtree(OUT)
    VENDOR.mkdir(parents=True)
    (VENDOR / "licenses").mkdir()
    written = []
    for pkg, rel, name in FILES:
        src = NODE / pkg / rel
        if not src.exists():
            sys.exit(
                f"scripts/assets.py: {src} is missing; delete book/node_modules and "
                f"run again"
            )
        shutil.copyfile(src, VENDOR / name)
        written.append(VENDOR / name)
        meta = json.loads((NODE / pkg / "package.json").read_text())
        stem = f"{pkg.replace('/', '__')}-{meta['version']}"
        for lic in LICENSES:
            if (NODE / pkg / lic).exists():
                shutil.copyfile(NODE / pkg / lic, VENDOR / "licenses" / f"{stem}-{lic}")
                break
        else:  # some packages ship no licence file; record what package.json declares
            (VENDOR / "licenses" / f"{stem}-LICENSE.txt").write_text(
                f"{pkg} {meta['version']}: license {meta.get('license', 'unknown')} "
                f"(declared in its package.json); see "
                f"{meta.get('homepage', 'https://www.npmjs.com/package/' + pkg)}\n"
            )
    for font in (NODE / HTML_MANAGER / "dist").iterdir():
        if font.suffix in FONT_SUFFIXES:
            shutil.copyfile(font, VENDOR / font.name)
            written.append(VENDOR / font.name)
    mj_src, mj_dst = NODE / "mathjax" / "es5", VENDOR / "mathjax"
    mj_dst.mkdir()
    for name in MATHJAX_FILES:
        shutil.copyfile(mj_src / name, mj_dst / name)
    for name in MATHJAX_DIRS:
        shutil.copytree(mj_src / name, mj_dst / name)
    written += [p for p in mj_dst.rglob("*") if p.is_file()]
    meta = json.loads((NODE / "mathjax" / "package.json").read_text())
    shutil.copyfile(
        NODE / "mathjax" / "LICENSE",
        VENDOR / "licenses" / f"mathjax-{meta['version']}-LICENSE",
    )
    (OUT / "ptlm-book.js").write_text(PTLM_BOOK_JS)
    written.append(OUT / "ptlm-book.js")
    return written + copy_fonts()


def check() -> list[str]:
    missing = [f"vendor/{name}" for _, _, name in FILES if not (VENDOR / name).exists()]
    missing += [
        f"vendor/mathjax/{n}"
        for n in MATHJAX_FILES
        if not (VENDOR / "mathjax" / n).exists()
    ]
    for name in (
        "ptlm-book.js",
        "ptlm-fonts.css",
        "fonts/NotoSansSC-book.ttf",
        "fonts/NotoEmoji-book.ttf",
    ):
        if not (OUT / name).exists():
            missing.append(name)
    return missing


# ---------------------------------------------------------------------------------- #
# This file is also a tiny Sphinx extension (``sphinx.local_extensions`` in
# _config.yml): #
# ----------------------------------------------------------------------------------
def _check_assets(app) -> None:
    """Fail the build, loudly, when book/js/ was not filled: pages would silently need a
    CDN.
    """
    if app.builder.format != "html":
        return
    missing = check()
    if missing:
        from sphinx.errors import ExtensionError

        raise ExtensionError(
            "book/js/ is incomplete (missing "
            + ", ".join(missing)
            + "): run `python scripts/assets.py` before `jupyter-book build .`"
        )


def _dedupe_inline_scripts(app, pagename, templatename, context, doctree) -> None:
    """Sphinx 7.4 emits inline scripts that extensions add after builder init twice (the
    registry keeps filename None, the builder ''), e.g. sphinx-thebe's ``const
    THEBE_JS_URL``, which then throws "Identifier has already been declared" on every
    page.
    """
    scripts = context.get("script_files")
    if not isinstance(scripts, list):
        return
    seen, out = set(), []
    for js in scripts:
        filename = getattr(js, "filename", js)
        attrs = getattr(js, "attributes", {}) or {}
        key = (filename or "", tuple(sorted((k, str(v)) for k, v in attrs.items())))
        if key in seen:
            continue
        seen.add(key)
        out.append(js)
    scripts[:] = out


def _stamp() -> str:
    import hashlib

    h = hashlib.sha1()
    for p in (OUT / "ptlm-book.js", BOOK / "package-lock.json", CSS):
        h.update(p.read_bytes() if p.exists() else b"")
    return h.hexdigest()


def _outdated_when_assets_change(app, env, added, changed, removed):
    """An incremental build with no changed page skips writing, and with it the copy of
    static files: after the assets change, rewrite every page so the new files reach
    _build/html.
    """
    stamp = _stamp()
    if getattr(env, "ptlm_assets_stamp", None) != stamp:
        env.ptlm_assets_stamp = stamp
        return sorted(env.found_docs)
    return []


def _fonts_next_to_pages(app, exception) -> None:
    """Some widgets (sliders) make the widget manager's CSS ask for its icon fonts at
    ``<page folder>/@jupyter-widgets/<hash>.woff2``, whatever require.js is told: put a
    copy there.
    """
    if exception is not None or app.builder.format != "html":
        return
    out = Path(app.outdir)
    fonts = [f for f in VENDOR.iterdir() if f.suffix in FONT_SUFFIXES]
    folders = {
        p.parent
        for p in out.rglob("*.html")
        if not p.relative_to(out).parts[0].startswith("_")
    }
    for folder in folders:
        target = folder / "@jupyter-widgets"
        target.mkdir(exist_ok=True)
        for f in fonts:
            shutil.copyfile(f, target / f.name)


# myst-parser and myst-nb log their whole configuration, two lines of about 1,000
# characters, at every build: noise in what build.sh shows a reader (issue 26).
CONFIG_DUMPS = ("MdParserConfig(", "NbParserConfig(")


def quiet_config_dumps(record) -> bool:
    """A logging filter: False (drop) for the myst-parser and myst-nb configuration
    dumps, True for everything else."""
    try:
        message = record.getMessage()
    except Exception:  # noqa: BLE001 - a bad record is not ours to judge
        return True
    return not any(dump in message for dump in CONFIG_DUMPS)


def _install_log_filter() -> None:
    import logging

    for handler in logging.getLogger("sphinx").handlers:
        if quiet_config_dumps not in handler.filters:
            handler.addFilter(quiet_config_dumps)


def setup(app):
    _install_log_filter()  # Sphinx set up its log handlers before loading extensions
    app.add_css_file("ptlm-fonts.css")  # book/js/ is the static path: _static/
    app.connect("build-finished", _fonts_next_to_pages)
    app.connect("builder-inited", lambda app: _check_assets(app))
    app.connect("env-get-outdated", _outdated_when_assets_change)
    app.connect("html-page-context", _dedupe_inline_scripts, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--check", action="store_true", help="only check that book/js/ is complete"
    )
    args = ap.parse_args(argv)
    if args.check:
        missing = check()
        if missing:
            print(
                "book/js/ is incomplete, missing: "
                + ", ".join(missing)
                + "; run python scripts/assets.py"
            )
            return 1
        print("book/js/ is complete")
        return 0
    if not installed_matches_lock():
        run_npm_ci()
    written = copy_all()
    size = sum(p.stat().st_size for p in written)
    print(
        f"assets: {len(written)} files, {size / 1e6:.1f} MB in {OUT.relative_to(ROOT)}/"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
