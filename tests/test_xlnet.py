"""XLNet (``ptlm_lite/xlnet.py``, ``chapters/xlnet.ipynb``): masks from an order,
partial prediction, and the leak tests of two-stream attention: the query stream at
z_t never sees x_{z_t}, and no position sees anything later in the order.
"""

import math

import pytest
import torch

from ptlm_lite.config import preset
from ptlm_lite.exercise_keys import solutions_module
from ptlm_lite.exercises import WRONG, check
from ptlm_lite.xlnet import XLNet, partial_prediction, permutation_masks, sample_order

T, V = 8, 40


@pytest.fixture(scope="module")
def model():
    return XLNet(preset("xlnet-tiny", vocab_size=V), seed=0).eval()


def test_masks_match_the_definition():
    order = torch.tensor([3, 0, 4, 1, 2])
    content, query = permutation_masks(order)
    pos = order.tolist()
    for i in range(5):
        for j in range(5):
            earlier = pos.index(j) < pos.index(i)
            assert query[i, j] == earlier
            assert content[i, j] == (earlier or i == j)
    assert not query[3].any() and content[3].tolist() == [False] * 3 + [True, False]
    c, q = permutation_masks(order, memory=2)
    assert c.shape == (5, 7) and c[:, :2].all() and q[:, :2].all()
    assert torch.equal(q[:, 2:], query)


def test_identity_order_is_the_causal_mask():
    content, query = permutation_masks(torch.arange(6))
    assert torch.equal(content, torch.ones(6, 6, dtype=torch.bool).tril())
    assert torch.equal(query, torch.ones(6, 6, dtype=torch.bool).tril(-1))


def test_partial_prediction_selects_the_last_1_over_K():
    g = torch.Generator().manual_seed(0)
    orders = sample_order(200, 12, g)
    for K in (1, 2, 3, 6, 12, 100):
        pred = partial_prediction(orders, K)
        n = max(1, int(12 / K))
        assert (pred.sum(-1) == n).all()
        for o, p in zip(orders[:20], pred[:20]):
            assert set(o[12 - n :].tolist()) == set(p.nonzero()[:, 0].tolist())
    # every position is predicted about equally often over many orders
    share = partial_prediction(sample_order(3000, 12, g), 4).float().mean(0)
    assert (share - 0.25).abs().max() < 0.04


def test_same_generator_same_orders_and_input_untouched():
    a = sample_order(4, 9, torch.Generator().manual_seed(5))
    b = sample_order(4, 9, torch.Generator().manual_seed(5))
    assert torch.equal(a, b)
    keep = a.clone()
    permutation_masks(a)
    partial_prediction(a, 3)
    assert torch.equal(a, keep)


@pytest.mark.parametrize("seed", range(4))
def test_query_stream_never_sees_its_own_token_or_later_ones(model, seed):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(1, V, (1, T), generator=g)
    order = torch.randperm(T, generator=g)
    rank = order.argsort()
    with torch.no_grad():
        base = model(ids, order=order)
    for i in range(T):  # change x_i: only positions later in the order may move
        other = ids.clone()
        other[0, i] = (ids[0, i] + 1 + seed) % V
        with torch.no_grad():
            out = model(other, order=order)
        g_moved = (out.extra["g"] - base.extra["g"]).abs().amax(-1)[0]
        h_moved = (out.extra["h"] - base.extra["h"]).abs().amax(-1)[0]
        not_later = rank <= rank[i]
        assert (g_moved[not_later] < 1e-6).all()  # itself included: no leak
        assert (h_moved[rank < rank[i]] < 1e-6).all()
        assert h_moved[i] > 1e-4  # the content stream does see itself
        if rank[i] < T - 1:
            assert g_moved[~not_later].max() > 1e-4  # later ones do read it


def test_query_stream_knows_its_position():
    # same context, two target positions: different distributions (the 我爱生活 point)
    model = XLNet(preset("xlnet-tiny", vocab_size=V), seed=1).eval()
    with torch.no_grad():  # larger weights than at init, so that positions matter
        for p in model.parameters():
            p.mul_(10 if p.dim() > 1 and p.shape[0] != V else 1)
    ids = torch.randint(1, V, (1, T), generator=torch.Generator().manual_seed(9))
    order = torch.tensor([0, 1, 2, 3, 4, 5, 6, 7])
    with torch.no_grad():
        logits = model(ids, order=order).logits[0]
    q = permutation_masks(order)[1]
    # positions 6 and 7 with the same visible context 0..5 when 7 ignores 6
    q2 = q.clone()
    q2[7, 6] = False
    with torch.no_grad():
        c = permutation_masks(order)[0]
        l2 = model(ids, content_mask=c[None], query_mask=q2[None])
    assert (l2.logits[0, 6] - l2.logits[0, 7]).abs().max() > 1e-4
    assert torch.allclose(l2.logits[0, 6], logits[6], atol=1e-4)


