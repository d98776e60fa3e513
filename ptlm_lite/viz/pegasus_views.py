"""PEGASUS's widget (``from ptlm_lite.viz.pegasus_views import gap_explorer``): one
document with the sentences each gap-sentence strategy removes highlighted, the source
the encoder reads and the target the decoder writes.

Introduced in ``chapters/pegasus.ipynb``. Every view is rendered in advance and
switched in the browser (:func:`~ptlm_lite.viz.stepper`), so it works in the static
book.
"""

from __future__ import annotations

from typing import Mapping, Sequence

from ._html import esc
from .stepper import stepper

GAP_CLASS = "ptlm-gaps"  # the browser tests find the explorer by this
_GAP = "background:#ffd27f;font-weight:600"  # a removed sentence


def gap_view(
    sentences: Sequence[str],
    chosen: Sequence[int],
    label: str,
    scores: Sequence[float] | None = None,
    mask: str = "[MASK]",
) -> str:
    """One view: the document with the ``chosen`` sentences highlighted (each with its
    principal score when ``scores`` is given), then the source and the target."""
    chosen = sorted(set(int(i) for i in chosen))
    if any(not 0 <= i < len(sentences) for i in chosen):
        raise ValueError(
            f"chosen must index the {len(sentences)} sentences, got {chosen}"
        )
    if scores is not None and len(scores) != len(sentences):
        raise ValueError("scores must have one number per sentence")
    rows = []
    for i, s in enumerate(sentences):
        style = _GAP if i in chosen else ""
        score = "" if scores is None else f" <small>(ROUGE-1 {scores[i]:.2f})</small>"
        rows.append(f"<li><span style='{style}'>{esc(s)}</span>{score}</li>")
    source = " ".join(mask if i in chosen else s for i, s in enumerate(sentences))
    target = " ".join(sentences[i] for i in chosen)
    return (
        f"<div><div>view: {esc(label)}: {len(chosen)} of {len(sentences)} sentences "
        f"removed (highlighted)</div><ol style='margin:2px 0'>{''.join(rows)}</ol>"
        f"<div><b>source</b>: {esc(source)}</div>"
        f"<div><b>target</b>: {esc(target)}</div></div>"
    )


def gap_explorer(
    sentences: Sequence[str],
    chosen: Mapping[str, Sequence[int]],
    *,
    scores: Sequence[float] | None = None,
    description: str = "strategy",
):
    """A stepper with one view per strategy (``chosen``: {strategy: sentence
    indices}), each the document with that strategy's gap sentences highlighted, the
    source with one ``[MASK]`` per gap and the target. Returns the stepper, CSS class
    ``ptlm-gaps``."""
    if isinstance(sentences, str) or not sentences:
        raise ValueError("sentences must be a non-empty list of strings")
    if not isinstance(chosen, Mapping) or not chosen:
        raise ValueError("chosen must be a non-empty dict {strategy: indices}")
    views = {
        name: gap_view(sentences, idx, name, scores) for name, idx in chosen.items()
    }
    box = stepper(views, description=description)
    box.add_class(GAP_CLASS)
    return box
