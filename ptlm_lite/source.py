"""Show the package's real source in a notebook: the book never keeps a second copy of a
model.

Introduced in ``chapters/transformer.ipynb``; every chapter uses it.
"""

from __future__ import annotations

import inspect
import textwrap

__all__ = ["show_source", "source_of"]


def source_of(obj, lines: tuple[int, int] | None = None) -> str:
    """The source text of a module, class, function or method (optionally a 1-based line
    range).
    """
    try:
        src = inspect.getsource(obj)
    except (TypeError, OSError) as e:
        raise TypeError(
            f"show_source needs a module, class, function or method defined in Python, "
            f"got {obj!r}"
        ) from e
    src = textwrap.dedent(src)
    if lines is not None:
        a, b = lines
        all_lines = src.splitlines()
        if not 1 <= a <= b <= len(all_lines):
            raise ValueError(
                f"lines must satisfy 1 <= start <= end <= {len(all_lines)}, got {lines}"
            )
        src = "\n".join(all_lines[a - 1 : b])
    return src.rstrip() + "\n"


class _Source:
    """Rendered as a highlighted code block by Jupyter, Colab and the static book alike."""

    def __init__(self, text: str, where: str):
        self.text, self.where = text, where

    def _repr_markdown_(self):
        return f"*`{self.where}`*\n\n```python\n{self.text}```\n"

    def __repr__(self):
        return f"# {self.where}\n{self.text}"


def show_source(obj, lines: tuple[int, int] | None = None):
    """Display ``obj``'s source from the installed package, with where it lives.

    >>> show_source(ptlm_lite.masks.causal_mask)   # doctest: +SKIP
    """
    module = inspect.getmodule(obj)
    where = getattr(obj, "__qualname__", getattr(obj, "__name__", "?"))
    if module is not None and module is not obj:
        where = f"{module.__name__}.{where}"
    return _Source(source_of(obj, lines), where)
