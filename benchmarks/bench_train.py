"""Training throughput: ptlm_lite's GPT-2 and BERT-MLM against Hugging Face
transformers.

    python benchmarks/bench_train.py             # presets tiny and small, batch 32 x 128 tokens
    python benchmarks/bench_train.py --quick     # a toy size, a few seconds (what the smoke test runs)

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
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time

import torch

from ptlm_lite.bert import BERT_FIELDS, BertForPreTraining
from ptlm_lite.recipes.bert import VOCAB as PRETRAIN_VOCAB
from ptlm_lite.config import PRESETS, Config
from ptlm_lite.corrupt import mlm_mask
from ptlm_lite.gpt import GPT
from ptlm_lite.hf.bert import convert_state_dict
from ptlm_lite.hf.gpt import from_hf as gpt_from_hf

# the GPT chapters' byte-level BPE (ptlm_lite.recipes.gpt.tokenizer)
GPT_VOCAB = 1024
BERT_VOCAB = PRETRAIN_VOCAB  # the BERT chapter's WordPiece
MLM_P = 0.15  # BERT's masking rate


def sizes(name: str, quick: bool) -> dict:
    if quick:
        return dict(d_model=32, n_layer=1, n_head=2, d_ff=64)
    return {k: PRESETS[name][k] for k in ("d_model", "n_layer", "n_head", "d_ff")}


# ----------------------------------------------------------------------------------
# The four models: (Hugging Face, ptlm_lite) pairs holding the same weights.


def gpt_pair(s: dict, T: int, dropout: float):
    import transformers

    hf = transformers.GPT2LMHeadModel(
        transformers.GPT2Config(
            vocab_size=GPT_VOCAB,
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
        )
    )
    ours = gpt_from_hf(hf)  # GPT-2 (pre-LN), same weights
    return hf, ours


def bert_pair(s: dict, T: int, dropout: float):
    import transformers

    cfg = transformers.BertConfig(
        vocab_size=BERT_VOCAB,
        hidden_size=s["d_model"],
        num_hidden_layers=s["n_layer"],
        num_attention_heads=s["n_head"],
        intermediate_size=s["d_ff"],
        max_position_embeddings=T,
        hidden_act="gelu",
        layer_norm_eps=1e-12,
        hidden_dropout_prob=dropout,
        attention_probs_dropout_prob=dropout,
    )
    hf = transformers.BertForMaskedLM(cfg)
    ours = BertForPreTraining(
        Config(
            **{
                **BERT_FIELDS,
                "vocab_size": BERT_VOCAB,
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
# ids and the original ids at the masked positions, -100 elsewhere).


def gpt_batch(B, T, g):
    ids = torch.randint(0, GPT_VOCAB, (B, T + 1), generator=g)
    return ids[:, :-1].contiguous(), ids[:, 1:].contiguous()


def bert_batch(B, T, g):
    # 0-4: [PAD] [UNK] [CLS] [SEP] [MASK]
    ids = torch.randint(5, BERT_VOCAB, (B, T), generator=g)
    ids[:, 0], ids[:, -1] = 2, 3
    m = mlm_mask(
        ids,
        special_ids=[0, 1, 2, 3, 4],
        mask_id=4,
        vocab_size=BERT_VOCAB,
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


def matmul_flops(M: int, K: int, N: int, seconds: float = 2.0) -> float:
    """Achieved fp32 FLOP/s of ``torch.mm`` (M×K)·(K×N): best of repeated timings."""
    a, b = torch.randn(M, K), torch.randn(K, N)
    out = torch.empty(M, N)
    for _ in range(3):
        torch.mm(a, b, out=out)
    best, end = float("inf"), time.perf_counter() + seconds
    while time.perf_counter() < end:
        t = time.perf_counter()
        torch.mm(a, b, out=out)
        best = min(best, time.perf_counter() - t)
    return 2 * M * K * N / best


def flops_per_token(
    kind: str, s: dict, T: int, V: int, head_fraction: float = 1.0
) -> float:
    """6·N + 12·L·T·d, N = matmul weights incl. the vocabulary head (scaled by
    head_fraction).
    """
    d, L, f = s["d_model"], s["n_layer"], s["d_ff"]
    body = L * (4 * d * d + 2 * d * f)
    # BERT's head has a dense d×d before the decoder
    head = d * V + (d * d if kind == "bert" else 0)
    return 6 * (body + head_fraction * head) + 12 * L * T * d


def run(kind: str, preset: str, args, peak: float) -> dict:
    s = sizes(preset, args.quick)
    T, B = args.seq_len, args.batch
    torch.manual_seed(0)
    hf, ours = (gpt_pair if kind == "gpt" else bert_pair)(s, T, args.dropout)
    models = {"ptlm_lite": ours.train(), "transformers": hf.train()}
    opts = {
        name: torch.optim.AdamW(m.parameters(), lr=1e-4, fused=args.fused or None)
        for name, m in models.items()
    }
    compile_s = {}
    if args.compile:
        models = {name: torch.compile(m) for name, m in models.items()}
    g = torch.Generator().manual_seed(0)
    batches = [(gpt_batch if kind == "gpt" else bert_batch)(B, T, g) for _ in range(4)]
    steps = [losses(kind, b) for b in batches]

    def train_steps(name: str, n: int) -> float:
        model, opt = models[name], opts[name]
        t = time.perf_counter()
        for i in range(n):
            loss = steps[i % len(steps)][name](model)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
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
    flops = {"all": flops_per_token(kind, s, T, ours.config.vocab_size)}
    if kind == "bert":
        flops["useful"] = flops_per_token(
            kind, s, T, ours.config.vocab_size, head_fraction=masked
        )
    row = {
        "model": "GPT-2" if kind == "gpt" else "BERT-MLM",
        "preset": "quick" if args.quick else preset,
        "sizes": s,
        "seq_len": T,
        "batch": B,
        "vocab": ours.config.vocab_size,
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
        }
    row["speedup"] = (
        row["impl"]["ptlm_lite"]["median"] / row["impl"]["transformers"]["median"]
    )
    return row


def load_average() -> str:
    try:
        return " ".join(open("/proc/loadavg").read().split()[:3])
    except OSError:
        return "n/a"


def cpu_name() -> str:
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--quick", action="store_true", help="toy sizes, few steps (smoke test)"
    )
    ap.add_argument(
        "--presets", nargs="+", default=["tiny", "small"], choices=["tiny", "small"]
    )
    ap.add_argument(
        "--models", nargs="+", default=["gpt", "bert"], choices=["gpt", "bert"]
    )
    ap.add_argument("--seq-len", type=int, default=128)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--dropout", type=float, default=0.1)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--warmup", type=int, default=3, help="untimed steps per model")
    ap.add_argument(
        "--rounds", type=int, default=5, help="timed rounds per model (interleaved)"
    )
    ap.add_argument("--steps", type=int, default=5, help="steps per round")
    ap.add_argument(
        "--no-fused",
        dest="fused",
        action="store_false",
        help="plain torch.optim.AdamW for both (default: fused=True for both, as ptlm_lite.train uses)",
    )
    ap.add_argument(
        "--compile",
        action="store_true",
        help="torch.compile both models (compile time reported apart, not in tokens/s)",
    )
    ap.add_argument("--json", help="also write the results to this file")
    args = ap.parse_args(argv)
    if args.quick:
        args.presets, args.seq_len, args.batch = args.presets[:1], 16, 4
        args.warmup, args.rounds, args.steps = 1, 2, 2
    torch.set_num_threads(args.threads)

    import transformers

    load_before = load_average()
    M, K, N = (
        (args.batch * args.seq_len, 32, 64)
        if args.quick
        else (
            args.batch * args.seq_len,
            PRESETS["small"]["d_model"],
            PRESETS["small"]["d_ff"],
        )
    )
    peak = matmul_flops(M, K, N, seconds=0.2 if args.quick else 2.0)
    rows = [run(kind, p, args, peak) for p in args.presets for kind in args.models]
    peak_after = matmul_flops(M, K, N, seconds=0.2 if args.quick else 2.0)
    result = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "cpu": cpu_name(),
        "threads": args.threads,
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "load_average": {"before": load_before, "after": load_average()},
        "matmul": {"shape": [M, K, N], "flops_before": peak, "flops_after": peak_after},
        "fused_adamw": args.fused,
        "compile": args.compile,
        "rows": rows,
    }

    print(
        f"{result['cpu']}, {args.threads} threads, torch {torch.__version__}, "
        f"transformers "
        f"{transformers.__version__}, {result['date']}; load average {load_before} "
        f"-> {load_average()}"
    )
    print(
        f"fp32 matmul (torch.mm {M}x{K} @ {K}x{N}): {peak / 1e9:.1f} GFLOP/s "
        f"(again at the end: {peak_after / 1e9:.1f}); fractions below use the first"
    )
    print(
        f"batch {args.batch} x {args.seq_len} tokens; dropout {args.dropout}; AdamW"
        f"{' fused' if args.fused else ''}{'; torch.compile' if args.compile else ''}; "
        f"{args.rounds} interleaved rounds of {args.steps} steps "
        f"after {args.warmup} warm-up steps"
    )
    print(
        "FLOPs per token = 6*N + 12*L*T*d, N = matmul weights incl. the vocabulary "
        "head (d*V; BERT: + d*d); "
        "BERT 'useful' counts the head only at the masked fraction of positions\n"
    )
    head = (
        f"{'model':<9} {'preset':<6} {'implementation':<13} {'tokens/s (median)':>17} "
        f"{'range':>15} "
        f"{'ratio':>6} {'of fp32 mm':>11}"
    )
    print(head)
    print("-" * len(head))
    for r in rows:
        for name in ("ptlm_lite", "transformers"):
            v = r["impl"][name]
            mfu = "  ".join(f"{k} {x:.0%}" for k, x in v["mfu"].items())
            ratio = f"{r['speedup']:.2f}x" if name == "ptlm_lite" else "1"
            print(
                f"{r['model']:<9} {r['preset']:<6} {name:<13} {v['median']:>17,.0f} "
                f"{v['min']:>7,.0f}-{v['max']:<7,.0f} {ratio:>6} {mfu:>11}"
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
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
