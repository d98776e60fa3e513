"""The one FLOPs counter (ptlm_lite/flops.py): values by hand, the benchmarks use it,
bad input named."""

import pytest

from ptlm_lite import flops
from ptlm_lite.config import preset


def test_training_costs_six_n_plus_twelve_ltd():
    c = preset("tiny", vocab_size=100)
    d, L, f, V, T = c.d_model, c.n_layer, c.d_ff, 100, 32
    n = L * (4 * d * d + 2 * d * f) + d * V
    assert flops.per_token(c, T) == 6 * n + 12 * L * T * d
    assert flops.per_token(c, T, train=False) == 2 * n + 4 * L * T * d
    assert flops.total(c, T, 10) == 10 * flops.per_token(c, T)


def test_an_encoder_decoder_token_goes_through_one_stack():
    c = preset("tiny", vocab_size=100)
    d, L, f, V, S, T = c.d_model, c.n_layer, c.d_ff, 100, 32, 8
    blocks = L * (4 * d * d + 2 * d * f)
    src, tgt = flops.seq2seq_per_token(c, S, T, train=False)
    assert src == 2 * blocks + 4 * L * S * d  # the encoder, no head
    # the decoder: its blocks, the head, the cross-attention's 4 d x d a layer and its
    # products over the S source positions
    assert tgt == 2 * (blocks + d * V + L * 4 * d * d) + 4 * L * T * d + 4 * L * S * d
    assert flops.seq2seq_per_token(c, S, T) == (3 * src, 3 * tgt)


def test_fewer_layers_and_a_small_head_cost_less():
    c = preset("tiny", vocab_size=100)
    d = c.d_model
    one = flops.per_token(c, 8, layers=1, head=2 * d, train=False)
    assert one == 2 * (4 * d * d + 2 * d * c.d_ff + 2 * d) + 4 * 8 * d
    assert flops.per_token(c, 8, layers=0, head=False) == 0
    assert one < flops.per_token(c, 8, head=2 * d, train=False)


def test_a_factorised_embedding_counts_its_projections():
    c = preset("tiny", vocab_size=100, d_embed=16)
    d = c.d_model
    plain = preset("tiny", vocab_size=100)
    assert flops.head_weights(c) == d * 16 + 16 * 100
    diff = flops.per_token(c, 8, train=False) - flops.per_token(plain, 8, train=False)
    assert diff == 2 * (d * 16 + 16 * 100 - d * 100) + 2 * 16 * d


def test_the_benchmarks_count_with_the_package():
    import importlib.util
    import sys
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_train.py"
    sys.path.insert(0, str(path.parent))
    spec = importlib.util.spec_from_file_location("bench_train_for_flops", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    s = {"d_model": 64, "n_layer": 2, "d_ff": 256}
    n = 2 * (4 * 64 * 64 + 2 * 64 * 256)
    assert bench.flops_per_token("gpt", s, 32, 100) == 6 * (n + 6400) + 12 * 2 * 32 * 64
    bert = bench.flops_per_token("bert", s, 32, 100, head_fraction=0.15)
    assert bert == pytest.approx(6 * (n + 0.15 * (6400 + 64 * 64)) + 12 * 2 * 32 * 64)


@pytest.mark.parametrize(
    "kw, name",
    [
        ({"seq_len": 0}, "seq_len"),
        ({"seq_len": 4.5}, "seq_len"),
        ({"seq_len": 8, "layers": 3}, "layers"),
        ({"seq_len": 8, "layers": -1}, "layers"),
        ({"seq_len": 8, "head": "big"}, "head"),
        ({"seq_len": 8, "head": -1}, "head"),
    ],
)
def test_bad_input_names_the_argument(kw, name):
    with pytest.raises(ValueError, match=name):
        flops.per_token(preset("tiny", vocab_size=100), **kw)
