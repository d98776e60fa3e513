"""BART's noises on one passage, switched in the browser (``chapters/bart.ipynb``).

Each view shows what the encoder reads (the noised source) above what the decoder must
write (the document). Tokens are coloured by the sentence they come from, so a
permutation or a rotation shows as moved colours; ``[MASK]`` is a dark chip; a token
the source lacks is struck through in the target. Every view is drawn in advance, so
the buttons work in the static book as in a kernel.
"""

from __future__ import annotations

from typing import Callable, Mapping, Sequence

from ._html import HTML_FONTS as FONTS
from ._html import esc
from .stepper import stepper

# one pale colour per sentence (cycled), readable behind dark text
PALETTE = ("#dbe9f6", "#fde2c8", "#d9f0d3", "#eadcf2", "#fbe3e8", "#fff2b3")
MASK_STYLE = "background:#7a1f1f;color:#fff"
_CHIP = "display:inline-block;margin:1px;padding:0 3px;border-radius:3px;"


def _chip(text: str, style: str) -> str:
    return f'<span style="{_CHIP}{style}">{esc(text)}</span>'


def _where(noise, doc, seed: int, mask_id: int) -> list:
    """Each source token's position in the flat document (None for a [MASK]): the
    noise run again, same seed, on a document whose tokens are their own positions
    (the noises draw the same random numbers whatever the token ids are)."""
    import torch

    base = mask_id + 1
    flat_pos, k = [], base
    for s in doc:
        flat_pos.append(list(range(k, k + len(s))))
        k += len(s)
    src = noise(flat_pos, torch.Generator().manual_seed(seed)).source
    return [None if t == mask_id else t - base for t in src]


def noise_explorer(
    doc: Sequence[Sequence[int]],
    noises: Mapping[str, Callable],
    *,
    token: Callable[[int], str],
    mask_id: int,
    seed: int = 0,
    notes: Mapping[str, str] | None = None,
):
    """A stepper over ``noises`` (``{name: noise(doc, generator) -> Pair}``, the
    :mod:`ptlm_lite.noising` functions with their parameters bound) applied to one
    document ``doc`` (a list of sentences of token ids) with the generator seeded
    ``seed``. ``token(id) -> str`` names a token; ``notes``: a line under each name.
    """
    import torch

    if not noises:
        raise ValueError("noises must name at least one noise function")
    sentence = [i for i, s in enumerate(doc) for _ in s]  # flat position -> sentence
    views = {}
    for name, noise in noises.items():
        pair = noise(doc, torch.Generator().manual_seed(seed))
        where = _where(noise, doc, seed, mask_id)
        if len(where) != len(pair.source):
            raise ValueError(f"noise {name!r} does not keep the noising contract")
        src = "".join(
            _chip("[MASK]", MASK_STYLE)
            if w is None
            else _chip(token(t), f"background:{PALETTE[sentence[w] % len(PALETTE)]}")
            for t, w in zip(pair.source, where)
        )
        kept = {w for w in where if w is not None}
        tgt = "".join(
            _chip(
                token(t),
                f"background:{PALETTE[sentence[i] % len(PALETTE)]}"
                + ("" if i in kept else ";text-decoration:line-through;opacity:.75"),
            )
            for i, t in enumerate(pair.target)
        )
        note = (notes or {}).get(name, "")
        views[name] = (
            f'<div style="font:13px/1.9 {FONTS};max-width:100%">'
            + (
                f'<div style="color:#444;margin:2px 0 4px">{esc(note)}</div>'
                if note
                else ""
            )
            + f"<div><b>encoder reads</b> ({len(pair.source)} tokens)</div>"
            + f"<div>{src}</div>"
            + f"<div><b>decoder writes</b> ({len(pair.target)} tokens; struck: not in "
            + f"the source)</div><div>{tgt}</div></div>"
        )
    return stepper(views, control="buttons", description="noise")
