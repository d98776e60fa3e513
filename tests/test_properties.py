"""Nothing silent (issue 25): a property-based test of the public API with hypothesis.

For configs, model forwards, masks, corruptions, tokenizers, attention and the trainer,
generated inputs, valid and invalid (edge sizes, dtypes, NaN and inf, empty batches,
ids at and past the vocabulary, ``True`` where a count is meant), must either raise a
``ValueError`` / ``TypeError`` whose message names the argument, or return finite
output of the documented shape. Where a test breaks one argument on purpose it also
checks that the call did fail, naming that argument: a bad input accepted silently
fails the test.

Fixed seed (``derandomize=True``) and bounded example counts: the same examples on
every run, the whole file in well under two minutes on a 2-core CPU. The number of
examples tried is printed at the end of the run (and kept in ``EXAMPLES``).
"""

from __future__ import annotations

import collections
import math

import pytest
import torch

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from ptlm_lite import efficient as E  # noqa: E402
from ptlm_lite import masks  # noqa: E402
from ptlm_lite.attention import attention  # noqa: E402
from ptlm_lite.bert import BertForPreTraining  # noqa: E402
from ptlm_lite.config import preset  # noqa: E402
from ptlm_lite.corrupt import mlm_mask, replace_selected, select_tokens  # noqa: E402
from ptlm_lite.gpt import GPT  # noqa: E402
from ptlm_lite.output import IGNORE, cross_entropy  # noqa: E402
from ptlm_lite.reformer import Reformer  # noqa: E402
from ptlm_lite.train import train  # noqa: E402
from ptlm_lite.transformer import Transformer  # noqa: E402
from ptlm_lite.transformer_xl import TransformerXL  # noqa: E402
from ptlm_lite.xlnet import XLNet  # noqa: E402

EXAMPLES: collections.Counter = collections.Counter()


def budget(n):
    return settings(
        max_examples=n,
        derandomize=True,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )


@pytest.fixture(scope="module", autouse=True)
def report_count(request):
    yield
    rep = request.config.pluginmanager.get_plugin("terminalreporter")
    line = (
        f"test_properties: {sum(EXAMPLES.values())} examples tried "
        f"({', '.join(f'{k} {v}' for k, v in sorted(EXAMPLES.items()))})"
    )
    capture = request.config.pluginmanager.get_plugin("capturemanager")
    if rep is not None and capture is not None:
        with capture.global_and_fixture_disabled():
            rep.write_line("\n" + line)


def outcome(kind, call, bad):
    """Run ``call``. ``bad``: None when every argument is valid (the call must
    succeed: its result is returned), else the names the error may cite (the call
    must raise ValueError/TypeError naming one of them)."""
    EXAMPLES[kind] += 1
    if bad is None:
        return call()
    with pytest.raises((ValueError, TypeError)) as e:
        call()
    names = (bad,) if isinstance(bad, str) else bad
    assert any(n in str(e.value) for n in names), (names, str(e.value))
    return None


def finite(t, shape=None):
    assert isinstance(t, torch.Tensor) and bool(torch.isfinite(t).all()), t
    if shape is not None:
        assert tuple(t.shape) == tuple(shape), (tuple(t.shape), shape)


# Values that are not counts, or not what a count argument accepts
NOT_COUNTS = [True, False, -1, 0, 1.5, float("nan"), "3", None]
NUMBERS = st.sampled_from(
    [0, 1, 2, 3, 7, -1, True, False, 0.5, 1.5, -0.1, float("nan"), float("inf"),
     float("-inf"), "2", None]
)  # fmt: skip


# Configs ----------------------------------------------------------------------------

INT_FIELDS = {"vocab_size": 1, "d_model": 1, "n_layer": 1, "n_head": 1, "d_ff": 1,
              "max_len": 1, "n_segment": 0, "pad_id": 0, "d_embed": 0}  # fmt: skip
FLOAT_FIELDS = {"dropout": (0.0, 1.0), "label_smoothing": (0.0, 1.0)}


