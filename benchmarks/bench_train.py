"""Training throughput: ptlm_lite's GPT-2 and BERT-MLM against Hugging Face
transformers.

    python benchmarks/bench_train.py          # presets tiny and small, 32 x 128 tokens
    python benchmarks/bench_train.py --quick  # a toy size, seconds (the smoke test)

For each preset, both implementations are built from the same sizes with the same random
weights (Hugging Face's model is built first, randomly initialised, nothing downloaded;
ptlm_lite's copy is made with the converters in ``ptlm_lite/hf``), then trained on the
same batches: forward, backward, ``optimizer.zero_grad``, AdamW step. After a warm-up,
rounds alternate A B A B ... so that a change in the machine's load hits both alike;
each round times ``--steps`` steps and gives one tokens-per-second figure. The table
shows the median over rounds and the range.

FLOPs per trained token (PaLM's convention, Chowdhery et al. 2022, appendix B):

    6 * N  +  12 * L * T * d

where N counts the weights of every matrix multiply a token goes through, *including the
vocabulary head* (d * V; embedding lookups are free), L is the number of layers, T the
sequence length and d the model width (12·L·T·d is QKᵀ and AV, forward and backward; the
causal half that a left-to-right model could skip is *not* subtracted). For BERT-MLM the
vocabulary head (dense d×d and decoder d×V) matters for 15% of the tokens only; the
table gives the fraction of the machine's fp32 matmul throughput both ways: "all" counts
the head at every position (what Hugging Face computes), "useful" counts it at the
masked positions only (what the loss reads).

The machine's fp32 matmul throughput is measured in the same run: ``torch.mm`` of
(B·T × d) by (d × d_ff) at the ``small`` preset's shapes, with the same thread count.

On a GPU (``--device cuda``; the default stays ``cpu``):

    python benchmarks/bench_train.py --device cuda --dtype bf16 --presets 124m small

``--dtype bf16`` runs forward and loss of both implementations under
``torch.autocast(device, torch.bfloat16)`` (weights, gradients and AdamW state stay
fp32); ``fp32`` leaves TF32 off (``torch.backends.cuda.matmul.allow_tf32 = False``,
PyTorch's default, recorded in the JSON). The preset ``124m`` is GPT-2 124M's shape
(d 768, 12 layers, 12 heads, d_ff 3072) with the real vocabularies (50,257 for GPT-2,
30,522 for BERT) at batch 16 × 512 tokens; ``tiny`` and ``small`` keep the book's
1,024-token vocabularies at 32 × 128 (``--batch`` / ``--seq-len`` override both). On a
GPU the reference throughput is the mean of ``--peak-reps`` products
(``--peak-size``³, default 8192³) in the run's dtype after warm-up, timed with CUDA
events; the clock is read only at round boundaries, after ``torch.cuda.synchronize()``
(nothing in the timed loop waits for the GPU).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import platform
import statistics
import sys
import time
import traceback
from types import SimpleNamespace

import torch

from ptlm_lite import flops
from ptlm_lite.bert import BERT_FIELDS, BertForPreTraining
from ptlm_lite.config import PRESETS, Config
from ptlm_lite.corrupt import mlm_mask
from ptlm_lite.hf.bert import convert_state_dict
from ptlm_lite.hf.gpt import from_hf as gpt_from_hf
from ptlm_lite.recipes.bert import VOCAB as PRETRAIN_VOCAB

# the GPT chapters' byte-level BPE (ptlm_lite.recipes.gpt.tokenizer)
GPT_VOCAB = 1024
BERT_VOCAB = PRETRAIN_VOCAB  # the BERT chapter's WordPiece
MLM_P = 0.15  # BERT's masking rate


# GPT-2 124M's shape (Radford et al. 2019; BERT-base's too), for a GPU: the real
# vocabularies and batch 16 x 512 tokens unless --batch / --seq-len say otherwise.
SHAPES = {"124m": {"d_model": 768, "n_layer": 12, "n_head": 12, "d_ff": 3072}}
VOCABS = {"124m": {"gpt": 50257, "bert": 30522}}
BATCH_SHAPE = {"124m": (16, 512)}  # (B, T); the book's presets: (32, 128)


def sizes(name: str, quick: bool) -> dict:
    if quick:
        return {"d_model": 32, "n_layer": 1, "n_head": 2, "d_ff": 64}
    if name in SHAPES:
        return dict(SHAPES[name])
    return {k: PRESETS[name][k] for k in ("d_model", "n_layer", "n_head", "d_ff")}


def vocab(kind: str, name: str, quick: bool = False) -> int:
    """The vocabulary of ``kind`` ("gpt" or "bert") at a preset: the book's
    tokenizers except at ``124m``."""
    if not quick and name in VOCABS:
        return VOCABS[name][kind]
    return GPT_VOCAB if kind == "gpt" else BERT_VOCAB


def batch_shape(name: str, args) -> tuple[int, int]:
    """(B, T) for a preset: ``--batch`` / ``--seq-len`` if given, else the preset's."""
    B, T = BATCH_SHAPE.get(name, (32, 128))
    return (args.batch or B, args.seq_len or T)


