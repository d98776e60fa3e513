"""Synthetic in-context learning: every sequence is a new task, so only the context can
tell.

A sequence is ``[BOS] x1 (x1→y1) x2 (x2→y2) ... xn (xn→yn)`` over ``K`` input symbols
and ``M`` labels. A demonstration ``(x→y)`` is written as one token (as if "apple=red"
were one word), a query as the bare input ``x``, and after the query the model must
write the demonstration token that answers it. The mapping ``x -> y`` is drawn afresh
for each sequence from a *task family*, so no weight can store the answer: predicting
the answer to ``x_i`` means reading the ``i - 1`` demonstrations before it. Each input
position is therefore a ``k``-shot query with ``k = i - 1``, and one sequence scores
every shot count ``0 .. n-1`` at once (the loss counts answers only).

Task families (``c`` is a per-sequence random offset, ``π`` a per-sequence random
function):

* ``recall``: ``y = π(x)``: look the query up among the demonstrations (associative
  recall);
* ``shift``: ``y = (x + c) mod M``: one demonstration fixes ``c``, then the rule answers
  any query;
* ``reverse``: ``y = (c - x) mod M``: a rule of the same kind, in the opposite
  direction.

Inputs are drawn with replacement, so a query may or may not appear among the
demonstrations; ``seen`` says which: copying can only answer seen queries, a rule
answers both.

Why one token per demonstration? With ``x`` and ``y`` as two tokens, looking up needs
two attention layers that must learn to work together (a previous-token head and an
induction head), and a tiny model sits on a loss plateau for longer than a CPU minute
before that circuit forms.

Chapter: ``chapters/gpt3.ipynb`` (few-shot in-context learning).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .checks import check_count, check_ints
from .device import eval_mode, scores_on_device
from .output import IGNORE

__all__ = ["FAMILIES", "SymbolTasks"]

FAMILIES = ("recall", "shift", "reverse")


def _device(model) -> torch.device:
    """Where ``model``'s weights are (the CPU for a model without any)."""
    try:
        return next(model.parameters()).device
    except (AttributeError, StopIteration):
        return torch.device("cpu")


