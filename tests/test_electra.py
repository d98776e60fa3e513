"""ELECTRA (ptlm_lite.electra, ptlm_lite.recipes.electra): replaced-token labels (a
sample equal to the original is "original"), one set of shared embeddings, the
generator's size, the joint loss, the FLOPs count, bad input; the chapter's
exercises. The Hugging Face reference is tests/test_hf_electra.py."""

import pytest
import torch

import ptlm_lite as P
from ptlm_lite import exercises as E
from ptlm_lite import flops
from ptlm_lite.electra import (
    ElectraConfig,
    ElectraForPreTraining,
    generator_config,
    replace_tokens,
    replaced_labels,
    sample_replacements,
)
from ptlm_lite.recipes import electra as R

PAD, CLS, SEP, MASK, V = 0, 2, 3, 4, 60


def config(**kw):
    return P.preset("electra-tiny", vocab_size=V, max_len=24, **kw)


def masked_batch(seed=0, B=4, T=16):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(7, V, (B, T), generator=g)
    ids[:, 0], ids[:, -1] = CLS, SEP
    valid = torch.ones(B, T, dtype=torch.bool)
    valid[1, 10:] = False  # padding
    ids[~valid] = PAD
    targets = torch.full_like(ids, -100)
    sel = (torch.rand(B, T, generator=g) < 0.3) & valid
    sel[:, 0] = sel[:, -1] = False
    sel[0, 3] = True
    targets[sel] = ids[sel]
    inputs = torch.where(sel, MASK, ids)
    return {"ids": inputs, "valid": valid, "targets": targets}, ids


def test_equal_samples_are_original():
    ids = torch.tensor([[CLS, 10, MASK, MASK, MASK, SEP, PAD]])
    targets = torch.tensor([[-100, -100, 11, 12, 13, -100, -100]])
    sampled = torch.tensor([11, 40, 13])  # the first and last come back unchanged
    original, corrupted = replace_tokens(ids, targets, sampled)
    assert original.tolist() == [[CLS, 10, 11, 12, 13, SEP, PAD]]
    assert corrupted.tolist() == [[CLS, 10, 11, 40, 13, SEP, PAD]]
    labels = replaced_labels(original, corrupted, original != PAD)
    assert labels.tolist() == [[0, 0, 0, 1, 0, 0, 0]]
    assert labels.dtype == torch.float32
    # a change on padding is never a replacement
    corrupted[0, -1] = 9
    assert replaced_labels(original, corrupted, original != PAD)[0, -1] == 0


def test_forward_labels_follow_the_sample():
    torch.manual_seed(0)
    model = ElectraForPreTraining(config(), seed=0)
    batch, original = masked_batch()
    out = model(**batch)
    c, r = out.extra["corrupted"], out.extra["replaced"]
    sel = batch["targets"] != -100
    assert torch.equal(c[~sel], original[~sel])  # unmasked positions: the original
    assert torch.equal(r.bool(), (c != original) & batch["valid"])
    assert (r[~sel] == 0).all()
    # every [MASK] of the input is gone: a masked position holds the generator's draw
    # (an untrained generator may draw [MASK] itself, as any token; a trained one
    # never does, [MASK] never being a target)
    assert (batch["ids"][sel] == MASK).all() and (c[~sel] != MASK).all()
    assert out.logits.shape == original.shape
    assert set(out.extra) >= {"mlm_loss", "disc_loss", "corrupted", "replaced"}
    w = model.config.disc_weight
    expected = out.extra["mlm_loss"] + w * out.extra["disc_loss"]
    assert torch.allclose(out.loss, expected)