@budget(80)
@given(
    field=st.sampled_from(sorted(INT_FIELDS) + sorted(FLOAT_FIELDS) + ["ln_eps"]),
    value=NUMBERS,
)
def test_configs_refuse_or_keep_what_they_accept(field, value):
    def valid():
        if field in INT_FIELDS:
            ok = type(value) is int and value >= INT_FIELDS[field]
            if ok and field == "d_model":
                ok = value % 2 == 0  # gpt-tiny has n_head = 2 below
            if ok and field == "n_head":
                ok = 16 % value == 0
            if ok and field == "d_embed":
                ok = value == 0 or value <= 16
            return ok
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return False
        if field == "ln_eps":
            return math.isfinite(value) and value > 0
        lo, hi = FLOAT_FIELDS[field]
        return lo <= value < hi

    base = dict(vocab_size=11, d_model=16, n_head=2, n_layer=1, d_ff=8, max_len=8)
    good = valid()
    cfg = outcome(
        "config", lambda: preset("gpt-tiny", **{**base, field: value}),
        None if good else field,
    )  # fmt: skip
    if good and field in ("vocab_size", "d_model", "n_layer", "d_ff", "max_len"):
        if value > 64:  # large but valid: the config is enough
            return
        m = GPT(cfg, seed=0).eval()
        with torch.no_grad():
            finite(
                m(torch.zeros(1, 1, dtype=torch.long)).logits, (1, 1, cfg.vocab_size)
            )


# Model forwards ---------------------------------------------------------------------

V, L = 13, 12  # vocabulary, max_len
SMALL = dict(vocab_size=V, d_model=16, n_head=2, n_layer=1, d_ff=32, max_len=L)
_MODELS: dict = {}


def model(kind):
    if kind not in _MODELS:
        build = {
            "gpt": lambda: GPT(preset("gpt-tiny", **SMALL), seed=0),
            "gpt2": lambda: GPT(preset("gpt2-tiny", **SMALL), seed=0),
            "bert": lambda: BertForPreTraining(preset("bert-tiny", **SMALL), seed=0),
            "transformer": lambda: Transformer(preset("tiny", **SMALL), seed=0),
            "txl": lambda: TransformerXL(
                preset("txl-tiny", **SMALL, mem_len=4), seed=0
            ),
            "xlnet": lambda: XLNet(preset("xlnet-tiny", **SMALL), seed=0),
            "reformer": lambda: Reformer(
                preset("reformer-tiny", **SMALL, chunk=4, n_buckets=4, hash_seed=1),
                seed=0,
            ),
        }[kind]
        _MODELS[kind] = build().eval()
    return _MODELS[kind]


FAULTS = {
    # fault: (which models it applies to, the names the error may cite)
    "none": ("*", None),
    "all_ignore": ("*", None),  # a loss over no target: 0, not NaN
    "ids_at_vocab": ("*", ("ids", "src", "tgt_in")),
    "ids_negative": ("*", ("ids", "src", "tgt_in")),
    "ids_float": ("*", ("ids", "src", "tgt_in")),
    "ids_bool": ("*", ("ids", "src", "tgt_in")),
    "ids_1d": ("*", ("ids", "src", "tgt_in")),
    "ids_list": ("*", ("ids", "src", "tgt_in")),
    "too_long": ("gpt gpt2 bert transformer reformer", ("max_len",)),
    "targets_at_vocab": ("*", ("targets", "tgt_out")),
    "targets_float": ("*", ("targets", "tgt_out")),
    "targets_shape": ("*", ("targets", "tgt_out")),
    "mask_float": ("gpt gpt2 txl reformer", ("mask",)),
    "mask_shape": ("gpt gpt2 txl reformer", ("mask",)),
    "mask_list": ("gpt gpt2 txl reformer", ("mask",)),
    "memory_batch": ("txl xlnet", ("memory",)),
    "memory_type": ("txl xlnet", ("memory",)),
    "order_short": ("xlnet", ("order",)),
    "order_float": ("xlnet", ("order",)),
    "order_not_perm": ("xlnet", ("order",)),
    "query_mask_shape": ("xlnet", ("query_mask", "content_mask")),
    "segments_float": ("bert", ("segments",)),
    "segments_range": ("bert", ("segments",)),
    "segments_shape": ("bert", ("segments",)),
    "tgt_batch": ("transformer", ("tgt_in",)),
}
KINDS = ["gpt", "gpt2", "bert", "transformer", "txl", "xlnet", "reformer"]
CASES = [
    (k, f)
    for f, (on, _) in FAULTS.items()
    for k in KINDS
    if on == "*" or k in on.split()
]