# ----------------------------------------------------------------------------------
# The four models: (Hugging Face, ptlm_lite) pairs holding the same weights.


def gpt_pair(s: dict, T: int, dropout: float, V: int = GPT_VOCAB):
    import transformers

    hf = transformers.GPT2LMHeadModel(
        transformers.GPT2Config(
            vocab_size=V,
            n_positions=T,
            n_embd=s["d_model"],
            n_layer=s["n_layer"],
            n_head=s["n_head"],
            n_inner=s["d_ff"],
            activation_function="gelu_new",
            resid_pdrop=dropout,
            embd_pdrop=dropout,
            attn_pdrop=dropout,
            bos_token_id=0,
            eos_token_id=0,
            attn_implementation="sdpa",
        )
    )
    ours = gpt_from_hf(hf)  # GPT-2 (pre-LN), same weights
    return hf, ours


def bert_pair(s: dict, T: int, dropout: float, V: int = BERT_VOCAB):
    import transformers

    cfg = transformers.BertConfig(
        vocab_size=V,
        hidden_size=s["d_model"],
        num_hidden_layers=s["n_layer"],
        num_attention_heads=s["n_head"],
        intermediate_size=s["d_ff"],
        max_position_embeddings=T,
        hidden_act="gelu",
        layer_norm_eps=1e-12,
        hidden_dropout_prob=dropout,
        attention_probs_dropout_prob=dropout,
        attn_implementation="sdpa",
    )
    hf = transformers.BertForMaskedLM(cfg)
    ours = BertForPreTraining(
        Config(
            **{
                **BERT_FIELDS,
                "vocab_size": V,
                "max_len": T,
                "dropout": dropout,
                **s,
            }
        )
    )
    # BertForMaskedLM has no pooler and no NSP head: those keep their own init (unused
    # by MLM).
    missing, unexpected = ours.load_state_dict(
        convert_state_dict(hf.state_dict()), strict=False
    )
    assert not unexpected and set(missing) <= {
        "bert.pooler.weight",
        "bert.pooler.bias",
        "nsp.weight",
        "nsp.bias",
        "mlm.decoder.weight",
    }, (missing, unexpected)
    return hf, ours


# The same batches for both implementations (GPT: ids and next tokens; BERT: corrupted
# ids and the original ids at the masked positions, -100 elsewhere). Drawn on the CPU
# with a CPU generator (the same numbers on every device), moved to the device once.


def gpt_batch(B, T, g, V: int = GPT_VOCAB):
    ids = torch.randint(0, V, (B, T + 1), generator=g)
    return ids[:, :-1].contiguous(), ids[:, 1:].contiguous()


def bert_batch(B, T, g, V: int = BERT_VOCAB):
    # 0-4: [PAD] [UNK] [CLS] [SEP] [MASK]
    ids = torch.randint(5, V, (B, T), generator=g)
    ids[:, 0], ids[:, -1] = 2, 3
    m = mlm_mask(
        ids,
        special_ids=[0, 1, 2, 3, 4],
        mask_id=4,
        vocab_size=V,
        p=MLM_P,
        generator=g,
    )
    return m.inputs, m.targets


