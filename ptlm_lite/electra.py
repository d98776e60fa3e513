"""ELECTRA (Clark et al., 2020): a small generator fills the blanks, and the model we
keep learns to spot its replacements at every position.

    original   the chef cooked the meal
    masked     [MASK] chef [MASK] the meal      15% of the tokens, all [MASK]
    generator  the  chef  ate    the meal      a small MLM *samples* each blank
    labels      0    0     1      0    0       1 = replaced; a sampled "the" is original
    loss       MLM(generator) + λ · Σ_t BCE(discriminator(t), label_t)   (λ = 50)

BERT learns from the 15% of positions it masked; ELECTRA's discriminator gets a label
at **every** position, and never reads ``[MASK]``. The generator is an ordinary masked
LM a fraction of the discriminator's width (``gen_fraction``: 1/4 in the paper's
small and large models), trained jointly; the discriminator's loss does not flow back
through the sampling (the sample is discrete), so the generator is not adversarial.
The two **share their token, position and segment embeddings** (one tensor each, and
one LayerNorm): the generator's MLM gradient reaches every token's vector, not only
the discriminator's. After pre-training the generator is thrown away and
``model.bert`` is fine-tuned like BERT (:func:`ptlm_lite.finetune.bert_model`).

The encoders are the book's :class:`~ptlm_lite.bert.Bert` (post-LN, GELU); embeddings
narrower than the model (``d_embed``) are normalised before their projection, as in
Google's code and Hugging Face's ``ElectraModel``. Chapter: ``chapters/electra.ipynb``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from .bert import BERT_FIELDS, Bert, BertEmbeddings, MLMHead
from .config import PRESETS, Config, register_preset
from .layers import ACTIVATIONS, init_weights
from .output import IGNORE, Output, check_targets, cross_entropy
from .stack import Model

__all__ = [
    "ElectraConfig",
    "generator_config",
    "ElectraEmbeddings",
    "DiscriminatorHead",
    "sample_replacements",
    "replace_tokens",
    "replaced_labels",
    "ElectraForPreTraining",
]


@dataclass
class ElectraConfig(Config):
    """BERT's fields (the discriminator's sizes) and ELECTRA's three knobs."""

    # generator width / discriminator width (the paper: 1/4 small and large, 1/3 base)
    gen_fraction: float = 0.25
    disc_weight: float = 50.0  # λ: the discriminator's loss is ~50x smaller per token
    # "all": every real token is labelled (ELECTRA); "masked": only the 15% masked
    # ones are (the paper's "ELECTRA 15%" ablation)
    disc_loss_on: str = "all"

    RANGES = {
        **Config.RANGES,
        "gen_fraction": "in (0, 1]",
        "disc_weight": "> 0",
        "disc_loss_on": ("all", "masked"),
    }


ELECTRA_FIELDS = dict(BERT_FIELDS)
# Clark et al. (2020), Table 6: base 768 wide, generator 1/3; large 1024, generator 1/4
register_preset(
    "electra-base",
    config_cls=ElectraConfig,
    **{**PRESETS["bert-base"], "gen_fraction": 1 / 3},
)
register_preset(
    "electra-large",
    config_cls=ElectraConfig,
    **{**PRESETS["bert-large"], "gen_fraction": 0.25},
)
for _scale in ("tiny", "small"):  # the book's scales; a chapter sets vocab_size
    register_preset(
        f"electra-{_scale}",
        config_cls=ElectraConfig,
        **{**PRESETS[_scale], **ELECTRA_FIELDS},
    )


