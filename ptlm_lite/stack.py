"""The one stack of blocks every model runs, and Transformer-XL's memory.

    x ──► Block 0 ──► Block 1 ──► ... ──► Block N-1 ──► [final norm] ──► out

:class:`Stack` holds the blocks (``stack[i]``, ``len(stack)``, ``for block in stack``)
and the one final norm, and runs the only loop over blocks in the package. The final
norm is there when the blocks are pre-LN (``config.pre_norm``: each sublayer normalises
its own input, so the residual stream leaves the last block un-normalised, as in GPT-2);
post-LN blocks end normalised and get none (``final_norm=`` overrides). Everything that
differs between models arrives as an argument, never as a new loop:

* ``mask`` (bool, True = may attend): causal for GPT, padding for BERT, prefix for a
  prefix-LM, a block pattern for UniLM, permutation masks for XLNet;
* ``bias`` (float, added to the attention logits): relative positions shared by every
  layer (T5);
* ``context`` / ``context_mask``: the encoder output for a decoder's cross-attention;
* ``memory``: a :class:`Memory` of earlier segments (Transformer-XL), read as extra
  keys/values;
* ``cache``: keys/values kept between generation steps (one dict per layer);
* ``exit_rule``: early exit (FastBERT): after each block, ``exit_rule(layer, x, rows)``
  says which examples stop there; the rest of the batch goes on without them.

``config.share_layers`` (ALBERT) keeps one block and runs it ``n_layer`` times.

Introduced in ``chapters/transformer.ipynb``; used by every model.
"""

from __future__ import annotations

import torch
from torch import nn

from .attention import MultiHeadAttention
from .config import Config
from .layers import Block, FeedForward
from .output import Output

__all__ = ["Stack", "Memory", "Model", "check_memory"]


class Memory:
    """Transformer-XL's segment-level recurrence: the input states of every layer over
    the last ``mem_len`` positions of earlier segments.

    Not a KV cache: it keeps hidden states (keys and values are recomputed from them
    with the current weights), it is **detached** (no gradient flows into an earlier
    segment) and it is **bounded** (at most ``mem_len`` positions). ``memory[i]`` is
    layer i's (B, M, D) or None when empty.
    """

    def __init__(self, mem_len: int):
        if not isinstance(mem_len, int) or isinstance(mem_len, bool) or mem_len < 0:
            raise ValueError(f"mem_len must be a non-negative integer, got {mem_len!r}")
        self.mem_len, self.states = mem_len, None

    def __len__(self) -> int:
        return 0 if self.states is None else self.states[0].shape[1]

    def __getitem__(self, layer: int):
        return None if self.states is None else self.states[layer]

    def update(self, hidden: list) -> None:
        """Append this segment's layer inputs (``Output.hidden[:-1]``), keep the
        last mem_len.
        """
        if self.mem_len == 0:
            return
        new = [h.detach() for h in hidden]
        if self.states is not None:
            new = [torch.cat([m, h], dim=1) for m, h in zip(self.states, new)]
        self.states = [h[:, -self.mem_len :] for h in new]


def check_memory(memory, ids, name: str = "memory") -> int:
    """The length of ``memory`` (None: 0), or a clear error unless it is a
    :class:`Memory` whose states have the batch size of ``ids`` (B, T)."""
    if memory is None:
        return 0
    if not isinstance(memory, Memory):
        raise TypeError(
            f"{name} must be a Memory (model.new_memory()) or None, got "
            f"{type(memory).__name__}"
        )
    if len(memory) and memory[0].shape[0] != ids.shape[0]:
        raise ValueError(
            f"ids: batch size {ids.shape[0]} differs from the {name}'s "
            f"({memory[0].shape[0]}): a memory belongs to one batch of streams; "
            f"start a new one with model.new_memory()"
        )
    return len(memory)