def losses(kind: str, batch):
    """``{implementation: model -> loss}`` on one batch: the same loss for both."""
    ids, targets = batch
    if kind == "gpt":
        return {
            "ptlm_lite": lambda m: m(ids, targets).loss,
            "transformers": lambda m: _hf_gpt_loss(m, ids, targets),
        }
    valid = torch.ones_like(ids, dtype=torch.bool)
    return {
        "ptlm_lite": lambda m: m(ids, valid=valid, targets=targets).loss,
        "transformers": lambda m: (
            m(input_ids=ids, attention_mask=valid.long(), labels=targets).loss
        ),
    }


def _hf_gpt_loss(model, ids, targets):
    # The same loss as ptlm_lite's: cross-entropy of logits (B, T, V) against the next
    # tokens.
    logits = model(input_ids=ids).logits
    return torch.nn.functional.cross_entropy(logits.flatten(0, 1), targets.flatten())


# ----------------------------------------------------------------------------------


def matmul_flops(
    M: int, K: int, N: int, seconds: float = 2.0, dtype: torch.dtype = torch.float32
) -> float:
    """Achieved FLOP/s of ``torch.mm`` (M×K)·(K×N) on the CPU, in ``dtype`` (fp32 by
    default): best of repeated timings."""
    a, b = torch.randn(M, K, dtype=dtype), torch.randn(K, N, dtype=dtype)
    out = torch.empty(M, N, dtype=dtype)
    for _ in range(3):
        torch.mm(a, b, out=out)
    best, end = float("inf"), time.perf_counter() + seconds
    while time.perf_counter() < end:
        t = time.perf_counter()
        torch.mm(a, b, out=out)
        best = min(best, time.perf_counter() - t)
    return 2 * M * K * N / best


def cuda_matmul_flops(
    n: int = 8192,
    dtype: torch.dtype = torch.float32,
    reps: int = 20,
    warmup_s: float = 0.5,
) -> float:
    """Achieved FLOP/s of ``torch.mm`` (n×n)·(n×n) in ``dtype`` on the current CUDA
    device: the mean of ``reps`` back-to-back products, timed with CUDA events, after
    ``warmup_s`` seconds of the same product (at least 3; clocks up, cuBLAS chosen).
    """
    a = torch.randn(n, n, device="cuda", dtype=dtype)
    b = torch.randn(n, n, device="cuda", dtype=dtype)
    out = torch.empty(n, n, device="cuda", dtype=dtype)
    t, done = time.perf_counter(), 0
    while done < 3 or time.perf_counter() - t < warmup_s:
        for _ in range(3):
            torch.mm(a, b, out=out)
        torch.cuda.synchronize()
        done += 3
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(reps):
        torch.mm(a, b, out=out)
    end.record()
    torch.cuda.synchronize()
    seconds = start.elapsed_time(end) / 1e3 / reps  # elapsed_time is in ms
    del a, b, out
    torch.cuda.empty_cache()
    return 2 * n**3 / seconds


DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}


def sync(device: str) -> None:
    """Wait for the device's queued work (CUDA launches are asynchronous)."""
    if device == "cuda":
        torch.cuda.synchronize()


def flops_per_token(
    kind: str, s: dict, T: int, V: int, head_fraction: float = 1.0
) -> float:
    """6·N + 12·L·T·d, N = matmul weights incl. the vocabulary head (scaled by
    head_fraction): the package's counter, ``ptlm_lite.flops.per_token``.
    """
    d = s["d_model"]
    c = SimpleNamespace(
        d_model=d, n_layer=s["n_layer"], d_ff=s["d_ff"], vocab_size=V, d_embed=0
    )
    # BERT's head has a dense d×d before the decoder
    head = d * V + (d * d if kind == "bert" else 0)
    return flops.per_token(c, T, head=head_fraction * head)


