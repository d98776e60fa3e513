"""Transformer-XL (ptlm_lite.transformer_xl, ptlm_lite.recipes.transformer_xl).

Leak tests: no gradient reaches the memory; no query sees a future token with memory
present; the relative attention with u = v = W_R = 0 is content-only attention. Then the
four terms against a loop over the paper's formula, the same-length mask against its
drawing, memory evaluation against the sliding window (the same computation with one
layer), the dependency length L·(W - 1), and plausible wrong answers to the exercises.
"""

import math

import pytest
import torch

from ptlm_lite import masks
from ptlm_lite.attention import MultiHeadAttention
from ptlm_lite.config import Config, preset
from ptlm_lite.layers import sinusoidal_positions
from ptlm_lite.recipes import transformer_xl as R
from ptlm_lite.stack import Memory
from ptlm_lite.transformer_xl import (
    RelativeAttention,
    TransformerXL,
    XLConfig,
    window_mask,
)

V = 50


def model(n_layer=2, seed=0, **kw):
    cfg = preset("txl-tiny", vocab_size=V, n_layer=n_layer, mem_len=8, **kw)
    return TransformerXL(cfg, seed=seed)


def ids(*shape, seed=0):
    return torch.randint(0, V, shape, generator=torch.Generator().manual_seed(seed))


# --- the config and the mask


def test_presets_are_xl_configs_with_a_checked_memory_length():
    cfg = preset("txl-tiny", vocab_size=V)
    assert isinstance(cfg, XLConfig) and cfg.mem_len == 32
    assert preset("txl-small", vocab_size=V).mem_len == 128
    with pytest.raises(ValueError, match="mem_len"):
        preset("txl-tiny", vocab_size=V, mem_len=-1)
    with pytest.raises(TypeError, match="XLConfig"):
        TransformerXL(Config(vocab_size=V))


def test_window_mask_is_its_drawing():
    doc = window_mask.__doc__.split("::")[1].split("Returns")[0]
    rows = [r.strip() for r in doc.strip().splitlines() if r.strip()]
    assert masks.draw(window_mask(3, memory=3, window=3)) == "\n".join(rows)


@pytest.mark.parametrize("T, M, W", [(1, 0, 1), (4, 4, 4), (3, 5, 2), (6, 2, 20)])
def test_window_mask_sees_exactly_the_window(T, M, W):
    m = window_mask(T, M, W)
    assert m.shape == (T, M + T) and m.dtype == torch.bool
    for i in range(T):
        seen = m[i].nonzero().flatten().tolist()
        assert seen == list(range(max(0, M + i - W + 1), M + i + 1))
    # never a future key: the same-length mask is inside the causal one
    assert not (m & ~masks.causal_mask(T, memory=M)).any()
    if W >= M + T:  # a window longer than everything is the causal mask
        assert torch.equal(m, masks.causal_mask(T, memory=M))


@pytest.mark.parametrize(
    "args, name", [((0, 1, 1), "T"), ((2, -1, 1), "memory"), ((2, 1, 0), "window")]
)
def test_window_mask_names_a_bad_argument(args, name):
    with pytest.raises(ValueError, match=f"^{name} must be"):
        window_mask(*args)


# --- leak tests


def test_no_gradient_reaches_the_memory():
    m = model()
    memory = m.new_memory()
    embedded = []

    def keep(module, inputs, out):
        out.retain_grad()
        embedded.append(out)

    m.tok.register_forward_hook(keep)
    m(ids(2, 6), memory=memory)
    assert len(memory) == 6 and not any(s.requires_grad for s in memory.states)
    out = m(ids(2, 6, seed=1), targets=ids(2, 6, seed=2), memory=memory)
    out.loss.backward()
    assert embedded[0].grad is None  # the first segment: read, never trained through
    assert embedded[1].grad.abs().sum() > 0
    assert len(memory) == 8  # bounded by mem_len


def test_memory_gradient_equals_a_constant_memory():
    """The step's gradient is the same as with the memory replaced by plain constants."""
    m = model().eval()
    seg1, seg2, tgt = ids(1, 5), ids(1, 5, seed=1), ids(1, 5, seed=2)
    memory = m.new_memory()
    m(seg1, memory=memory)
    constant = Memory(8)
    constant.states = [s.clone() for s in memory.states]
    m(seg2, targets=tgt, memory=memory).loss.backward()
    a = [p.grad.clone() for p in m.parameters()]
    m.zero_grad()
    m(seg2, targets=tgt, memory=constant).loss.backward()
    assert all(torch.allclose(x, p.grad) for x, p in zip(a, m.parameters()))


