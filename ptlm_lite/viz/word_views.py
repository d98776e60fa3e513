"""Word vectors in two dimensions, with each query word's nearest neighbours
(``from ptlm_lite.viz.word_views import neighbour_explorer``).

Introduced in ``chapters/word_vectors.ipynb``. The projection is scikit-learn's PCA of
the words shown; the neighbours are found by cosine in the full space (the picture
only places them). One view per query word, precomputed and switched in the browser,
so it works in the static book as in a kernel.
"""

from __future__ import annotations

from typing import Mapping, Sequence

from ._html import esc, new_figure
from .stepper import stepper

NEIGHBOURS_CLASS = "ptlm-neighbours"  # the browser tests find the explorers by this
PALETTE = ("#2f6db5", "#d9730d", "#2e9e44", "#b5312f", "#7b4fb5", "#8c6d31")


def _check(vectors, itos, queries, groups):
    import numpy as np

    v = np.asarray(
        vectors.detach().cpu() if hasattr(vectors, "detach") else vectors, dtype=float
    )
    if v.ndim != 2 or v.shape[0] != len(itos) or v.shape[1] < 2:
        raise ValueError(
            f"vectors must be a (V, D) array, one row per word of itos "
            f"({len(itos)}), D >= 2; got shape {tuple(v.shape)}"
        )
    if isinstance(queries, str) or not queries:
        raise ValueError(f"queries must be a non-empty list of words, got {queries!r}")
    index = {w: i for i, w in enumerate(itos)}
    for q in queries:
        if q not in index:
            raise ValueError(f"queries: {q!r} is not in itos")
    if not isinstance(groups, Mapping) or not groups:
        raise ValueError("groups must be a non-empty dict {group name: list of words}")
    return v, index


def neighbour_explorer(
    vectors,
    itos: Sequence[str],
    queries: Sequence[str],
    groups: Mapping[str, Sequence[str]],
    *,
    k: int = 5,
    description: str = "query",
):
    """A 2-D PCA map of the words in ``groups`` ({name: words}, one colour each), one
    view per word of ``queries``: the query ringed, lines to its ``k`` nearest
    neighbours by cosine over the whole vocabulary, and the list of neighbours with
    their cosines (numbered on the map). Returns a :func:`~ptlm_lite.viz.stepper`
    (buttons or a slider) with the CSS class ``ptlm-neighbours``.
    """
    import numpy as np
    from sklearn.decomposition import PCA

    if not isinstance(k, int) or k < 1:
        raise ValueError(f"k must be an integer >= 1, got {k!r}")
    v, index = _check(vectors, itos, queries, groups)
    unit = v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-12)
    shown = [w for ws in groups.values() for w in ws if w in index]
    shown += [q for q in queries if q not in shown]
    xy = PCA(2, random_state=0).fit_transform(unit[[index[w] for w in shown]])
    at = dict(zip(shown, xy))
    group_of = {w: g for g, ws in groups.items() for w in ws}
    views = {}
    for q in queries:
        cos = unit @ unit[index[q]]
        cos[index[q]] = -np.inf
        near = [itos[i] for i in np.argsort(-cos)[:k]]
        fig = new_figure((6.4, 4.2))
        ax = fig.add_subplot()
        for colour, (g, ws) in zip(PALETTE * 3, groups.items()):
            pts = np.array([at[w] for w in ws if w in at]).reshape(-1, 2)
            ax.scatter(pts[:, 0], pts[:, 1], s=14, color=colour, alpha=0.5, label=g)
        for rank, w in enumerate(near, 1):  # numbered: the list below names them
            if w in at:
                ax.plot(*zip(at[q], at[w]), color="#555", lw=0.8, zorder=1)
                ax.scatter(*at[w], s=40, color="none", edgecolors="#333", lw=1)
                ax.annotate(
                    str(rank),
                    at[w],
                    fontsize=10,
                    xytext=(4 + 7 * (rank % 2), 4 - 12 * (rank % 3)),
                    textcoords="offset points",
                )
        ax.scatter(*at[q], s=120, facecolors="none", edgecolors="black", lw=1.5)
        ax.annotate(
            q,
            at[q],
            fontsize=12,  # not bold: the CJK and emoji fallback fonts have no bold
            xytext=(4, -12),
            textcoords="offset points",
        )
        ax.set_xticks([]), ax.set_yticks([])
        ax.set_title(f"{q}: its {k} nearest neighbours (cosine, all dimensions)")
        ax.legend(loc="best", fontsize=10, framealpha=0.7)
        fig.tight_layout()
        rows = "".join(
            f"<li>{esc(w)} ({esc(group_of.get(w, 'other'))}): {cos[index[w]]:.2f}</li>"
            for w in near
        )
        caption = f"<div>query: <b>{esc(q)}</b>; its nearest neighbours:</div>"
        views[q] = stepper_view(fig, f"{caption}<ol style='margin:2px 0'>{rows}</ol>")
    box = stepper(views, description=description)
    box.add_class(NEIGHBOURS_CLASS)
    return box


def stepper_view(fig, html: str) -> str:
    """A figure above a piece of HTML, as one view."""
    from ._html import figure_to_html

    return f"<div>{figure_to_html(fig)}{html}</div>"