def test_an_exact_generator_replaces_nothing():
    """With the generator's output forced onto the originals, every label is 0."""
    model = ElectraForPreTraining(config(), seed=0)
    batch, original = masked_batch()
    with torch.no_grad():
        model.mlm.decoder.bias.fill_(0)
        model.mlm.decoder.bias[:] = -1e4
    sel = batch["targets"] != -100
    logits = torch.full((int(sel.sum()), V), -1e4)
    logits[torch.arange(len(logits)), batch["targets"][sel]] = 0
    sampled = sample_replacements(logits)
    assert torch.equal(sampled, batch["targets"][sel])
    orig, corrupted = replace_tokens(batch["ids"], batch["targets"], sampled)
    assert torch.equal(corrupted, original)
    assert replaced_labels(orig, corrupted, batch["valid"]).sum() == 0


def test_sampling_follows_the_softmax():
    """Inverse-CDF sampling draws each token at its softmax probability, never one of
    probability 0, and follows its generator."""
    probs = torch.tensor([0.1, 0.0, 0.6, 0.3, 0.0])
    logits = probs.log().expand(40_000, -1)
    g = torch.Generator().manual_seed(0)
    drawn = sample_replacements(logits, generator=g)
    share = torch.bincount(drawn, minlength=5) / len(drawn)
    assert share[1] == 0 and share[4] == 0  # probability 0: never
    assert torch.allclose(share, probs, atol=0.01)
    again = sample_replacements(logits, generator=torch.Generator().manual_seed(0))
    assert torch.equal(drawn, again)
    assert sample_replacements(torch.zeros(0, 5)).shape == (0,)


def test_cached_batches_are_made_once():
    made = []

    def batches(step):
        made.append(step)
        return {"ids": torch.full((2, 3), step)}

    get = R.cached(batches)
    assert get(4) is get(4) and made == [4]
    assert int(get(5)["ids"][0, 0]) == 5 and made == [4, 5]
    with pytest.raises(TypeError, match="batches must be a function"):
        R.cached([1, 2])


def test_zero_shot_rows_shared_across_models():
    """Scoring with rows made once gives what scoring from the task gives, one 1/0
    per test question; the model's mode comes back as it was."""
    from types import SimpleNamespace

    class Tok:  # one id per character
        def __init__(self):
            self.special_ids = {"pad": PAD, "cls": CLS, "sep": SEP, "mask": MASK}

        def encode(self, text):
            return [7 + ord(c) % (V - 7) for c in text]

    test = [
        {"context": "the sky is", "endings": ["blue", "a cook"], "label": 0},
        {"context": "she works as", "endings": ["red", "a cook"], "label": 1},
        {"context": "it is", "endings": ["green", "a baker"], "label": 0},
    ]
    task = SimpleNamespace(kind="choice", test=test)
    tok = Tok()
    rows = R.choice_rows(task, tok)
    assert rows["ids"].shape[0] == 6 and rows["n_choices"] == 2
    assert rows["ending"][0].sum() == len(tok.encode(" blue"))
    models = [ElectraForPreTraining(config(), seed=s) for s in (0, 1)]
    for m in models:
        m.train()
        shared = R.zero_shot_choice(m, task, tok, rows=rows)
        alone = R.zero_shot_choice(m, task, tok, batch_size=4)
        assert shared.shape == (3,) and set(shared) <= {0.0, 1.0}
        assert (shared == alone).all() and m.training
    other = SimpleNamespace(kind="choice", test=test[:2])
    with pytest.raises(ValueError, match="rows must be choice_rows"):
        R.zero_shot_choice(models[0], other, tok, rows=rows)
    with pytest.raises(ValueError, match="choice task"):
        R.choice_rows(SimpleNamespace(kind="classification", test=test), tok)


def test_embeddings_are_one_tensor():
    model = ElectraForPreTraining(config(), seed=0)
    d, g = model.bert.embed, model.generator.embed
    for name in ("tok", "pos", "seg", "ln"):
        assert getattr(g, name) is getattr(d, name)
    assert model.mlm.decoder.weight is d.tok.weight
    # one tensor, one gradient: the generator's loss reaches the shared table
    batch, _ = masked_batch()
    out = model(**batch)
    out.extra["mlm_loss"].backward()
    assert d.tok.weight.grad is not None and d.tok.weight.grad.abs().sum() > 0
    assert all(p.grad is None for p in model.rtd.parameters())
    n_unique = len({id(p) for p in model.parameters()})
    assert n_unique == len(list(model.parameters()))  # counted once