def run(kind: str, preset: str, args, peak: float) -> dict:
    s = sizes(preset, args.quick)
    B, T = batch_shape(preset, args)
    V = vocab(kind, preset, args.quick)
    dev = args.device
    if dev == "cuda":
        torch.cuda.reset_peak_memory_stats()
    torch.manual_seed(0)
    # built on the CPU (the same random weights on every device), then moved
    hf, ours = (gpt_pair if kind == "gpt" else bert_pair)(s, T, args.dropout, V)
    models = {"ptlm_lite": ours.train().to(dev), "transformers": hf.train().to(dev)}
    params = {
        name: sum(p.numel() for p in m.parameters()) for name, m in models.items()
    }
    # optimizers after the move: fused AdamW runs on the parameters' device
    opts = {
        name: torch.optim.AdamW(m.parameters(), lr=1e-4, fused=args.fused or None)
        for name, m in models.items()
    }
    compile_s = {}
    if args.compile:
        models = {name: torch.compile(m) for name, m in models.items()}
    g = torch.Generator().manual_seed(0)  # a CPU generator: batches made once, moved
    batches = [
        tuple(
            x.to(dev) for x in (gpt_batch if kind == "gpt" else bert_batch)(B, T, g, V)
        )
        for _ in range(4)
    ]
    steps = [losses(kind, b) for b in batches]
    bf16 = args.dtype == "bf16"

    def autocast():
        # forward and loss only; backward and the optimizer step outside, as usual
        if bf16:
            return torch.autocast(device_type=dev, dtype=torch.bfloat16)
        return contextlib.nullcontext()

    def train_steps(name: str, n: int) -> float:
        model, opt = models[name], opts[name]
        sync(dev)
        t = time.perf_counter()
        for i in range(n):
            with autocast():
                loss = steps[i % len(steps)][name](model)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
        sync(dev)  # the clock is read at round boundaries only
        return time.perf_counter() - t

    # warm-up: allocator, oneDNN kernels, optimizer state (and compiling)
    for name in models:
        compile_s[name] = train_steps(name, args.warmup)
    tps = {name: [] for name in models}
    for _ in range(args.rounds):  # interleaved: A B A B ...
        for name in models:
            tps[name].append(args.steps * B * T / train_steps(name, args.steps))

    masked = (
        float(sum((b[1] != -100).float().mean() for b in batches) / len(batches))
        if kind == "bert"
        else 1.0
    )
    flops = {"all": flops_per_token(kind, s, T, V)}
    if kind == "bert":
        flops["useful"] = flops_per_token(kind, s, T, V, head_fraction=masked)
    row = {
        "model": "GPT-2" if kind == "gpt" else "BERT-MLM",
        "preset": "quick" if args.quick else preset,
        "sizes": s,
        "seq_len": T,
        "batch": B,
        "vocab": V,
        "params": params,
        "hf_attn_implementation": getattr(hf.config, "_attn_implementation", None),
        "masked_fraction": round(masked, 4),
        "flops_per_token": flops,
        "impl": {},
        "compile_seconds": compile_s if args.compile else None,
    }
    for name, v in tps.items():
        med = statistics.median(v)
        row["impl"][name] = {
            "tokens_per_s": v,
            "median": med,
            "min": min(v),
            "max": max(v),
            "mfu": {k: med * f / peak for k, f in flops.items()},
            "tflops": {k: med * f / 1e12 for k, f in flops.items()},
        }
    row["speedup"] = (
        row["impl"]["ptlm_lite"]["median"] / row["impl"]["transformers"]["median"]
    )
    if dev == "cuda":
        # both models, their AdamW states and one step's activations at a time
        row["max_memory_gib"] = torch.cuda.max_memory_allocated() / 2**30
        del models, opts, steps, batches, hf, ours, train_steps
        gc.collect()
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    return row


def load_average() -> str:
    try:
        return " ".join(open("/proc/loadavg").read().split()[:3])
    except OSError:
        return "n/a"


def cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def device_name(device: str) -> str:
    return torch.cuda.get_device_name() if device == "cuda" else cpu_name()


def tf32_state() -> bool | None:
    """``torch.backends.cuda.matmul.allow_tf32`` as PyTorch reports it (None if it
    cannot say)."""
    try:
        return bool(torch.backends.cuda.matmul.allow_tf32)
    except (AttributeError, RuntimeError):
        return None


