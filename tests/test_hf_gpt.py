"""ptlm_lite's GPT loads Hugging Face GPT / GPT-2 weights and reproduces their logits
(fp32).

The references are built from tiny random configs: nothing is downloaded.
"""

import pytest
import torch

transformers = pytest.importorskip("transformers")

from ptlm_lite.gpt import GPT  # noqa: E402
from ptlm_lite.hf.gpt import config_from_hf, from_hf  # noqa: E402

TINY = dict(vocab_size=97, n_positions=32, n_embd=48, n_layer=3, n_head=4)


def _hf(kind, **extra):
    torch.manual_seed(0)
    if kind == "openai-gpt":
        cfg = transformers.OpenAIGPTConfig(**TINY, **extra)
        model = transformers.OpenAIGPTLMHeadModel(cfg)
    else:
        cfg = transformers.GPT2Config(**TINY, **extra)
        model = transformers.GPT2LMHeadModel(cfg)
    # random biases and LayerNorm gains too, so a wrong mapping cannot hide
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("bias") or "ln" in name:
                p.add_(0.1 * torch.randn_like(p))
    return model.eval()


@pytest.fixture(params=["openai-gpt", "gpt2"])
def pair(request):
    hf = _hf(request.param)
    return hf, from_hf(hf)


def _ids(B=2, T=17, seed=1):
    return torch.randint(
        0, TINY["vocab_size"], (B, T), generator=torch.Generator().manual_seed(seed)
    )


def test_config_maps_the_switches():
    assert config_from_hf(_hf("openai-gpt").config).pre_norm is False
    c = config_from_hf(_hf("gpt2").config)
    assert c.pre_norm is True and c.activation == "gelu_tanh" and c.pos == "learned"
    assert (
        config_from_hf(_hf("gpt2", activation_function="gelu").config).activation
        == "gelu"
    )


def test_logits_match(pair):
    hf, ours = pair
    ids = _ids()
    with torch.no_grad():
        ref = hf(ids).logits
        got = ours(ids).logits
    torch.testing.assert_close(got, ref, atol=1e-5, rtol=1e-5)


def test_logits_match_with_attention_weights(pair):
    hf, ours = pair
    ids = _ids()
    with torch.no_grad():
        ref = hf(ids, output_attentions=True)
        got = ours(ids, return_attention=True)
    torch.testing.assert_close(got.logits, ref.logits, atol=1e-5, rtol=1e-5)
    if ref.attentions is not None and all(a is not None for a in ref.attentions):
        for a, b in zip(got.attentions, ref.attentions):
            torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)


def test_loss_matches(pair):
    hf, ours = pair
    ids = _ids()
    with torch.no_grad():
        ref = hf(ids, labels=ids).loss  # Hugging Face shifts the labels inside
        got = ours(ids[:, :-1], targets=ids[:, 1:]).loss
    torch.testing.assert_close(got, ref, atol=1e-5, rtol=1e-5)


def test_kv_cache_matches_reference(pair):
    hf, ours = pair
    ids = _ids(T=20)
    with torch.no_grad():
        ref = hf(ids).logits
        cache = ours.new_cache()
        parts = [ours(ids[:, :7], cache=cache).logits]
        for t in range(7, 20):  # one token at a time, as in generation
            parts.append(ours(ids[:, t : t + 1], cache=cache).logits)
    torch.testing.assert_close(torch.cat(parts, dim=1), ref, atol=1e-5, rtol=1e-5)


def test_greedy_generation_matches_reference(pair):
    hf, ours = pair
    ids = _ids(B=2, T=5)
    with torch.no_grad():
        ref = hf.generate(
            ids,
            attention_mask=torch.ones_like(ids),
            max_new_tokens=10,
            do_sample=False,
            pad_token_id=0,
        )
    for use_cache in (True, False):
        got = ours.generate(ids, max_new_tokens=10, temperature=0, use_cache=use_cache)
        assert torch.equal(got, ref)


def test_rejects_unsupported_config():
    with pytest.raises(ValueError, match="activation"):
        config_from_hf(transformers.GPT2Config(**TINY, activation_function="silu"))
    with pytest.raises(ValueError, match="hf_config"):
        config_from_hf(transformers.BertConfig())