def inputs(kind, fault, B, T, g):
    """The keyword arguments of one forward call with ``fault`` applied."""
    low = 1 if kind in ("transformer", "bert") else 0  # 0 is the pad id there
    T = L + 1 if fault == "too_long" else T
    ids = torch.randint(low, V, (B, T), generator=g)
    if kind == "bert" and T:
        ids[:, 0] = 2  # a [CLS]-like first token
    targets = torch.randint(0, V, (B, T), generator=g)
    targets[torch.rand(B, T, generator=g) < 0.5] = IGNORE
    if fault == "all_ignore":
        targets[:] = IGNORE
    bad_ids = {
        "ids_at_vocab": lambda x: x.index_fill(1, torch.tensor([T - 1]), V),
        "ids_negative": lambda x: x.index_fill(1, torch.tensor([0]), -1),
        "ids_float": lambda x: x.float(),
        "ids_bool": lambda x: x > 3,
        "ids_1d": lambda x: x.reshape(-1),
        "ids_list": lambda x: x.tolist(),
    }
    bad_targets = {
        "targets_at_vocab": lambda t: t.index_fill(1, torch.tensor([0]), V),
        "targets_float": lambda t: t.float(),
        "targets_shape": lambda t: t[:, :-1] if T > 1 else t[:, :0],
    }
    if fault in bad_ids:
        B_ids = ids
        ids = bad_ids[fault](ids)
    if fault in bad_targets:
        targets = bad_targets[fault](targets)
    kw = {}
    if kind == "transformer":
        src = torch.randint(1, V, (B, max(T, 1)), generator=g)
        if fault in bad_ids:
            src = bad_ids[fault](B_ids) if fault != "ids_at_vocab" else src
        tgt = ids if fault != "tgt_batch" else ids[:0] if B else ids.new_zeros(1, T)
        if fault == "ids_at_vocab":
            kw = dict(src=src, tgt_in=ids)
        else:
            kw = dict(src=src, tgt_in=tgt)
        kw["tgt_out"] = targets
        return kw
    kw = dict(ids=ids, targets=targets)
    if fault.startswith("mask"):
        kw["mask"] = {
            "mask_float": lambda: masks.causal_mask(T).float(),
            "mask_shape": lambda: masks.causal_mask(T + 1),
            "mask_list": lambda: masks.causal_mask(T).tolist(),
        }[fault]()
    if kind in ("txl", "xlnet"):
        mem = model(kind).new_memory(4)
        if fault == "memory_batch":
            mem.update([torch.zeros(B + 1, 3, 16)] * 2)
        elif B:
            mem.update([torch.zeros(B, 3, 16)] * 2)
        kw["memory"] = mem if fault != "memory_type" else [torch.zeros(B, 3, 16)]
    if kind == "xlnet":
        order = torch.randperm(T, generator=g)
        kw["order"] = {
            "order_short": lambda: order[:-1],
            "order_float": lambda: order.float(),
            "order_not_perm": lambda: order.clamp(max=max(T - 2, 0)) if T > 1 else
            order + 1,
        }.get(fault, lambda: order)()  # fmt: skip
        if fault == "query_mask_shape":
            M = 3 if B else 0
            del kw["order"]
            kw["content_mask"] = masks.full_mask(T, M + T)
            kw["query_mask"] = masks.full_mask(T + 1, M + T)
    if kind == "bert":
        seg = torch.zeros(B, T, dtype=torch.long)
        kw["segments"] = {
            "segments_float": lambda: seg.float(),
            "segments_range": lambda: seg + 5,
            "segments_shape": lambda: seg[:, :-1],
        }.get(fault, lambda: seg)()
    return kw


