"""Real corpora from the Hugging Face Hub, for readers with a network (opt-in, never in
tests).

The book runs offline on its embedded data (:mod:`ptlm_lite.data.shakespeare`, the
synthetic world in :mod:`ptlm_lite.data.world`). In Colab or on a GPU machine a reader
may want a bigger, more ordinary corpus; :func:`load_corpus` fetches one through
``datasets``, which is imported only here and only when called. Offline, it fails at
once with a message naming the embedded alternatives instead of hanging on retries. Used
in the "scale it up" sections of the chapters.
"""

from __future__ import annotations

import os
import socket

# name -> (Hub dataset, configuration)
ONLINE_CORPORA = {
    "wikitext-2": ("wikitext", "wikitext-2-raw-v1"),
    "wikitext-103": ("wikitext", "wikitext-103-raw-v1"),
}
SPLITS = ("train", "validation", "test")
_ALTERNATIVES = (
    "use the embedded corpora instead: ptlm_lite.data.shakespeare (text_stream, "
    "documents, entities) or the synthetic world "
    "ptlm_lite.data.world.make_world()"
)


def _offline_reason() -> str | None:
    for var in ("HF_DATASETS_OFFLINE", "HF_HUB_OFFLINE"):
        if os.environ.get(var, "").strip().lower() in ("1", "true", "yes", "on"):
            return f"{var} is set"
    try:  # one quick probe instead of datasets' long retries
        socket.create_connection(("huggingface.co", 443), timeout=3).close()
    except OSError as err:
        return f"huggingface.co is unreachable ({err})"
    return None


def load_corpus(name: str = "wikitext-2", split: str = "train") -> list[str]:
    """The non-empty lines of an online corpus, e.g. WikiText-2's training split.

    ``name``: one of :data:`ONLINE_CORPORA`; ``split``: train, validation or test. Needs
    the optional dependency ``datasets`` (``pip install datasets``) and a network.
    """
    if name not in ONLINE_CORPORA:
        raise ValueError(
            f"unknown corpus {name!r}; name must be one of {tuple(ONLINE_CORPORA)} "
            f"(or {_ALTERNATIVES})"
        )
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; split must be one of {SPLITS}")
    reason = _offline_reason()
    if reason:
        raise RuntimeError(f"cannot download {name!r}: {reason}; {_ALTERNATIVES}")
    try:
        import datasets  # lazy: optional dependency
    except ImportError as err:
        raise RuntimeError(
            f"loading {name!r} needs the optional package 'datasets' "
            f"(pip install datasets); or {_ALTERNATIVES}"
        ) from err
    path, config = ONLINE_CORPORA[name]
    try:
        ds = datasets.load_dataset(path, config, split=split)
    except Exception as err:  # network errors come in many types
        raise RuntimeError(
            f"downloading {name!r} failed ({err}); {_ALTERNATIVES}"
        ) from err
    return [line for line in ds["text"] if line.strip()]
