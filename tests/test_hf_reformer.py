"""ptlm_lite's Reformer against Hugging Face's ReformerModelWithLMHead (tiny random
models, nothing downloaded): the same logits with full attention (a sequence no longer
than a chunk), with one round of LSH attention, and with several rounds."""

import pytest
import torch

transformers = pytest.importorskip("transformers")
from ptlm_lite.hf.reformer import config_from_hf, from_hf


def hf_model(n_hashes, n_buckets, seed=0, n_layer=2):
    torch.manual_seed(seed)
    c = transformers.ReformerConfig(
        vocab_size=50, hidden_size=32, num_attention_heads=2, attention_head_size=16,
        num_hidden_layers=n_layer, attn_layers=["lsh"] * n_layer, feed_forward_size=64,
        axial_pos_embds=False, max_position_embeddings=64, lsh_attn_chunk_length=8,
        num_buckets=n_buckets, num_hashes=n_hashes, hash_seed=7, is_decoder=True,
        hidden_dropout_prob=0.0, lsh_attention_probs_dropout_prob=0.0,
        tie_word_embeddings=False, pad_token_id=0,
    )  # fmt: skip
    m = transformers.ReformerModelWithLMHead(c).eval()
    with torch.no_grad():
        for p in m.parameters():
            p.normal_(0, 0.3)  # larger than the init: sharper attention to compare
    return m


def logits(m, ids):
    with torch.no_grad():
        return m(ids).logits


@pytest.mark.parametrize("T, n_buckets", [(8, 4), (32, 4), (64, 8)])
def test_one_round_matches(T, n_buckets):
    hf = hf_model(1, n_buckets, seed=T)
    ids = torch.randint(1, 50, (2, T), generator=torch.Generator().manual_seed(0))
    assert torch.allclose(logits(from_hf(hf), ids), logits(hf, ids), atol=1e-5)


@pytest.mark.parametrize("n_hashes, n_buckets", [(2, 4), (4, 8), (3, 2)])
def test_several_rounds_match(n_hashes, n_buckets):
    hf = hf_model(n_hashes, n_buckets, seed=n_hashes, n_layer=1)
    ids = torch.randint(1, 50, (2, 64), generator=torch.Generator().manual_seed(1))
    ours = logits(from_hf(hf), ids)
    # float32: most tokens to 1e-5. A token that finds only itself in some round gets
    # the score -1e5 there in Hugging Face's code, and float32 rounding of -1e5 +
    # log(copies) leaves its weights summing to 1 ± 1e-3 (in a second layer the error
    # reaches the tokens that read it). Our count form has no such constant.
    d = (ours - logits(hf, ids)).abs().amax(-1)
    assert (d < 1e-5).float().mean() > 0.9 and d.max() < 1e-2
    # float64, two layers: every token
    torch.set_default_dtype(torch.float64)
    try:
        hf64 = hf_model(n_hashes, n_buckets, seed=n_hashes)
        assert torch.allclose(logits(from_hf(hf64), ids), logits(hf64, ids), atol=1e-9)
    finally:
        torch.set_default_dtype(torch.float32)


def test_unsupported_configs_are_named():
    hf = hf_model(1, 4)
    hf.config.axial_pos_embds = True
    with pytest.raises(ValueError, match="axial_pos_embds"):
        config_from_hf(hf.config)
