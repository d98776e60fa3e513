#!/usr/bin/env python3
"""Make the book's CJK font: Noto Sans SC cut down to the characters the book uses.

    python scripts/cjk_font.py            # npm pack @fontsource/noto-sans-sc, subset, write
    python scripts/cjk_font.py --check    # only say which characters the font lacks

Why: where the book is built there may be no CJK font at all, and the XLNet chapter's
example "我爱生活" (and the glossary's Chinese terms, RoBERTa's Japanese) then render as
boxes, in figures and on the page. The package ships this small font as package data
(``ptlm_lite/data/fonts/``, with its licence, the SIL Open Font License 1.1):
``ptlm_lite.viz`` registers it with matplotlib's font manager as a fallback after the
book's font, and ``scripts/assets.py`` serves it to the book's pages with a CSS
``@font-face`` (the pages' font stacks fall back to it).

Source: the npm package ``@fontsource/noto-sans-sc`` (regular weight, woff files split
by Unicode range); the files holding the book's characters are subset with fontTools
and merged into one TrueType font. Rerun after adding CJK text to a chapter:
``tests/test_fonts.py`` fails, naming the characters the font lacks.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FONT_DIR = ROOT / "ptlm_lite" / "data" / "fonts"
FONT = FONT_DIR / "NotoSansSC-book.ttf"
FAMILY = "Noto Sans SC Book"  # a subset: its own family name (OFL: modified version)
NPM_PACKAGE = "@fontsource/noto-sans-sc@5.3.0"
# Unicode blocks drawn by a CJK font: radicals to CJK unified ideographs, compatibility
# ideographs, half- and full-width forms.
CJK_RANGES = [(0x2E80, 0x9FFF), (0xF900, 0xFAFF), (0xFF00, 0xFFEF)]
SOURCES = ["chapters/*.ipynb", "book/*.md", "book/*.ipynb", "ptlm_lite/**/*.py"]


def is_cjk(ch: str) -> bool:
    return any(a <= ord(ch) <= b for a, b in CJK_RANGES)


def book_characters(root: Path = ROOT) -> set[str]:
    """Every CJK character in the book's chapters, pages and package source."""
    chars: set[str] = set()
    for pattern in SOURCES:
        for path in root.glob(pattern):
            text = path.read_text(encoding="utf-8")
            if path.suffix == ".ipynb":  # \\u escapes in the JSON: decode them
                text = json.dumps(json.loads(text), ensure_ascii=False)
            chars |= {ch for ch in text if is_cjk(ch)}
    return chars


def font_characters(path: Path = FONT) -> set[str]:
    from fontTools.ttLib import TTFont

    return {chr(c) for c in TTFont(path).getBestCmap()}


def build(package_dir: Path, chars: set[str]) -> set[str]:
    """Subset and merge; returns the characters no file of the package has."""
    from fontTools import subset
    from fontTools.merge import Merger
    from fontTools.ttLib import TTFont

    files = sorted((package_dir / "files").glob("noto-sans-sc-*-400-normal.woff"))
    if not files:
        raise FileNotFoundError(f"no regular-weight woff files in {package_dir}/files")
    parts, found = [], set()
    with tempfile.TemporaryDirectory() as tmp:
        for f in files:
            font = TTFont(f)
            have = {chr(c) for c in font.getBestCmap()} & (chars - found)
            if not have:
                continue
            options = subset.Options()
            options.flavor = None
            options.layout_features = []
            options.name_IDs = ["*"]
            options.notdef_outline = True
            sub = subset.Subsetter(options)
            sub.populate(text="".join(sorted(have)))
            sub.subset(font)
            out = Path(tmp) / (f.stem + ".ttf")
            font.flavor = None
            font.save(out)
            parts.append(str(out))
            found |= have
        merged = Merger().merge(parts)
        for record in merged["name"].names:
            if record.nameID in (1, 16):
                record.string = FAMILY
            elif record.nameID in (4,):
                record.string = FAMILY + " Regular"
            elif record.nameID == 6:
                record.string = FAMILY.replace(" ", "") + "-Regular"
        FONT_DIR.mkdir(parents=True, exist_ok=True)
        merged.save(FONT)
    shutil.copyfile(package_dir / "LICENSE", FONT_DIR / "OFL.txt")
    return chars - found


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--package", type=Path, help="an unpacked @fontsource package")
    args = ap.parse_args(argv)
    chars = book_characters()
    if args.check:
        lacking = chars - font_characters() if FONT.exists() else chars
        print("missing:", "".join(sorted(lacking)) or "none")
        return 1 if lacking else 0
    with tempfile.TemporaryDirectory() as tmp:
        package = args.package
        if package is None:
            subprocess.run(["npm", "pack", NPM_PACKAGE], cwd=tmp, check=True)
            (tgz,) = Path(tmp).glob("*.tgz")
            with tarfile.open(tgz) as t:
                t.extractall(tmp, filter="data")
            package = Path(tmp) / "package"
        lacking = build(package, chars)
    print(
        f"{FONT.relative_to(ROOT)}: {len(chars) - len(lacking)} characters, "
        f"{FONT.stat().st_size / 1e3:.0f} kB"
    )
    if lacking:
        print("not in Noto Sans SC:", "".join(sorted(lacking)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
