"""ptlm_lite's BERT reproduces Hugging Face's BertForPreTraining (tiny random config, no
download).
"""

import pytest
import torch

transformers = pytest.importorskip("transformers")

from ptlm_lite.hf.bert import config_from_hf, convert_state_dict, from_hf  # noqa: E402


@pytest.fixture(scope="module")
def pair():
    torch.manual_seed(0)
    hf_config = transformers.BertConfig(
        vocab_size=97,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=64,
        max_position_embeddings=24,
        type_vocab_size=2,
        hidden_act="gelu",
        layer_norm_eps=1e-12,
        attn_implementation="eager",
    )
    hf = transformers.BertForPreTraining(hf_config).eval()
    # Random LayerNorm gains and biases, so that a swapped LN or a missing bias cannot
    # hide.
    with torch.no_grad():
        for name, p in hf.named_parameters():
            if "LayerNorm" in name or name.endswith("bias"):
                p.add_(torch.randn_like(p) * 0.1)
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


def test_config_round_trip(pair):
    hf, ours = pair
    c = config_from_hf(hf.config)
    assert (c.d_model, c.n_layer, c.n_head, c.d_ff, c.max_len, c.n_segment) == (
        32,
        2,
        4,
        64,
        24,
        2,
    )
    assert ours.config == c


def test_same_mlm_and_nsp_logits_with_padding(pair):
    hf, ours = pair
    ids, segments, valid = batch()
    with torch.no_grad():
        ref = hf(input_ids=ids, token_type_ids=segments, attention_mask=valid.long())
        out = ours(ids, segments, valid)
    # Every position, padded ones included: both let a pad query attend to the real
    # keys.
    torch.testing.assert_close(out.logits, ref.prediction_logits, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(
        out.extra["nsp_logits"], ref.seq_relationship_logits, atol=1e-5, rtol=1e-5
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
    assert len(out.attentions) == len(ref.attentions) == 2
    for a, b in zip(out.attentions, ref.attentions):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)
        # nobody looks at padding
        assert bool((a[~valid[:, None, None, :].expand_as(a)] == 0).all())


def test_every_tensor_is_converted(pair):
    hf, _ = pair
    converted = convert_state_dict(hf.state_dict())
    assert all(not k.startswith(("cls.", "bert.encoder")) for k in converted)
    with pytest.raises(KeyError, match="no rule"):
        convert_state_dict({"bert.unknown.weight": torch.zeros(1)})


@pytest.mark.parametrize("cls", ["BertForMaskedLM", "BertModel"])
def test_mlm_only_and_headless_checkpoints_load(pair, cls):
    """BertForMaskedLM has no pooler and no NSP head; BertModel has no MLM head: both
    load, and what they do have gives the same outputs; the missing heads are named in
    ``hf_missing``.
    """
    hf_pre, _ = pair
    hf = getattr(transformers, cls)(hf_pre.config).eval()
    with torch.no_grad():
        for name, p in hf.named_parameters():
            p.add_(torch.randn_like(p) * 0.05)
    ours = from_hf(hf)
    ids, segments, valid = batch()
    with torch.no_grad():
        out = hf(input_ids=ids, token_type_ids=segments, attention_mask=valid.long())
        mine = ours(ids, segments, valid)
    if cls == "BertForMaskedLM":
        assert ours.hf_missing == ["bert.pooler", "nsp"]
        assert torch.allclose(out.logits[valid], mine.logits[valid], atol=1e-5)
    else:
        assert "nsp" in ours.hf_missing and "mlm.dense" in ours.hf_missing
        assert torch.allclose(
            out.last_hidden_state[valid], mine.last_hidden[valid], atol=1e-5
        )