@pytest.mark.parametrize("two_stream", [True, False])
def test_predict_at_gives_the_same_logits_as_every_position(model, two_stream):
    # XLNet's target mapping: g (and the last layer's queries) only where predicted
    g = torch.Generator().manual_seed(4)
    ids = torch.randint(0, V, (3, T), generator=g)
    orders = sample_order(3, T, g)
    at = partial_prediction(orders, 3).nonzero()[:, 1].view(3, -1)  # (3, 2)
    order = orders if two_stream else None
    with torch.no_grad():
        full = model(ids, order=order, two_stream=two_stream)
        part = model(ids, order=order, two_stream=two_stream, predict_at=at)
        targets = ids.gather(1, at)
        loss = model(ids, order=order, two_stream=two_stream, predict_at=at,
                     targets=targets).loss  # fmt: skip
    picked = full.logits.gather(1, at[..., None].expand(-1, -1, V))
    torch.testing.assert_close(part.logits, picked, atol=1e-5, rtol=1e-5)
    dense = torch.full_like(ids, -100).scatter(1, at, targets)  # -100 elsewhere
    with torch.no_grad():
        ref = model(ids, order=order, two_stream=two_stream, targets=dense).loss
    torch.testing.assert_close(loss, ref, atol=1e-5, rtol=1e-5)
    with pytest.raises(ValueError, match="predict_at"):
        model(ids, order=order, two_stream=two_stream, predict_at=at + T)
    with pytest.raises(ValueError, match="predict_at"):
        model(ids, order=order, two_stream=two_stream, predict_at=at[0])


