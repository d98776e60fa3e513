"""Time the data layer: corpus loading, tokenizer training, cached loads. Prints a
table.

    python benchmarks/bench_data.py            # uses a temporary cache folder
"""

import os
import tempfile
import time
from dataclasses import dataclass

os.environ.setdefault("PTLM_CACHE", tempfile.mkdtemp(prefix="ptlm_bench_"))

import torch  # noqa: E402

from ptlm_lite import cache  # noqa: E402
from ptlm_lite.data import shakespeare, tokenizer, world  # noqa: E402


def timed(label, fn, rows):
    start = time.perf_counter()
    result = fn()
    rows.append((label, time.perf_counter() - start))
    return result


@dataclass
class BenchConfig:
    d: int = 256


class BenchModel(torch.nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.layers = torch.nn.Sequential(
            *[torch.nn.Linear(config.d, config.d) for _ in range(8)]
        )


def main():
    rows = []
    plays = timed(
        "parse all plays (load_plays, first call)", shakespeare.load_plays, rows
    )
    timed("load_plays again (in-process cache)", shakespeare.load_plays, rows)
    text = timed("text_stream('all')", lambda: shakespeare.text_stream("all"), rows)
    timed(
        "documents('train', unit='sentence')",
        lambda: shakespeare.documents("train"),
        rows,
    )
    timed("entities('train')", lambda: shakespeare.entities("train"), rows)
    timed("make_world(seed=0) (200 entities)", lambda: world.make_world(0), rows)
    for kind in ("wordpiece", "bpe"):
        timed(
            f"train {kind} 8k on Shakespeare",
            lambda: tokenizer.get_tokenizer(kind, 8000),
            rows,
        )
        tok = timed(
            f"load cached {kind} 8k", lambda: tokenizer.get_tokenizer(kind, 8000), rows
        )
    ids = timed(
        "encode text_stream('train') (bpe 8k)",
        lambda: tok.encode(shakespeare.text_stream("train")),
        rows,
    )
    cache.register("bench", BenchModel, BenchConfig(), lambda m: None)
    timed("cache.get: build + save (2 MB model)", lambda: cache.get("bench"), rows)
    timed("cache.get: load cached model", lambda: cache.get("bench"), rows)

    print(
        f"{len(plays)} plays, {len(text) / 1e6:.1f} M characters, {len(ids) / 1e6:.2f} "
        f"M BPE tokens "
        f"(train split); cache at {os.environ['PTLM_CACHE']}\n"
    )
    width = max(len(label) for label, _ in rows)
    print(f"{'step':<{width}}  seconds")
    print(f"{'-' * width}  -------")
    for label, seconds in rows:
        print(f"{label:<{width}}  {seconds:7.3f}")


if __name__ == "__main__":
    main()
