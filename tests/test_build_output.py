"""What the book build prints (issue 26): no configuration dumps, and no "Excluded N
extra file(s)" from npm's READMEs, a virtualenv or a build/ folder in the repository."""

from __future__ import annotations

import importlib.util
import logging
import pathlib
import re

import pytest
import yaml

ROOT = pathlib.Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def assets():
    spec = importlib.util.spec_from_file_location(
        "_assets_under_test", ROOT / "scripts" / "assets.py"
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def record(msg, *args):
    return logging.LogRecord("sphinx.myst", logging.INFO, __file__, 1, msg, args, None)


def test_the_myst_configuration_dumps_are_dropped(assets):
    # as myst-parser 3 and myst-nb 1.4 log them (bold() adds colour codes around the name)
    assert not assets.quiet_config_dumps(
        record("\x1b[01mmyst v%s:\x1b[39;49;00m %s", "3.0.1", "MdParserConfig(a=1)")
    )
    assert not assets.quiet_config_dumps(
        record("myst-nb v%s: %s", "1.4.0", "NbParserConfig(metadata_key='mystnb')")
    )
    for kept in ("build succeeded.", "reading sources... [ 4%] book/api", "WARNING: x"):
        assert assets.quiet_config_dumps(record(kept))


@pytest.mark.parametrize(
    "path",
    [
        "book/node_modules/@jupyter-widgets/base/README.md",  # npm ci (scripts/assets.py)
        "node_modules/x/README.md",
        "book/js/vendor/mathjax/README.md",
        ".venv/lib/python3.11/site-packages/x-1.0.dist-info/LICENSE.md",
        "build/lib/ptlm_lite/README.md",  # a non-editable install's leftover
        "_build/jupyter_execute/chapters/gpt.ipynb",
    ],
)
def test_not_pages_are_excluded_from_the_build(path):
    """sphinx-external-toc counts every source file that is neither in _toc.yml nor
    excluded, and logs "Excluded N extra file(s)": 213 for book/node_modules alone."""
    from sphinx.util.matching import Matcher

    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    excluded = Matcher(config["exclude_patterns"])
    parts = path.split("/")
    assert any(excluded("/".join(parts[: i + 1])) for i in range(len(parts))), path


def test_no_page_of_the_toc_is_excluded():
    from sphinx.util.matching import Matcher

    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    excluded = Matcher(config["exclude_patterns"])
    toc = (ROOT / "_toc.yml").read_text()
    files = re.findall(r"(?:file|root):\s*([^\s#]+)", toc)
    assert files and not [f for f in files if excluded(f + ".md") or excluded(f)]