def test_no_query_sees_a_future_token_with_memory_present():
    m = model().eval()
    memory = m.new_memory()
    m(ids(1, 8), memory=memory)
    states = list(memory.states)

    def run(seg):
        mem = Memory(8)
        mem.states = list(states)
        return m(seg, memory=mem, return_attention=True)

    seg = ids(1, 6, seed=3)
    out = run(seg)
    future = ~masks.causal_mask(6, memory=8)
    assert all(w[..., future].abs().max() == 0 for w in out.attentions)
    for t in range(6):
        changed = seg.clone()
        changed[0, t] = (changed[0, t] + 1) % V
        other = run(changed).logits
        assert torch.equal(other[0, :t], out.logits[0, :t])
        assert not torch.allclose(other[0, t], out.logits[0, t])


def test_memory_changes_the_output():
    m = model().eval()
    seg = ids(1, 4)
    a = m(seg).logits
    memory = m.new_memory()
    m(ids(1, 8, seed=5), memory=memory)
    assert not torch.allclose(a, m(seg, memory=memory).logits)


def test_zero_u_v_and_position_weights_give_content_only_attention():
    rel = RelativeAttention(16, 4).eval()
    plain = MultiHeadAttention(16, 4).eval()
    missing, unexpected = plain.load_state_dict(rel.state_dict(), strict=False)
    assert not missing and sorted(unexpected) == ["r.weight", "u", "v"]
    x, ctx = torch.randn(2, 3, 16), torch.randn(2, 7, 16)
    mask = masks.causal_mask(3, memory=4)
    assert not torch.allclose(rel(x, ctx, mask=mask)[0], plain(x, ctx, mask=mask)[0])
    with torch.no_grad():
        for p in (rel.u, rel.v, rel.r.weight):
            p.zero_()
    assert torch.allclose(
        rel(x, ctx, mask=mask)[0], plain(x, ctx, mask=mask)[0], atol=1e-6
    )


def test_the_four_terms_are_the_papers_formula():
    torch.manual_seed(0)
    H, dh, Tq, Tk = 2, 4, 3, 7
    rel = RelativeAttention(H * dh, H)
    with torch.no_grad():
        rel.u.normal_()
        rel.v.normal_()
    q, k = torch.randn(1, H, Tq, dh), torch.randn(1, H, Tk, dh)
    bias = rel.relative_bias(q, k)[0] * math.sqrt(dh)  # (H, Tq, Tk), unscaled
    # (a) + (c) are one product, (q + u)ᵀk, made by the attention itself
    ac = (q + rel.u[:, None])[0] @ k[0].transpose(-1, -2)  # (H, Tq, Tk)
    R = sinusoidal_positions(Tk, H * dh)
    Wr = rel.r.weight.view(H, dh, H * dh)  # head h's rows of W_R
    scores = torch.full((H, Tq, Tk), float("-inf"))  # a future key stays -inf
    for h in range(H):
        for i in range(Tq):
            for j in range(Tk):
                d = i + (Tk - Tq) - j
                if d < 0:
                    continue  # a future key: masked in a language model
                r = Wr[h] @ R[d]
                a = q[0, h, i] @ k[0, h, j]  # (a) content-content
                b = q[0, h, i] @ r  # (b) content-position
                c = rel.u[h] @ k[0, h, j]  # (c) global content bias
                dd = rel.v[h] @ r  # (d) global position bias
                assert torch.allclose(bias[h, i, j], b + dd, atol=1e-5)
                assert torch.allclose(ac[h, i, j], a + c, atol=1e-5)
                scores[h, i, j] = (a + b + c + dd) / math.sqrt(dh)
    # the attention adds them all: its weights are the softmax of the paper's score
    _, weights = rel.attend(q, k, k, masks.causal_mask(Tq, memory=Tk - Tq), None, True)
    assert torch.allclose(weights[0], scores.softmax(-1), atol=1e-5)


