"""What every model returns, and the one ignore index of the book.

* :class:`Output`: ``logits, loss = model(...)`` (nanoGPT's contract), plus attentions
  and extras.
* :data:`IGNORE` = -100: a target equal to it does not count towards any loss (prompts,
  padding, unmasked positions). The same value as PyTorch's and Hugging Face's default
  ``ignore_index``.
* :func:`cross_entropy`: the loss every model uses, with targets checked so that an id
  outside the vocabulary is a clear error (not a bare ``IndexError`` from deep inside
  torch). A loss over targets that are all IGNORE (no target counts) is 0 with no
  gradient, never NaN: the one rule for every loss of the package (a batch whose
  corruption selected nothing trains nothing).

Introduced in ``chapters/transformer.ipynb``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
import torch.nn.functional as F

__all__ = ["Output", "IGNORE", "cross_entropy", "check_targets", "no_loss"]

IGNORE = -100  # targets equal to this do not count towards the loss


@dataclass
class Output:
    """What every model, head and :class:`~ptlm_lite.stack.Stack` returns: one
    dataclass with optional fields, like Hugging Face's ``ModelOutput``.

    * ``logits``, ``loss``: a model with an output layer (``loss`` when targets are
      given);
    * ``last_hidden`` (B, T, D): the top layer's states (after the final norm);
      ``pooled`` (B, D): an encoder's pooled ``[CLS]`` (BERT);
    * ``attentions``: per layer ``(B, H, Tq, Tk)`` (a dict of such lists for an
      encoder-decoder) when asked with ``return_attention=True``; ``cross``: the
      cross-attentions of a decoder stack;
    * ``hidden``: the input of every layer and ``last_hidden`` (n_layer + 1 tensors)
      when asked with ``return_hidden=True``;
    * ``extra``: whatever else a head returns (partial losses, a second head's logits).

    It unpacks like nanoGPT's contract, ``logits, loss = model(...)``; an encoder
    without an output layer (``logits`` is None) unpacks as BERT's ``hidden, pooled,
    attentions = bert(ids)``.
    """

    logits: torch.Tensor | None = None
    loss: torch.Tensor | None = None
    attentions: dict | list | None = None
    extra: dict = field(default_factory=dict)
    hidden: list | None = None
    last_hidden: torch.Tensor | None = None
    pooled: torch.Tensor | None = None
    cross: list | None = None

    def __iter__(self):
        if self.logits is None:
            return iter((self.last_hidden, self.pooled, self.attentions))
        return iter((self.logits, self.loss))


def check_targets(targets: torch.Tensor, n_classes: int, name: str = "targets") -> None:
    """Raise a ValueError naming ``name`` unless every target is in ``[0, n_classes)``
    or IGNORE.
    """
    if not isinstance(targets, torch.Tensor) or targets.dtype not in (
        torch.int64,
        torch.int32,
    ):
        raise TypeError(
            f"{name} must be an integer tensor (class ids, {IGNORE} = ignore), got "
            + (
                str(targets.dtype)
                if isinstance(targets, torch.Tensor)
                else type(targets).__name__
            )
        )
    real = targets[targets != IGNORE]
    if real.numel() and (int(real.min()) < 0 or int(real.max()) >= n_classes):
        raise ValueError(
            f"{name} must be in [0, {n_classes}) or {IGNORE} (ignored), got values in "
            f"[{int(real.min())}, {int(real.max())}]"
        )


def no_loss(like: torch.Tensor) -> torch.Tensor:
    """The loss of a batch in which no target counts: a 0-d zero on ``like``'s device,
    with no gradient to any weight (``backward()`` works and changes nothing; AdamW
    skips the step for weights without a gradient)."""
    return torch.zeros((), device=like.device).requires_grad_(like.requires_grad)


def cross_entropy(
    logits: torch.Tensor, targets: torch.Tensor, name: str = "targets", **kw
) -> torch.Tensor:
    """``F.cross_entropy`` over the last dimension of ``logits`` ((..., V) against
    (...)), ignoring :data:`IGNORE`, with ``targets`` checked first. When no target
    counts (all are IGNORE, or there are none) the mean is 0 with no gradient
    (:func:`no_loss`), not PyTorch's NaN.
    """
    if not isinstance(logits, torch.Tensor) or not logits.is_floating_point():
        raise TypeError(
            "logits must be a float tensor (..., n_classes), got "
            + (str(logits.dtype) if isinstance(logits, torch.Tensor) else
               type(logits).__name__)
        )  # fmt: skip
    if not isinstance(targets, torch.Tensor):
        check_targets(targets, 0, name)  # the TypeError naming the argument
    if targets.shape != logits.shape[:-1]:
        raise ValueError(
            f"{name} must have shape {tuple(logits.shape[:-1])} (the logits without "
            f"the class "
            f"dimension), got {tuple(targets.shape)}"
        )
    check_targets(targets, logits.shape[-1], name)
    if kw.get("reduction", "mean") == "mean" and not bool((targets != IGNORE).any()):
        return no_loss(logits)
    return F.cross_entropy(
        logits.reshape(-1, logits.shape[-1]),
        targets.reshape(-1),
        ignore_index=IGNORE,
        **kw,
    )