@dataclass(frozen=True)
class SymbolTasks:
    """Token layout: 0 = [BOS]; 1..K = queries ``x0..x{K-1}``; then K·M answers
    ``(xi→yj)``.
    """

    n_inputs: int = 8
    n_labels: int = 8

    BOS = 0

    def __post_init__(self):
        check_count("n_inputs", self.n_inputs, 1)
        check_count("n_labels", self.n_labels, 2)

    @property
    def vocab_size(self) -> int:
        return 1 + self.n_inputs + self.n_inputs * self.n_labels

    def query_token(self, x):
        return 1 + torch.as_tensor(x)

    def answer_token(self, x, y):
        """The token that writes the demonstration ``(x→y)``."""
        return (
            1 + self.n_inputs + torch.as_tensor(x) * self.n_labels + torch.as_tensor(y)
        )

    def token_names(self, ids) -> list[str]:
        """Readable names: ``<s>``, ``x3``, ``x3→y5``."""
        K, M = self.n_inputs, self.n_labels
        return [
            "<s>"
            if t == 0
            else f"x{t - 1}"
            if t <= K
            else f"x{(t - 1 - K) // M}→y{(t - 1 - K) % M}"
            for t in torch.as_tensor(ids).reshape(-1).tolist()
        ]

    def mappings(self, family: str, n: int, g: torch.Generator) -> torch.Tensor:
        """``n`` fresh mappings of one family: (n, K) label indices, row b gives y for
        every x.
        """
        K, M = self.n_inputs, self.n_labels
        x = torch.arange(K)[None]  # (1, K)
        if family == "recall":
            return torch.randint(M, (n, K), generator=g)
        # one offset per sequence
        c = torch.randint(M, (n, 1), generator=g)
        if family == "shift":
            return (x + c) % M
        if family == "reverse":
            return (c - x) % M
        raise ValueError(f"family must be one of {FAMILIES}, got {family!r}")

    def prompt(self, demos, query: int) -> torch.Tensor:
        """A k-shot prompt: ``[BOS] x1 (x1→y1) ... xk (xk→yk) xq`` from ``demos = [(x,
        y), ...]``.
        """
        ids = [self.BOS]
        for x, y in demos:
            ids += [int(self.query_token(x)), int(self.answer_token(x, y))]
        return torch.tensor(ids + [int(self.query_token(query))])

    def _mapping(self, mapping) -> torch.Tensor:
        """``mapping`` as a (K,) tensor of labels in [0, M), else an error naming it."""
        K, M = self.n_inputs, self.n_labels
        try:
            labels = check_ints("mapping", mapping, below=M)
        except (TypeError, ValueError) as e:
            raise ValueError(f"mapping must give one label in [0, {M}) for each of "
                             f"the {K} inputs ({e})") from None  # fmt: skip
        if len(labels) != K:
            raise ValueError(
                f"mapping must give one label in [0, {M}) for each of the {K} inputs, "
                f"got {len(labels)}"
            )
        return torch.tensor(labels)

    def sequences(
        self,
        n: int,
        pairs: int,
        families,
        g: torch.Generator,
        mapping: torch.Tensor | None = None,
    ) -> dict:
        """``n`` sequences of ``pairs`` demonstrations, each family equally likely (or
        one ``mapping`` (K,)).

        Returns ``ids`` (n, 1 + 2·pairs); ``targets``: the answer token at each query
        position, IGNORE elsewhere; ``x``/``y`` (n, pairs) as symbol indices; ``seen``
        (n, pairs): whether x_i occurred among x_1..x_{i-1}.
        """
        if isinstance(families, str):
            families = (families,)
        if mapping is not None:
            maps = self._mapping(mapping).reshape(1, -1).expand(n, -1)
        else:
            fam = torch.randint(len(families), (n,), generator=g)
            maps = torch.empty(n, self.n_inputs, dtype=torch.long)
            # every family, then pick per row
            for i, f in enumerate(families):
                maps = torch.where((fam == i)[:, None], self.mappings(f, n, g), maps)
        x = torch.randint(self.n_inputs, (n, pairs), generator=g)
        y = maps.gather(1, x)
        ids = torch.full((n, 1 + 2 * pairs), self.BOS, dtype=torch.long)
        # queries at 1, 3, 5, ...
        ids[:, 1::2] = self.query_token(x)
        # answers at 2, 4, 6, ...
        ids[:, 2::2] = self.answer_token(x, y)
        targets = torch.full_like(ids, IGNORE)
        # at x_i, predict (x_i→y_i): answers only
        targets[:, 1::2] = ids[:, 2::2]
        # (n, pairs): x_i among x_<i
        seen = (x[:, :, None] == x[:, None, :]).tril(-1).any(-1)
        return {"ids": ids, "targets": targets, "x": x, "y": y, "seen": seen}

    def label_logits(self, logits: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """The logits of the M possible answers ``(x→y0) .. (x→y{M-1})`` to queries
        ``x``.

        ``logits`` (..., V) at the query positions, ``x`` (...) the queries; returns
        (..., M).
        """
        return logits.gather(
            -1, self.answer_token(x[..., None], torch.arange(self.n_labels))
        )

    @scores_on_device  # on the GPU if there is one
    @torch.no_grad()
    def shot_scores(self, model, family: str, n: int, pairs: int, g, shots) -> dict:
        """Per-example scores at each number of shots in ``shots`` on ``n`` new
        sequences of ``family`` (GPT-3 chapter: the rows of a verdict's per-example
        data; the same ``g`` gives the same sequences to every model).

        Returns (n, len(shots)) tensors: ``correct`` (1/0: the model's answer to the
        k-shot query), ``seen`` (the query had been demonstrated) and ``copier`` (what
        copying scores on that query, in expectation: 1 if seen, else ``1 /
        n_labels``), and ``y`` (the right labels).
        """
        k = torch.tensor(check_ints("shots", shots, below=pairs, below_name="pairs"))
        b = self.sequences(n, pairs, family, g)
        dev = _device(model)  # scored where the model is (the GPU, say)
        with eval_mode(model):  # no dropout: a score is the model's, not a draw
            logits = model(b["ids"].to(dev)).logits[:, 1::2].float().cpu()  # (n, P, V)
        correct = (self.label_logits(logits, b["x"]).argmax(-1) == b["y"]).float()
        seen = b["seen"][:, k]
        return {
            "correct": correct[:, k],
            "seen": seen,
            "copier": torch.where(seen, 1.0, 1.0 / self.n_labels),
            "y": b["y"][:, k],
        }

    @scores_on_device  # on the GPU if there is one
    @torch.no_grad()
    def unseen_scores(self, model, family: str, n: int, g, shots) -> torch.Tensor:
        """(n, len(shots)) 1/0: the model's answer to a query that is *not* among the
        k demonstrations (GPT-3 chapter: can a rule answer what copying cannot?).

        Each of the ``n`` episodes draws a mapping of ``family``, a query ``q`` and
        ``max(shots)`` demonstrations whose inputs are drawn uniformly from the other
        ``n_inputs - 1``: the demonstrations a sequence holds before an unseen query,
        exactly. The k-shot prompt is the first k of them, then ``q``, so every k is
        scored on the same episodes (and a same ``g``, on the same ones for every
        model).
        """
        if self.n_inputs < 2:
            raise ValueError("an unseen query needs n_inputs >= 2")
        shots = check_ints("shots", shots)
        maps = self.mappings(family, n, g)  # (n, K)
        q = torch.randint(self.n_inputs, (n,), generator=g)
        # inputs other than q: draw from K - 1 and skip q
        other = torch.randint(self.n_inputs - 1, (n, max(shots)), generator=g)
        xs = other + (other >= q[:, None]).long()
        ys = maps.gather(1, xs)
        answer = maps.gather(1, q[:, None])[:, 0]
        out, dev = [], _device(model)
        for k in shots:
            ids = torch.full((n, 2 + 2 * k), self.BOS, dtype=torch.long)
            ids[:, 1 : 2 * k : 2] = self.query_token(xs[:, :k])
            ids[:, 2 : 2 * k + 1 : 2] = self.answer_token(xs[:, :k], ys[:, :k])
            ids[:, -1] = self.query_token(q)
            with eval_mode(model):  # no dropout
                logits = model(ids.to(dev)).logits[:, -1].float().cpu()
            out.append((self.label_logits(logits, q).argmax(-1) == answer).float())
        return torch.stack(out, 1)

    @torch.no_grad()
    def shot_accuracy(self, model, family: str, n: int, pairs: int, g, shots) -> list:
        """Accuracy at each number of shots in ``shots`` on ``n`` new sequences of
        ``family``, split by whether the query had been demonstrated (GPT-3 chapter).

        One row per k: ``accuracy``, ``seen queries`` / ``unseen queries`` (the
        accuracy on each part; NaN when a part is empty), ``share seen`` and
        ``copier`` (what copying seen answers and guessing the rest would score) and
        ``constant answer`` (the best a model answering one label whatever it reads can
        score: the most frequent answer's share). Such a model scores about
        ``1 / n_labels`` on every part, so the chapter's asserts on seen queries fail
        for it (a test checks). The per-example scores behind the rows:
        :meth:`shot_scores`.
        """
        # a list: an iterator would be read up by the first of its two uses below
        shots = check_ints("shots", shots, below=pairs, below_name="pairs")
        return self.accuracy_rows(
            family, self.shot_scores(model, family, n, pairs, g, shots), shots
        )

    def accuracy_rows(self, family: str, scores: dict, shots) -> list:
        """:meth:`shot_accuracy`'s rows from :meth:`shot_scores`' ``scores``."""
        nan, rows = float("nan"), []
        correct, seen_all, n = scores["correct"], scores["seen"], len(scores["y"])
        for j, k in enumerate(shots):
            seen = seen_all[:, j]
            share = seen.float().mean().item()
            rows.append(
                {
                    "family": family,
                    "shots": k,
                    "accuracy": correct[:, j].mean().item(),
                    "copier": share + (1 - share) / self.n_labels,
                    "constant answer": torch.bincount(
                        scores["y"][:, j], minlength=self.n_labels
                    )
                    .max()
                    .item()
                    / n,
                    "seen queries": correct[seen, j].mean().item()
                    if seen.any()
                    else nan,
                    "unseen queries": correct[~seen, j].mean().item()
                    if (~seen).any()
                    else nan,
                    "share seen": share,
                }
            )
        return rows