def test_relative_scores_depend_on_the_distance_only():
    """One more key in front (the memory grows by one): every old key keeps its
    distance to the query, so its bias is unchanged."""
    torch.manual_seed(1)
    rel = RelativeAttention(8, 2)
    with torch.no_grad():
        rel.u.normal_()
        rel.v.normal_()
    q, k = torch.randn(1, 2, 3, 4), torch.randn(1, 2, 5, 4)
    near = rel.relative_bias(q, k)
    far = rel.relative_bias(q, torch.cat([torch.randn(1, 2, 1, 4), k], dim=2))
    assert torch.allclose(far[..., 1:], near, atol=1e-6)


# --- the model


def test_forward_shapes_and_loss():
    m = model()
    memory = m.new_memory()
    out = m(ids(2, 5), targets=ids(2, 5, seed=1), memory=memory, return_attention=True)
    assert out.logits.shape == (2, 5, V) and out.loss.ndim == 0
    assert [w.shape for w in out.attentions] == [(2, 4, 5, 5)] * 2
    out = m(ids(2, 5, seed=2), memory=memory, return_attention=True)
    assert [w.shape for w in out.attentions] == [(2, 4, 5, 10)] * 2


def test_bad_input_names_the_argument():
    m = model()
    with pytest.raises(ValueError, match=r"ids must be in \[0, "):
        m(torch.tensor([[1, V]]))
    with pytest.raises(ValueError, match="ids: segment of"):
        m(torch.zeros(1, 513, dtype=torch.long))
    memory = m.new_memory()
    m(ids(2, 3), memory=memory)
    with pytest.raises(ValueError, match="ids: batch size"):
        m(ids(1, 3), memory=memory)
    with pytest.raises(ValueError, match="mem_len"):
        m.new_memory(-2)


def test_same_seed_same_weights_and_tied_head():
    a, b = model(seed=3), model(seed=3)
    assert all(torch.equal(x, y) for x, y in zip(a.parameters(), b.parameters()))
    assert a.head.weight is a.tok.weight


# --- the recipe


def test_memory_evaluation_is_the_sliding_window_with_one_layer():
    streams = ids(2, 90)
    for n_layer, same in ((1, True), (2, False)):
        m = model(n_layer=n_layer)
        a = R.evaluate_memory(m, streams, seg_len=16, mem_len=12, window=12, skip=11)
        b = R.evaluate_window(m, streams, window=12, chunk=7)
        assert a.shape == b.shape == (2, 90 - 1 - 11)
        assert torch.allclose(a, b, atol=1e-5) == same


def test_evaluation_checks_its_arguments():
    m, streams = model(), ids(1, 40)
    with pytest.raises(ValueError, match="mem_len=4 must be >= window - 1"):
        R.evaluate_memory(m, streams, 8, 4, window=8)
    with pytest.raises(ValueError, match="skip must be >= window - 1"):
        R.evaluate_window(m, streams, 8, skip=3)


def test_memory_length_zero_is_segments_without_memory():
    m, streams = model().eval(), ids(2, 33)
    nll = R.evaluate_memory(m, streams, seg_len=8, mem_len=0)
    with torch.no_grad():
        x = streams[:, :9]
        want = torch.nn.functional.cross_entropy(
            m(x[:, :-1]).logits.transpose(1, 2), x[:, 1:], reduction="none"
        )
    assert torch.allclose(nll[:, :8], want, atol=1e-6)


@pytest.mark.parametrize("n_layer", [1, 2, 3])
def test_dependency_length_is_layers_times_window(n_layer):
    m = model(n_layer=n_layer).double()
    window, text = 5, ids(30)
    moved = R.influence(m, text, seg_len=3, window=window)
    # float64: beyond the reach a change is zero up to rounding. On some CPUs (seen on
    # an AMD EPYC) rows of one batched product round differently, so the unperturbed
    # row and a perturbed one can differ by ~1e-15 where no influence is possible.
    moved = moved.masked_fill(moved < 1e-9, 0.0)
    reach = int((moved > 0).nonzero().max()) + 1
    assert reach == n_layer * (window - 1)
    assert (moved[:reach] > 1e-6).all() and (moved[reach:] == 0).all()


