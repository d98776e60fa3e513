"""The source articles' comparison tables, as data (the synthesis chapter,
``chapters/synthesis.ipynb``): for each chapter's model, what the articles *declare*
(seed 002's model / language-model type / feature extractor / context / highlight,
seed 004's year and family), never what the book measures (that is
:mod:`ptlm_lite.synthesis`). Keyed by the chapter's file name, so the synthesis finds
a chapter's row from ``_toc.yml``.

Each entry: ``row`` (the declared columns, in the order of :data:`COLUMNS`), ``arch``
(which probe fits the chapter's model class: :func:`ptlm_lite.synthesis.probes`),
``kinds`` (the declared context in the probe's words), ``tiny`` and ``paper`` (the
presets whose parameters are counted).
"""

from __future__ import annotations

__all__ = ["COLUMNS", "DECLARED", "EXTRACTORS", "LM_TYPES", "declared_kind"]

# The articles' tables (seed 002's model / LM type / feature extractor / context /
# highlight; seed 004's timeline), one entry per chapter. ``arch`` names the probe
# (:func:`probes`); ``tiny`` / ``paper`` the model class and preset whose parameters
# are counted; ``kinds`` the declared context in the probe's words.
COLUMNS = ("model", "year", "family", "lm_type", "extractor", "context", "highlight")
_ENC, _DEC = "Transformer encoder", "Transformer decoder"
_ENCDEC = "Transformer encoder-decoder"
_AE, _AR, _S2S = "autoencoding (MLM)", "autoregressive", "seq2seq"
_BI, _L2R = "bidirectional", "left-to-right"
_ED = "encoder: bidirectional; decoder: left-to-right"
DECLARED: dict[str, dict] = {
    # stem: model, year, family, LM type, extractor, context, highlight | arch, kinds
    "word_vectors": dict(
        row=("word2vec, GloVe, fastText", 2013, "static vectors",
             "none (co-occurrence)",
             "shallow (log-bilinear)", "none: one vector per word",
             "the embedding table as the first pre-trained layer"),
        arch="static", kinds=("none",), tiny=None, paper=None),
    "transformer": dict(
        row=("Transformer", 2017, "foundations", "seq2seq (translation)", _ENCDEC, _ED,
             "attention only, no recurrence"),
        arch="encdec", kinds=(_BI, _L2R), tiny="encdec", paper="transformer-base"),
    "elmo": dict(
        row=("ELMo", 2018, "left-to-right LMs", "autoregressive (two one-way LMs)",
             "biLSTM", "bidirectional, by concatenation",
             "contextual vectors, a scalar mix of layers"),
        arch="elmo", kinds=(_L2R, "right-to-left", _BI), tiny=None, paper=None),
    "ulmfit": dict(
        row=("ULMFiT", 2018, "left-to-right LMs", _AR, "LSTM (AWD-LSTM)", _L2R,
             "three stages, discriminative rates, gradual unfreezing"),
        arch="lstm-cached", kinds=(_L2R,), tiny="lstm", paper=None),
    "siatl": dict(
        row=("SiATL", 2019, "left-to-right LMs", _AR, "LSTM", _L2R,
             "an auxiliary LM loss while fine-tuning"),
        arch="lstm", kinds=(_L2R,), tiny="lstm", paper=None),
    "gpt": dict(
        row=("GPT", 2018, "left-to-right LMs", _AR, _DEC, _L2R,
             "generative pre-training, task input transformations"),
        arch="gpt-cached", kinds=(_L2R,), tiny="gpt-tiny", paper="gpt"),
    "gpt2": dict(
        row=("GPT-2", 2019, "left-to-right LMs", _AR, _DEC + " (pre-LN)", _L2R,
             "zero-shot task transfer, scale"),
        arch="gpt2", kinds=(_L2R,), tiny="gpt2-tiny", paper="gpt2"),
    "gpt3": dict(
        row=("GPT-3", 2020, "left-to-right LMs", _AR, _DEC + " (pre-LN)", _L2R,
             "few-shot learning in context"),
        arch="gpt2", kinds=(_L2R,), tiny="gpt2-tiny", paper="gpt3-175b"),
    "bert": dict(
        row=("BERT", 2018, "masked LMs", _AE, _ENC, _BI, "masked LM + next sentence"),
        arch="bert-cached", kinds=(_BI,), tiny="bert-tiny", paper="bert-base"),
    "bert_wwm": dict(
        row=("BERT-WWM", 2019, "masked LMs", _AE, _ENC, _BI, "whole-word masking"),
        arch="bert", kinds=(_BI,), tiny="bert-tiny", paper="bert-base"),
    "ernie_baidu": dict(
        row=("ERNIE 1.0 (Baidu)", 2019, "masked LMs", _AE, _ENC, _BI,
             "phrase and entity masking"),
        arch="bert", kinds=(_BI,), tiny="bert-tiny", paper="bert-base"),
    "spanbert": dict(
        row=("SpanBERT", 2019, "masked LMs", _AE, _ENC, _BI,
             "span masking, a span-boundary objective"),
        arch="bert", kinds=(_BI,), tiny="bert-tiny", paper="bert-large"),
    "roberta": dict(
        row=("RoBERTa", 2019, "masked LMs", _AE, _ENC, _BI,
             "dynamic masking, no NSP, more data and steps"),
        arch="roberta", kinds=(_BI,), tiny="roberta-tiny", paper="roberta-base"),
    "albert": dict(
        row=("ALBERT", 2019, "masked LMs", _AE, _ENC + " (shared layers)", _BI,
             "factorised embeddings, cross-layer sharing, SOP"),
        arch="albert", kinds=(_BI,), tiny="albert-tiny", paper="albert-base"),
    "electra": dict(
        row=("ELECTRA", 2020, "masked LMs", "autoencoding (replaced-token detection)",
             _ENC, _BI, "a discriminator that learns from every token"),
        arch="electra", kinds=(_BI,), tiny="electra-tiny", paper="electra-base"),
    "fastbert": dict(
        row=("FastBERT", 2020, "masked LMs", _AE, _ENC + " + per-layer students", _BI,
             "self-distillation and early exit"),
        arch="bert", kinds=(_BI,), tiny="bert-tiny", paper="bert-base"),
    "mt_dnn": dict(
        row=("MT-DNN", 2019, "masked LMs", _AE, _ENC, _BI, "multi-task fine-tuning"),
        arch="bert", kinds=(_BI,), tiny="bert-tiny", paper="bert-large"),
    "ernie_thu": dict(
        row=("ERNIE (Tsinghua)", 2019, "masked LMs", _AE, _ENC + " + knowledge encoder",
             _BI, "entity embeddings from a knowledge graph"),
        arch="bert", kinds=(_BI,), tiny="bert-tiny", paper="bert-base"),
    "ernie2": dict(
        row=("ERNIE 2.0", 2019, "masked LMs", _AE + ", many tasks", _ENC, _BI,
             "continual multi-task pre-training"),
        arch="bert", kinds=(_BI,), tiny="bert-tiny", paper="bert-base"),
    "mass": dict(
        row=("MASS", 2019, "encoder-decoders", _S2S + " (masked span)", _ENCDEC, _ED,
             "the encoder hides a span, the decoder writes it"),
        arch="encdec", kinds=(_BI, _L2R), tiny="encdec", paper="transformer-big"),
    "unilm": dict(
        row=("UniLM", 2019, "encoder-decoders", "AE + AR + seq2seq, one model", _ENC,
             "bidirectional, left-to-right or prefix, by mask",
             "three self-attention masks, shared weights"),
        arch="unilm", kinds=(_BI, _L2R, "prefix"), tiny="bert-tiny",
        paper="bert-large"),
    "bart": dict(
        row=("BART", 2019, "encoder-decoders", _S2S + " (denoising)", _ENCDEC, _ED,
             "any noising function, then reconstruct"),
        arch="encdec", kinds=(_BI, _L2R), tiny="encdec", paper="bart-large"),
    "t5": dict(
        row=("T5", 2019, "encoder-decoders", _S2S + " (text-to-text)", _ENCDEC, _ED,
             "every task as text to text, span corruption"),
        arch="encdec", kinds=(_BI, _L2R), tiny="encdec", paper="t5-base"),
    "pegasus": dict(
        row=("PEGASUS", 2019, "encoder-decoders", _S2S + " (gap sentences)", _ENCDEC,
             _ED, "whole sentences masked and generated"),
        arch="encdec", kinds=(_BI, _L2R), tiny="encdec", paper="pegasus-large"),
    "transformer_xl": dict(
        row=("Transformer-XL", 2019, "long context", _AR, _DEC + " + segment memory",
             "left-to-right, across segments",
             "segment recurrence, relative positions"),
        arch="txl", kinds=("segment-recurrent",), tiny="txl-tiny", paper=None),
    "xlnet": dict(
        row=("XLNet", 2019, "long context", "autoregressive (permutation LM)",
             "Transformer-XL, two streams", "bidirectional in expectation",
             "factorisation orders, two-stream attention"),
        arch="xlnet", kinds=("permutation",), tiny="xlnet-tiny", paper=None),
    "reformer": dict(
        row=("Reformer", 2020, "long context", _AR, _DEC + ", LSH + reversible", _L2R,
             "LSH attention, reversible layers"),
        arch="reformer", kinds=(_L2R,), tiny="reformer-tiny", paper=None),
    "efficient": dict(
        row=("Efficient Transformers", 2020, "long context", "(a survey)",
             "sparse, low-rank and kernel attention", "a pattern (here: local window)",
             "attention below O(n²)"),
        arch="local", kinds=(_BI + ", sparse",), tiny="bert-tiny", paper=None),
}  # fmt: skip