@budget(260)
@given(
    case=st.sampled_from(CASES),
    B=st.integers(0, 3),
    T=st.integers(1, L),
    seed=st.integers(0, 2**16),
)
def test_model_forwards_fail_clearly_or_return_finite_output(case, B, T, seed):
    kind, fault = case
    if fault == "segments_shape" and T == 1:
        fault = "segments_float"
    if B == 0 and fault in (
        "memory_batch",
        "ids_at_vocab",
        "ids_negative",
        "targets_at_vocab",
        "segments_range",
        "tgt_batch",
    ):
        B = 1  # a fault in an element needs an element
    g = torch.Generator().manual_seed(seed)
    kw = inputs(kind, fault, B, T, g)
    m = model(kind)
    with torch.no_grad():
        out = outcome(f"forward:{kind}", lambda: m(**kw), FAULTS[fault][1])
    if out is None:
        return
    if kind == "bert":  # the MLM logits of the selected positions only
        finite(out.logits)
    else:
        finite(out.logits, (B, T, V))
    finite(out.loss, ())
    if fault == "all_ignore" or B == 0:
        assert out.loss.item() == 0.0


def test_no_target_loss_is_zero_with_no_gradient():
    logits = torch.randn(2, 5, 7, requires_grad=True)
    loss = cross_entropy(logits, torch.full((2, 5), IGNORE))
    loss.backward()
    assert loss.item() == 0.0 and logits.grad is None


def test_generate_zero_new_tokens():
    gpt = model("gpt")
    x = torch.randint(0, V, (2, 3))
    assert torch.equal(gpt.generate(x, 0), x)
    tr = model("transformer")
    assert tr.generate(torch.randint(1, V, (2, 3)), 1, 2, max_new_tokens=0).shape == (
        2,
        0,
    )
    for bad in (True, -1, 1.5, L):
        with pytest.raises((ValueError, TypeError), match="max_new_tokens"):
            tr.generate(torch.randint(1, V, (2, 3)), 1, 2, max_new_tokens=bad)
        if bad is not L:
            with pytest.raises((ValueError, TypeError), match="max_new_tokens"):
                gpt.generate(x, bad)


# Masks ------------------------------------------------------------------------------

MASKS = {
    # name: (function, [(argument, smallest valid)], shape from the arguments)
    "causal_mask": (masks.causal_mask, [("T", 1), ("memory", 0)],
                    lambda a: (a[0], a[0] + a[1])),
    "full_mask": (masks.full_mask, [("Tq", 1), ("Tk", 1)], lambda a: tuple(a)),
    "prefix_mask": (masks.prefix_mask, [("T", 1), ("prefix", 0)], lambda a: (a[0],) * 2),
    "local_mask": (E.local_mask, [("T", 1), ("window", 1)], lambda a: (a[0],) * 2),
    "dilated_mask": (E.dilated_mask, [("T", 1), ("stride", 1)], lambda a: (a[0],) * 2),
    "strided_mask": (E.strided_mask, [("T", 1), ("stride", 1)], lambda a: (a[0],) * 2),
    "block_mask": (E.block_mask, [("T", 1), ("block", 1)], lambda a: (a[0],) * 2),
    "global_mask": (E.global_mask, [("T", 1), ("n_global", 0), ("window", 1)],
                    lambda a: (a[0],) * 2),
}  # fmt: skip
COUNT = st.one_of(st.integers(-2, 9), st.sampled_from(NOT_COUNTS))


@budget(200)
@given(
    name=st.sampled_from(sorted(MASKS)), args=st.lists(COUNT, min_size=3, max_size=3)
)
def test_masks_refuse_what_is_not_a_count(name, args):
    fn, spec, shape = MASKS[name]
    args = args[: len(spec)]
    bad = [n for (n, low), a in zip(spec, args)
           if type(a) is not int or a < low]  # fmt: skip
    if not bad and name == "prefix_mask" and args[1] > args[0]:
        bad = ["prefix"]
    if not bad and name == "global_mask" and args[1] > args[0]:
        bad = ["n_global"]  # more global tokens than tokens: impossible
    m = outcome("mask", lambda: fn(*args), tuple(bad) or None)
    if m is not None:
        assert m.dtype == torch.bool and tuple(m.shape) == shape(args)