def parse_args(argv=None) -> argparse.Namespace:
    """The options, checked: ``--device cuda`` without a CUDA device is an error."""
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--quick", action="store_true", help="toy sizes, few steps (smoke test)"
    )
    ap.add_argument(
        "--presets",
        nargs="+",
        default=["tiny", "small"],
        choices=["tiny", "small", *SHAPES],
        help="tiny and small: the book's presets; 124m: GPT-2 124M's shape (for a GPU)",
    )
    ap.add_argument(
        "--models", nargs="+", default=["gpt", "bert"], choices=["gpt", "bert"]
    )
    ap.add_argument(
        "--seq-len",
        type=int,
        default=None,
        help="tokens per sequence (default: 128; 512 at 124m)",
    )
    ap.add_argument(
        "--batch", type=int, default=None, help="sequences (default: 32; 16 at 124m)"
    )
    ap.add_argument("--dropout", type=float, default=0.1)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument(
        "--device",
        choices=["cpu", "cuda"],
        default="cpu",
        help="where both models train (default cpu)",
    )
    ap.add_argument(
        "--dtype",
        choices=sorted(DTYPES),
        default="fp32",
        help="bf16: torch.autocast around forward and loss for both (weights fp32)",
    )
    ap.add_argument(
        "--peak-size",
        type=int,
        default=8192,
        help="on a GPU: the reference product is n x n by n x n (default 8192)",
    )
    ap.add_argument(
        "--peak-reps",
        type=int,
        default=20,
        help="on a GPU: timed reference products, after 0.5 s of them (default 20)",
    )
    ap.add_argument("--warmup", type=int, default=3, help="untimed steps per model")
    ap.add_argument(
        "--rounds", type=int, default=5, help="timed rounds per model (interleaved)"
    )
    ap.add_argument("--steps", type=int, default=5, help="steps per round")
    ap.add_argument(
        "--no-fused",
        dest="fused",
        action="store_false",
        help="plain torch.optim.AdamW for both (default: fused=True for both, as "
        "ptlm_lite.train uses)",
    )
    ap.add_argument(
        "--compile",
        action="store_true",
        help="torch.compile both models (compile time reported apart, not in tokens/s)",
    )
    ap.add_argument("--json", help="also write the results to this file")
    args = ap.parse_args(argv)
    if args.device == "cuda" and not torch.cuda.is_available():
        ap.error(
            f"--device cuda: no CUDA device is available "
            f"(torch.cuda.is_available() is False; torch {torch.__version__}, "
            f"built with CUDA {torch.version.cuda}); use --device cpu"
        )
    if args.quick:
        args.presets, args.seq_len, args.batch = args.presets[:1], 16, 4
        args.warmup, args.rounds, args.steps = 1, 2, 2
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    dtype = DTYPES[args.dtype]
    cuda = args.device == "cuda"
    if cuda:
        # fp32 means fp32: no TF32 in cuBLAS (PyTorch's default, said explicitly)
        with contextlib.suppress(AttributeError, RuntimeError):
            torch.backends.cuda.matmul.allow_tf32 = False

    import transformers

    load_before = load_average()
    if cuda:
        n = args.peak_size
        M, K, N = n, n, n

        def measure() -> float:
            return cuda_matmul_flops(n, dtype, reps=args.peak_reps)

        how = f"mean of {args.peak_reps} after 0.5 s warm-up, CUDA events"
    else:
        tokens = (args.batch or 32) * (args.seq_len or 128)
        M, K, N = (
            (tokens, 32, 64)
            if args.quick
            else (tokens, PRESETS["small"]["d_model"], PRESETS["small"]["d_ff"])
        )

        def measure() -> float:
            return matmul_flops(M, K, N, 0.2 if args.quick else 2.0, dtype)

        how = "best of repeated timings"
    peak = measure()
    rows, failed = [], []
    for p in args.presets:
        for kind in args.models:
            # a row that fails (out of memory, say) is reported; the others still run
            try:
                rows.append(run(kind, p, args, peak))
            except Exception as e:  # noqa: BLE001
                traceback.print_exc()
                failed.append({"model": kind, "preset": p, "error": repr(e)})
                if cuda:
                    gc.collect()
                    torch.cuda.empty_cache()
    peak_after = measure()
    result = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "cpu": cpu_name(),
        "device": {
            "type": args.device,
            "name": device_name(args.device),
            "cuda": torch.version.cuda,
            "capability": list(torch.cuda.get_device_capability()) if cuda else None,
        },
        "dtype": args.dtype,
        "autocast": "bfloat16" if args.dtype == "bf16" else None,
        "allow_tf32": tf32_state() if cuda else None,
        "threads": args.threads,
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "load_average": {"before": load_before, "after": load_average()},
        "matmul": {
            "shape": [M, K, N],
            "dtype": args.dtype,
            "method": how,
            "flops_before": peak,
            "flops_after": peak_after,
        },
        "fused_adamw": args.fused,
        "compile": args.compile,
        "rows": rows,
        "failed": failed,
    }
    if args.json:  # first: a one-shot run keeps its numbers whatever follows
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)

    if cuda:
        print(
            f"{result['device']['name']} (CUDA {torch.version.cuda}), torch "
            f"{torch.__version__}, transformers {transformers.__version__}, "
            f"{result['date']}; {args.dtype}"
            + ("" if args.dtype == "bf16" else f", allow_tf32 {tf32_state()}")
        )
        print(
            f"{args.dtype} matmul (torch.mm {M}x{K} @ {K}x{N}, {how}): "
            f"{peak / 1e12:.1f} TFLOP/s (again at the end: {peak_after / 1e12:.1f}); "
            f"fractions below use the first"
        )
    else:
        print(
            f"{result['cpu']}, {args.threads} threads, torch {torch.__version__}, "
            f"transformers "
            f"{transformers.__version__}, {result['date']}; load average {load_before} "
            f"-> {load_average()}"
        )
        print(
            f"{args.dtype} matmul (torch.mm {M}x{K} @ {K}x{N}): {peak / 1e9:.1f} "
            f"GFLOP/s (again at the end: {peak_after / 1e9:.1f}); fractions below use "
            f"the first"
        )
    shapes = {(r["batch"], r["seq_len"]) for r in rows}
    if len(shapes) <= 1:
        B, T = shapes.pop() if shapes else (args.batch, args.seq_len)
        shape_text = f"batch {B} x {T} tokens"
    else:
        shape_text = "batch x tokens " + ", ".join(
            dict.fromkeys(f"{r['preset']} {r['batch']} x {r['seq_len']}" for r in rows)
        )
    print(
        f"{shape_text}; dropout {args.dropout}; AdamW"
        f"{' fused' if args.fused else ''}{'; torch.compile' if args.compile else ''}"
        f"{'; bf16 autocast' if args.dtype == 'bf16' else ''}; "
        f"{args.rounds} interleaved rounds of {args.steps} steps "
        f"after {args.warmup} warm-up steps"
    )
    print(
        "FLOPs per token = 6*N + 12*L*T*d, N = matmul weights incl. the vocabulary "
        "head (d*V; BERT: + d*d); "
        "BERT 'useful' counts the head only at the masked fraction of positions\n"
    )
    of = f"of {args.dtype} mm"
    head = (
        f"{'model':<9} {'preset':<6} {'implementation':<13} {'tokens/s (median)':>17} "
        f"{'range':>15} "
        f"{'ratio':>6} {of:>11}"
    ) + (f"  {'TFLOP/s':>16}" if cuda else "")
    print(head)
    print("-" * len(head))
    for r in rows:
        for name in ("ptlm_lite", "transformers"):
            v = r["impl"][name]
            mfu = "  ".join(f"{k} {x:.0%}" for k, x in v["mfu"].items())
            ratio = f"{r['speedup']:.2f}x" if name == "ptlm_lite" else "1"
            tf = "  ".join(f"{k} {x:.0f}" for k, x in v["tflops"].items())
            print(
                f"{r['model']:<9} {r['preset']:<6} {name:<13} {v['median']:>17,.0f} "
                f"{v['min']:>7,.0f}-{v['max']:<7,.0f} {ratio:>6} {mfu:>11}"
                + (f"  {tf:>16}" if cuda else "")
            )
    if args.compile:
        print(
            "\nwarm-up seconds (torch.compile included, not in tokens/s): "
            + "; ".join(
                f"{r['model']} {r['preset']}: "
                + ", ".join(f"{k} {v:.1f} s" for k, v in r["compile_seconds"].items())
                for r in rows
            )
        )
    for x in failed:
        print(f"FAILED: {x['model']} {x['preset']}: {x['error']}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