def declared_kind(stem: str) -> tuple[str, ...]:
    """The context kinds :data:`DECLARED` gives a chapter's model, in the probe's
    words (``()`` for a chapter without an entry). Chapter: the synthesis."""
    return tuple(DECLARED.get(stem, {}).get("kinds", ()))


# Seed 002's autoregressive vs autoencoding table: strengths and weaknesses, declared.
# Keys: how a DECLARED row's lm_type starts, or a word in it (synthesis._key_of: the
# longest key that matches; UniLM's "AE + AR + seq2seq, one model" counts as seq2seq).
LM_TYPES = {
    "autoregressive": dict(
        strength="generates text naturally; no train/test mismatch (no [MASK])",
        weakness="sees one side of the context only",
    ),
    "autoencoding": dict(
        strength="sees both sides of every token",
        weakness="[MASK] at training but not at fine-tuning; masked tokens predicted "
        "independently; awkward for generation",
    ),
    "seq2seq": dict(
        strength="reads the input both ways and writes the output left to right",
        weakness="two stacks; the pre-training task must be designed for generation",
    ),
}

# Seed 002's feature extractors compared: declared long-range ability, parallelism and
# cost per layer for a sequence of n tokens of width d. Keys: how an extractor starts.
EXTRACTORS = {
    "LSTM": dict(long_range="weak (a path of n steps)", parallel="no (step by step)",
                 cost="O(n·d²)"),
    "biLSTM": dict(long_range="weak (a path of n steps)", parallel="no (step by step)",
                   cost="O(n·d²)"),
    "Transformer": dict(long_range="strong (one step between any two tokens)",
                        parallel="yes", cost="O(n²·d + n·d²)"),
    "sparse": dict(long_range="through the pattern's hops", parallel="yes",
                   cost="O(n·w·d) for a window w"),
}  # fmt: skip