@budget(60)
@given(
    T=st.integers(1, 8),
    fault=st.sampled_from(["none", "float", "3d", "list", "not_perm"]),
    memory=st.sampled_from([0, 2, True, -1]),
)
def test_permutation_masks(T, fault, memory):
    order = torch.randperm(T, generator=torch.Generator().manual_seed(T))
    arg = {
        "none": order, "float": order.float(), "3d": order[None, None],
        "list": order.tolist(),
        "not_perm": order + 1,
    }[fault]  # fmt: skip
    bad = None if fault in ("none", "list") else "order"
    if bad is None and (type(memory) is not int or memory < 0):
        bad = "memory"
    out = outcome(
        "permutation_masks", lambda: masks.permutation_masks(arg, memory), bad
    )
    if out is not None:
        for m in out:
            assert m.dtype == torch.bool and m.shape == (T, memory + T)


# Attention: the fused and the written-out path agree, NaN included ------------------


@budget(100)
@given(
    B=st.integers(1, 2),
    Tq=st.integers(1, 6),
    Tk=st.integers(1, 6),
    mask=st.sampled_from(["none", "causal", "random", "empty_row"]),
    bias=st.booleans(),
    poison=st.sampled_from([None, "q", "k", "v", "bias"]),
    value=st.sampled_from([float("nan"), float("inf"), float("-inf")]),
    seed=st.integers(0, 2**16),
)
def test_fused_and_written_out_attention_agree(
    B, Tq, Tk, mask, bias, poison, value, seed
):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(B, 2, Tq, 4, generator=g)
    k, v = (torch.randn(B, 2, Tk, 4, generator=g) for _ in range(2))
    m = None
    if mask == "causal" and Tq == Tk:
        m = masks.causal_mask(Tq)
    elif mask in ("random", "empty_row"):
        m = torch.rand(B, Tq, Tk, generator=g) < 0.6
        if mask == "empty_row":
            m[:, 0] = False
    b = torch.randn(1, 2, Tq, Tk, generator=g) if bias or poison == "bias" else None
    t = {"q": q, "k": k, "v": v, "bias": b}.get(poison)
    if t is not None:
        idx = tuple(int(torch.randint(n, (1,), generator=g)) for n in t.shape)
        t[idx] = value
    EXAMPLES["attention"] += 1
    fused = attention(q, k, v, mask=m, bias=b)[0]
    written = attention(q, k, v, mask=m, bias=b, return_weights=True)[0]
    torch.testing.assert_close(fused, written, equal_nan=True, atol=1e-5, rtol=1e-4)
    if poison is None:
        finite(fused, (B, 2, Tq, 4))
    elif poison != "bias" or value != float("-inf"):  # never hidden (-inf: a mask)
        assert bool(fused.isnan().any())


@budget(60)
@given(
    kind=st.sampled_from(["bias_bool", "bias_shape", "bias_list", "mask_shape",
                          "mask_int"]),
    T=st.integers(1, 5),
)  # fmt: skip
def test_attention_names_bad_masks_and_biases(kind, T):
    q = torch.randn(1, 2, T, 4)
    arg = {
        "bias_bool": dict(bias=torch.ones(T, T, dtype=torch.bool)),
        "bias_shape": dict(bias=torch.zeros(3, T + 1, T)),
        "bias_list": dict(bias=[[0.0] * T] * T),
        "mask_shape": dict(mask=torch.ones(T + 1, T + 2, dtype=torch.bool)),
        "mask_int": dict(mask=torch.ones(T, T, dtype=torch.long)),
    }[kind]
    outcome("attention-args", lambda: attention(q, q, q, **arg), kind.split("_")[0])


# Corruptions ------------------------------------------------------------------------


