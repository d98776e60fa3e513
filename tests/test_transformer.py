"""The encoder-decoder Transformer: leak tests for its three masks, shapes, learning,
bad input.
"""

import random

import pytest
import torch
import torch.nn.functional as F

import ptlm_lite as P
from ptlm_lite.tasks import DateTask


def model(**kw):
    torch.manual_seed(0)
    cfg = P.preset("tiny", vocab_size=20, dropout=0.0, max_len=16, **kw)
    return P.Transformer(cfg).eval()


def ids(B, T, seed=0, low=3):
    return torch.randint(low, 20, (B, T), generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("pre_norm", [False, True])
def test_decoder_causal_leak(pre_norm):
    """Changing target token t never changes the logits at positions < t."""
    m, src, tgt = model(pre_norm=pre_norm), ids(2, 7), ids(2, 6, seed=1)
    base = m(src, tgt).logits
    for t in range(6):
        changed = tgt.clone()
        changed[:, t] = (changed[:, t] + 1 - 3) % 17 + 3
        out = m(src, changed).logits
        assert torch.allclose(out[:, :t], base[:, :t], atol=1e-5), (
            f"position < {t} saw token {t}"
        )
        # the test can fail
        assert not torch.allclose(out[:, t:], base[:, t:], atol=1e-5)


def test_encoder_padding_leak():
    """Whatever stands in padded source positions changes nothing."""
    m = model()
    src, tgt = ids(2, 7), ids(2, 5, seed=1)
    src[:, 5:] = 0  # pad_id
    base = m(src, tgt).logits
    memory = m.encode(src)[0]
    # Overwrite the padded positions' embeddings through a hook: ids stay pads, vectors
    # change.
    handle = m.embed.register_forward_hook(
        lambda mod, inp, out: (
            out.index_put(
                (torch.arange(2)[:, None], torch.tensor([5, 6])[None]),
                torch.randn(2, 2, out.shape[-1]) * 10,
            )
            if inp[0].shape == src.shape and torch.equal(inp[0], src)
            else out
        )
    )
    try:
        memory2 = m.encode(src)[0]
        out = m(src, tgt).logits
    finally:
        handle.remove()
    assert torch.allclose(memory2[:, :5], memory[:, :5], atol=1e-5)
    assert torch.allclose(out, base, atol=1e-5)


def test_cross_mask_leak():
    """The decoder never reads a padded source position through cross-attention."""
    m = model()
    src, tgt = ids(1, 6), ids(1, 4, seed=1)
    src[:, 4:] = 0
    memory, valid, _ = m.encode(src)
    logits, _, _ = m.decode(tgt, memory, valid)
    poisoned = memory.clone()
    poisoned[:, 4:] = 1e3
    logits2, _, _ = m.decode(tgt, poisoned, valid)
    assert torch.allclose(logits, logits2, atol=1e-5)
    poisoned[:, :1] += 1.0  # a real position does matter
    assert not torch.allclose(m.decode(tgt, poisoned, valid)[0], logits, atol=1e-5)


def test_shapes_and_attentions():
    m = model()
    out = m(ids(2, 7), ids(2, 5), return_attention=True)
    assert out.logits.shape == (2, 5, 20)
    assert [a.shape for a in out.attentions["encoder"]] == [(2, 4, 7, 7)] * 2
    assert [a.shape for a in out.attentions["cross"]] == [(2, 4, 5, 7)] * 2
    logits, loss = m(ids(2, 7), ids(2, 5), ids(2, 5, seed=3))
    assert loss.ndim == 0


def test_weight_tying_counts():
    tied, untied = model(), model(tie_weights=False)
    assert untied.head.weight is not untied.embed.tok.weight
    assert P.count_parameters(untied) - P.count_parameters(tied) == 20 * 64


def test_the_shared_matrix_takes_the_heads_init():
    """Tied, the one matrix is initialised as the head (Xavier uniform, std
    sqrt(2 / (V + d)): 0.043 at V = 1024, d = 64), the module visited last; untied, the
    embedding keeps N(0, d^-1/2) (0.125). What the chapters trained with, stated."""
    torch.manual_seed(0)
    cfg = P.preset("tiny", vocab_size=1024, dropout=0.0)
    tied = P.Transformer(cfg).embed.tok.weight.detach().std()
    untied = (
        P.Transformer(cfg.replace(tie_weights=False)).embed.tok.weight.detach().std()
    )
    assert abs(float(tied) - (2 / (1024 + cfg.d_model)) ** 0.5) < 0.003, tied
    assert abs(float(untied) - cfg.d_model**-0.5) < 0.005, untied


def test_label_smoothing_matches_torch():
    logits, y = torch.randn(10, 7), torch.randint(0, 7, (10,))
    y[3] = -100
    for eps in (0.0, 0.1):
        ours = P.label_smoothed_loss(logits, y, eps)
        ref = F.cross_entropy(logits, y, label_smoothing=eps, ignore_index=-100)
        assert torch.allclose(ours, ref, atol=1e-6)


def test_learns_dates_quickly():
    """Overfit check with real data: the date task's loss drops well below its start."""
    task, rng = DateTask(), random.Random(0)
    cfg = P.preset("tiny", vocab_size=len(task.vocab), dropout=0.0, max_len=32)
    m = P.Transformer(cfg)
    batch = task.batch(32, rng)
    hist = P.train(m, [batch], steps=150, lr=3e-3, warmup=20, progress=False)
    assert hist.losses[-1] < 0.2 * hist.losses[0]
    pairs = [
        (task.vocab.decode(s), task.vocab.decode(t))
        for s, t in zip(batch["src"][:8], batch["tgt_out"][:8])
    ]
    assert task.exact_match(m, pairs) >= 0.75  # memorised the batch


def test_generate_stops_and_pads():
    m = model()
    out = m.generate(ids(3, 5), bos_id=1, eos_id=2, max_new_tokens=6)
    assert out.shape[0] == 3 and out.shape[1] <= 6


@pytest.mark.parametrize(
    "call, words",
    [
        (
            lambda: P.preset("tiny", d_model=30, n_head=4),
            "d_model (30) must be divisible by n_head (4)",
        ),
        (lambda: P.preset("huge"), "unknown preset 'huge'"),
        (lambda: model()(ids(1, 17), ids(1, 3)), "longer than max_len=16"),
        (
            lambda: model()(ids(1, 3).float(), ids(1, 3)),
            "src must be a (B, T) integer tensor",
        ),
        (
            lambda: model().generate(ids(1, 3), 1, 2, max_new_tokens=40),
            "max_new_tokens",
        ),
        (lambda: P.Config(pos="rotary"), "pos must be"),
        (lambda: P.Config(dropout=1.5), "dropout must be in [0, 1)"),
    ],
)
def test_bad_input(call, words):
    with pytest.raises((ValueError, TypeError)) as e:
        call()
    assert words in str(e.value)
