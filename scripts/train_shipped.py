"""Train the two models that ship with the package (``ptlm_lite.shipped``).

    python scripts/train_shipped.py gpt-char [--steps N] [--seed S]
    python scripts/train_shipped.py bert     [--steps N] [--seed S]

* ``gpt-char`` -> ``shakespeare-char-gpt``: a pre-LN (GPT-2 style) character-level
  GPT on the training plays (``text_stream("train")``; a character tokenizer of that
  text, newline included), random 128-character windows, AdamW, cosine schedule.
  Held out: the validation plays.
* ``bert`` -> ``bert-fill``: ``BertForPreTraining`` with the BERT chapter's WordPiece
  (``recipes.bert.tokenizer()``) on ``recipes.bert.pretraining_batches`` (MLM + NSP,
  half Shakespeare, half ``make_world(0)``), every training scene, linear decay
  (BERT's schedule). One change to the corruption: 25% of the words are hidden whole
  (whole-word masking, below), so that the model learns to fill a blank with a whole
  word. Held out: the validation plays and ``make_world(1)``.

One thread (``PTLM_THREADS=1`` unless set) and a fixed seed: the same command gives
the same weights on the same machine and torch version. Writes, in
``ptlm_lite/data/shipped/``, ``<name>.safetensors`` (fp16), ``<name>.tokenizer.json``
and ``<name>.json`` (config, tokenizer, command, time, steps, seed, held-out loss
measured with the fp16 weights), each atomically; the JSON goes last and holds the
weights' SHA-256, so a crash never leaves a loadable half-written pair. ``--out DIR``
writes elsewhere (for trials).
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import platform
import sys
import time
from pathlib import Path

os.environ.setdefault("PTLM_THREADS", "1")  # before torch is imported by ptlm_lite

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import torch
from safetensors.torch import save_model

from ptlm_lite import shipped
from ptlm_lite.cache import atomic_write, atomic_write_text, file_sha256
from ptlm_lite.config import preset
from ptlm_lite.train import count_parameters, train

RUNS = {
    "gpt-char": dict(
        name="shakespeare-char-gpt",
        steps=1800,
        batch=32,
        block=128,
        lr=2e-3,
        warmup=100,
        weight_decay=0.1,
        betas=(0.9, 0.99),
        model=dict(d_model=128, n_layer=4, n_head=4, d_ff=512, dropout=0.0),
    ),
    "bert": dict(
        name="bert-fill",
        steps=1600,
        batch=64,
        block=64,
        masking="whole-word",
        mask_p=0.25,
        lr=3e-3,
        warmup=100,
        weight_decay=0.01,
        betas=(0.9, 0.98),
        model=dict(d_model=128, n_layer=4, n_head=4, d_ff=512, dropout=0.0),
    ),
}


def _monitor(name: str, tok, steps: int) -> dict:
    """Held-out loss every quarter of the run (kept in the JSON), and a log line every
    100 steps."""
    start = time.perf_counter()

    def log(step, loss):
        if step % 100 == 0:
            print(f"step {step}: loss {loss:.3f} ({time.perf_counter() - start:.0f} s)")

    return dict(
        eval_fn=lambda m: {"heldout": shipped.heldout_loss(name, m, tok)["loss"]},
        eval_every=max(1, steps // 4),
        callback=log,
    )


def gpt_char(run: dict, steps: int, seed: int, progress: bool):
    from ptlm_lite.data import text_stream, train_tokenizer
    from ptlm_lite.gpt import GPT

    # The alphabet of the whole training text, newline included.
    text = text_stream("train")
    tok = train_tokenizer("char", [text], n_sentinels=0)
    data = torch.tensor(tok.encode(text))
    config = preset(
        "gpt2-tiny", vocab_size=tok.vocab_size, max_len=run["block"], **run["model"]
    )
    model = GPT(config, seed=seed)
    g = torch.Generator().manual_seed(seed)
    offsets = torch.arange(run["block"] + 1)

    def batch(step):
        start = torch.randint(
            len(data) - run["block"] - 1, (run["batch"], 1), generator=g
        )
        b = data[start + offsets]  # (B, block + 1)
        return {"ids": b[:, :-1], "targets": b[:, 1:]}

    history = train(
        model,
        batch,
        steps=steps,
        lr=run["lr"],
        warmup=min(run["warmup"], steps // 10),
        schedule="cosine",
        weight_decay=run["weight_decay"],
        betas=run["betas"],
        seed=seed,
        progress=progress,
        desc="char GPT",
        **_monitor("shakespeare-char-gpt", tok, steps),
    )
    return (
        model,
        tok,
        history,
        dict(
            kind="char",
            how='train_tokenizer("char", [text_stream("train")], n_sentinels=0)',
            trained_on="the training plays' characters, newline included",
        ),
    )


def bert(run: dict, steps: int, seed: int, progress: bool):
    from ptlm_lite.bert import BertForPreTraining
    from ptlm_lite.recipes import bert as recipe
    from ptlm_lite.wwm import wwm_corruption

    tok = recipe.tokenizer()
    corrupt = (
        wwm_corruption(tok, run["mask_p"])  # BERT-WWM chapter: p of the words
        if run["masking"] == "whole-word"
        else recipe.mlm_corruption(tok, run["mask_p"])
    )
    batches = recipe.pretraining_batches(
        tok,
        batch_size=run["batch"],
        max_len=run["block"],
        seed=seed,
        n_docs=10**9,
        corrupt=corrupt,
    )
    config = preset(
        "bert-tiny", vocab_size=tok.vocab_size, max_len=run["block"], **run["model"]
    )
    model = BertForPreTraining(config, seed=seed)
    history = train(
        model,
        batches,
        steps=steps,
        lr=run["lr"],
        warmup=min(run["warmup"], steps // 10),
        schedule="linear",
        weight_decay=run["weight_decay"],
        betas=run["betas"],
        seed=seed,
        progress=progress,
        desc="BERT",
        **_monitor("bert-fill", tok, steps),
    )
    return (
        model,
        tok,
        history,
        dict(
            kind="wordpiece",
            how="ptlm_lite.recipes.bert.tokenizer()",
            trained_on="the training plays (1,024 WordPiece tokens)",
        ),
    )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model", choices=sorted(RUNS))
    parser.add_argument("--steps", type=int, default=None, help="default: the run's")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=shipped.FOLDER)
    parser.add_argument("--no-progress", action="store_true")
    args = parser.parse_args(argv)
    run = RUNS[args.model]
    steps = args.steps or run["steps"]
    if steps < 2:
        parser.error(f"--steps must be at least 2, got {steps}")
    name = run["name"]
    command = f"python scripts/train_shipped.py {args.model} --steps {steps}"
    command += f" --seed {args.seed}" if args.seed else ""

    load_before = os.getloadavg()
    wall, cpu = time.perf_counter(), time.process_time()
    train_fn = gpt_char if args.model == "gpt-char" else bert
    model, tok, history, tok_info = train_fn(
        run, steps, args.seed, not args.no_progress
    )
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    model.eval()
    fp32 = shipped.heldout_loss(name, model, tok)

    # fp16 on disk; the stated loss is measured after the round trip, as loaded
    half = copy.deepcopy(model).half()
    args.out.mkdir(parents=True, exist_ok=True)
    weights = args.out / f"{name}.safetensors"
    tok_file = args.out / f"{name}.tokenizer.json"
    meta = args.out / f"{name}.json"
    meta.unlink(missing_ok=True)  # the old commit goes first
    atomic_write(weights, lambda tmp: save_model(half, str(tmp)))
    tok.save(tok_file)
    model.load_state_dict({k: v.float() for k, v in half.state_dict().items()})
    heldout = shipped.heldout_loss(name, model, tok)

    info = {
        "name": name,
        "model_cls": f"{type(model).__module__}.{type(model).__qualname__}",
        "config": model.config.to_dict(),
        "parameters": count_parameters(model),
        "weights": weights.name,
        "dtype": "float16",
        "bytes": weights.stat().st_size,
        "sha256": file_sha256(weights),
        "tokenizer": {"file": tok_file.name, "vocab_size": tok.vocab_size, **tok_info},
        "command": command,
        "seed": args.seed,
        "steps": steps,
        "training": {
            k: (list(v) if isinstance(v, tuple) else v)
            for k, v in run.items()
            if k not in ("name", "model", "steps")
        }
        | {"warmup": min(run["warmup"], steps // 10)},
        "tokens_seen": steps * run["batch"] * run["block"],
        "train_loss_last_100": history.final_loss(100),
        "heldout_curve": [[step, round(e["heldout"], 4)] for step, e in history.evals],
        "train_seconds": round(wall, 1),
        "train_loop_seconds": round(history.seconds, 1),
        "train_cpu_seconds": round(cpu, 1),
        "threads": torch.get_num_threads(),
        "loadavg_before_after": [
            round(load_before[0], 2),
            round(os.getloadavg()[0], 2),
        ],
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, "
        f"torch {torch.__version__}",
        "heldout": {
            "what": shipped.HELDOUT[name],
            **{
                k: round(v, 5) if isinstance(v, float) else v
                for k, v in heldout.items()
            },
            "loss_fp32_weights": round(fp32["loss"], 5),
        },
    }
    atomic_write_text(meta, json.dumps(info, indent=2) + "\n")
    for path in (weights, tok_file, meta):
        path.chmod(0o644)  # package data: readable by all (mkstemp makes 0600)
    print(json.dumps(info, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
