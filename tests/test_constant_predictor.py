"""A model that gives the same answer whatever it reads must fail every chapter's
headline assert (issue 11). Each chapter's evaluation goes through a package helper;
here a constant predictor goes through each helper, and the asserts the chapters make
on the result are shown to fail.

* GPT and BERT: ``finetune.run``/``finetune.evaluate`` (tests/test_finetune.py).
* GPT-2: ``recipes.gpt.option_scores`` then ``finetune.scores``.
* GPT-3: ``icl.SymbolTasks.shot_accuracy``.
"""

import torch
from torch import nn

from ptlm_lite import finetune
from ptlm_lite.config import preset
from ptlm_lite.gpt import GPT
from ptlm_lite.icl import SymbolTasks
from ptlm_lite.output import Output
from ptlm_lite.recipes.gpt import option_scores

KINDS = ["person", "city", "country", "organisation"]


class CharTok:
    """A stand-in tokenizer: one id per character."""

    def encode(self, text):
        return [1 + ord(ch) % 90 for ch in text]


def blank_gpt():
    """A GPT whose every logit is zero: the same (uniform) prediction everywhere."""
    m = GPT(preset("gpt2-tiny", vocab_size=96, max_len=64), seed=0)
    for p in m.parameters():
        nn.init.zeros_(p)
    return m


def test_gpt2_zero_shot_flags_a_constant_answer():
    tok = CharTok()
    prompts = [f"Document {i} about something. (Filed under:" for i in range(20)]
    labels = torch.arange(20) % 4  # balanced, as the chapter's test set
    s = option_scores(blank_gpt(), tok, prompts, [" " + k for k in KINDS])
    pred = s.argmax(-1)
    assert (pred == pred[0]).all()  # the shortest option, " city", every time
    r = finetune.scores(pred.numpy(), labels.numpy())
    assert r["constant"] and r["accuracy"] == 0.25
    # the chapter: assert big["constant_runs"] == 0 (calibrated largest model)
    calibrated = (s - option_scores(blank_gpt(), tok, ["(Filed under:"], KINDS)).argmax(
        -1
    )
    constant_runs = int(finetune.scores(calibrated.numpy(), labels.numpy())["constant"])
    assert constant_runs == 1


class Constant(nn.Module):
    """Answers the same whatever the input: fixed logits at every position."""

    def __init__(self, vocab_size):
        super().__init__()
        self.logits = torch.randn(
            vocab_size, generator=torch.Generator().manual_seed(0)
        )

    def forward(self, ids):
        return Output(logits=self.logits.expand(*ids.shape, -1))


def test_gpt3_seen_query_assert_fails_for_a_constant_model():
    T = SymbolTasks()
    g = torch.Generator().manual_seed(1)
    rows = T.shot_accuracy(
        Constant(T.vocab_size), "recall", 2000, 9, g, [0, 1, 2, 4, 8]
    )
    eight = rows[-1]
    chance = 1 / T.n_labels
    assert abs(eight["seen queries"] - chance) < 0.05
    assert not eight["seen queries"] > 0.9  # the chapter's assert would fail
    assert abs(eight["accuracy"] - chance) < 0.05 < eight["copier"] - chance
