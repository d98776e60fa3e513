"""The ceiling of "fraction of the fp32 matmul throughput": a training step's own matrix
multiplies, timed alone.

    python benchmarks/matmul_ceiling.py          # GPT-2 and BERT-MLM at tiny and small
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

On a GPU, ``--device cuda --dtype bf16`` (or ``fp32``, TF32 off) times the same
products in that dtype with CUDA events (each shape: the best of 3 means of 10
back-to-back products, after warm-up) against ``bench_train.py``'s GPU reference (the
mean of 20 n×n products, n = 8192), and ``--presets 124m`` adds GPT-2 124M's shape at
16 × 512 tokens with the real vocabularies, as in ``bench_train.py``.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_train import (  # the same sizes and FLOP convention
    BATCH_SHAPE,
    DTYPES,
    MLM_P,
    SHAPES,
    cuda_matmul_flops,
    flops_per_token,
    matmul_flops,
    sizes,
    vocab,
)

# where and in which dtype the products run (set by main)
ON = {"device": "cpu", "dtype": torch.float32}


def best_time(a_shape, b_shape, batch: int = 0, seconds: float = 0.3) -> float:
    """Best wall time of (batch ×) (M×K)·(K×N), in seconds (on a GPU: the best of 3
    means of 10 products, timed with CUDA events)."""
    lead = (batch,) if batch else ()
    dev, dtype = ON["device"], ON["dtype"]
    a = torch.randn(*lead, *a_shape, device=dev, dtype=dtype)
    b = torch.randn(*lead, *b_shape, device=dev, dtype=dtype)
    f = torch.bmm if batch else torch.mm
    for _ in range(2 if dev == "cpu" else 5):
        f(a, b)
    if dev == "cuda":
        best = float("inf")
        for _ in range(3):
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(10):
                f(a, b)
            end.record()
            torch.cuda.synchronize()
            best = min(best, start.elapsed_time(end) / 1e3 / 10)
        return best
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


def step_time(kind: str, s: dict, B: int, T: int, head_rows: float, V: int) -> float:
    d, L, f, H = s["d_model"], s["n_layer"], s["d_ff"], s["n_head"]
    M = B * T
    layer = (
        linear(M, d, 3 * d) + linear(M, d, d) + linear(M, d, f) + linear(M, f, d)
    ) + attention(B, H, T, d // H)
    rows = round(head_rows * M)
    if kind == "bert":
        head = linear(rows, d, d) + linear(rows, d, V)
    else:
        head = linear(rows, d, V)
    return L * layer + head


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="a toy size, seconds")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument(
        "--presets", nargs="+", default=["tiny", "small"],
        choices=["tiny", "small", *SHAPES],
    )  # fmt: skip
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    ap.add_argument("--dtype", choices=sorted(DTYPES), default="fp32")
    args = ap.parse_args(argv)
    if args.device == "cuda" and not torch.cuda.is_available():
        ap.error(
            f"--device cuda: no CUDA device is available (torch.cuda.is_available() "
            f"is False; torch {torch.__version__}); use --device cpu"
        )
    torch.set_num_threads(args.threads)
    ON["device"], ON["dtype"] = args.device, DTYPES[args.dtype]
    B, T = (4, 16) if args.quick else (32, 128)
    small = sizes("small", args.quick)
    if args.device == "cuda":
        # fp32 means fp32 (PyTorch's default, said explicitly)
        with contextlib.suppress(AttributeError, RuntimeError):
            torch.backends.cuda.matmul.allow_tf32 = False
        peak = cuda_matmul_flops(8192, ON["dtype"])
        where = f"{torch.cuda.get_device_name()}, mean of 20 8192^3 products"
    else:
        peak = matmul_flops(
            B * T, small["d_model"], small["d_ff"], 0.5 if args.quick else 2,
            ON["dtype"],
        )  # fmt: skip
        where = f"{args.threads} threads"
    presets = ["quick"] if args.quick else args.presets
    other = ", ".join(
        f"{BATCH_SHAPE[p][0]} x {BATCH_SHAPE[p][1]} at {p}"
        for p in presets if p in BATCH_SHAPE
    )  # fmt: skip
    rate = f"{peak / 1e12:.0f} TFLOP/s" if args.device == "cuda" else (
        f"{peak / 1e9:.0f} GFLOP/s")  # fmt: skip
    print(f"{args.dtype} matmul {rate} ({where}); "
          f"batch {B} x {T} tokens{f' ({other})' if other else ''}; "
          f"FLOPs per token 6*N + 12*L*T*d")  # fmt: skip
    print(f"{'model':<9} {'preset':<6} {'head':<7} {'matmuls alone (ms/step)':>24} "
          f"{f'ceiling, of {args.dtype} mm':>20}")  # fmt: skip
    for preset in presets:
        s = sizes(preset if not args.quick else "small", args.quick)
        Bp, Tp = (B, T) if args.quick else BATCH_SHAPE.get(preset, (B, T))
        for kind, model in (("gpt", "GPT-2"), ("bert", "BERT-MLM")):
            V = vocab(kind, preset, args.quick)
            heads = {"all": 1.0} if kind == "gpt" else {"all": 1.0, "useful": MLM_P}
            for name, frac in heads.items():
                t = step_time(kind, s, Bp, Tp, frac, V)
                flops = flops_per_token(kind, s, Tp, V, frac) * Bp * Tp
                print(f"{model:<9} {preset:<6} {name:<7} {t * 1e3:>24.1f} "
                      f"{flops / t / peak:>19.0%}")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
