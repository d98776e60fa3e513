"""ptlm_lite's RoBERTa reproduces Hugging Face's RobertaForMaskedLM (tiny random config,
no download), padding and RoBERTa's position offset included.
"""

import pytest
import torch

transformers = pytest.importorskip("transformers")

from ptlm_lite.hf.roberta import (
    config_from_hf,
    convert_state_dict,
    from_hf,
)

PAD = 1  # RoBERTa's <pad>: positions start at 2


def hf_config(**kw):
    return transformers.RobertaConfig(
        **{
            "vocab_size": 97,
            "hidden_size": 32,
            "num_hidden_layers": 2,
            "num_attention_heads": 4,
            "intermediate_size": 64,
            # 12 tokens need positions PAD + 1 ... PAD + 12, so 14 rows
            "max_position_embeddings": 14,
            "type_vocab_size": 1,
            "hidden_act": "gelu",
            "layer_norm_eps": 1e-5,
            "pad_token_id": PAD,
            "bos_token_id": 0,
            "eos_token_id": 2,
            "attn_implementation": "eager",
            **kw,
        }
    )


def perturbed(model, scale=0.1, everything=False):
    """Random LayerNorm gains, biases (and, with ``everything``, all weights), so that a
    swapped LayerNorm, a missing bias or a wrong position row cannot hide."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            if (
                everything
                or "LayerNorm" in name
                or "layer_norm" in name
                or "bias" in name
            ):
                p.add_(torch.randn_like(p) * scale)
    return model


@pytest.fixture(scope="module")
def pair():
    torch.manual_seed(0)
    hf = perturbed(transformers.RobertaForMaskedLM(hf_config()).eval())
    with torch.no_grad():  # the padding row of the position table is zero at init
        hf.roberta.embeddings.position_embeddings.weight.add_(
            torch.randn_like(hf.roberta.embeddings.position_embeddings.weight) * 0.1
        )
    return hf, from_hf(hf)


def batch():
    """Three rows: full, right-padded, left-padded (padding id PAD)."""
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(3, 97, (3, 12), generator=g)
    valid = torch.ones(3, 12, dtype=torch.bool)
    valid[1, 8:] = False
    valid[2, :5] = False
    ids[~valid] = PAD
    return ids, valid


def test_config_round_trip(pair):
    hf, ours = pair
    c = config_from_hf(hf.config)
    assert (c.d_model, c.n_layer, c.n_head, c.d_ff, c.max_len) == (32, 2, 4, 64, 14)
    assert (c.n_segment, c.ln_eps, c.pad_id, c.activation) == (1, 1e-5, PAD, "gelu")
    assert ours.config == c
    with pytest.raises(ValueError, match="hidden_act"):
        config_from_hf(hf_config(hidden_act="gelu_new"))


def test_same_logits_with_padding(pair):
    """Every position, padded ones included, to 1e-5 in fp32."""
    hf, ours = pair
    ids, valid = batch()
    with torch.no_grad():
        ref = hf(input_ids=ids, attention_mask=valid.long()).logits
        out = ours(ids, valid=valid).logits
    assert out.dtype == ref.dtype == torch.float32
    torch.testing.assert_close(out, ref, atol=1e-5, rtol=1e-5)


def test_same_logits_without_attention_mask(pair):
    """Neither is told where the padding is: both infer it from the pad id (positions)
    but attend to it; still the same function."""
    hf, ours = pair
    ids, valid = batch()
    with torch.no_grad():
        ref = hf(input_ids=ids, attention_mask=torch.ones_like(ids)).logits
        out = ours(ids, valid=torch.ones_like(valid)).logits
    torch.testing.assert_close(out, ref, atol=1e-5, rtol=1e-5)


def test_positions_skip_padding(pair):
    """A left-padded row gives its real tokens the same outputs as the unpadded row:
    positions count real tokens from PAD + 1 (BERT's 0, 1, 2, ... would not)."""
    _, ours = pair
    ids, valid = batch()
    real = ids[2][valid[2]][None]  # (1, 7)
    with torch.no_grad():
        alone = ours(real).logits[0]
        padded = ours(ids[2:3], valid=valid[2:3]).logits[0][valid[2]]
    torch.testing.assert_close(padded, alone, atol=1e-5, rtol=1e-5)


def test_same_attention_probabilities(pair):
    hf, ours = pair
    ids, valid = batch()
    with torch.no_grad():
        ref = hf(input_ids=ids, attention_mask=valid.long(), output_attentions=True)
        out = ours(ids, valid=valid, return_attention=True)
    assert len(out.attentions) == len(ref.attentions) == 2
    for a, b in zip(out.attentions, ref.attentions):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)
        assert bool((a[~valid[:, None, None, :].expand_as(a)] == 0).all())


def test_same_masked_lm_loss(pair):
    hf, ours = pair
    ids, valid = batch()
    labels = torch.full_like(ids, -100)
    labels[0, 3], labels[1, 2], labels[2, 9] = 17, 40, 5
    with torch.no_grad():
        ref = hf(input_ids=ids, attention_mask=valid.long(), labels=labels).loss
        out = ours(ids, valid=valid, targets=labels)
    assert out.logits.shape == (3, 97)  # only the masked positions are scored
    torch.testing.assert_close(out.loss, ref, atol=1e-5, rtol=1e-5)


def test_every_tensor_is_converted(pair):
    hf, ours = pair
    converted = convert_state_dict(hf.state_dict())
    assert all(k.startswith(("roberta.", "mlm.")) for k in converted)
    assert ours.hf_missing == ["roberta.pooler"]  # RobertaForMaskedLM has no pooler
    assert torch.equal(ours.mlm.decoder.weight, ours.roberta.embed.tok.weight)
    with pytest.raises(KeyError, match="no rule"):
        convert_state_dict({"roberta.unknown.weight": torch.zeros(1)})


def test_headless_checkpoint_loads(pair):
    """RobertaModel (with its pooler, no MLM head): the hidden states and the pooled
    vector match; the missing head is named in ``hf_missing``."""
    hf_mlm, _ = pair
    torch.manual_seed(3)
    hf = perturbed(transformers.RobertaModel(hf_mlm.config).eval(), 0.05, True)
    ours = from_hf(hf)
    assert "mlm.dense" in ours.hf_missing and "roberta.pooler" not in ours.hf_missing
    ids, valid = batch()
    with torch.no_grad():
        ref = hf(input_ids=ids, attention_mask=valid.long())
        mine = ours(ids, valid=valid)
    torch.testing.assert_close(
        mine.last_hidden, ref.last_hidden_state, atol=1e-5, rtol=1e-5
    )
    torch.testing.assert_close(mine.pooled, ref.pooler_output, atol=1e-5, rtol=1e-5)