@pytest.mark.parametrize("memory", [0, 3])
def test_both_streams_in_one_call_give_what_two_calls_give(model, memory):
    # the block stacks h's rows and g's and attends once: a row's output depends on its
    # query, its mask row and its place among the keys only, so each stream alone
    # (content only; query only) gives the same numbers
    block = model.blocks[0]
    g = torch.Generator().manual_seed(7)
    orders = sample_order(2, T, g)
    content, query = permutation_masks(orders, memory)
    at = partial_prediction(orders, 3).nonzero()[:, 1].view(2, -1)  # (2, P = 2)
    h, q = torch.randn(2, T, 64, generator=g), torch.randn(2, 2, 64, generator=g)
    mem = torch.randn(2, memory, 64, generator=g) if memory else None
    query = query.gather(1, at[..., None].expand(-1, -1, memory + T))
    with torch.no_grad():
        h2, g2, (w_h, w_g) = block(h, q, content, query, mem, True, at + memory)
        h_alone, none, (w_h1, _) = block(h, None, content, query, mem, True)
        none2, g_alone, (_, w_g1) = block(h, q, content, query, mem, True,
                                          at + memory, content=False)  # fmt: skip
    assert none is None and none2 is None
    torch.testing.assert_close(h2, h_alone, atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(g2, g_alone, atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(w_h, w_h1, atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(w_g, w_g1, atol=1e-6, rtol=1e-5)
    assert w_g.shape == (2, 4, 2, memory + T)  # (B, H, P, M + T)
    with pytest.raises(ValueError, match="g: give the query stream"):
        block(h, None, content, query, mem, content=False)


def test_bad_input_names_the_argument(model):
    with pytest.raises(ValueError, match="order"):
        permutation_masks(torch.tensor([0, 0, 1]))
    with pytest.raises(ValueError, match="K"):
        partial_prediction(torch.arange(4), 0.5)
    with pytest.raises(TypeError, match="generator"):
        sample_order(2, 3, None)
    with pytest.raises(ValueError, match="memory"):
        permutation_masks(torch.arange(3), memory=-1)
    ids = torch.ones(1, 4, dtype=torch.long)
    with pytest.raises(ValueError, match="order"):
        model(ids, order=torch.arange(5))
    with pytest.raises(ValueError, match="query_mask"):
        model(ids, content_mask=torch.ones(4, 4, dtype=torch.bool))
    with pytest.raises(TypeError, match="config"):
        XLNet(preset("tiny", vocab_size=V))
    for kw in ({"tie_weights": False}, {"share_layers": True}):  # not silently ignored
        with pytest.raises(TypeError, match="tie_weights=True, share_layers=False"):
            XLNet(preset("xlnet-tiny", vocab_size=V, **kw))


def test_cities_windows_hold_a_whole_name_whose_second_word_follows_the_first():
    from ptlm_lite.recipes import xlnet as R

    lang = R.Cities()
    ids, at = lang.windows(50, 24, seed=0)
    assert ids.shape == (50, 24) and ids.max() < lang.vocab_size
    follows = dict(zip(lang.first.tolist(), lang.second.tolist()))
    rows = torch.arange(50)
    firsts, seconds = ids[rows, at].tolist(), ids[rows, at + 1].tolist()
    assert all(follows[f] == s for f, s in zip(firsts, seconds))
    stream = lang.stream(200, seed=0)
    for i in (stream[:-1] == lang.id["New"]).nonzero()[:, 0].tolist():
        assert stream[i + 1] == lang.id["York"]
    assert (
        lang.decode(lang.encode("we sailed to New York .")) == "we sailed to New York ."
    )
    with pytest.raises(ValueError, match="text"):
        lang.encode("we sailed to Paris .")
    with pytest.raises(ValueError, match="T must"):
        lang.windows(2, 8, seed=0)


def test_score_names_of_a_uniform_model_and_bad_arguments_are_named():
    from ptlm_lite.recipes import xlnet as R

    lang = R.Cities()
    model = XLNet(preset("xlnet-tiny", vocab_size=lang.vocab_size), seed=0)
    torch.nn.init.zeros_(model.head.bias)
    with torch.no_grad():
        model.tok.weight.zero_()  # tied head: every logit is 0, a uniform guess
    ids, at = lang.windows(8, 24, seed=1)
    for how in ("plm", "mlm at once", "mlm left to right"):
        r = R.score_names(model, ids, at, how, lang.mask_id)
        short = R.score_names(model, ids, at, how, lang.mask_id, second_only=True)
        assert short == {k: r[k] for k in short} and len(short) == 2
        assert r["name nats"] == pytest.approx(2 * math.log(lang.vocab_size), abs=1e-4)
        for key in ("name nats", "second | first nats", "exact match"):
            per = r[f"{key} per window"]  # one score per window, for a 2-D verdict
            assert len(per) == 8 and sum(per) / 8 == pytest.approx(r[key], abs=1e-5)
    with pytest.raises(ValueError, match="how"):
        R.score_names(model, ids, at, "gpt")
    with pytest.raises(ValueError, match="objective"):
        R.pretrain(model, lang.stream(20, 0), objective="clm", steps=1, mask_id=0)


# --- plausible wrong answers to the exercises


def _masks_swapped(order):
    rank = order.argsort()
    return rank[None] < rank[:, None], rank[None] <= rank[:, None]


def _masks_order_as_rank(order):  # reads z as the ranks instead of inverting it
    return order[None] <= order[:, None], order[None] < order[:, None]


def _masks_transposed(order):
    rank = order.argsort()
    return rank[:, None] <= rank[None], rank[:, None] < rank[None]


def _masks_float(order):
    rank = order.argsort()
    return (rank[None] <= rank[:, None]).float(), (rank[None] < rank[:, None]).float()


def _partial_first(order, K):
    n = max(1, int(len(order) / K))
    out = torch.zeros(len(order), dtype=torch.bool)
    out[order[:n]] = True
    return out


def _partial_positions_not_order(order, K):
    n = max(1, int(len(order) / K))
    out = torch.zeros(len(order), dtype=torch.bool)
    out[len(order) - n :] = True
    return out


def _partial_round_up(order, K):
    n = -(-len(order) // K)
    out = torch.zeros(len(order), dtype=torch.bool)
    out[order[len(order) - int(n) :]] = True
    return out


WRONG_ANSWERS = {
    "permutation masks": [
        _masks_swapped, _masks_order_as_rank, _masks_transposed, _masks_float,
    ],
    "partial prediction": [
        _partial_first, _partial_positions_not_order, _partial_round_up,
    ],
}  # fmt: skip


@pytest.mark.parametrize(
    "name, i", [(n, i) for n, fs in WRONG_ANSWERS.items() for i in range(len(fs))]
)
def test_plausible_wrong_answers_are_rejected(name, i):
    r = check(name, WRONG_ANSWERS[name][i])
    assert r.status == WRONG and not r, r.message


def test_solutions_pass():
    S = solutions_module("xlnet")

    assert check("permutation masks", S.my_permutation_masks)
    assert check("partial prediction", S.my_partial_prediction)
