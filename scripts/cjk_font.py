#!/usr/bin/env python3
"""Make the book's CJK and emoji fonts: Noto Sans SC and Noto Emoji cut down to the
characters the book uses.

    python scripts/cjk_font.py            # npm pack the two fonts, subset, write
    python scripts/cjk_font.py --check    # only say which characters the fonts lack
    python scripts/cjk_font.py --packages DIR   # DIR/noto-sans-sc, DIR/noto-emoji unpacked

Why: where the book is built there may be no CJK font at all, and the XLNet chapter's
example "我爱生活" (and the glossary's Chinese terms, RoBERTa's Japanese, the byte-level
BPE's 🙂) then render as boxes, in figures and on the page. The package ships this small font as package data
(``ptlm_lite/data/fonts/``, with its licence, the SIL Open Font License 1.1):
``ptlm_lite.viz`` registers it with matplotlib's font manager as a fallback after the
book's font, and ``scripts/assets.py`` serves it to the book's pages with a CSS
``@font-face`` (the pages' font stacks fall back to it).

Source: the npm packages ``@fontsource/noto-sans-sc`` and ``@fontsource/noto-emoji``
(regular weight, woff files split by Unicode range); the files holding the book's
characters are subset with fontTools and merged into one TrueType font each. Rerun after adding CJK text to a chapter:
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
EMOJI_FONT = FONT_DIR / "NotoEmoji-book.ttf"
# subsets: their own family names (OFL: a modified version)
FAMILY, EMOJI_FAMILY = "Noto Sans SC Book", "Noto Emoji Book"
# Unicode blocks drawn by a CJK font: radicals to CJK unified ideographs, compatibility
# ideographs, half- and full-width forms; and the emoji blocks.
CJK_RANGES = [(0x2E80, 0x9FFF), (0xF900, 0xFAFF), (0xFF00, 0xFFEF)]
EMOJI_RANGES = [(0x1F000, 0x1FAFF)]
# (npm package, files' prefix, output, family, ranges)
FONTS = [
    ("@fontsource/noto-sans-sc@5.3.0", "noto-sans-sc", FONT, FAMILY, CJK_RANGES),
    (
        "@fontsource/noto-emoji@5.3.2",
        "noto-emoji",
        EMOJI_FONT,
        EMOJI_FAMILY,
        EMOJI_RANGES,
    ),
]
SOURCES = ["chapters/*.ipynb", "book/*.md", "book/*.ipynb", "ptlm_lite/**/*.py"]


def is_cjk(ch: str, ranges=CJK_RANGES) -> bool:
    return any(a <= ord(ch) <= b for a, b in ranges)


def book_characters(root: Path = ROOT, ranges=CJK_RANGES) -> set[str]:
    """Every character in ``ranges`` (CJK by default) in the book's chapters, pages and
    package source."""
    chars: set[str] = set()
    for pattern in SOURCES:
        for path in root.glob(pattern):
            text = path.read_text(encoding="utf-8")
            if path.suffix == ".ipynb":  # \\u escapes in the JSON: decode them
                text = json.dumps(json.loads(text), ensure_ascii=False)
            chars |= {ch for ch in text if is_cjk(ch, ranges)}
    return chars


def font_characters(path: Path = FONT) -> set[str]:
    from fontTools.ttLib import TTFont

    return {chr(c) for c in TTFont(path).getBestCmap()}


def build(package_dir, chars, prefix="noto-sans-sc", target=FONT, family=FAMILY):
    """Subset and merge; returns the characters no file of the package has."""
    from fontTools import subset
    from fontTools.merge import Merger
    from fontTools.ttLib import TTFont

    files = sorted((package_dir / "files").glob(f"{prefix}-*-400-normal.woff"))
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
                record.string = family
            elif record.nameID in (4,):
                record.string = family + " Regular"
            elif record.nameID == 6:
                record.string = family.replace(" ", "") + "-Regular"
        FONT_DIR.mkdir(parents=True, exist_ok=True)
        merged.save(target)
    shutil.copyfile(package_dir / "LICENSE", FONT_DIR / f"OFL-{prefix}.txt")
    return chars - found


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--packages", type=Path, help="unpacked @fontsource packages")
    args = ap.parse_args(argv)
    lacking_any = False
    for npm, prefix, font, family, ranges in FONTS:
        chars = book_characters(ranges=ranges)
        if args.check:
            lacking = chars - font_characters(font) if font.exists() else chars
            print(f"{font.name} lacks:", "".join(sorted(lacking)) or "nothing")
            lacking_any |= bool(lacking)
            continue
        with tempfile.TemporaryDirectory() as tmp:
            package = args.packages / prefix if args.packages else None
            if package is None:
                subprocess.run(["npm", "pack", npm], cwd=tmp, check=True)
                (tgz,) = Path(tmp).glob("*.tgz")
                with tarfile.open(tgz) as t:
                    t.extractall(tmp, filter="data")
                package = Path(tmp) / "package"
            lacking = build(package, chars, prefix, font, family)
        print(
            f"{font.relative_to(ROOT)}: {len(chars) - len(lacking)} characters, "
            f"{font.stat().st_size / 1e3:.0f} kB"
        )
        if lacking:
            print(f"not in {npm}:", "".join(sorted(lacking)))
    return 1 if lacking_any else 0


if __name__ == "__main__":
    sys.exit(main())
