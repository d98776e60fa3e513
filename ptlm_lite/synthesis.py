"""The synthesis chapter's model table (``chapters/synthesis.ipynb``): the articles'
comparison tables, with the columns they declare beside the ones the book measures.

The declared columns (the year, the family, the language-model type, the feature
extractor, the context the paper gives its model, the highlight) are the source
articles' tables, written once here in :data:`DECLARED`, keyed by chapter. Everything
else is measured:

- **context**, by :mod:`ptlm_lite.probe` on the chapter's own model class: the cached
  pre-trained model where a recipe caches one (GPT, BERT, ULMFiT's LSTM; trained on
  first use), else a stand-in of the same class and shape with random weights (which
  positions an output depends on is set by the architecture and its masks, not by
  the weights; :func:`probe_chapter` says which it used);
- **parameters**, counted on the models (the tiny ones and the papers' presets, built
  on PyTorch's ``meta`` device, so a 340M-weight model costs no memory);
- **FLOPs per token** from :mod:`ptlm_lite.flops`;
- **cost against length**, by :func:`ptlm_lite.length_cost.cost_slopes`: how one
  layer's time and the memory it keeps for the backward pass grow with the sequence
  length, per feature extractor.

The rows come from ``_toc.yml`` (:func:`ptlm_lite.scoreboard.toc_chapters`), so a
chapter that lands later gets a row by itself: measured where its architecture has a
probe, "not declared" where :data:`ptlm_lite.articles.DECLARED` has no entry yet.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Callable

import torch

from .articles import COLUMNS, DECLARED, declared_kind
from .probe import context as probe_context
from .verdict import SHOWS_UP

__all__ = [
    "Probe",
    "probes",
    "probe_chapter",
    "count_params",
    "model_table",
    "agrees",
    "describe",
]

T_PROBE, LOW = 12, 5  # probe length; ids from LOW up (no padding or special ids)


@dataclass
class Probe:
    """One measurement to make: ``label`` (which output), ``run(ids) -> (B, T, ...)``,
    the ``vocab`` to draw ids from, the segment ``window`` (Transformer-XL), and
    ``weights`` (where the model came from: "cached ..." or "random stand-in")."""

    label: str
    run: Callable
    vocab: int
    weights: str
    window: int | None = None


def _preset(name, vocab):
    from .config import preset

    _register_all()
    return preset(name, vocab_size=vocab)


def _register_all():
    # the presets are registered by the modules that define them
    from . import albert, bart, bert, electra, gpt, pegasus, reformer  # noqa: F401
    from . import roberta, t5, transformer_xl, xlnet  # noqa: F401
    from .config import PRESETS, register_preset

    if "gpt3-175b" not in PRESETS:  # Brown et al. (2020), Table 2.1: the largest
        register_preset(
            "gpt3-175b", **{**PRESETS["gpt2"], "d_model": 12288, "n_layer": 96,
                            "n_head": 96, "d_ff": 4 * 12288, "max_len": 2048},
        )  # fmt: skip


def _tiny_model(name: str, vocab: int = 256):
    """A random-weights model of the tiny shape called ``name`` (see DECLARED)."""
    _register_all()
    if name == "lstm":
        from .rnn import LSTMConfig, LSTMLM

        return LSTMLM(LSTMConfig(vocab_size=vocab), seed=0)
    if name == "encdec":
        from .transformer import Transformer

        return Transformer(_preset("tiny", vocab), seed=0)
    cls = {
        "gpt": "gpt.GPT", "gpt2": "gpt.GPT", "bert": "bert.Bert",
        "roberta": "roberta.Roberta", "albert": "albert.Albert",
        "electra": "electra.ElectraForPreTraining",
        "txl": "transformer_xl.TransformerXL",
        "xlnet": "xlnet.XLNet", "reformer": "reformer.Reformer",
    }[name.rsplit("-", 1)[0]]  # fmt: skip
    import importlib

    mod, attr = cls.split(".")
    model_cls = getattr(importlib.import_module(f".{mod}", __package__), attr)
    if name == "reformer-tiny":  # fixed hashes: random ones would move every output
        return model_cls(_preset(name, vocab).replace(hash_seed=0), seed=0)
    return model_cls(_preset(name, vocab), seed=0)


def probes(stem: str, scale: str = "tiny") -> list[Probe]:
    """The measurements for chapter ``stem``'s model (``[]`` where no probe fits:
    a chapter :data:`DECLARED` does not know). Cached models come from their
    recipes (trained on first use). Chapter: the synthesis."""
    arch = DECLARED.get(stem, {}).get("arch")
    if arch is None:
        return []
    found = _ARCH[arch](DECLARED[stem].get("tiny"), scale)
    if arch == "encdec" and stem != "transformer":  # its own class is not in the map
        for p in found:
            p.weights = "stand-in: the book's Transformer (encoder-decoder, tiny shape)"
    return found


def train_cached(scale: str = "tiny") -> None:
    """Train the three cached models that :func:`probes` loads (BERT, GPT, the ULMFiT
    LSTM) side by side where the model cache lacks them: each
    :func:`~ptlm_lite.pmap` worker trains one into the cache, where the probes find
    it (a cached one only loads). Chapter: the synthesis."""
    from .parallel import pmap
    from .recipes.bert import pretrained_bert
    from .recipes.gpt import pretrained_gpt
    from .recipes.ulmfit import pretrained_lstm

    def train(make) -> None:  # the model stays in the cache, not in the reply
        make(scale)

    makers = (pretrained_bert, pretrained_gpt, pretrained_lstm)  # the longest first
    pmap(train, makers, desc="cached models")


_STAND_IN = "random stand-in (same class and tiny shape)"


def _gpt_cached(name, scale):
    from .recipes.gpt import pretrained_gpt

    m = pretrained_gpt(scale).eval()
    run = lambda x: m(x).logits  # noqa: E731
    return [Probe("logits", run, m.config.vocab_size, f"cached gpt-{scale}-lm")]


def _bert_cached(name, scale):
    from .recipes.bert import pretrained_bert

    m = pretrained_bert(scale).eval()
    run = lambda x: m.bert(x).last_hidden  # noqa: E731
    where = f"cached bert-{scale}-shakespeare"
    return [Probe("last hidden", run, m.config.vocab_size, where)]


def _lstm_cached(name, scale):
    from .recipes.ulmfit import pretrained_lstm

    m = pretrained_lstm(scale).eval()
    run = lambda x: m(x).logits  # noqa: E731
    where = f"cached ulmfit-{scale}-general"
    return [Probe("logits", run, m.config.vocab_size, where)]


def _plain(out: str):
    def make(name, scale):
        m = _tiny_model(name).eval()
        if out == "bert":
            run = lambda x: m.bert(x).last_hidden  # noqa: E731
        else:
            run = lambda x: m(x).logits  # noqa: E731
        label = "logits" if out == "logits" else "last hidden"
        return [Probe(label, run, m.config.vocab_size, _STAND_IN)]

    return make


def _encoder(name, scale):
    m = _tiny_model(name).eval()
    return [Probe("last hidden", lambda x: m(x).last_hidden, 256, _STAND_IN)]


def _unilm(name, scale):
    from .unilm import UniLM

    m = UniLM(_preset(name, 256), seed=0).eval()
    seg = torch.zeros(1, T_PROBE, dtype=torch.long)
    seg[:, T_PROBE // 2 :] = 1  # source = the first half, target = the second

    def under(objective):
        def run(x):
            s = seg.expand(x.shape[0], -1)
            return m(x, segments=s, objective=objective).logits

        return run

    return [
        Probe(f"{o} mask", under(o), 256, _STAND_IN)
        for o in ("bidirectional", "left-to-right", "seq2seq")
    ]


def _local(name, scale):
    from .bert import Bert
    from .efficient import local_mask

    m = Bert(_preset(name, 256), seed=0).eval()
    mask = local_mask(T_PROBE, 2)  # each token sees its neighbours; layers widen it
    run = lambda x: m(x, mask=mask).last_hidden  # noqa: E731
    return [Probe("local window (one each side)", run, 256, _STAND_IN)]


def _txl(name, scale, window=4):
    m = _tiny_model(name).eval()

    def run(x):
        mem = m.new_memory()
        segs = range(0, x.shape[1], window)
        return torch.cat([m(x[:, s : s + window], memory=mem).logits for s in segs], 1)

    label = f"logits, fed {window} tokens at a time"
    return [Probe(label, run, 256, _STAND_IN, window=window)]


def _xlnet(name, scale):
    m = _tiny_model(name).eval()
    order = torch.randperm(T_PROBE, generator=torch.Generator().manual_seed(0))
    run = lambda x: m(x, order=order).extra["g"]  # noqa: E731
    return [Probe("query stream, one random order", run, 256, _STAND_IN)]


def _elmo(name, scale):
    from .elmo import ELMo, ELMoConfig

    V = 64
    g = torch.Generator().manual_seed(0)
    chars = torch.randint(4, ELMoConfig().n_chars, (V, 6), generator=g)
    m = ELMo(ELMoConfig(vocab_size=V), chars, seed=0).eval()
    return [
        Probe("forward LM", lambda x: m(x).logits, V, _STAND_IN),
        Probe("backward LM", lambda x: m(x).extra["backward_logits"], V, _STAND_IN),
        Probe("ELMo vectors (top layer)", lambda x: m.layers(x)[-1], V, _STAND_IN),
    ]


def _static(name, scale):
    emb = torch.nn.Embedding(256, 16)  # a word-vector table: a lookup, nothing more
    return [Probe("word vector", lambda x: emb(x), 256, "an embedding table")]


def _encdec(name, scale):
    m = _tiny_model(name).eval()
    g = torch.Generator().manual_seed(1)
    src = torch.randint(LOW, 256, (2, T_PROBE), generator=g)
    return [
        Probe("encoder", lambda x: _hidden(m.encode(x)), 256, _STAND_IN),
        Probe("decoder (source fixed)", lambda x: m(src, x).logits, 256, _STAND_IN),
    ]


def _hidden(out):
    for attr in ("last_hidden", "hidden"):
        if hasattr(out, attr) and isinstance(getattr(out, attr), torch.Tensor):
            return getattr(out, attr)
    return out[0] if isinstance(out, tuple) else out


_ARCH = {
    "gpt-cached": _gpt_cached,
    "bert-cached": _bert_cached,
    "lstm-cached": _lstm_cached,
    "gpt2": _plain("logits"),
    "lstm": _plain("logits"),
    "reformer": _plain("logits"),
    "bert": _encoder,
    "roberta": _encoder,
    "albert": _encoder,
    "electra": _plain("bert"),
    "unilm": _unilm,
    "local": _local,
    "txl": _txl,
    "xlnet": _xlnet,
    "elmo": _elmo,
    "static": _static,
    "encdec": _encdec,
}


def describe(found) -> str:
    """The probe's kind, with the two cases :func:`ptlm_lite.probe.kind_of` calls
    "other" named: ``none`` (each output sees only its own token, a static vector)
    and a sparse pattern (``"... , sparse"``: a subset of a triangle or of everything,
    as a local window leaves after a few layers). Chapter: the synthesis."""
    if found.kind != "other":
        return found.kind
    T = found.D.shape[0]
    seen = found.D & ~torch.eye(T, dtype=torch.bool)
    if not seen.any():
        return "none"
    if not (seen & torch.triu(torch.ones(T, T, dtype=torch.bool), 1)).any():
        return "left-to-right, sparse"
    if torch.equal(seen, seen.T):
        return "bidirectional, sparse"
    return "other"


def probe_chapter(stem: str, scale: str = "tiny", batch: int = 2) -> list[dict]:
    """Run :func:`probes` for chapter ``stem``: ``[{"label", "kind", "weights",
    "found"}]`` (``found`` the :class:`~ptlm_lite.probe.Context`, its ``D`` the
    dependence matrix). Chapter: the synthesis."""
    out = []
    for p in probes(stem, scale):
        g = torch.Generator().manual_seed(0)
        ids = torch.randint(LOW, p.vocab, (batch, T_PROBE), generator=g)
        found = probe_context(p.run, ids, p.vocab, window=p.window, low=LOW)
        out.append(dict(label=p.label, kind=describe(found), weights=p.weights,
                        found=found))  # fmt: skip
    return out


def agrees(stem: str, measured: list[dict]) -> str:
    """ "yes" when the probe found every context :data:`DECLARED` gives the chapter's
    model (each declared kind among the measured ones), "no" when not, "–" with no
    declaration or no measurement. Chapter: the synthesis."""
    want = declared_kind(stem)
    if not want or not measured:
        return "–"
    got = {m["kind"] for m in measured}
    return "yes" if set(want) <= got else "no"


def count_params(name: str | None, vocab: int = 1024, meta: bool = True) -> int | None:
    """Weights of the model :data:`DECLARED` names ``name`` (a tiny shape, at
    ``vocab``; or a paper's preset, at its own vocabulary), built on PyTorch's
    ``meta`` device (no memory). ``None`` for no name. Each name is built once (the
    model table asks for some twice). Chapter: the synthesis."""
    if name is None:
        return None
    if not isinstance(name, str):
        raise TypeError(f"name must be a preset name or None, got {name!r}")
    return _count(name, vocab, meta)


@functools.cache
def _count(name: str, vocab: int, meta: bool) -> int:
    paper = name in _PAPER_CLASS
    with torch.device("meta") if meta else torch.device("cpu"):
        if paper:
            from .config import preset

            _register_all()
            model = _class(_PAPER_CLASS[name])(preset(name), seed=None)
        else:
            model = _tiny_model(name, vocab)
    return sum(p.numel() for p in model.parameters())


_PAPER_CLASS = {
    "gpt": "gpt.GPT", "gpt2": "gpt.GPT", "gpt3-175b": "gpt.GPT",
    "bert-base": "bert.Bert", "bert-large": "bert.Bert",
    "roberta-base": "roberta.Roberta", "albert-base": "albert.Albert",
    "electra-base": "electra.ElectraForPreTraining",
    "transformer-base": "transformer.Transformer",
    "transformer-big": "transformer.Transformer",  # and MASS: its paper's shape
    "bart-large": "bart.Bart", "t5-base": "t5.T5", "pegasus-large": "pegasus.Pegasus",
}  # fmt: skip


def _class(path: str):
    import importlib

    mod, attr = path.split(".")
    return getattr(importlib.import_module(f".{mod}", __package__), attr)


def _flops(name: str | None, vocab: int = 1024) -> float | None:
    """Training FLOPs per token (:func:`ptlm_lite.flops.per_token`) over the preset's
    whole context; ``None`` for a model that is not a Transformer preset. An
    encoder-decoder (a :class:`~ptlm_lite.transformer.Transformer`) reads a source and
    writes a target of ``max_len`` tokens each: the mean of a source and a target
    token (:func:`ptlm_lite.flops.seq2seq_per_token`), each through one stack (the T5
    paper's point: L + L layers cost per token what L layers of a decoder-only model
    do)."""
    from .config import PRESETS, preset
    from .flops import per_token, seq2seq_per_token
    from .transformer import Transformer

    _register_all()
    if name is None or name not in PRESETS:
        return None
    config = preset(name) if name in _PAPER_CLASS else preset(name, vocab_size=vocab)
    if name in _PAPER_CLASS and issubclass(_class(_PAPER_CLASS[name]), Transformer):
        return sum(seq2seq_per_token(config, config.max_len, config.max_len)) / 2
    return per_token(config, config.max_len)


def model_table(chapters, measured: dict, board=None):
    """The model table, one row per chapter of ``chapters`` (from
    :func:`ptlm_lite.scoreboard.toc_chapters`): the declared columns of
    :data:`DECLARED` ("not declared" where it has no entry), the ``measured`` context
    ({stem: :func:`probe_chapter`'s list}) and whether it ``agrees``, the weights it
    was measured on, parameters (tiny, paper), FLOPs per token, and pre-training's
    gain over random weights from ``board``. A pandas DataFrame. Chapter: the
    synthesis."""
    import pandas as pd

    from .scoreboard import pretraining_gains

    gains = pretraining_gains(board) if board is not None else {}
    rows = []
    for ch in chapters:
        stem = ch["stem"]
        d = DECLARED.get(stem)
        row = dict(zip(COLUMNS, d["row"])) if d else dict(model=ch.get("title") or stem)
        if not d:
            row.update({c: "not declared" for c in COLUMNS[1:]})
            row["year"] = None
        got = measured.get(stem) or []
        row["measured context"] = (
            "; ".join(
                f"{m['label']}: {m['kind']}" if len(got) > 1 else m["kind"] for m in got
            )
            or "no probe"
        )
        row["confirmed"] = agrees(stem, got)
        row["measured on"] = got[0]["weights"] if got else "–"
        tiny, paper = (d or {}).get("tiny"), (d or {}).get("paper")
        row["params (tiny)"] = count_params(tiny) if tiny else None
        row["params (paper)"] = count_params(paper) if paper else None
        row["FLOPs/token (paper)"] = _flops(paper)
        row["vs random weights"] = gains.get(stem, "–")
        row["part"] = ch.get("part", "")
        row["chapter"] = stem
        rows.append(row)
    return pd.DataFrame(rows)


def _key_of(text: str, keys) -> str | None:
    for k in sorted(keys, key=len, reverse=True):
        if str(text).startswith(k) or f" {k}" in f" {text}":
            return k
    return None


def lm_type_table(models, board):
    """Seed 002's autoregressive vs autoencoding table (:data:`ptlm_lite.articles.
    LM_TYPES`, declared) beside what the book measured for the chapters of each type:
    how many, the contexts the probe found, the claims they tested, how many showed
    up and how many kept their verdict with fresh seeds. Chapter: the synthesis."""
    import pandas as pd

    from .articles import LM_TYPES

    rows = []
    for key, said in LM_TYPES.items():
        mine = models[models["lm_type"].map(lambda t: _key_of(t, LM_TYPES)) == key]
        claims = board[
            board["chapter"].isin(mine["chapter"]) & (board["status"] == "ok")
        ]
        kinds = sorted({k.split(": ")[-1] for c in mine["measured context"]
                        for k in str(c).split("; ")})  # fmt: skip
        paired = claims[claims["replicated"] != "–"]
        rows.append(
            {"LM type": key, **{f"{k} (declared)": v for k, v in said.items()},
             "chapters": len(mine), "contexts measured": ", ".join(kinds),
             "claims": len(claims),
             "shows up": int((claims["tiny"] == SHOWS_UP).sum()),
             "same verdict, fresh seeds": f"{(paired['replicated'] == 'yes').sum()} of "
             f"{len(paired)}"}
        )  # fmt: skip
    return pd.DataFrame(rows)


def extractor_table(models, throughput=None, costs=None):
    """Seed 002's feature extractors compared (:data:`ptlm_lite.articles.EXTRACTORS`:
    long-range ability, parallelism, cost, declared) beside the book's measurements:
    the chapters using each, the contexts the probe found, the median tiny model's
    weights, the fastest stored training throughput (``throughput``: a DataFrame
    of :func:`ptlm_lite.scoreboard.stored_benchmarks`; Transformers only) and, with
    ``costs`` (:func:`ptlm_lite.length_cost.cost_slopes`), the measured exponents of
    time and backward memory against the length. Chapter: the synthesis."""
    import pandas as pd

    from .articles import EXTRACTORS

    rows = []
    for key, said in EXTRACTORS.items():
        mine = models[models["extractor"].map(lambda t: _key_of(t, EXTRACTORS)) == key]
        kinds = sorted({k.split(": ")[-1] for c in mine["measured context"]
                        for k in str(c).split("; ")})  # fmt: skip
        best = None
        if key == "Transformer" and throughput is not None and len(throughput):
            top = throughput.sort_values("tokens/s (ptlm_lite)").iloc[-1]
            rate = f"{top['tokens/s (ptlm_lite)']:,.0f} tokens/s"
            best = f"{rate} ({top['model']}, {top['device']})"
        rows.append(
            {"extractor": key, **{f"{k} (declared)": v for k, v in said.items()},
             "chapters": ", ".join(mine["model"]) or "–",
             "contexts measured": ", ".join(kinds) or "–",
             "weights (tiny, median)": mine["params (tiny)"].median(),
             "training throughput (stored)": best or "not measured"}
        )  # fmt: skip
        if costs is not None:
            got = costs[costs["extractor"] == key]
            for col in ("time ∝ T^k, k", "memory ∝ T^k, k"):
                rows[-1][f"{col} (measured)"] = (
                    round(float(got[col].iloc[0]), 2) if len(got) else None
                )
    return pd.DataFrame(rows)
