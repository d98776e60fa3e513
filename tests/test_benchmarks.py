"""The benchmark scripts run at a toy size and print their tables (no timing is
asserted).
"""

import json
import pathlib
import subprocess
import sys

import pytest

from ptlm_lite import parallel

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_bench_train_quick_prints_its_table(tmp_path):
    pytest.importorskip("transformers")
    out = tmp_path / "bench.json"
    proc = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "bench_train.py"),
            "--quick",
            "--threads",
            "1",
            "--json",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    text = proc.stdout
    assert "6*N + 12*L*T*d" in text and "fp32 matmul" in text
    for model in ("GPT-2", "BERT-MLM"):
        assert (
            f"{model:<9} quick  ptlm_lite" in text
            and f"{model:<9} quick  transformers" in text
        )
    result = json.loads(out.read_text())
    assert {r["model"] for r in result["rows"]} == {"GPT-2", "BERT-MLM"}
    for r in result["rows"]:
        assert r["speedup"] > 0 and all(v["median"] > 0 for v in r["impl"].values())
    bert = next(r for r in result["rows"] if r["model"] == "BERT-MLM")
    assert (
        set(bert["flops_per_token"]) == {"all", "useful"}
        and 0 < bert["masked_fraction"] < 0.5
    )


def test_chapter_times_runs_a_notebook_without_writing_it(tmp_path):
    nbformat = pytest.importorskip("nbformat")
    pytest.importorskip("nbclient")
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import chapter_times

    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_markdown_cell("# A toy chapter"),
        nbformat.v4.new_code_cell('SCALE = "tiny"', metadata={"tags": ["parameters"]}),
        nbformat.v4.new_code_cell(
            "import os\nassert os.environ['HF_HUB_OFFLINE'] == '1'\n"
            "assert not os.listdir(os.environ['PTLM_CACHE'])\n"
            "x = bytearray(50 * 2**20)  # 50 MB, so the peak shows it"
        ),
    ]
    path = tmp_path / "toy.ipynb"
    nbformat.write(nb, path)
    before = path.read_bytes()
    record = chapter_times.run_notebook(path, timeout=120)
    assert path.read_bytes() == before
    assert record["status"] == "ok", record
    assert record["title"] == "A toy chapter" and record["seconds"] >= 0
    assert record["peak_rss_mb"] is None or record["peak_rss_mb"] >= 50
    # the machine's speed, timed just before the notebook: a BERT-tiny step takes
    # milliseconds, not microseconds or seconds
    assert 1 < record["reference_step_ms"] < 1000, record["reference_step_ms"]
    # and two side by side (pmap's workers), where there are two cores for them
    pair = record["reference_pair_ms"]
    assert (pair is None) == (parallel.workers(2) < 2), pair
    assert pair is None or 1 < pair < 1000, pair
    text = chapter_times.table({"chapters": [record]})
    assert "A toy chapter" in text and "peak MB" in text
    assert f"{record['reference_step_ms']:.1f}" in text


def test_chapter_times_page_shows_the_reference_step(tmp_path):
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import chapter_times

    record = {"file": "chapters/gpt.ipynb", "title": "GPT", "status": "ok",
              "seconds": 30.0, "peak_rss_mb": 700, "load_average_start": [1.0],
              "reference_step_ms": 19.25}  # fmt: skip
    old = dict(record, file="chapters/bert.ipynb", title="BERT")
    del old["reference_step_ms"]  # a record from before the reference step: "-"
    machine = {"cpu": "x", "cores": 2, "memory_gib": 1, "platform": "Linux-x",
               "python": "3", "torch": "2", "torch_threads": 1,
               "cpu_capability": "AVX2"}  # fmt: skip
    result = {"date": "2026-11-27", "machine": machine, "scale": "tiny",
              "chapters": [record, old]}  # fmt: skip
    text = chapter_times.page(result)
    assert "| reference step (ms) |" in text
    rows = [line for line in text.splitlines() if "`chapters/" in line]
    assert "| 19.2 |" in rows[0] or "| 19.3 |" in rows[0], rows[0]
    assert "| - |" in rows[1], rows[1]
    with pytest.raises(ValueError, match="steps must be a positive integer"):
        chapter_times.reference_step_ms(steps=0)
    with pytest.raises(ValueError, match="steps must be a positive integer"):
        chapter_times.reference_pair_ms(steps=1.5)