def generator_config(config: ElectraConfig) -> Config:
    """The generator's config: ``gen_fraction`` of the width and the feed-forward, heads
    of the discriminator's head size (at least one), the same depth, and embeddings of
    the discriminator's width ``E`` (shared), projected down to its own width.
    """
    if not isinstance(config, ElectraConfig):
        raise TypeError(f"config must be an ElectraConfig, got {type(config).__name__}")
    d = max(1, round(config.gen_fraction * config.d_model))
    n_head = max(1, d // config.d_head)
    while d % n_head:
        n_head -= 1
    shared = {f.name: getattr(config, f.name) for f in dataclasses.fields(Config)}
    E = config.d_embed or config.d_model  # the shared tables' width
    return Config(
        **{
            **shared,
            "tie_weights": True,
            "d_model": d,
            "n_head": n_head,
            "d_ff": max(1, round(config.gen_fraction * config.d_ff)),
            "d_embed": E if E != d else 0,
        }
    )


class ElectraEmbeddings(BertEmbeddings):
    """BERT's tables and LayerNorm at the embedding width E, then a projection to the
    model's width when they differ. ``share=``: another model's embeddings whose tables
    and LayerNorm this one uses (the same tensors); the projection stays its own.
    """

    def __init__(self, config: Config, share: ElectraEmbeddings | None = None):
        super().__init__(config)
        # normalise at E, then project (Embeddings would project before the LN)
        self.project, self.proj = self.proj, None
        self.ln = nn.LayerNorm(self.tok.embedding_dim, eps=config.ln_eps)
        self.apply(init_weights)
        if share is not None:
            if share.tok.embedding_dim != self.tok.embedding_dim:
                raise ValueError(
                    f"shared embeddings must be {self.tok.embedding_dim} wide "
                    f"(config.d_embed), got {share.tok.embedding_dim}"
                )
            self.tok, self.pos, self.seg, self.ln = (
                share.tok,
                share.pos,
                share.seg,
                share.ln,
            )

    def forward(self, ids, segments=None, offset: int = 0):
        x = super().forward(ids, segments, offset)  # (B, T, E), normalised
        return x if self.project is None else self.project(x)  # (B, T, D)


class DiscriminatorHead(nn.Module):
    """Replaced-token detection: dense + activation + one logit per token (B, T, D) ->
    (B, T); > 0 means "replaced"."""

    def __init__(self, config: Config):
        super().__init__()
        self.dense = nn.Linear(config.d_model, config.d_model)
        self.act = ACTIVATIONS[config.activation]
        self.out = nn.Linear(config.d_model, 1)

    def forward(self, hidden):
        return self.out(self.act(self.dense(hidden))).squeeze(-1)


def sample_replacements(logits: torch.Tensor, generator=None) -> torch.Tensor:
    """One token per row of ``logits`` (N, V), sampled from its softmax (not the argmax:
    the paper found sampling essential). No gradient flows through the sample.

    Inverse-CDF sampling: one uniform number per row, looked up in the row's cumulative
    probabilities (the first token whose cumulative probability exceeds it, so a token
    of probability 0 is never drawn). The same distribution as ``torch.multinomial``,
    several times cheaper on a CPU at a vocabulary of 1,024 (multinomial was ~10% of a
    tiny ELECTRA step)."""
    if not isinstance(logits, torch.Tensor) or logits.dim() != 2:
        raise TypeError("logits must be an (N, V) float tensor")
    probs = logits.detach().float().softmax(-1)
    if not len(probs):
        return torch.zeros(0, dtype=torch.long, device=logits.device)
    cdf = probs.cumsum(-1)
    # u in [0, total): the row's own total, so rounding never runs off the end
    u = torch.rand(len(probs), 1, generator=generator, device=probs.device)
    u = u * cdf[:, -1:]
    picked = torch.searchsorted(cdf, u, right=True).squeeze(-1)
    return picked.clamp_(max=probs.shape[-1] - 1)


def replace_tokens(ids, targets, sampled) -> tuple[torch.Tensor, torch.Tensor]:
    """``(original, corrupted)``: the original ids (``targets`` where masked, else
    ``ids``) and the same with each masked position holding its ``sampled`` token (in
    row-major order of ``targets != -100``)."""
    selected = targets != IGNORE
    if int(selected.sum()) != len(sampled):
        raise ValueError(
            f"sampled must hold one token per masked position ({int(selected.sum())}), "
            f"got {len(sampled)}"
        )
    original = torch.where(selected, targets, ids)
    corrupted = original.clone()
    corrupted[selected] = sampled.to(ids.dtype)
    return original, corrupted


def replaced_labels(original, corrupted, valid) -> torch.Tensor:
    """``(B, T)`` float: 1 where a real token was changed, else 0. A sample equal to
    the original is *original* (label 0): nothing was replaced."""
    if original.shape != corrupted.shape or valid.shape != original.shape:
        raise ValueError(
            "original, corrupted and valid must have one shape, got "
            f"{tuple(original.shape)}, {tuple(corrupted.shape)}, {tuple(valid.shape)}"
        )
    return ((corrupted != original) & valid).float()


class ElectraForPreTraining(Model):
    """The generator and the discriminator, trained jointly.

    ``forward(ids, segments=None, valid=None, targets=None, return_attention=False)``:
    ``ids`` the masked input, ``targets`` the original id at the masked positions and
    -100 elsewhere (:func:`ptlm_lite.corrupt.mlm_mask`). Without ``targets`` only the
    discriminator runs on ``ids``: ``logits`` (B, T), one "replaced" logit per token.
    With them the generator samples a token at every masked position, the
    discriminator reads the result, and ``loss = mlm_loss + disc_weight * disc_loss``;
    ``extra`` holds both losses, ``corrupted`` and ``replaced`` (the labels).
    ``model.bert`` is the discriminator's encoder (what is fine-tuned).
    """

    config_cls = ElectraConfig
    config_example = "preset('electra-tiny', vocab_size=...)"

    def __init__(self, config: ElectraConfig, seed: int | None = None):
        super().__init__(config, seed)
        self.bert = Bert(config, embed=ElectraEmbeddings(config))  # the discriminator
        self.gen_config = generator_config(config)
        gen_embed = ElectraEmbeddings(self.gen_config, share=self.bert.embed)
        self.generator = Bert(self.gen_config, embed=gen_embed)
        self.mlm = MLMHead(self.gen_config, self.bert.embed.tok)  # D_gen -> E -> V
        self.rtd = DiscriminatorHead(config)
        self.mlm.apply(init_weights)  # (the tied matrix too: the same N(0, 0.02))
        self.rtd.apply(init_weights)

    def generator_logits(self, ids, segments=None, valid=None):
        """The generator's MLM logits ``(B, T, V)`` at every position."""
        return self.mlm(self.generator(ids, segments, valid).last_hidden)

    def forward(
        self, ids, segments=None, valid=None, targets=None, return_attention=False
    ) -> Output:
        valid = ids != self.config.pad_id if valid is None else valid
        extra = {}
        if targets is None:
            corrupted, labels, mlm_loss = ids, None, None
        else:
            check_targets(targets, self.config.vocab_size)
            if targets.shape != ids.shape:
                raise ValueError(
                    f"targets must have the shape of ids {tuple(ids.shape)}, got "
                    f"{tuple(targets.shape)}"
                )
            selected = targets != IGNORE  # (B, T)
            gen_hidden = self.generator(ids, segments, valid).last_hidden
            gen_logits = self.mlm(gen_hidden[selected])  # (N, V)
            mlm_loss = cross_entropy(gen_logits, targets[selected])
            sampled = sample_replacements(gen_logits)  # (N,)
            original, corrupted = replace_tokens(ids, targets, sampled)
            labels = replaced_labels(original, corrupted, valid)
        # the discriminator reads the generator's text (padding stays padding)
        out = self.bert(corrupted, segments, valid, return_attention=return_attention)
        logits = self.rtd(out.last_hidden)  # (B, T)
        loss = None
        if labels is not None:
            where = valid if self.config.disc_loss_on == "all" else selected
            disc_loss = F.binary_cross_entropy_with_logits(logits[where], labels[where])
            loss = mlm_loss + self.config.disc_weight * disc_loss
            extra = dict(
                mlm_loss=mlm_loss,
                disc_loss=disc_loss,
                corrupted=corrupted,
                replaced=labels,
            )
        return Output(logits, loss, out.attentions, extra, last_hidden=out.last_hidden)
