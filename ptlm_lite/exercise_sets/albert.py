"""Exercises of ``chapters/albert.ipynb`` (solutions: ``solutions/albert.py``). The
checks compare with the package's own :mod:`ptlm_lite.albert`."""

from __future__ import annotations

from ..exercises import register_exercise, register_question


@register_exercise(
    "factorised embedding parameters", "albert", "my_factorised_embedding_params"
)
def _factorised_embedding_params():
    import torch

    from ..albert import AlbertEmbeddings
    from ..config import Config

    def reference(V, E, H):
        """The token table and the projection of a real AlbertEmbeddings, counted."""
        cfg = Config(vocab_size=V, d_model=H, n_head=1, d_embed=E, pos="none")
        with torch.device("meta"):
            emb = AlbertEmbeddings(cfg)
        return sum(p.numel() for p in (*emb.tok.parameters(), *emb.up.parameters()))

    cases = [
        (30000, 128, 768),
        (30000, 128, 4096),
        (1024, 32, 64),
        (100, 64, 64),
        (7, 3, 5),
    ]
    return reference, cases


@register_exercise("n-gram length distribution", "albert", "my_ngram_probs")
def _ngram_probs():
    from ..albert import ngram_probs

    def reference(max_n):  # float32 or float64 answers are both fine
        return ngram_probs(max_n).float()

    return reference, [(3,), (1,), (2,), (6,)]


register_question(
    "what SOP tests that NSP does not",
    "albert",
    "NSP's negative pairs take segment B from another document; SOP's take the same two "
    "consecutive segments in the other order. Why does the paper expect SOP to teach "
    "more?",
    [
        "NSP's negatives can be told apart by topic alone, which the masked LM learns "
        "anyway; SOP's share the topic, so only the order and coherence of the text give "
        "the answer.",
        "SOP has more negatives per batch than NSP, so its loss is larger and trains "
        "the encoder faster.",
        "SOP lets the model skip the masked LM: predicting the order of two segments "
        "already teaches every token's meaning.",
        "NSP needs a separate [CLS] token for each segment, and SOP works with one.",
    ],
)

register_question(
    "what sharing saves",
    "albert",
    "ALBERT-large shares one set of weights across its 24 layers. Compared with "
    "BERT-large of the same depth and width, what does that save?",
    [
        "Computation: each forward pass runs one layer instead of 24.",
        "Parameters (memory for the weights and their gradients and optimizer state), "
        "not computation: every layer still runs, with the same weights.",
        "Both parameters and computation, by a factor of 24 each.",
        "Nothing at inference time: the shared weights are copied into 24 layers before "
        "the model runs.",
    ],
)
