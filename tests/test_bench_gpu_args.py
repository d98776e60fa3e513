"""bench_train.py's GPU options, checked on a CPU: the arguments, the 124m shape (its
parameter count against Hugging Face's GPT-2 124M, on the meta device: nothing is
allocated), the error for ``--device cuda`` without CUDA, and the GPU report (device,
versions, dtype, matmul peak, TFLOP/s) with the CUDA calls stood in for.
"""

import argparse
import json
import pathlib
import sys

import pytest
import torch

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import bench_train
import matmul_ceiling


def test_gpu_options_parse_and_the_124m_shape_has_its_own_batch_and_vocabularies():
    args = bench_train.parse_args(
        ["--device", "cpu", "--dtype", "bf16", "--presets", "124m", "small"]
    )
    assert (args.device, args.dtype, args.presets) == ("cpu", "bf16", ["124m", "small"])
    assert args.compile is False and args.fused is True and args.peak_size == 8192
    assert bench_train.batch_shape("124m", args) == (16, 512)
    assert bench_train.batch_shape("small", args) == (32, 128)
    given = bench_train.parse_args(["--presets", "124m", "--batch", "8"])
    assert bench_train.batch_shape("124m", given) == (8, 512)
    assert bench_train.sizes("124m", quick=False) == {
        "d_model": 768,
        "n_layer": 12,
        "n_head": 12,
        "d_ff": 3072,
    }
    assert bench_train.vocab("gpt", "124m") == 50257
    assert bench_train.vocab("bert", "124m") == 30522
    assert bench_train.vocab("gpt", "small") == bench_train.GPT_VOCAB
    assert bench_train.vocab("gpt", "124m", quick=True) == bench_train.GPT_VOCAB
    # the defaults are what they were: CPU, fp32, tiny and small
    default = bench_train.parse_args([])
    assert (default.device, default.dtype, default.presets) == (
        "cpu",
        "fp32",
        ["tiny", "small"],
    )
    assert bench_train.batch_shape("tiny", default) == (32, 128)
    quick = bench_train.parse_args(["--quick", "--presets", "124m", "small"])
    assert quick.presets == ["124m"] and bench_train.batch_shape("124m", quick) == (
        4,
        16,
    )
    with pytest.raises(SystemExit):
        bench_train.parse_args(["--dtype", "fp16"])


def _count(model) -> int:
    return sum(p.numel() for p in model.parameters())


def test_the_124m_shape_is_gpt2_124m_and_bert_base():
    transformers = pytest.importorskip("transformers")
    s = bench_train.sizes("124m", quick=False)
    with torch.device("meta"):
        # n_positions 1024 as in GPT-2's own config (the benchmark uses T = 512)
        hf, ours = bench_train.gpt_pair(s, 1024, 0.1, bench_train.vocab("gpt", "124m"))
        reference = transformers.GPT2LMHeadModel(
            transformers.GPT2Config(n_embd=768, n_layer=12, n_head=12)
        )
    assert _count(ours) == _count(hf) == _count(reference)
    assert 124e6 < _count(reference) < 125e6  # 124,439,808
    with torch.device("meta"):
        hf, ours = bench_train.bert_pair(s, 512, 0.1, bench_train.vocab("bert", "124m"))
        reference = transformers.BertForMaskedLM(transformers.BertConfig())
    # ptlm_lite's BertForPreTraining also holds the pooler and the NSP head
    extra = _count(ours.bert.pooler) + _count(ours.nsp)
    assert _count(ours) - extra == _count(hf) == _count(reference)  # 109,514,298


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")
@pytest.mark.parametrize("main", [bench_train.parse_args, matmul_ceiling.main])
def test_device_cuda_without_cuda_is_a_clear_error(main, capsys):
    with pytest.raises(SystemExit) as e:
        main(["--device", "cuda"])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "--device cuda" in err and "no CUDA device" in err


