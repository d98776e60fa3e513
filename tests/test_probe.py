"""The context probe (ptlm_lite/probe.py): change one token, see which outputs move. It
must name GPT left-to-right, BERT bidirectional, a prefix mask (UniLM's seq2seq) prefix,
XLNet under an order permutation, and Transformer-XL fed in segments segment-recurrent
(issue 31), and fail nothing silently."""

import pytest

NAN = float("nan")
import torch

from ptlm_lite import masks, probe
from ptlm_lite.bert import Bert
from ptlm_lite.config import preset
from ptlm_lite.gpt import GPT
from ptlm_lite.transformer_xl import TransformerXL
from ptlm_lite.xlnet import XLNet

V, T = 37, 12


def ids(B=2, n=T, seed=0, low=1):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(low, V, (B, n), generator=g)


def test_gpt_is_left_to_right():
    m = GPT(preset("gpt2-tiny", vocab_size=V, max_len=32), seed=0).eval()
    assert probe.context(lambda x: m(x).logits, ids(), V).kind == "left-to-right"


def test_bert_is_bidirectional():
    m = Bert(preset("bert-tiny", vocab_size=V, max_len=32), seed=0).eval()
    found = probe.context(lambda x: m(x).last_hidden, ids(), V, low=1)
    assert found.kind == "bidirectional"


@pytest.mark.parametrize("p", [3, 7])
def test_a_prefix_mask_is_prefix(p):
    m = GPT(preset("gpt2-tiny", vocab_size=V, max_len=32), seed=0).eval()
    mask = masks.prefix_mask(T, p)
    found = probe.context(lambda x: m(x, mask=mask).logits, ids(), V)
    assert (found.kind, found.prefix) == ("prefix", p)


@pytest.mark.parametrize("stream", ["h", "g"])
def test_xlnet_under_an_order_is_permutation(stream):
    m = XLNet(preset("xlnet-tiny", vocab_size=V), seed=0).eval()
    order = torch.randperm(T, generator=torch.Generator().manual_seed(2))
    found = probe.context(lambda x: m(x, order=order).extra[stream], ids(), V)
    assert found.kind == "permutation"
    ranks = torch.empty(T, dtype=torch.long)
    ranks[order] = torch.arange(T)
    assert torch.equal(found.D.sum(1) - found.D.diagonal().long(), ranks)


def test_transformer_xl_in_segments_is_segment_recurrent():
    m = TransformerXL(preset("txl-tiny", vocab_size=V, mem_len=8), seed=0).eval()

    def run(x, window=4):
        mem = m.new_memory()
        return torch.cat(
            [m(x[:, s : s + window], memory=mem).logits for s in range(0, T, window)],
            dim=1,
        )

    found = probe.context(run, ids(), V, window=4)
    assert (found.kind, found.window) == ("segment-recurrent", 4)
    # without memory the segments are cut off from each other: not even left-to-right
    cut = probe.context(
        lambda x: torch.cat([m(x[:, s : s + 4]).logits for s in range(0, T, 4)], 1),
        ids(),
        V,
        window=4,
    )
    assert cut.kind == "other"


def test_kind_of_by_hand():
    lower = torch.tril(torch.ones(5, 5, dtype=torch.bool))
    assert probe.kind_of(lower).kind == "left-to-right"
    assert probe.kind_of(lower.T.clone()).kind == "right-to-left"
    assert probe.kind_of(torch.ones(5, 5, dtype=torch.bool)).kind == "bidirectional"
    cycle = torch.eye(3, dtype=torch.bool) | torch.eye(3, dtype=torch.bool).roll(1, 1)
    assert probe.kind_of(cycle).kind == "other"  # 0 sees 1, 1 sees 2, 2 sees 0


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda: probe.dependence(lambda x: x[..., None], [[1, 2]], 5), "ids"),
        (lambda: probe.dependence(lambda x: x[..., None], ids(), 1), "vocab_size"),
        (lambda: probe.dependence(lambda x: x[..., None], ids(), V, low=V), "low"),
        (lambda: probe.dependence(lambda x: x.sum(1), ids(), V), "run"),
        (lambda: probe.dependence(lambda x: x[..., None], ids(), V, tol=-1), "tol"),
        (lambda: probe.dependence(lambda x: x[..., None], ids(), V, tol=NAN), "tol"),
        (lambda: probe.kind_of(torch.ones(3, 3)), "D"),
        (lambda: probe.kind_of(torch.ones(1, 1, dtype=torch.bool)), "D"),
    ],
)
def test_bad_input_names_the_argument(call, name):
    with pytest.raises(ValueError, match=name):
        call()


def test_outputs_of_shape_b_t_are_probed():
    # one number per position (the docstring's (B, T, ...) with nothing after T)
    causal = lambda x: x.float().cumsum(1)  # noqa: E731
    D = probe.dependence(causal, ids(), V)
    assert probe.kind_of(D).kind == "left-to-right"