class Stack(nn.Module):
    """``n_layer`` blocks (``Block(config, cross, attention, norm, ff)``), the final
    norm, and the loop that runs them.
    """

    def __init__(
        self,
        config: Config,
        cross: bool = False,
        attention: type = MultiHeadAttention,
        norm: type = nn.LayerNorm,
        block: type = Block,
        ff: type = FeedForward,
        final_norm: bool | None = None,
    ):
        super().__init__()
        n_blocks = 1 if config.share_layers else config.n_layer
        kw = {"ff": ff} if ff is not FeedForward else {}  # blocks that take no ff=
        # children "0", "1", ... as in an nn.ModuleList: state-dict keys blocks.{i}.
        self._modules.update(
            (str(i), block(config, cross=cross, attention=attention, norm=norm, **kw))
            for i in range(n_blocks)
        )
        self.n_blocks, self.n_layer = n_blocks, config.n_layer
        if final_norm is None:
            final_norm = config.pre_norm
        self.norm = (
            norm(config.d_model, eps=config.ln_eps) if final_norm else nn.Identity()
        )

    def __len__(self) -> int:
        return self.n_blocks

    def __getitem__(self, i: int) -> nn.Module:
        return self._modules[str(range(self.n_blocks)[i])]

    def __iter__(self):
        return (self[i] for i in range(self.n_blocks))

    def forward(
        self,
        x,
        mask=None,
        bias=None,
        context=None,
        context_mask=None,
        memory: Memory | None = None,
        cache: list | None = None,
        return_attention: bool = False,
        return_hidden: bool = False,
        exit_rule=None,
    ) -> Output:
        """x: (B, T, D) -> :class:`~ptlm_lite.output.Output` with ``last_hidden`` (B,
        T, D) after the final norm; ``hidden``: the input of every layer and
        ``last_hidden``, n_layer + 1 tensors (when asked); ``attentions`` / ``cross``:
        per layer (B, H, Tq, Tk) (when asked). ``memory`` is read, then updated with
        this segment's layer inputs.

        ``exit_rule(layer, x, rows) -> (B',) bool`` (FastBERT's early exit, chapter
        ``chapters/fastbert.ipynb``): called after block ``layer`` (1 = the first) with
        the (B', T, D) output of the examples still running and ``rows``, their (B',)
        indices in the batch; True stops an example there. The others go on, the
        stopped ones leave the batch (their rows of ``mask``, ``bias``, ``context``,
        ``context_mask`` too, where those have a batch dimension), so a stopped example
        costs nothing more. ``last_hidden`` holds each example's states at its exit
        (then the final norm); ``extra["exit_layer"]`` (B,) the number of blocks it
        ran. Without ``exit_rule`` nothing changes.
        """
        if cache is not None and len(cache) != self.n_layer:
            raise ValueError(
                f"cache must hold one dict per layer ({self.n_layer}), got {len(cache)}"
            )
        hidden, attentions, cross = [], [], []
        exits = None
        if exit_rule is not None:
            asked = return_hidden or return_attention or memory is not None
            exits = _Exits(exit_rule, x, asked or cache is not None)
        for i in range(self.n_layer):
            block = self[i % len(self)]  # ALBERT: the same block every time
            if return_hidden or memory is not None:
                hidden.append(x)
            x, (w_self, w_cross) = block(
                x,
                mask=mask,
                bias=bias,
                memory=None if memory is None else memory[i],
                context=context,
                context_mask=context_mask,
                cache=None if cache is None else cache[i],
                return_attention=return_attention,
            )
            attentions.append(w_self)
            cross.append(w_cross)
            if exits is not None:  # FastBERT: the examples that stop leave the batch
                last = i == self.n_layer - 1
                x, (mask, bias, context, context_mask) = exits.step(
                    i + 1, x, (mask, bias, context, context_mask), last
                )
                if x is None:
                    break
        if exits is not None:
            return Output(
                last_hidden=self.norm(exits.out), extra={"exit_layer": exits.layer}
            )
        if memory is not None:
            memory.update(hidden)
        x = self.norm(x)
        return Output(
            last_hidden=x,
            hidden=hidden + [x] if return_hidden else None,
            attentions=attentions if return_attention else None,
            cross=cross if return_attention and context is not None else None,
        )


