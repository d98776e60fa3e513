"""The seams the later families need (issue 23), each used by the smallest model that
needs it: a tied head through d_embed (ALBERT), an encoder shared by several heads
(MT-DNN, ERNIE 2.0), embeddings shared by two models (ELECTRA), the feed-forward as a
class, no absolute positions or explicit ones, and an encoder-decoder with another norm
and a relative-position bias (T5). The trainer's seams (parameter groups, on_step,
unfreezing) are in test_train.py."""

import pytest
import torch
from torch import nn

import ptlm_lite as P
from ptlm_lite import heads, masks
from ptlm_lite.bert import Bert, BertForPreTraining
from ptlm_lite.gpt import GPT
from ptlm_lite.layers import Embeddings, FeedForward
from ptlm_lite.stack import Stack
from ptlm_lite.transformer import Transformer


def test_gpt_ties_its_head_through_a_narrow_embedding():
    m = GPT(P.preset("gpt-tiny", vocab_size=50, d_embed=16), seed=0)
    assert m.head.weight is m.embed.tok.weight and m.head.weight.shape == (50, 16)
    ids = torch.randint(0, 50, (2, 9))
    out = m(ids, targets=ids)
    assert out.logits.shape == (2, 9, 50) and torch.isfinite(out.loss)
    out.loss.backward()
    assert m.head_proj.weight.grad is not None


def test_bert_mlm_head_goes_down_to_d_embed():
    m = BertForPreTraining(P.preset("bert-tiny", vocab_size=40, d_embed=8), seed=0)
    assert m.mlm.decoder.weight is m.bert.embed.tok.weight
    ids = torch.randint(5, 40, (2, 7))
    targets = torch.full_like(ids, -100)
    targets[:, 2] = ids[:, 2]
    out = m(ids, targets=targets, nsp_labels=torch.tensor([0, 1]))
    assert out.logits.shape == (2, 40) and torch.isfinite(out.loss)


def test_heads_built_on_one_encoder_share_it():
    bert = Bert(P.preset("bert-tiny", vocab_size=40), seed=0)
    nli = heads.BertForSequenceClassification(bert, n_labels=3)
    qa = heads.BertForSpanExtraction(bert)
    model = heads.MultiTask(bert, {"nli": nli, "qa": qa})
    assert nli.bert is bert and qa.bert is bert
    n_shared = P.count_parameters(bert)
    n_heads = sum(
        p.numel() for p in (*nli.classifier.parameters(), *qa.span.parameters())
    )
    assert P.count_parameters(model) == n_shared + n_heads
    ids = torch.randint(5, 40, (4, 6))
    before = qa(ids).logits.detach().clone()
    loss = model("nli", ids=ids, labels=torch.tensor([0, 1, 2, 0])).loss
    loss.backward()
    torch.optim.SGD(model.parameters(), lr=0.5).step()
    assert not torch.allclose(qa(ids).logits, before), (
        "the qa head reads the same encoder"
    )
    other = heads.BertForSequenceClassification(P.preset("bert-tiny", vocab_size=40))
    with pytest.raises(ValueError, match="does not share the encoder"):
        heads.MultiTask(bert, {"nli": nli, "other": other})
    with pytest.raises(ValueError, match="task='x' is not one of"):
        model("x", ids=ids)


def test_two_models_share_their_embeddings():
    cfg = P.preset("bert-tiny", vocab_size=40)
    generator = Bert(cfg, seed=0)
    table = generator.embed.tok.weight.detach().clone()
    discriminator = Bert(cfg, seed=1, embed=generator.embed)
    assert discriminator.embed is generator.embed
    assert torch.equal(generator.embed.tok.weight, table), "not re-initialised"
    ids = torch.randint(5, 40, (2, 5))
    (generator(ids).last_hidden.sum() + discriminator(ids).last_hidden.sum()).backward()
    assert generator.embed.tok.weight.grad is not None


class GLU(FeedForward):
    """A gated feed-forward (T5 v1.1): the seam is the class, not a flag."""

    def __init__(self, config):
        super().__init__(config)
        self.gate = nn.Linear(config.d_model, config.d_ff)

    def forward(self, x):
        return self.fc2(self.act(self.gate(x)) * self.fc1(x))


def test_block_and_stack_take_a_feed_forward_class():
    cfg = P.preset("tiny", vocab_size=30)
    stack = Stack(cfg, ff=GLU)
    assert all(isinstance(block.ff, GLU) for block in stack)
    x = torch.randn(2, 5, cfg.d_model)
    assert stack(x, mask=masks.causal_mask(5)).last_hidden.shape == x.shape


def test_embeddings_without_positions_and_with_explicit_ones():
    none = Embeddings(P.preset("tiny", vocab_size=30, pos="none", dropout=0.0))
    assert not any("pos" in n or "pe" in n for n, _ in none.named_parameters())
    ids = torch.randint(0, 30, (2, 6))
    assert torch.equal(none(ids).flip(1), none(ids.flip(1)))  # no order at all
    learned = Embeddings(P.preset("tiny", vocab_size=30, pos="learned", dropout=0.0))
    assert torch.equal(learned(ids, positions=torch.arange(6)), learned(ids))
    assert torch.equal(
        learned(ids, positions=torch.arange(3, 9)), learned(ids, offset=3)
    )
    with pytest.raises(ValueError, match="positions must be an integer tensor"):
        learned(ids, positions=torch.arange(5))
    with pytest.raises(ValueError, match="positions must be in"):
        learned(ids, positions=torch.arange(6) + 10_000)


