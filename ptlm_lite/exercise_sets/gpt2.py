"""Exercises and questions of ``chapters/gpt2.ipynb``: GPT-2's parameter count and the
pre-LN sublayer. Solutions: ``solutions/gpt2.py``.
"""

from __future__ import annotations

import torch

from ..exercises import register_exercise, register_question


@register_exercise("GPT-2 parameter count", "gpt2", "my_gpt2_params")
def _gpt2_params():
    from ..config import preset
    from ..gpt import GPT
    from ..train import count_parameters

    def counted(vocab_size, max_len, d_model, n_layer, d_ff):
        cfg = preset(
            "gpt2-tiny",
            vocab_size=vocab_size,
            max_len=max_len,
            d_model=d_model,
            n_layer=n_layer,
            d_ff=d_ff,
        )
        with torch.device("meta"):
            return count_parameters(GPT(cfg))

    return counted, [
        (50257, 1024, 768, 12, 3072),
        (512, 128, 64, 2, 256),
        (100, 16, 32, 5, 64),
    ]


@register_exercise("pre-LN sublayer", "gpt2", "my_pre_ln")
def _pre_ln():
    # fixed weights without touching the caller's random state
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        ln, lin = torch.nn.LayerNorm(8), torch.nn.Linear(8, 8)
        (
            torch.nn.init.normal_(ln.weight, 1.0, 0.5),
            torch.nn.init.normal_(ln.bias, 0.0, 0.5),
        )
        cases = [
            (torch.randn(2, 3, 8), ln, lin),
            (torch.randn(1, 5, 8), ln, torch.tanh),
        ]
    return (lambda x, norm, f: x + f(norm(x))), cases


register_question(
    "what pre-LN changes",
    "gpt2",
    "What does GPT-2's pre-LN change compared with the original post-LN Transformer?",
    [
        "It removes LayerNorm from the blocks and keeps a single one at the very end.",
        "It normalises after adding the residual, computing norm(x + f(x)).",
        "Each sublayer reads norm(x) and adds its output to x, so the residual sum "
        "is never normalised.",
        "It moves every LayerNorm into the feed-forward sublayers only.",
    ],
)

register_question(
    "a zero-shot score at the majority share",
    "gpt2",
    "A zero-shot classifier scores 53% accuracy on a four-class test set in "
    "which 53% of the documents "
    "are about people. What can you conclude?",
    [
        "The model has learnt about half of the task.",
        "Nothing yet: always answering 'person' also scores 53%; look at the "
        "per-class accuracy first.",
        "It beats chance (25% for four classes), so zero-shot transfer shows up.",
        "It needs calibration, which is certain to raise its accuracy.",
    ],
)
