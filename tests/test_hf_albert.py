"""ptlm_lite's ALBERT reproduces Hugging Face's AlbertForPreTraining (tiny random config,
no download): MLM and SOP logits with padding, every layer shared (one group) or none
(one group per layer).
"""

import pytest
import torch

transformers = pytest.importorskip("transformers")

from ptlm_lite.hf.albert import config_from_hf, convert_state_dict, from_hf  # noqa: E402


def _hf(groups):
    torch.manual_seed(0)
    hf_config = transformers.AlbertConfig(
        vocab_size=97,
        embedding_size=16,
        hidden_size=32,
        num_hidden_layers=3,
        num_hidden_groups=groups,
        num_attention_heads=4,
        intermediate_size=64,
        max_position_embeddings=24,
        type_vocab_size=2,
        attn_implementation="eager",
    )
    hf = transformers.AlbertForPreTraining(hf_config).eval()
    # random LayerNorm gains and biases: a swapped LN or a missing bias cannot hide
    with torch.no_grad():
        for name, p in hf.named_parameters():
            if "LayerNorm" in name or "layer_norm" in name or name.endswith("bias"):
                p.add_(torch.randn_like(p) * 0.1)
    return hf


@pytest.fixture(scope="module", params=[1, 3], ids=["shared", "not-shared"])
def pair(request):
    hf = _hf(request.param)
    return hf, from_hf(hf)


def batch():
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(5, 97, (3, 12), generator=g)
    valid = torch.ones(3, 12, dtype=torch.bool)
    valid[1, 8:] = False  # padding in the batch
    valid[2, 5:] = False
    ids[~valid] = 0
    segments = torch.zeros_like(ids)
    segments[:, 6:] = 1
    segments[~valid] = 0
    return ids, segments, valid


def test_config(pair):
    hf, ours = pair
    c = config_from_hf(hf.config)
    assert (c.d_embed, c.d_model, c.n_layer, c.activation) == (16, 32, 3, "gelu_tanh")
    assert c.sharing == ("all" if hf.config.num_hidden_groups == 1 else "none")
    assert len(ours.bert.blocks) == hf.config.num_hidden_groups
    assert ours.config == c


def test_same_mlm_and_sop_logits_with_padding(pair):
    hf, ours = pair
    ids, segments, valid = batch()
    with torch.no_grad():
        ref = hf(input_ids=ids, token_type_ids=segments, attention_mask=valid.long())
        out = ours(ids, segments, valid)
    torch.testing.assert_close(out.logits, ref.prediction_logits, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(
        out.extra["nsp_logits"], ref.sop_logits, atol=1e-5, rtol=1e-5
    )


def test_same_attention_probabilities(pair):
    hf, ours = pair
    ids, segments, valid = batch()
    with torch.no_grad():
        ref = hf(
            input_ids=ids,
            token_type_ids=segments,
            attention_mask=valid.long(),
            output_attentions=True,
        )
        out = ours(ids, segments, valid, return_attention=True)
    assert len(out.attentions) == len(ref.attentions) == 3
    for a, b in zip(out.attentions, ref.attentions):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)


def test_every_tensor_is_converted_and_bad_groupings_raise(pair):
    hf, _ = pair
    converted = convert_state_dict(hf.state_dict())
    assert all(k.startswith(("bert.", "mlm.", "nsp.")) for k in converted)
    with pytest.raises(KeyError, match="no rule"):
        convert_state_dict({"albert.unknown.weight": torch.zeros(1)})
    odd = transformers.AlbertConfig(num_hidden_layers=4, num_hidden_groups=2)
    with pytest.raises(ValueError, match="num_hidden_groups"):
        config_from_hf(odd)
