"""The surface baselines: what the input's form alone gives, per task. See
:mod:`ptlm_lite.suite`."""

from __future__ import annotations

import re
from functools import partial

from .task import KINDS, Task

# ----------------------------------------------------------------------------------
# The surface baselines: what the input's form alone gives

# the feature sets of :func:`surface_baseline`
SURFACE_FEATURES = ("ngrams", "length", "edges")


def _template(context: str) -> str:
    """What a surface model may condition a candidate on: the context's last word,
    digits blanked ("is", "0-year-old", "in", "for", ...): the slot, without the
    entity.
    """
    words = context.split()
    return re.sub(r"\d", "0", words[-1]) if words else ""


def _surface_tokens(
    text: str, features, ngrams: tuple[int, int], tokenizers: dict
) -> list[str]:
    """One field's surface features as strings (a bag for a linear model)."""
    out = []
    if "ngrams" in features:
        padded = f" {text} "  # spaces mark the start and end of the field
        out += [
            "g:" + padded[i : i + n]
            for n in range(ngrams[0], ngrams[1] + 1)
            for i in range(len(padded) - n + 1)
        ]
    if "length" in features:
        out += [f"chars:{len(text)}", f"words:{len(text.split())}"]
        for name, (tok, prefix) in tokenizers.items():
            out.append(f"pieces[{name}]:{len(tok.encode(prefix + text))}")
    if "edges" in features:
        out += [f"first:{text[:1]}", f"last:{text[-1:]}", f"last2:{text[-2:]}"]
    return out


def _surface_bags(task: Task, examples, features, ngrams, tokenizers) -> list[list]:
    """One bag of features per scored item: an example of a single or pair task, an
    (example, candidate) of a choice task. The candidate's (or segment B's) features
    also come crossed with the context's template (:func:`_template`), so a linear
    model can learn "after *is*, a short word", which is the kind of shortcut a choice
    between two kinds of word offers.
    """
    bag = partial(
        _surface_tokens, features=features, ngrams=ngrams, tokenizers=tokenizers
    )

    def crossed(context, candidate):
        t = _template(context)
        own = bag(candidate)
        return (
            ["A|" + f for f in bag(context)]
            + ["B|" + f for f in own]
            + [f"{t}|" + f for f in own]
        )

    if task.kind == "single":
        return [bag(e["text"]) for e in examples]
    if task.kind == "pair":
        return [crossed(e["a"], e["b"]) for e in examples]
    return [crossed(e["context"], c) for e in examples for c in e["endings"]]


def surface_baseline(
    task: Task,
    ngrams: tuple[int, int] = (1, 4),
    C: float = 1.0,
    features=SURFACE_FEATURES,
    tokenizers: dict | None = None,
) -> dict:
    """Accuracy and macro-F1 on ``task.test`` of a model that sees only the input's
    form.

    Each text field (the sentence; segments A and B; context and candidate) becomes a
    bag of surface features, chosen among :data:`SURFACE_FEATURES`: ``"ngrams"``,
    character n-grams (spaces included and around the field, so a word count, a prefix
    and a suffix show); ``"length"``, characters, words and, for each of
    ``tokenizers`` (``{name: (tokenizer, prefix)}``), word pieces; ``"edges"``, the
    first and last characters. The candidate's (segment B's) features come crossed with
    the context's last word too (:func:`_surface_bags`), so "after *is*, the shorter
    word" is in reach. A logistic regression is trained on ``task.train``; a choice task
    scores each (context, candidate) pair as right or wrong and picks the best-scored
    candidate. The model is linear, so it can use a suffix, a length or how often a
    value is the answer, but not whether two particular entities belong together, which
    is exactly a fact. Returns ``{"accuracy", "macro_f1", "predictions"}``.
    """
    import numpy as np
    from sklearn.feature_extraction.text import CountVectorizer
    from sklearn.linear_model import LogisticRegression
    from threadpoolctl import threadpool_limits

    from ..metrics import scores

    unknown = set(features) - set(SURFACE_FEATURES)
    if unknown or not features:
        raise ValueError(
            f"features must be a non-empty subset of {SURFACE_FEATURES}, got "
            f"{features!r}"
        )
    if task.kind not in KINDS:
        raise ValueError(f"no surface baseline for a {task.kind!r} task")
    tokenizers = tokenizers or {}
    bags = {
        part: _surface_bags(task, getattr(task, part), features, ngrams, tokenizers)
        for part in ("train", "test")
    }
    vectorizer = CountVectorizer(
        analyzer=lambda bag: bag, binary=True, lowercase=False
    ).fit(bags["train"])
    X_train, X_test = (vectorizer.transform(bags[p]) for p in ("train", "test"))
    # A tight tolerance: on a balanced pair task the gradient at zero is tiny, and the
    # default stops before the first step (a constant "baseline" would measure
    # nothing).
    clf = LogisticRegression(C=C, max_iter=5000, tol=1e-8)
    labels = np.array([e["label"] for e in task.test])
    # BLAS threads spinning on a busy 2-core machine: 50x slower
    with threadpool_limits(1):
        if task.kind == "choice":
            right = np.array(
                [
                    int(i == e["label"])
                    for e in task.train
                    for i in range(len(e["endings"]))
                ]
            )
            clf.fit(X_train, right)
            score = clf.decision_function(X_test).reshape(len(task.test), -1)  # (N, C)
            predictions = score.argmax(1)
        else:
            clf.fit(X_train, [e["label"] for e in task.train])
            predictions = clf.predict(X_test)
    return {
        **scores(predictions, labels, task.n_labels),
        "predictions": predictions.tolist(),
    }