class _Exits:
    """The bookkeeping of :meth:`Stack.forward`'s ``exit_rule`` (FastBERT): which
    examples still run (``rows``), each one's states where it stopped (``out``) and
    at which layer (``layer``)."""

    def __init__(self, rule, x, unsupported: bool):
        if not callable(rule):
            raise TypeError(
                f"exit_rule must be a callable (layer, x, rows) -> (B,) bool, got "
                f"{type(rule).__name__}"
            )
        if unsupported:
            raise ValueError(
                "exit_rule runs without memory, cache, return_hidden or "
                "return_attention (each example stops at its own layer)"
            )
        self.rule, self.out = rule, torch.empty_like(x)
        self.rows = torch.arange(x.shape[0], device=x.device)  # still running
        self.layer = torch.zeros(x.shape[0], dtype=torch.long, device=x.device)

    def step(self, layer: int, x, tensors, last: bool):
        """After block ``layer``: store the examples that stop; return the rest of
        ``x`` and of ``tensors`` (mask, bias, context, context mask), or None when
        none runs on."""
        rows = self.rows
        stop = (
            torch.ones_like(rows, dtype=torch.bool)
            if last
            else self.rule(layer, x, rows)
        )
        if (
            not isinstance(stop, torch.Tensor)
            or stop.dtype != torch.bool
            or stop.shape != rows.shape
        ):
            raise TypeError(
                f"exit_rule must return a bool tensor of shape {tuple(rows.shape)} "
                f"(one per running example), got {stop!r:.80}"
            )
        self.out[rows[stop]], self.layer[rows[stop]] = x[stop], layer
        keep = ~stop
        if not keep.any():
            return None, tensors
        self.rows = rows[keep]
        # masks (B, Tq, Tk), context (B, S, D), context masks: 3 dimensions with the
        # batch first; a bias has it only as (B, H, Tq, Tk)
        dims = (3, 4, 3, 3)
        return x[keep], tuple(_rows(t, keep, d) for t, d in zip(tensors, dims))


def _rows(t, keep, dim: int):
    """``t``'s rows of the examples still running, when it has a batch dimension."""
    batched = isinstance(t, torch.Tensor) and t.dim() == dim
    return t[keep] if batched and t.shape[0] == len(keep) else t


class Model(nn.Module):
    """What every model of the book shares: built from a
    :class:`~ptlm_lite.config.Config` (``model.config``), an optional ``seed`` that
    fixes the initial weights (the same as calling ``set_seed(seed)`` just before
    building), and a ``load_state_dict`` whose shape errors name the tensor and the
    config.
    """

    # the config class the model is built from: a family with its own fields narrows
    # it (``config_cls = XLConfig``) and names a preset of its own for the error
    config_cls: type = Config
    config_example = "preset('tiny', vocab_size=...)"

    def __init__(self, config: Config, seed: int | None = None):
        super().__init__()
        if not isinstance(config, self.config_cls):
            raise TypeError(
                f"config must be a ptlm_lite {self.config_cls.__name__} (e.g. "
                f"{self.config_example}), got {type(config).__name__}"
            )
        if seed is not None:
            from .train import set_seed

            set_seed(seed)
        self.config = config

    def load_state_dict(self, state_dict, strict: bool = True, assign: bool = False):
        own = self.state_dict()
        for name, tensor in state_dict.items():
            if name in own and tuple(own[name].shape) != tuple(tensor.shape):
                c = self.config
                raise ValueError(
                    f"state_dict[{name!r}] has shape {tuple(tensor.shape)} but this "
                    f"model's config expects "
                    f"{tuple(own[name].shape)}: the checkpoint was trained with "
                    f"another config (this one has "
                    f"d_model={c.d_model}, n_layer={c.n_layer}, "
                    f"vocab_size={c.vocab_size}, max_len={c.max_len})"
                )
        return super().load_state_dict(state_dict, strict=strict, assign=assign)
