"""GPT / GPT-2: leak tests, KV cache, overfitting, generation knobs, bad input, paper
sizes.
"""

import pytest
import torch

from ptlm_lite import masks
from ptlm_lite.config import preset
from ptlm_lite.generate import filter_logits, sample_next
from ptlm_lite.gpt import GPT, IGNORE, gpt_config
from ptlm_lite.train import count_parameters, train


def _model(pre_norm, **kw):
    torch.manual_seed(0)
    cfg = gpt_config(
        "gpt2-tiny" if pre_norm else "gpt-tiny",
        vocab_size=50,
        max_len=24,
        dropout=0.0,
        **kw,
    )
    return GPT(cfg).eval()


def _ids(B=2, T=12, seed=0, V=50):
    return torch.randint(0, V, (B, T), generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("pre_norm", [False, True])
def test_future_tokens_never_change_the_past(pre_norm):
    model, ids = _model(pre_norm), _ids()
    for t in range(ids.shape[1]):
        changed = ids.clone()
        changed[:, t] = (changed[:, t] + 1) % 50
        with torch.no_grad():
            a, b = model(ids).logits, model(changed).logits
        assert torch.allclose(a[:, :t], b[:, :t], atol=1e-6), (
            f"position < {t} saw token {t}"
        )
        assert not torch.allclose(a[:, t:], b[:, t:]), (
            "the changed token must matter from its own position on"
        )


@pytest.mark.parametrize("pre_norm", [False, True])
def test_future_tokens_never_change_the_past_with_cache(pre_norm):
    model, ids = _model(pre_norm), _ids()
    changed = ids.clone()
    changed[:, 9:] = (changed[:, 9:] + 7) % 50
    with torch.no_grad():
        out = []
        for x in (ids, changed):
            cache = model.new_cache()
            out.append(
                torch.cat(
                    [
                        model(x[:, t : t + 1], cache=cache).logits
                        for t in range(x.shape[1])
                    ],
                    1,
                )
            )
    assert torch.allclose(out[0][:, :9], out[1][:, :9], atol=1e-6)


@pytest.mark.parametrize("pre_norm", [False, True])
def test_cache_equals_no_cache(pre_norm):
    model, ids = _model(pre_norm), _ids(T=20)
    with torch.no_grad():
        full = model(ids, return_attention=True)
        cache = model.new_cache()
        first = model(ids[:, :5], cache=cache)
        rest = model(ids[:, 5:12], cache=cache, return_attention=True)
        last = model(ids[:, 12:], cache=cache)
    assert GPT.cache_len(cache) == 20
    torch.testing.assert_close(
        torch.cat([first.logits, rest.logits, last.logits], 1),
        full.logits,
        atol=1e-5,
        rtol=1e-5,
    )
    # the cached attention rows are the full rows 5..11, over keys 0..11
    torch.testing.assert_close(
        rest.attentions[0], full.attentions[0][:, :, 5:12, :12], atol=1e-6, rtol=1e-5
    )


def test_attention_is_causal_and_normalised():
    model, ids = _model(True), _ids()
    with torch.no_grad():
        att = model(ids, return_attention=True).attentions
    assert len(att) == model.config.n_layer and att[0].shape == (2, 4, 12, 12)
    upper = ~masks.causal_mask(12)
    for a in att:
        assert torch.all(a[..., upper] == 0)
        torch.testing.assert_close(a.sum(-1), torch.ones(2, 4, 12))


@pytest.mark.parametrize("pre_norm", [False, True])
def test_overfits_one_batch(pre_norm):
    torch.manual_seed(0)
    model = GPT(
        gpt_config(
            "gpt2-tiny" if pre_norm else "gpt-tiny",
            vocab_size=30,
            max_len=16,
            dropout=0.0,
        )
    )
    ids = _ids(B=4, T=16, V=30)
    batch = {"ids": ids[:, :-1], "targets": ids[:, 1:]}
    threads = torch.get_num_threads()
    # tiny matrices: one thread is faster, and much faster on a busy CPU
    torch.set_num_threads(1)
    try:
        hist = train(model, [batch], steps=100, lr=3e-3, progress=False)
    finally:
        torch.set_num_threads(threads)
    assert hist.losses[0] > 3.0 and hist.final_loss(10) < 0.2


def test_ignored_targets_do_not_count():
    model, ids = _model(False), _ids()
    targets = ids.clone()
    targets[:, :6] = IGNORE
    with torch.no_grad():
        logits = model(ids).logits
        loss = model(ids, targets=targets).loss
    ref = torch.nn.functional.cross_entropy(
        logits[:, 6:].flatten(0, 1), ids[:, 6:].flatten()
    )
    torch.testing.assert_close(loss, ref)


def test_tied_weights_and_gpt2_residual_init():
    m = _model(True)
    assert m.head.weight is m.embed.tok.weight
    untied = GPT(gpt_config("gpt2-tiny", vocab_size=50, tie_weights=False))
    assert untied.head.weight is not untied.embed.tok.weight
    big = GPT(gpt_config("gpt2-tiny", vocab_size=50, n_layer=8, d_model=128, d_ff=512))
    std = big.blocks[0].attn.o.weight.std().item()
    assert abs(std - 0.02 / 4) < 0.001  # 0.02 / sqrt(2 * 8)
    assert abs(big.blocks[0].attn.qkv.weight.std().item() - 0.02) < 0.002
    post = GPT(gpt_config("gpt-tiny", vocab_size=50, n_layer=8, d_model=128, d_ff=512))
    assert abs(post.blocks[0].attn.o.weight.std().item() - 0.02) < 0.002
    assert isinstance(post.blocks.norm, torch.nn.Identity) and isinstance(
        big.blocks.norm, torch.nn.LayerNorm
    )


def test_generation_is_reproducible_and_cache_agnostic():
    model, ids = _model(True), _ids(T=4)
    a = model.generate(
        ids, 30, temperature=1.0, top_k=10, generator=torch.Generator().manual_seed(3)
    )
    b = model.generate(
        ids, 30, temperature=1.0, top_k=10, generator=torch.Generator().manual_seed(3)
    )
    c = model.generate(
        ids,
        30,
        temperature=1.0,
        top_k=10,
        generator=torch.Generator().manual_seed(3),
        use_cache=False,
    )
    # 34 > max_len: the window slid
    assert a.shape == (2, 34) and torch.equal(a, b) and torch.equal(a, c)
    g1 = model.generate(ids, 8, temperature=0)
    g2 = model.generate(
        ids, 8, temperature=0.5, top_k=1, generator=torch.Generator().manual_seed(1)
    )
    assert torch.equal(g1, g2)  # top-k = 1 is greedy


def test_filter_logits_top_k_and_top_p():
    logits = torch.log(torch.tensor([[0.5, 0.3, 0.15, 0.05]]))
    assert torch.isfinite(filter_logits(logits, top_k=2)).tolist() == [
        [True, True, False, False]
    ]
    assert torch.isfinite(filter_logits(logits, top_p=0.8)).tolist() == [
        [True, True, False, False]
    ]
    assert torch.isfinite(filter_logits(logits, top_p=0.81)).tolist() == [
        [True, True, True, False]
    ]
    assert torch.isfinite(filter_logits(logits, top_p=0.1)).tolist() == [
        [True, False, False, False]
    ]
    assert torch.isfinite(filter_logits(logits, top_p=1.0)).all()
    shuffled = logits[:, [2, 0, 3, 1]]
    assert torch.isfinite(filter_logits(shuffled, top_p=0.8)).tolist() == [
        [False, True, False, True]
    ]
    g = torch.Generator().manual_seed(0)
    draws = torch.stack(
        [sample_next(logits, 1.0, top_p=0.8, generator=g) for _ in range(200)]
    )
    assert set(draws.flatten().tolist()) == {0, 1}


def test_a_tiny_temperature_is_greedy_and_top_k_holds_at_any_temperature():
    logits = torch.tensor([[1.0, 2.0, 3.0, 0.5], [0.0, -1.0, 0.2, 4.0]])
    g = torch.Generator().manual_seed(0)
    for tiny in (1e-45, 1e-300, 5e-324):  # 0 in float32: the division gave NaN
        assert sample_next(logits, tiny, generator=g).tolist() == [2, 3]
    for _ in range(20):  # 1e39 is inf in float32: -inf / inf gave NaN
        assert sample_next(logits, 1e39, top_k=1, generator=g).tolist() == [2, 3]
    # a huge temperature is (nearly) uniform over the tokens top_k keeps
    draws = [
        sample_next(logits, 1e300, top_k=2, generator=g)[0].item() for _ in range(200)
    ]
    assert set(draws) == {1, 2}


@pytest.mark.parametrize(
    "kwargs, word",
    [
        (dict(temperature=-0.5), "temperature"),
        (dict(temperature=float("nan")), "temperature"),  # torch's error named nothing
        (dict(temperature=float("inf")), "temperature"),  # top_k=1 drew from all
        (dict(top_p=0.0), "top_p"),
        (dict(top_p=1.5), "top_p"),
        (dict(top_k=0), "top_k"),
        (dict(top_k=51), "top_k"),
        (dict(max_new_tokens=-1), "max_new_tokens"),
    ],
)
def test_bad_generation_arguments(kwargs, word):
    model = _model(False)
    args = dict(max_new_tokens=3)
    args.update(kwargs)
    with pytest.raises(ValueError, match=word):
        model.generate(_ids(T=3), **args)


def test_bad_inputs():
    model = _model(False)
    with pytest.raises(ValueError, match="prompt"):
        model.generate(_ids(T=25), 1)
    with pytest.raises(ValueError, match="max_len"):
        model(_ids(T=25))
    with pytest.raises(ValueError, match="targets"):
        model(_ids(T=5), targets=_ids(T=4))
    with pytest.raises(ValueError, match="pos"):
        GPT(gpt_config("gpt-tiny", pos="sinusoidal"))
    with pytest.raises(ValueError, match="cache"):
        model(_ids(T=3), cache=[{}])


def test_loading_a_checkpoint_of_another_shape_names_the_tensor():
    small, wide = (
        _model(False),
        GPT(gpt_config("gpt-tiny", vocab_size=50, max_len=24, d_model=32, d_ff=64)),
    )
    with pytest.raises(ValueError, match=r"embed\.tok\.weight.*d_model=64"):
        small.load_state_dict(wide.state_dict())
    other = _model(False)
    other.load_state_dict(small.state_dict())  # same shapes: fine
    assert torch.equal(other(_ids()).logits, small(_ids()).logits)


# Parameter counts of the papers' sizes, built on the meta device (nothing is
# allocated). GPT-2's paper reported 117M/345M/762M/1542M; the released checkpoints
# have 124M/355M/774M/1558M (the first counts omitted the position table and used a
# smaller vocabulary estimate; OpenAI later corrected the numbers in their model
# card). GPT's 117M is the 116.5M below, rounded.
PAPER = {
    "gpt": (116_534_784, 117e6),
    "gpt2": (124_439_808, 124e6),
    "gpt2-medium": (354_823_168, 355e6),
    "gpt2-large": (774_030_080, 774e6),
    "gpt2-xl": (1_557_611_200, 1558e6),
}


@pytest.mark.parametrize("name", sorted(PAPER))
def test_preset_parameter_counts(name):
    exact, paper = PAPER[name]
    with torch.device("meta"):
        model = GPT(preset(name))
    n = count_parameters(model)
    assert n == exact
    assert abs(n - paper) / paper < 0.005


def test_log_likelihood_of_padded_continuations():
    model = _model(True)
    a, b = _ids(B=1, T=9, seed=1), _ids(B=1, T=6, seed=2)
    padded = torch.zeros(2, 9, dtype=torch.long)
    padded[0], padded[1, :6] = a[0], b[0]
    both = model.log_likelihood(padded, torch.tensor([3, 3]), torch.tensor([9, 6]))
    torch.testing.assert_close(
        both, torch.cat([model.log_likelihood(a, 3), model.log_likelihood(b, 3)])
    )
    with torch.no_grad():
        logp = model(a).logits.log_softmax(-1)
    ref = sum(logp[0, t - 1, a[0, t]] for t in range(3, 9))
    torch.testing.assert_close(model.log_likelihood(a, 3)[0], ref)
    # a reversed range, one past the end or before the start is an error, not a
    # silent 0; token 0 has no prediction, so start 0 counts from token 1 on
    torch.testing.assert_close(model.log_likelihood(a, 0), model.log_likelihood(a, 1))
    for start, end in ((-1, None), (5, 4), (1, 10), (torch.tensor([3, -2]), None)):
        with pytest.raises(ValueError, match="start <= end"):
            model.log_likelihood(padded if torch.is_tensor(start) else a, start, end)


@pytest.mark.parametrize(
    "mode, C, n_out", [("classify", 1, 3), ("sum", 2, 3), ("choice", 4, 1)]
)
def test_task_head_shapes_and_auxiliary_loss(mode, C, n_out):
    from ptlm_lite.gpt import GPTForTask
    from ptlm_lite.recipes.gpt import collate_task, task_inputs

    torch.manual_seed(0)
    gpt = GPT(gpt_config("gpt-tiny", vocab_size=50, dropout=0.0))
    enc = lambda s: [10 + (ord(ch) % 30) for ch in s]  # noqa: E731
    task, ex = {
        "classify": ("classification", {"text": "abc"}),
        "sum": ("similarity", {"a": "ab", "b": "cde"}),
        "choice": (
            "multiple_choice",
            {"context": "ab", "endings": ["c", "dd", "e", "fff"]},
        ),
    }[mode]
    seqs = task_inputs(task, ex, enc, 5, 3, 2)
    assert len(seqs) == C and all(s[0] == 5 and s[-1] == 2 for s in seqs)
    batch = collate_task([seqs, seqs], labels=[0, 0])
    out = GPTForTask(gpt, 3 if mode != "choice" else 1, mode, lm_weight=0.5)(**batch)
    assert out.logits.shape == (2, 3 if mode != "choice" else C)
    torch.testing.assert_close(
        out.loss, out.extra["task_loss"] + 0.5 * out.extra["lm_loss"]
    )
    with pytest.raises(ValueError, match="task"):
        task_inputs("translation", ex, enc, 5, 3, 2)


@pytest.mark.parametrize("pre_norm", [False, True])
def test_option_scores_runs_each_prompt_once_with_the_same_scores(pre_norm):
    # the fast path (every option after its prompt in one row, a (B, T, T) mask)
    # against the plain one (one sequence per prompt and option)
    from ptlm_lite.recipes import gpt as recipe

    class CharTok:
        def encode(self, text):
            return [1 + ord(ch) % 45 for ch in text]

    torch.manual_seed(0)
    name = "gpt2-tiny" if pre_norm else "gpt-tiny"
    model = GPT(gpt_config(name, vocab_size=50, max_len=64, dropout=0.0)).eval()
    tok = CharTok()
    prompts = ["a short one:", "a much longer prompt, with commas, and more:", "x"]
    options = [" person", " city", " a", " organisation"]
    fast = recipe.option_scores(model, tok, prompts, options)
    p_ids = [tok.encode(p) for p in prompts]
    o_ids = [tok.encode(o) for o in options]
    with torch.no_grad():
        plain = recipe._option_scores_one_by_one(model, p_ids, o_ids, 0)
    assert fast.shape == (3, 4)
    torch.testing.assert_close(fast, plain, atol=1e-5, rtol=1e-5)
    one = recipe.option_scores(model, tok, prompts[1:2], options[2:3])  # one of each
    torch.testing.assert_close(one, plain[1:2, 2:3], atol=1e-5, rtol=1e-5)
    # an empty prompt takes the plain way: nothing predicts an option's first token
    empty = recipe.option_scores(model, tok, [""], options)
    with torch.no_grad():
        ref = recipe._option_scores_one_by_one(model, [[]], o_ids, 0)
    torch.testing.assert_close(empty, ref)


def test_task_head_without_the_auxiliary_loss_trains_the_same():
    # λ = 0 skips the LM loss: the same loss and the same gradients as adding 0 × it
    from ptlm_lite.gpt import GPTForTask
    from ptlm_lite.recipes.gpt import collate_task

    seqs = [[[5, 11, 12, 3, 13, 2], [5, 11, 12, 3, 14, 15, 2]]] * 2
    batch = collate_task(seqs, labels=[0, 1])
    grads, losses = [], []
    for lam in (0.0, 1e-30):  # 1e-30: the LM loss computed, and (almost) not counted
        gpt = _model(False)
        gpt.train()
        head = GPTForTask(gpt, 1, "choice", lm_weight=lam)
        out = head(**batch)
        out.loss.backward()
        assert (out.extra["lm_loss"] is None) == (lam == 0)
        losses.append(out.loss.detach())
        grads.append(torch.cat([p.grad.flatten() for p in head.parameters()]))
    torch.testing.assert_close(losses[0], losses[1])
    torch.testing.assert_close(grads[0], grads[1])


@pytest.mark.parametrize("last", [[[-1]], [[0]], [[8]], [[2.0]], [2]])
def test_gpt_for_task_refuses_a_last_that_is_no_position(last):
    # last = -1 (or 0) used to pick a state but mask every LM target: the LM loss was
    # silently 0
    from ptlm_lite.gpt import GPTForTask

    m = GPTForTask(GPT(gpt_config("gpt-tiny", vocab_size=20), seed=0), 2)
    ids = torch.randint(20, (1, 1, 8))
    with pytest.raises(ValueError, match="last must be"):
        m(ids, torch.tensor(last), labels=torch.tensor([1]))
    out = m(ids, torch.tensor([[7]]), labels=torch.tensor([1]))
    assert torch.isfinite(out.loss)