class RelativeBias(nn.Module):
    """T5's relative positions in six lines: one learned scalar per head and clipped
    distance (no log buckets), looking back only in the decoder."""

    def __init__(self, config, bidirectional: bool):
        super().__init__()
        self.k, self.bidirectional = 4, bidirectional
        self.table = nn.Embedding(2 * self.k + 1, config.n_head)

    def forward(self, Tq, Tk):
        d = torch.arange(Tk)[None, :] - torch.arange(Tq)[:, None]  # key - query
        d = d.clamp(-self.k, self.k if self.bidirectional else 0) + self.k
        return self.table(d).permute(2, 0, 1)  # (H, Tq, Tk)


def test_an_encoder_decoder_with_rmsnorm_and_a_relative_bias():
    cfg = P.preset("tiny", vocab_size=30, pos="none", pre_norm=True, dropout=0.0)
    m = Transformer(cfg, seed=0, norm=nn.RMSNorm, bias=RelativeBias).eval()
    assert isinstance(m.encoder.norm, nn.RMSNorm) and isinstance(
        m.encoder[0].ln1, nn.RMSNorm
    )
    src, tgt = torch.randint(4, 30, (2, 7)), torch.randint(4, 30, (2, 5))
    out = m(src, tgt, tgt)
    assert out.logits.shape == (2, 5, 30) and torch.isfinite(out.loss)
    # the bias is what tells positions apart: without positions nor bias the encoder
    # would be order-blind
    with torch.no_grad():
        m.enc_bias.table.weight.zero_()
        m.dec_bias.table.weight.zero_()
        flat = m.encode(src)[0]
        assert torch.allclose(m.encode(src.flip(1))[0], flat.flip(1), atol=1e-5)
        nn.init.normal_(m.enc_bias.table.weight)
        nn.init.normal_(m.dec_bias.table.weight)
        assert not torch.allclose(m.encode(src.flip(1))[0], m.encode(src)[0].flip(1))
        # leak test: a later target token never changes an earlier position's logits
        later = tgt.clone()
        later[:, 3] = (later[:, 3] + 1) % 30
        a, b = m(src, tgt).logits, m(src, later).logits
        assert torch.allclose(a[:, :3], b[:, :3], atol=1e-6)
        assert not torch.allclose(a[:, 3:], b[:, 3:])


def test_the_stack_owns_the_one_final_norm():
    """Pre-LN blocks leave the residual stream un-normalised: the Stack ends with one
    norm (GPT-2, a pre-LN Transformer's encoder and decoder); post-LN blocks end
    normalised and the Stack adds none (GPT, BERT). No model keeps a norm of its own
    after the blocks.
    """
    pre = GPT(P.preset("gpt2-tiny", vocab_size=40), seed=0)
    post = GPT(P.preset("gpt-tiny", vocab_size=40), seed=0)
    assert isinstance(pre.blocks.norm, nn.LayerNorm)
    assert isinstance(post.blocks.norm, nn.Identity)
    assert isinstance(
        Bert(P.preset("bert-tiny", vocab_size=40)).blocks.norm, nn.Identity
    )
    t = Transformer(P.preset("tiny", vocab_size=40, pre_norm=True))
    assert isinstance(t.encoder.norm, nn.LayerNorm)
    assert isinstance(t.decoder.norm, nn.LayerNorm)
    for model in (pre, post, t):
        top = [n for n, m in model.named_children() if isinstance(m, nn.LayerNorm)]
        assert top == [], f"{type(model).__name__} keeps its own final norm: {top}"
    # the stack's output is normalised: zero mean and unit variance per position
    x = pre.blocks(torch.randn(2, 5, pre.config.d_model) * 7 + 3).last_hidden
    assert torch.allclose(x.mean(-1), torch.zeros(2, 5), atol=1e-5)
    # and the forced switch: a post-LN stack with a final norm
    stack = Stack(P.preset("gpt-tiny", vocab_size=40), final_norm=True)
    assert isinstance(stack.norm, nn.LayerNorm) and len(stack) == 2


def test_one_output_type():
    """Every model, head and the Stack return the one Output; it unpacks as ``logits,
    loss`` or, for an encoder without an output layer, as ``hidden, pooled,
    attentions``.
    """
    import ast
    import pathlib

    from ptlm_lite.output import Output

    root = pathlib.Path(P.__file__).parent
    outputs = [
        f"{f.name}:{node.name}"
        for f in root.rglob("*.py")
        if f.parent.name != "data"  # data.Encoded: a tokenizer's output, not a model's
        for node in ast.walk(ast.parse(f.read_text()))
        if isinstance(node, ast.ClassDef)
        and any(k in node.name for k in ("Output", "Encoded"))
    ]
    assert outputs == ["output.py:Output"], outputs
    ids = torch.randint(5, 40, (2, 6))
    gpt = GPT(P.preset("gpt2-tiny", vocab_size=40), seed=0)
    out = gpt(ids, targets=ids)
    logits, loss = out
    assert (
        isinstance(out, Output)
        and loss.ndim == 0
        and out.last_hidden.shape == (2, 6, 64)
    )
    bert = Bert(P.preset("bert-tiny", vocab_size=40), seed=0)
    enc = bert(ids, return_hidden=True)
    hidden, pooled, attentions = enc
    assert isinstance(enc, Output) and enc.logits is None and attentions is None
    assert hidden.shape == (2, 6, 64) and pooled.shape == (2, 64)
    assert len(enc.hidden) == bert.config.n_layer + 1 and enc.hidden[-1] is hidden
    assert isinstance(bert.blocks(torch.randn(2, 6, 64)), Output)