@budget(120)
@given(
    B=st.integers(1, 3),
    T=st.integers(2, 8),
    fault=st.sampled_from(["none", "mask_id_at_vocab", "mask_id_negative",
                           "mask_id_bool", "mask_id_float", "random_at_vocab",
                           "random_negative", "ids_at_vocab", "ids_float", "p_bool",
                           "p_nan", "p_big", "vocab_bool", "vocab_zero"]),
    seed=st.integers(0, 2**16),
)  # fmt: skip
def test_corruptions_produce_only_ids_of_the_vocabulary(B, T, fault, seed):
    g = torch.Generator().manual_seed(seed)
    Vc = 20
    ids = torch.randint(5, Vc, (B, T), generator=g)
    ids[:, 0] = 1  # a special token
    kw = dict(special_ids=[0, 1, 2], mask_id=3, vocab_size=Vc, p=0.5, generator=g)
    bad = {
        "mask_id_at_vocab": ("mask_id", Vc), "mask_id_negative": ("mask_id", -1),
        "mask_id_bool": ("mask_id", True), "mask_id_float": ("mask_id", 3.0),
        "p_bool": ("p", True), "p_nan": ("p", float("nan")), "p_big": ("p", 1.5),
        "vocab_bool": ("vocab_size", True), "vocab_zero": ("vocab_size", 0),
    }.get(fault)  # fmt: skip
    if bad:
        kw[bad[0]] = bad[1]
    if fault == "ids_at_vocab":
        ids[:, -1] = Vc
    if fault == "ids_float":
        ids = ids.float()
    name = bad[0] if bad else "ids" if fault.startswith("ids") else None
    if fault.startswith("random"):  # replace_selected with its own pool of tokens
        pool = [5, 6, Vc] if fault == "random_at_vocab" else [-1, 5]
        sel = torch.ones(B, T, dtype=torch.bool)
        call = lambda: replace_selected(  # noqa: E731
            ids, sel, mask_id=3, vocab_size=Vc, proportions=(0, 1, 0),
            generator=g, random_ids=pool,
        )  # fmt: skip
        name = "random_ids"
    else:
        call = lambda: mlm_mask(ids, **kw)  # noqa: E731
    out = outcome("corruption", call, name)
    if out is not None:
        assert out.inputs.shape == ids.shape and out.inputs.dtype == ids.dtype
        assert int(out.inputs.min()) >= 0 and int(out.inputs.max()) < Vc
        real = out.targets[out.targets != IGNORE]
        assert torch.equal(real, ids[out.selected])
        assert not bool(out.selected[:, 0].any())  # specials never chosen


@budget(40)
@given(p=NUMBERS, shape=st.sampled_from([(2, 5), (0, 3), (5,), (2, 0)]))
def test_select_tokens(p, shape):
    maskable = torch.ones(shape, dtype=torch.bool)
    g = torch.Generator().manual_seed(0)
    bad = None
    if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0 <= p <= 1:
        bad = "p"
    elif len(shape) != 2:
        bad = "maskable"
    out = outcome("select_tokens", lambda: select_tokens(maskable, p, generator=g), bad)
    if out is not None:
        assert out.shape == shape and not bool((out & ~maskable).any())


# Tokenizers -------------------------------------------------------------------------

_TOK: dict = {}


def tokenizer(kind):
    if kind not in _TOK:
        from ptlm_lite.data.tokenizer import train_tokenizer

        text = ["to be or not to be, that is the question", "whether 'tis nobler"] * 5
        _TOK[kind] = train_tokenizer(kind, text, vocab_size=300, n_sentinels=2)
    return _TOK[kind]


TEXT = st.text(
    alphabet=st.one_of(
        st.characters(max_codepoint=0x2FFF),
        st.sampled_from(["\ud800", "\udfff", "\x00", "\n", " "]),
    ),
    max_size=20,
)