def test_discriminator_loss_does_not_train_the_generator():
    model = ElectraForPreTraining(config(), seed=0)
    batch, _ = masked_batch()
    model(**batch).extra["disc_loss"].backward()
    assert all(
        p.grad is None or p.grad.abs().sum() == 0
        for p in [*model.generator.blocks.parameters(), *model.mlm.dense.parameters()]
    )


def test_generator_size():
    c = config()
    for f, d, h in ((0.25, 16, 1), (0.5, 32, 2), (1.0, 64, 4)):
        g = generator_config(c.replace(gen_fraction=f))
        E = g.d_embed or g.d_model  # the shared tables' width
        assert (g.d_model, g.n_head, g.n_layer, E) == (d, h, c.n_layer, 64)
        assert g.d_ff == round(f * c.d_ff)
    base = P.preset("electra-base")
    assert generator_config(base).d_model == 256 and base.gen_fraction == pytest.approx(
        1 / 3
    )
    # factorised embeddings: LayerNorm at E, then each model's own projection
    m = ElectraForPreTraining(config(d_embed=32, gen_fraction=0.25), seed=0)
    assert m.bert.embed.ln.normalized_shape == (32,)
    assert m.bert.embed.project is not m.generator.embed.project
    assert m.generator.embed.project.weight.shape == (16, 32)  # E=32 -> 16


def test_disc_loss_on_masked_only():
    batch, _ = masked_batch()
    torch.manual_seed(1)
    a = ElectraForPreTraining(config(), seed=0)(**batch)
    torch.manual_seed(1)
    b = ElectraForPreTraining(config(disc_loss_on="masked"), seed=0)(**batch)
    sel = batch["targets"] != -100
    expected = torch.nn.functional.binary_cross_entropy_with_logits(
        b.logits[sel], b.extra["replaced"][sel]
    )
    assert torch.allclose(b.extra["disc_loss"], expected)
    assert not torch.allclose(a.extra["disc_loss"], b.extra["disc_loss"])


def test_padding_never_leaks():
    model = ElectraForPreTraining(config(), seed=0).eval()
    batch, original = masked_batch()
    other = original.clone()
    other[1, 10:] = 17  # change the padded tokens only
    with torch.no_grad():
        a = model(original, valid=batch["valid"]).logits
        b = model(other, valid=batch["valid"]).logits
    assert torch.allclose(a[1, :10], b[1, :10], atol=1e-6)


def test_training_lowers_the_loss():
    model = ElectraForPreTraining(config(), seed=0)
    batch, _ = masked_batch()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    torch.manual_seed(0)
    first = None
    for _ in range(30):
        loss = model(**batch).loss
        first = first if first is not None else loss.item()
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert loss.item() < first - 5


def test_flops_count():
    c, m = config(), P.preset("bert-tiny", vocab_size=V, max_len=24)
    g = generator_config(c)
    d, T, B = c.d_model, 16, 8
    gen = flops.total(g, T, B * T, head=0.15 * (g.d_model * 64 + 64 * V))
    disc = flops.total(c, T, B * T, head=d * d + d)
    assert R.step_flops(c, B, T) == pytest.approx(gen + disc)
    mlm = flops.total(m, T, B * T, head=0.15 * (d * d + d * V))
    assert R.step_flops(m, B, T) == pytest.approx(mlm)
    steps = R.matched_steps(100, c, m, B, T)
    assert abs(steps * R.step_flops(m, B, T) / (100 * R.step_flops(c, B, T)) - 1) < 0.01
    # a wider generator costs more
    assert R.step_flops(c.replace(gen_fraction=1.0), B, T) > R.step_flops(c, B, T)


