"""The ceiling of "fraction of the fp32 matmul throughput": a training step's own matrix
multiplies, timed alone.

    python benchmarks/matmul_ceiling.py            # GPT-2 and BERT-MLM at tiny and small
    python benchmarks/matmul_ceiling.py --quick    # a toy size (the smoke test)

``bench_train.py`` reports how much of the machine's fp32 matmul throughput a training
step reaches: FLOPs per token (``6·N + 12·L·T·d``) times tokens per second, divided by
the throughput of one large ``torch.mm`` at the ``small`` shape. No implementation can
beat the time that its matrix multiplies take on their own. This script lists every
matrix multiply of one training step at the benchmark's sizes (batch 32 × 128 tokens):
for each linear layer the forward product and the two of the backward pass (input
gradient, weight gradient), and for attention the batched products QKᵀ and AV with
their four backward products, and the vocabulary head (for BERT on every position,
"all", and on the masked 15%, "useful", as in ``bench_train.py``). Each shape is timed
on its own, best of repeated runs (warm caches, nothing else in between), and the
times are added: an optimistic time for the step if everything else (softmax, GELU,
layer norms, dropout, the optimizer) cost nothing. Its FLOP rate divided by the same
peak is the highest fraction any eager implementation built from these products can
report.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_train import (  # noqa: E402  (the same sizes and FLOP convention)
    BERT_VOCAB,
    GPT_VOCAB,
    MLM_P,
    flops_per_token,
    matmul_flops,
    sizes,
)


def best_time(a_shape, b_shape, batch: int = 0, seconds: float = 0.3) -> float:
    """Best wall time of (batch ×) (M×K)·(K×N), in seconds."""
    lead = (batch,) if batch else ()
    a, b = torch.randn(*lead, *a_shape), torch.randn(*lead, *b_shape)
    f = torch.bmm if batch else torch.mm
    for _ in range(2):
        f(a, b)
    best, end = float("inf"), time.perf_counter() + seconds
    while time.perf_counter() < end:
        t = time.perf_counter()
        f(a, b)
        best = min(best, time.perf_counter() - t)
    return best


def linear(M: int, K: int, N: int) -> float:
    """Forward (M×K)(K×N), input gradient (M×N)(N×K), weight gradient (N×M)(M×K)."""
    if M == 0:
        return 0.0
    return (
        best_time((M, K), (K, N))
        + best_time((M, N), (N, K))
        + best_time((N, M), (M, K))
    )


def attention(B: int, H: int, T: int, dh: int) -> float:
    """QKᵀ and AV forward; dP = dO·Vᵀ, dV = Pᵀ·dO, dQ = dS·K, dK = dSᵀ·Q backward."""
    n = B * H
    qk = best_time((T, dh), (dh, T), n)  # QKᵀ, and dO·Vᵀ has the same shape
    tt = best_time((T, T), (T, dh), n)  # AV, and the three others
    return 2 * qk + 4 * tt


def step_time(kind: str, s: dict, B: int, T: int, head_rows: float) -> float:
    d, L, f, H = s["d_model"], s["n_layer"], s["d_ff"], s["n_head"]
    M = B * T
    layer = (
        linear(M, d, 3 * d) + linear(M, d, d) + linear(M, d, f) + linear(M, f, d)
    ) + attention(B, H, T, d // H)
    rows = round(head_rows * M)
    if kind == "bert":
        head = linear(rows, d, d) + linear(rows, d, BERT_VOCAB)
    else:
        head = linear(rows, d, GPT_VOCAB)
    return L * layer + head


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="a toy size, seconds")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--presets", nargs="+", default=["tiny", "small"])
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    B, T = (4, 16) if args.quick else (32, 128)
    small = sizes("small", args.quick)
    peak = matmul_flops(
        B * T, small["d_model"], small["d_ff"], 0.5 if args.quick else 2
    )
    print(f"fp32 matmul {peak / 1e9:.0f} GFLOP/s ({args.threads} threads); "
          f"batch {B} x {T} tokens; FLOPs per token 6*N + 12*L*T*d")  # fmt: skip
    print(f"{'model':<9} {'preset':<6} {'head':<7} {'matmuls alone (ms/step)':>24} "
          f"{'ceiling, of fp32 mm':>20}")  # fmt: skip
    for preset in ["quick"] if args.quick else args.presets:
        s = sizes(preset if not args.quick else "small", args.quick)
        for kind, model, V in (("gpt", "GPT-2", GPT_VOCAB), ("bert", "BERT-MLM", BERT_VOCAB)):  # fmt: skip
            heads = {"all": 1.0} if kind == "gpt" else {"all": 1.0, "useful": MLM_P}
            for name, frac in heads.items():
                t = step_time(kind, s, B, T, frac)
                flops = flops_per_token(kind, s, T, V, frac) * B * T
                print(f"{model:<9} {preset:<6} {name:<7} {t * 1e3:>24.1f} "
                      f"{flops / t / peak:>19.0%}")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
