"""ptlm_lite's ELECTRA reproduces Hugging Face's ElectraForPreTraining (the
discriminator) and ElectraForMaskedLM (the generator): tiny random configs, no download,
padded rows, 1e-5 in fp32.
"""

import pytest
import torch

transformers = pytest.importorskip("transformers")

from ptlm_lite.hf.electra import config_from_hf, from_hf  # noqa: E402

V = 97


def hf_config(hidden, embedding, heads, ff):
    return transformers.ElectraConfig(
        vocab_size=V,
        embedding_size=embedding,
        hidden_size=hidden,
        num_hidden_layers=2,
        num_attention_heads=heads,
        intermediate_size=ff,
        max_position_embeddings=24,
        type_vocab_size=2,
        hidden_act="gelu",
        layer_norm_eps=1e-12,
        attn_implementation="eager",
    )


def perturb(model):
    # random LayerNorm gains and biases: a swapped LN or a missing bias cannot hide
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "LayerNorm" in name or name.endswith("bias"):
                p.add_(torch.randn_like(p) * 0.1)


@pytest.fixture(scope="module", params=[(32, 32), (32, 24)], ids=["E=D", "E<D"])
def models(request):
    """(discriminator, generator, ours): a generator of 1/4 (E=D) or 1/2 the width
    (E<D: both project their embeddings), embeddings shared as ELECTRA shares them."""
    hidden, embedding = request.param
    torch.manual_seed(0)
    gen_hidden = hidden // 4 if embedding == hidden else hidden // 2
    disc = transformers.ElectraForPreTraining(
        hf_config(hidden, embedding, 4, 64)
    ).eval()
    gen = transformers.ElectraForMaskedLM(
        hf_config(gen_hidden, embedding, gen_hidden // 8, 64 * gen_hidden // hidden)
    ).eval()
    perturb(disc)
    perturb(gen)
    with torch.no_grad():  # one set of embedding tables for both, as in ELECTRA
        for name in ("word_embeddings", "position_embeddings", "token_type_embeddings"):
            getattr(gen.electra.embeddings, name).weight.copy_(
                getattr(disc.electra.embeddings, name).weight
            )
        gen.electra.embeddings.LayerNorm.load_state_dict(
            disc.electra.embeddings.LayerNorm.state_dict()
        )
        gen.generator_lm_head.weight = gen.electra.embeddings.word_embeddings.weight
    return disc, gen, from_hf(disc, gen)


def batch():
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(5, V, (3, 12), generator=g)
    valid = torch.ones(3, 12, dtype=torch.bool)
    valid[1, 8:] = False  # padding in the batch
    valid[2, 5:] = False
    ids[~valid] = 0
    segments = torch.zeros_like(ids)
    segments[:, 6:] = 1
    segments[~valid] = 0
    return ids, segments, valid


def test_config(models):
    disc, gen, ours = models
    c = config_from_hf(disc.config, gen.config)
    assert (c.d_model, c.n_layer, c.n_head, c.d_ff) == (32, 2, 4, 64)
    assert ours.gen_config.d_model == gen.config.hidden_size
    assert ours.gen_config.n_head == gen.config.num_attention_heads
    assert ours.gen_config.d_ff == gen.config.intermediate_size
    assert (ours.config.d_embed or 32) == disc.config.embedding_size


def test_discriminator_logits_match(models):
    disc, _, ours = models
    ids, segments, valid = batch()
    with torch.no_grad():
        ref = disc(
            input_ids=ids, attention_mask=valid.long(), token_type_ids=segments
        ).logits
        got = ours(ids, segments, valid).logits
    assert got.shape == ref.shape == (3, 12)
    assert torch.allclose(got[valid], ref[valid], atol=1e-5)


def test_generator_logits_match(models):
    _, gen, ours = models
    ids, segments, valid = batch()
    with torch.no_grad():
        ref = gen(
            input_ids=ids, attention_mask=valid.long(), token_type_ids=segments
        ).logits
        got = ours.generator_logits(ids, segments, valid)
    assert got.shape == ref.shape == (3, 12, V)
    assert torch.allclose(got[valid], ref[valid], atol=1e-5)


def test_discriminator_loss_matches(models):
    """Hugging Face's loss: binary cross-entropy over the real tokens."""
    disc, _, ours = models
    ids, segments, valid = batch()
    labels = (torch.arange(12) % 3 == 0).long().expand(3, 12)
    with torch.no_grad():
        ref = disc(
            input_ids=ids,
            attention_mask=valid.long(),
            token_type_ids=segments,
            labels=labels,
        ).loss
        logits = ours(ids, segments, valid).logits
        got = torch.nn.functional.binary_cross_entropy_with_logits(
            logits[valid], labels[valid].float()
        )
    assert torch.allclose(got, ref, atol=1e-6)


def test_unshared_generator_embeddings_are_refused(models):
    disc, gen, _ = models
    other = transformers.ElectraForMaskedLM(gen.config).eval()
    with pytest.raises(ValueError, match="shares its embeddings"):
        from_hf(disc, other)


def test_discriminator_alone_loads(models):
    disc, _, _ = models
    ours = from_hf(disc)
    assert "mlm" in " ".join(ours.hf_missing) and "bert.pooler" in ours.hf_missing
    ids, segments, valid = batch()
    with torch.no_grad():
        ref = disc(input_ids=ids, attention_mask=valid.long(), token_type_ids=segments)
        assert torch.allclose(
            ours(ids, segments, valid).logits[valid], ref.logits[valid], atol=1e-5
        )