def test_bad_inputs():
    with pytest.raises(TypeError, match="ElectraConfig"):
        ElectraForPreTraining(P.preset("bert-tiny", vocab_size=V))
    with pytest.raises(ValueError, match="gen_fraction"):
        config(gen_fraction=0.0)
    with pytest.raises(ValueError, match="gen_fraction"):
        config(gen_fraction=1.5)
    with pytest.raises(ValueError, match="disc_loss_on"):
        config(disc_loss_on="some")
    with pytest.raises(ValueError, match="disc_weight"):
        config(disc_weight=0.0)
    with pytest.raises(TypeError, match="ElectraConfig"):
        generator_config(P.preset("bert-tiny", vocab_size=V))
    model = ElectraForPreTraining(config(), seed=0)
    batch, _ = masked_batch()
    with pytest.raises(ValueError, match="targets must have the shape"):
        model(batch["ids"], targets=batch["targets"][:, :5])
    with pytest.raises(ValueError, match="ids must be in"):
        model(batch["ids"] + V)
    with pytest.raises(ValueError, match="one token per masked position"):
        replace_tokens(batch["ids"], batch["targets"], torch.tensor([1, 2]))
    with pytest.raises(ValueError, match="one shape"):
        replaced_labels(batch["ids"], batch["ids"][:, :3], batch["valid"])
    with pytest.raises(TypeError, match="logits"):
        sample_replacements(torch.zeros(3))
    with pytest.raises(
        TypeError, match="ElectraForPreTraining or a BertForPreTraining"
    ):
        R.pretrain(torch.nn.Linear(2, 2), steps=1, tok=None)


# --- the chapter's exercises: plausible wrong answers are rejected


def _labels_padding_replaced(original, corrupted, valid):
    return ((corrupted != original) | ~valid).float()  # padding labelled "replaced"


def _labels_ignore_padding(original, corrupted, valid):
    return (corrupted != original).float()  # a change on padding counts


def _labels_inverted(original, corrupted, valid):
    return ((corrupted == original) & valid).float()  # 1 = original


def _labels_bool(original, corrupted, valid):
    return (corrupted != original) & valid & (original > 0)  # drops token id 0


def _flops_full_head(config, batch_size, max_len, p=0.15):
    d = config.d_model
    head = d * d + d * config.vocab_size  # the head at every token
    return flops.total(config, max_len, batch_size * max_len, head=head) / 1e9


def _flops_no_head(config, batch_size, max_len, p=0.15):
    return flops.total(config, max_len, batch_size * max_len, head=False) / 1e9


def _flops_forward_only(config, batch_size, max_len, p=0.15):
    d = config.d_model
    head = p * (d * d + d * config.vocab_size)
    t = flops.total(config, max_len, batch_size * max_len, head=head, train=False)
    return t / 1e9


def _flops_no_dense(config, batch_size, max_len, p=0.15):
    head = p * config.d_model * config.vocab_size  # forgets the d x d dense layer
    return flops.total(config, max_len, batch_size * max_len, head=head) / 1e9


WRONG_ANSWERS = {
    "replaced-token labels": [
        _labels_padding_replaced,
        _labels_ignore_padding,
        _labels_inverted,
        _labels_bool,
    ],
    "MLM step FLOPs": [
        _flops_full_head,
        _flops_no_head,
        _flops_forward_only,
        _flops_no_dense,
    ],
}


def test_every_electra_exercise_has_wrong_answers():
    E.load_all()
    assert set(WRONG_ANSWERS) == {
        n for n, e in E.EXERCISES.items() if e.chapter == "electra"
    }


@pytest.mark.parametrize(
    "name,wrong", [(n, w) for n, ws in WRONG_ANSWERS.items() for w in ws]
)
def test_wrong_answers_are_rejected(name, wrong):
    E.load_all()
    assert not E.check(name, wrong).passed
