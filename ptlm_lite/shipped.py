"""Two small models trained ahead of time and shipped with the package.

A chapter's own models train in seconds and write gibberish. These two were
trained for about ten minutes on one CPU thread by ``scripts/train_shipped.py`` and
ship as package data in ``ptlm_lite/data/shipped/``: fp16 safetensors weights, the
tokenizer, and a JSON file stating the config, the command, the training time, the
steps, the seed and the held-out loss (``tests/test_shipped.py`` recomputes it).

    name                   model                            tokenizer
    shakespeare-char-gpt   GPT, pre-LN (GPT-2 style)        the plays' characters
    bert-fill              BertForPreTraining (MLM + NSP)   the BERT chapter's WordPiece

bert-fill is pre-trained on the BERT chapter's ``pretraining_batches`` with one change
of corruption: 25% of the *words* are chosen and hidden whole (whole-word masking, as
Google's 2019 BERT-WWM release; 25% rather than 15%, as Wettig et al. 2023 suggest),
so that it learns to produce whole words, which is what filling a blank asks.

    model, tok, info = shipped.load("shakespeare-char-gpt")
    print(shipped.generate(model, tok, "ROMEO:\\n", 300, seed=0))

Loading reads files inside the package only: no network, no cache, no training.
Chapters: ``chapters/gpt.ipynb`` (the char GPT) and ``chapters/bert.ipynb`` (bert-fill).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import torch

__all__ = ["NAMES", "Shipped", "fill", "generate", "heldout_loss", "info", "load"]

NAMES = ("shakespeare-char-gpt", "bert-fill")
FOLDER = Path(__file__).parent / "data" / "shipped"
# The held-out text each model's loss is measured on (the training script and the test
# use these, so the JSON's number and the test's number are the same computation).
HELDOUT = {
    # validation plays, cut into blocks; `blocks` of them, evenly spaced
    "shakespeare-char-gpt": dict(split="validation", block=128, blocks=128),
    # pretraining_batches(split="validation"): held-out plays and make_world(1)
    "bert-fill": dict(
        split="validation", seed=1234, steps=16, batch_size=64, max_len=64
    ),
}


@dataclass(frozen=True)
class Shipped:
    """A loaded model; unpacks as ``model, tokenizer, info = load(name)``."""

    model: torch.nn.Module
    tokenizer: object
    info: dict

    def __iter__(self):
        return iter((self.model, self.tokenizer, self.info))


def _check_name(name) -> str:
    if name not in NAMES:
        raise ValueError(f"name must be one of {NAMES}, got {name!r}")
    return name


def info(name: str) -> dict:
    """The JSON beside the weights: config, tokenizer, command, time, steps, seed and
    the held-out loss."""
    path = FOLDER / f"{_check_name(name)}.json"
    if not path.exists():
        raise RuntimeError(
            f"{path} is missing: run `python scripts/train_shipped.py "
            f"{'gpt-char' if name.startswith('shakespeare') else 'bert'}`"
        )
    return json.loads(path.read_text(encoding="utf-8"))


def load(name: str) -> Shipped:
    """The model ``name`` (one of :data:`NAMES`) in eval mode, fp32, on the CPU, with
    its tokenizer and its JSON; the weights' SHA-256 is checked against the JSON."""
    from safetensors.torch import load_model

    from .cache import import_class, file_sha256
    from .config import Config
    from .data.tokenizer import Tokenizer

    meta = info(name)
    weights = FOLDER / meta["weights"]
    if file_sha256(weights) != meta["sha256"]:
        raise RuntimeError(
            f"{weights.name} does not match the SHA-256 in {name}.json: retrain it "
            f"with `{meta['command']}`"
        )
    model_cls = import_class(meta["model_cls"], ("ptlm_lite.",))
    model = model_cls(Config.from_dict(meta["config"]))
    load_model(model, str(weights), strict=True)  # fp16 on disk, copied into fp32
    tok = Tokenizer.load(FOLDER / meta["tokenizer"]["file"])
    return Shipped(model.eval(), tok, meta)