def test_a_recorded_time_goes_stale_with_the_code_not_the_prose():
    """A run's time depends on the code cells: a record whose code cells match the
    notebook is current even if the prose changed since; one that names other code is
    not; a record from before code_cells_hash falls back to the whole-notebook hash."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import chapter_times

    file = "chapters/gpt.ipynb"
    nb = json.loads((ROOT / file).read_text())
    cells = chapter_times.code_cells_hash(nb)
    assert not chapter_times.outdated(
        {"code_cells_hash": cells, "code_hash": "x"}, file
    )
    assert chapter_times.outdated({"code_cells_hash": "0" * 16}, file)
    assert chapter_times.outdated({"code_hash": "0" * 16}, file)
    assert not chapter_times.outdated(
        {"code_hash": chapter_times.current_code_hash(file)}, file
    )
    prose = json.loads(json.dumps(nb))
    md = next(c for c in prose["cells"] if c["cell_type"] == "markdown")
    md["source"] = "".join(md["source"]) + " (edited)"
    assert chapter_times.code_cells_hash(prose) == cells
    code = next(c for c in prose["cells"] if c["cell_type"] == "code")
    code["source"] = "".join(code["source"]) + "\n# edited"
    assert chapter_times.code_cells_hash(prose) != cells


def test_chapter_times_page_shows_the_avx2_machine_beside_the_record():
    """book/timings.md: with chapter_times_avx2.json, two more columns and a paragraph
    computed from both records (ratios, the chapters over the budget there)."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import chapter_times

    machine = {"cpu": "x", "cores": 2, "memory_gib": 1, "platform": "Linux-x",
               "python": "3", "torch": "2", "torch_threads": 1}  # fmt: skip
    gpt = {"file": "chapters/gpt.ipynb", "title": "GPT", "status": "ok",
           "seconds": 30.0, "reference_step_ms": 11.0,
           "code_hash": chapter_times.current_code_hash("chapters/gpt.ipynb")}  # fmt: skip
    bert = dict(gpt, file="chapters/bert.ipynb", title="BERT", seconds=20.0,
                code_hash=chapter_times.current_code_hash("chapters/bert.ipynb"))  # fmt: skip
    result = {"date": "2026-11-27", "scale": "tiny", "chapters": [gpt, bert],
              "machine": dict(machine, cpu_capability="AVX512")}  # fmt: skip
    avx2 = {"date": "2026-11-29 12:00", "scale": "tiny",
            "machine": dict(machine, cpu_capability="AVX2"),
            "chapters": [dict(gpt, seconds=66.0, reference_step_ms=22.0),
                         dict(bert, seconds=36.0, reference_step_ms=24.0)]}  # fmt: skip
    text = chapter_times.page(result, avx2)
    assert "AVX2 only: seconds" in text
    row = next(line for line in text.splitlines() if "`chapters/gpt.ipynb`" in line)
    assert row.endswith("| 66 | 22.0 |"), row
    para = text[text.index("**On a machine with AVX2 only.**") :]
    assert "1.8 to 2.2 times as long (median 2.0, over the 2 measured" in para, para
    assert (
        "1 of the 2 chapters there took more than the book's 40 s budget: GPT 66 s"
        in para
    )
    assert "22-24 ms there against 11-11 ms" in para
    # the same times in reference steps: 2,727 and 1,818 in the record, 3,000 and 1,500
    # on the AVX2 machine (ratios 1.10 and 0.83); 40 s is 3,636 steps of 11 ms, 1,739
    # of 23 ms (the AVX2 machine's median)
    steps = text[text.index("**In reference steps.**") :]
    assert (
        "count was 0.96 times the record's (median; half of them between 0.89 and 1.03)"
        in steps
    ), steps
    assert (
        "The 2 chapters measured in their current version in the record cost 1,818 to "
        "2,727 reference steps (median 2,273)" in steps
    ), steps
    assert (
        "about 3,636 reference steps on the record's machine (median step 11.0 ms)"
        in steps
    )
    assert "and 1,739 on the AVX2 one (23.0 ms)" in steps
    assert "fits the budget on the first machine and not on the second" in steps
    assert "2 of those 2 chapters cost more than 1,739." in steps
    # without the second record the page is as before
    assert "AVX2 only" not in chapter_times.page(result)
    # a time measured on an older version of the chapter says so there too
    avx2["chapters"][0]["code_hash"] = "0" * 16
    row = next(
        line
        for line in chapter_times.page(result, avx2).splitlines()
        if "`chapters/gpt.ipynb`" in line
    )
    assert row.endswith("| 66 (**older version**) | 22.0 |"), row
    # an AVX2 record from before the reference step shows "-", as the record's column
    del avx2["chapters"][1]["reference_step_ms"]
    row = next(
        line
        for line in chapter_times.page(result, avx2).splitlines()
        if "`chapters/bert.ipynb`" in line
    )
    assert row.endswith("| 36 | - |"), row


def test_the_speed_tricks_in_attention_keep_the_outputs():
    """ptlm_lite/attention.py's fast paths (benchmarks/README.md) compute what the plain
    code does.
    """
    import torch

    from ptlm_lite import masks
    from ptlm_lite.attention import Dropout, attention, fast_dropout

    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, 3, 7, 4, generator=g) for _ in range(3))
    for mask in (
        masks.causal_mask(7),
        masks.full_mask(7),
        masks.causal_mask(7) & masks.full_mask(7),
    ):
        # is_causal / no-mask fast path
        fast, _ = attention(q, k, v, mask=mask)
        # the written-out equation
        plain, _ = attention(q, k, v, mask=mask, return_weights=True)
        torch.testing.assert_close(fast, plain, atol=1e-5, rtol=1e-5)
    x = torch.ones(400, 1000)
    y = fast_dropout(x, 0.1)
    # drops p of the elements
    assert abs((y == 0).float().mean().item() - 0.1) < 0.005
    # and scales the rest by 1/(1-p)
    torch.testing.assert_close(y.unique(), torch.tensor([0.0, 1 / 0.9]))
    assert fast_dropout(x, 0.1, training=False) is x and fast_dropout(x, 0.0) is x
    drop = Dropout(0.5).eval()
    assert torch.equal(drop(x), x) and drop.train()(x).eq(0).any()


def test_matmul_ceiling_quick_prints_its_table():
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "matmul_ceiling.py"), "--quick",
         "--threads", "1"],
        capture_output=True, text=True, timeout=300, cwd=ROOT,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    assert "fp32 matmul" in lines[0] and "6*N + 12*L*T*d" in lines[0]
    rows = [line.split() for line in lines[2:]]
    assert [r[:3] for r in rows] == [
        ["GPT-2", "quick", "all"], ["BERT-MLM", "quick", "all"],
        ["BERT-MLM", "quick", "useful"],
    ]  # fmt: skip
    assert all(float(r[3]) > 0 and r[4].endswith("%") for r in rows)