@budget(90)
@given(kind=st.sampled_from(["char", "bpe", "wordpiece"]), text=TEXT)
def test_tokenizers_encode_or_name_the_text(kind, text):
    tok = tokenizer(kind)
    lone = any(0xD800 <= ord(c) <= 0xDFFF for c in text)
    ids = outcome("tokenizer", lambda: tok.encode(text), "text" if lone else None)
    if ids is not None:
        assert all(type(i) is int and 0 <= i < tok.vocab_size for i in ids)
        assert isinstance(tok.decode(ids), str)


@budget(60)
@given(
    kind=st.sampled_from(["char", "bpe"]),
    ids=st.lists(st.one_of(st.integers(-2, 70), st.sampled_from([1.0, True, "3"])),
                 max_size=6),
)  # fmt: skip
def test_tokenizers_decode_or_name_the_ids(kind, ids):
    tok = tokenizer(kind)
    bad = any(type(i) is not int or not 0 <= i < tok.vocab_size for i in ids)
    # bool is an int subclass; True is token 1 for operator.index: not refused
    bad = any(
        isinstance(i, (float, str)) or (type(i) is int and not 0 <= i < tok.vocab_size)
        for i in ids
    )
    out = outcome("tokenizer", lambda: tok.decode(ids), "ids" if bad else None)
    assert out is None or isinstance(out, str)


# The trainer ------------------------------------------------------------------------

LR = [1e-3, 3e-3, 0.0, -1e-3, float("inf"), float("nan"), True, "1e-3", None]
CLIP = [1.0, 0.0, None, 0.5, -1.0, float("inf"), float("nan"), True]
DECAY = [0.0, 0.01, -0.01, float("inf"), float("nan"), True]


@budget(30)
@given(
    lr=st.sampled_from(LR),
    clip=st.sampled_from(CLIP),
    weight_decay=st.sampled_from(DECAY),
    steps=st.sampled_from([1, 2, 0, True, 2.0]),
    warmup=st.sampled_from([0, 1, -1, True]),
    all_ignore=st.booleans(),
)
def test_train_refuses_bad_settings(lr, clip, weight_decay, steps, warmup, all_ignore):
    m = GPT(preset("gpt2-tiny", **SMALL), seed=0)
    before = [p.detach().clone() for p in m.parameters()]
    ids = torch.randint(0, V, (2, 6), generator=torch.Generator().manual_seed(0))
    targets = torch.full_like(ids, IGNORE) if all_ignore else ids.roll(-1, 1)

    def num(x, low, strict=False):
        ok = not isinstance(x, bool) and isinstance(x, (int, float))
        return ok and math.isfinite(x) and (x > low if strict else x >= low)

    bad = None
    if type(steps) is not int or steps < 1:
        bad = "steps"
    elif not num(lr, 0, strict=True):
        bad = "lr"
    elif not (clip is None or num(clip, 0)):
        bad = "clip"
    elif not num(weight_decay, 0):
        bad = "weight_decay"
    elif type(warmup) is not int or warmup < 0:
        bad = "warmup"
    hist = outcome(
        "train",
        lambda: train(m, [{"ids": ids, "targets": targets}], steps=steps, lr=lr,
                      clip=clip, weight_decay=weight_decay, warmup=warmup,
                      progress=False, device="cpu"),
        bad,
    )  # fmt: skip
    if hist is None:
        return
    assert len(hist.losses) == steps and all(math.isfinite(x) for x in hist.losses)
    assert all(bool(p.isfinite().all()) for p in m.parameters())
    if all_ignore:  # no target counts: loss 0, no gradient, weights untouched
        assert hist.losses == [0.0] * steps
        assert all(torch.equal(a, b) for a, b in zip(before, m.parameters()))


def test_train_checks_the_weights_after_the_last_step():
    """A finite loss followed by an update to inf weights is an error, not a model
    handed back with NaN in it (lr huge: the first step's update overflows)."""
    m = GPT(preset("gpt2-tiny", **SMALL), seed=0)
    ids = torch.randint(0, V, (2, 6), generator=torch.Generator().manual_seed(0))
    with pytest.raises(FloatingPointError, match="weights"):
        train(m, [{"ids": ids, "targets": ids}], steps=1, lr=1e38, clip=None,
              progress=False, device="cpu")  # fmt: skip