@torch.no_grad()
def heldout_loss(name: str, model, tok) -> dict:
    """The held-out numbers stated in the JSON: ``loss`` (nats per predicted token)
    and, for bert-fill, NSP accuracy and, at the positions that read ``[MASK]``
    (``mask_tokens`` of them; a chosen token left unchanged is in the input, and
    copying it needs no context), MLM accuracy and the most-frequent-token baseline."""
    h = HELDOUT[_check_name(name)]
    model.eval()
    if name == "shakespeare-char-gpt":
        from .data import pack_blocks, text_stream

        windows = pack_blocks(tok.encode(text_stream(h["split"])), h["block"] + 1)
        windows = windows[torch.linspace(0, len(windows) - 1, h["blocks"]).long()]
        losses = [
            model(w[:, :-1], targets=w[:, 1:]).loss * len(w) for w in windows.split(32)
        ]
        return {
            "loss": float(sum(losses) / len(windows)),
            "tokens": windows[:, 1:].numel(),
        }
    from .recipes.bert import pretraining_batches

    kw = {k: h[k] for k in ("seed", "batch_size", "max_len", "split")}
    batches = pretraining_batches(tok, n_docs=10**9, **kw)
    nll = hits = n = n_mask = nsp_hits = n_pairs = 0
    counts = torch.zeros(tok.vocab_size)
    mask_id = tok.special_ids["mask"]
    for step in range(h["steps"]):
        b = batches(step)
        out = model(**b)
        target = b["targets"][b["targets"] != -100]  # the order of out.logits' rows
        nll += torch.nn.functional.cross_entropy(out.logits, target, reduction="sum")
        n += len(target)
        at_mask = b["ids"][b["targets"] != -100] == mask_id
        hits += int((out.logits.argmax(-1) == target)[at_mask].sum())
        n_mask += int(at_mask.sum())
        counts += torch.bincount(target[at_mask], minlength=tok.vocab_size)
        nsp = out.extra["nsp_logits"].argmax(-1) == b["nsp_labels"]
        nsp_hits, n_pairs = nsp_hits + int(nsp.sum()), n_pairs + len(nsp)
    return {
        "loss": float(nll / n),
        "tokens": n,
        "mask_tokens": n_mask,
        "mlm_accuracy": hits / n_mask,
        "most_frequent_token_accuracy": float(counts.max() / n_mask),
        "nsp_accuracy": nsp_hits / n_pairs,
    }


def generate(
    model,
    tok,
    prompt: str = "\n",
    n: int = 400,
    temperature: float = 0.8,
    top_k: int | None = None,
    seed: int = 0,
) -> str:
    """``prompt`` and ``n`` sampled characters (or tokens) as text; same seed, same
    text."""
    ids = torch.tensor([tok.encode(prompt)])
    g = torch.Generator().manual_seed(seed)
    out = model.generate(ids, n, temperature=temperature, top_k=top_k, generator=g)
    return tok.decode(out[0].tolist())


@torch.no_grad()
def fill(model, tok, before: str, word: str | None = None, after: str = "", k: int = 5):
    """BERT fills a blank between ``before`` and ``after``.

    Without ``word``: one [MASK]; returns the ``k`` most likely tokens as ``[(token,
    probability)]``. With ``word``: one [MASK] per word piece of ``word`` (the model is
    told the length), each predicted on its own; returns the top-1 pieces as text,
    right only if every piece is.
    """
    pieces = tok.encode(" " + word) if word is not None else [0]
    ids = tok.encode(before) + [tok.mask_id] * len(pieces) + tok.encode(after)
    x = torch.tensor([[tok.cls_id] + ids + [tok.sep_id]])
    logits = model(x).logits[0][x[0] == tok.mask_id]  # (masks, V)
    if word is not None:
        return tok.decode(logits.argmax(-1).tolist())
    p, i = logits[0].softmax(-1).topk(k)
    return [(tok.id_to_token(int(j)), float(q)) for q, j in zip(p, i)]