def test_pretrain_carries_the_memory_and_learns():
    torch.manual_seed(0)
    streams = torch.arange(4 * 41).view(4, 41) % 7  # a pattern that repeats
    m = model()
    seen = []
    h = R.pretrain(
        m, streams, steps=30, seg_len=8, lr=1e-2, progress=False, seed=0,
        callback=lambda step, loss: seen.append(step),
    )  # fmt: skip
    assert len(h.losses) == 30 and seen == list(range(1, 31))
    assert h.final_loss(5) < h.losses[0] - 1.0
    with pytest.raises(ValueError, match="seg_len=64 is longer"):
        R.pretrain(m, streams, steps=1, seg_len=64, lr=1e-3, progress=False)


def test_token_streams_are_contiguous_rows():
    s = R.token_streams(3, "validation", chars=3000)
    from ptlm_lite.data import text_stream
    from ptlm_lite.recipes.gpt import tokenizer

    flat = tokenizer().encode(text_stream("validation")[:3000])
    assert s.shape[0] == 3 and s.flatten().tolist() == flat[: s.numel()]
    with pytest.raises(ValueError, match="n_streams"):
        R.token_streams(0)


# --- exercises: plausible wrong answers are rejected


def _window_off_by_one(T, memory, window):
    q = torch.arange(T)[:, None] + memory
    k = torch.arange(memory + T)[None, :]
    return (k <= q) & (k >= q - window)  # window + 1 keys


def _window_causal_only(T, memory, window):
    return masks.causal_mask(T, memory=memory)  # forgets the window


def _window_float(T, memory, window):
    q = torch.arange(T)[:, None] + memory
    k = torch.arange(memory + T)[None, :]
    return ((k <= q) & (k > q - window)).float()


def _window_no_memory_shift(T, memory, window):
    q = torch.arange(T)[:, None]  # forgets that the queries come after the memory
    k = torch.arange(memory + T)[None, :]
    return (k <= q) & (k > q - window)


def _scores(q, k, R_, W_r, u, v, dist_fn, swap=False, scale=1.0):
    Tq, Tk = q.shape[0], k.shape[0]
    dist = dist_fn(Tq, Tk)
    r = R_ @ W_r.T
    a, b = (v, u) if swap else (u, v)
    content = (q + a) @ k.T
    position = ((q + b) @ r.T).gather(1, dist.clamp(0, Tk - 1))
    future = (torch.arange(Tq)[:, None] + Tk - Tq) < torch.arange(Tk)[None, :]
    return ((content + position) * scale).masked_fill(future, float("-inf"))


def _dist(Tq, Tk):
    return torch.arange(Tq)[:, None] + (Tk - Tq) - torch.arange(Tk)[None, :]


def _scores_j_minus_i(q, k, R_, W_r, u, v):
    return _scores(q, k, R_, W_r, u, v, lambda a, b: -_dist(a, b))


def _scores_no_memory_offset(q, k, R_, W_r, u, v):
    return _scores(
        q, k, R_, W_r, u, v, lambda a, b: torch.arange(a)[:, None] - torch.arange(b)
    )


def _scores_u_v_swapped(q, k, R_, W_r, u, v):
    return _scores(q, k, R_, W_r, u, v, _dist, swap=True)


def _scores_scaled(q, k, R_, W_r, u, v):
    return _scores(q, k, R_, W_r, u, v, _dist, scale=1 / math.sqrt(q.shape[1]))


def _scores_transposed_projection(q, k, R_, W_r, u, v):
    return _scores(q, k, R_, W_r.T, u, v, _dist)


def _scores_no_future_mask(q, k, R_, W_r, u, v):
    Tq, Tk = q.shape[0], k.shape[0]
    r = R_ @ W_r.T
    d = _dist(Tq, Tk).clamp(min=0)
    return (q + u) @ k.T + ((q + v) @ r.T).gather(1, d)


WRONG_ANSWERS = {
    "same-length memory mask": [
        _window_off_by_one,
        _window_causal_only,
        _window_float,
        _window_no_memory_shift,
    ],
    "relative attention scores": [
        _scores_j_minus_i,
        _scores_no_memory_offset,
        _scores_u_v_swapped,
        _scores_scaled,
        _scores_transposed_projection,
        _scores_no_future_mask,
    ],
}