def _fake_cuda(monkeypatch, run):
    """CUDA's queries stood in for; each row runs at the toy size on the CPU."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda *a: "Fake GPU 80GB")
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda *a: (9, 0))
    monkeypatch.setattr(torch.version, "cuda", "13.0")
    peaks = iter([5e14, 4e14])
    monkeypatch.setattr(
        bench_train, "cuda_matmul_flops", lambda n, dtype, reps: next(peaks)
    )
    monkeypatch.setattr(bench_train, "run", run)


def _toy_row(real_run):
    def run(kind, preset, args, peak):
        toy = argparse.Namespace(
            **{
                **vars(args),
                "device": "cpu",
                "quick": True,
                "seq_len": 16,
                "batch": 4,
                "warmup": 1,
                "rounds": 1,
                "steps": 1,
            }
        )
        return {**real_run(kind, preset, toy, peak), "preset": preset}

    return run


def test_the_gpu_report_names_the_card_the_versions_the_dtype_and_the_peak(
    monkeypatch, tmp_path, capsys
):
    pytest.importorskip("transformers")
    _fake_cuda(monkeypatch, _toy_row(bench_train.run))
    out = tmp_path / "cuda.json"
    threads = str(torch.get_num_threads())
    argv = ["--device", "cuda", "--dtype", "bf16", "--presets", "124m", "small"]
    assert bench_train.main([*argv, "--threads", threads, "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "Fake GPU 80GB (CUDA 13.0)" in text
    assert "bf16 matmul (torch.mm 8192x8192 @ 8192x8192" in text and "500.0" in text
    assert "of bf16 mm" in text and "TFLOP/s" in text and "bf16 autocast" in text
    for preset in ("124m", "small"):
        for name in ("ptlm_lite", "transformers"):
            assert f"GPT-2     {preset:<6} {name}" in text
    result = json.loads(out.read_text())
    assert result["device"] == {
        "type": "cuda",
        "name": "Fake GPU 80GB",
        "cuda": "13.0",
        "capability": [9, 0],
    }
    assert result["dtype"] == "bf16" and result["autocast"] == "bfloat16"
    assert result["allow_tf32"] is False and result["torch"] == torch.__version__
    assert result["matmul"]["shape"] == [8192] * 3 and result["matmul"]["dtype"] == (
        "bf16"
    )
    assert (result["matmul"]["flops_before"], result["matmul"]["flops_after"]) == (
        5e14,
        4e14,
    )
    assert result["failed"] == [] and len(result["rows"]) == 4
    for r in result["rows"]:
        assert r["hf_attn_implementation"] == "sdpa"
        for v in r["impl"].values():
            assert v["tflops"]["all"] == pytest.approx(
                v["median"] * r["flops_per_token"]["all"] / 1e12
            )
            assert v["mfu"]["all"] == pytest.approx(
                v["median"] * r["flops_per_token"]["all"] / 5e14
            )


def test_a_row_that_fails_is_reported_and_the_others_still_run(
    monkeypatch, tmp_path, capsys
):
    pytest.importorskip("transformers")
    toy = _toy_row(bench_train.run)

    def run(kind, preset, args, peak):
        if kind == "bert":
            raise RuntimeError("CUDA out of memory (a stand-in)")
        return toy(kind, preset, args, peak)

    _fake_cuda(monkeypatch, run)
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: None)
    out = tmp_path / "cuda.json"
    threads = str(torch.get_num_threads())
    argv = ["--device", "cuda", "--presets", "small", "--threads", threads]
    assert bench_train.main([*argv, "--json", str(out)]) == 1
    captured = capsys.readouterr()
    assert "FAILED: bert small: RuntimeError('CUDA out of memory" in captured.out
    assert "fp32 matmul" in captured.out and "allow_tf32 False" in captured.out
    result = json.loads(out.read_text())
    assert [r["model"] for r in result["rows"]] == ["GPT-2"]
    assert result["failed"][0]["model"] == "bert"


def test_quick_on_the_cpu_in_fp32_prints_its_table_as_before(capsys):
    pytest.importorskip("transformers")
    threads = str(torch.get_num_threads())
    argv = ["--quick", "--device", "cpu", "--dtype", "fp32", "--threads", threads]
    assert bench_train.main(argv) == 0
    text = capsys.readouterr().out
    assert "fp32 matmul (torch.mm 64x32 @ 32x64)" in text and "GFLOP/s" in text
    assert "batch 4 x 16 tokens; dropout 0.1; AdamW fused;" in text
    assert "of fp32 mm" in text and "TFLOP/s" not in text and "autocast" not in text
    for model in ("GPT-2", "BERT-MLM"):
        assert f"{model:<9} quick  ptlm_lite" in text
        assert f"{model:<9} quick  transformers" in text
