"""A small Sphinx extension for the API reference (book/api_*.md): how autodoc shows
constants.

Autodoc shows a module-level constant such as ``PRESETS`` (a dict) with the docstring of
its *type* (``dict() -> new empty dictionary ...``) and its whole value on one line.
Here a constant is shown

* with its own documentation: a ``#:`` comment before it, else the comment at the end of
  the line that assigns it (``IGNORE = -100  # targets equal to this do not count
  towards the loss``), else the comment lines right above it (shown as typed, not as
  reST), else, for a container, a one-line summary of the value (``A dict of 4 entries
  ('tiny', 'small', ...).``);
* with its value only when that is short (at most ``MAX_VALUE`` characters).

Module-level constants are listed even without documentation (the API pages pass
``:undoc-members:``); undocumented methods and class attributes are not (``forward`` of
every ``nn.Module``). Loaded by _config.yml (``sphinx: local_extensions``).
"""

from __future__ import annotations

import ast
import inspect
import io
import re
import sys
import tokenize
import typing

from sphinx.ext.autodoc import DataDocumenter, ModuleDocumenter
from sphinx.util.inspect import object_description

MAX_VALUE = 70  # longest value shown after a constant's name
PLAIN = (
    str,
    bytes,
    int,
    float,
    complex,
    bool,
    tuple,
    list,
    dict,
    set,
    frozenset,
    type(None),
)


def _trailing_comments(module) -> dict[str, str]:
    """``{name: comment}`` for top-level assignments in ``module`` whose first line ends
    in a comment.
    """
    try:
        source = inspect.getsource(module)
    except (OSError, TypeError):
        return {}
    comments = {}
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if tok.type == tokenize.COMMENT:
                comments[tok.start[0]] = tok.string.lstrip("#").strip()
    except (tokenize.TokenError, SyntaxError):
        return {}
    lines = source.splitlines()
    out = {}
    for node in ast.parse(source).body:
        targets = (
            node.targets
            if isinstance(node, ast.Assign)
            else [node.target]
            if isinstance(node, ast.AnnAssign)
            else []
        )
        # the whole-line comments right above the assignment
        block, above = [], node.lineno - 1
        while above >= 1 and lines[above - 1].lstrip().startswith("#"):
            block.insert(0, comments.get(above, ""))
            above -= 1
        # not a ruler such as # -----
        block = [b for b in block if b.strip("-=#* ")]
        for t in targets:
            if not isinstance(t, ast.Name):
                continue
            if node.lineno in comments:
                out[t.id] = comments[node.lineno]
            elif block:
                out[t.id] = " ".join(block)
    return out


def _escape(text: str) -> str:
    """A source comment as plain reST text: its ``*``, backticks, ``_`` and ``|`` shown
    as typed.
    """
    return re.sub(r"([\\`*_|\[\]<>])", r"\\\1", text)


def _comment_for(name: str, obj, modname: str) -> str | None:
    """The trailing comment of ``name``'s assignment: in ``modname``, else in the
    package module that defines the same object (a name re-exported by a package's
    ``__init__``).
    """
    root = modname.split(".")[0]
    candidates = [modname] + sorted(
        m for m in list(sys.modules) if m == root or m.startswith(root + ".")
    )
    for m in candidates:
        module = sys.modules.get(m)
        if module is None or getattr(module, name, None) is not obj:
            continue
        comment = _trailing_comments(module).get(name)
        if comment:
            return comment
    return None


def _summary(obj) -> str:
    kind = type(obj).__name__
    if isinstance(obj, dict):
        keys = ", ".join(f"``{k!r}``" for k in list(obj)[:8]) + (
            ", ..." if len(obj) > 8 else ""
        )
        return f"A ``{kind}`` of {len(obj)} entries" + (f" ({keys})." if obj else ".")
    if isinstance(obj, (tuple, list, set, frozenset)):
        items = ", ".join(f"``{v!r}``" for v in list(obj)[:8]) + (
            ", ..." if len(obj) > 8 else ""
        )
        return f"A ``{kind}`` of {len(obj)} items" + (f" ({items})." if obj else ".")
    return ""  # a scalar: its value, shown, says it


def _has_own_doc(obj) -> bool:
    """A docstring written for ``obj`` itself, not inherited from its type."""
    doc = getattr(obj, "__doc__", None)
    return bool(doc) and doc != getattr(type(obj), "__doc__", None)


def _is_constant(name: str, obj) -> bool:
    """A public module-level constant: an UPPER_CASE name bound to a value (not a type
    variable).
    """
    return (
        name.isupper()
        and not name.startswith("_")
        and not isinstance(obj, typing.TypeVar)
        and not (
            inspect.isroutine(obj) or inspect.isclass(obj) or inspect.ismodule(obj)
        )
    )


class ConstantDocumenter(DataDocumenter):
    """DataDocumenter, with the constant's own comment instead of its type's docstring.

    Autodoc's own documents module data only when it has a ``#:`` comment or a docstring
    after it; this one also documents undocumented UPPER_CASE constants of a module
    (``PRESETS``).
    """

    @classmethod
    def can_document_member(cls, member, membername, isattr, parent) -> bool:
        return super().can_document_member(member, membername, isattr, parent) or (
            isinstance(parent, ModuleDocumenter) and _is_constant(membername, member)
        )

    def get_doc(self):
        comment = self.get_module_comment(self.objpath[-1])  # a ``#:`` comment
        if comment:
            return [comment]
        if _has_own_doc(self.object) and not isinstance(self.object, PLAIN):
            return super().get_doc()
        comment = _comment_for(self.objpath[-1], self.object, self.modname)
        text = _escape(comment) if comment else _summary(self.object)
        first = text.split(" ", 1)[0]
        # a sentence; not a name such as nsp_labels
        if first.isalpha() and first.islower():
            text = text[0].upper() + text[1:]
        if text and not text.endswith((".", ")", ":")):
            text += "."
        _WRITTEN[".".join([self.modname, *self.objpath])] = text
        return [[text] if text else []]

    def should_suppress_value_header(self) -> bool:
        if super().should_suppress_value_header():
            return True
        try:
            return len(object_description(self.object)) > MAX_VALUE
        except ValueError:
            return True


# full name -> the text ConstantDocumenter gave that constant
_WRITTEN: dict[str, str] = {}


def keep_written(app, what, name, obj, options, lines):
    """Napoleon reads a data docstring's ``x: y`` as "type: description" (``IS_NEXT``'s
    comment ``nsp_labels: B follows A ...`` would become type ``nsp_labels``): put back
    the text written above. Connected after napoleon (priority 600 > its 500).
    """
    if what == "data" and name in _WRITTEN:
        lines[:] = [_WRITTEN[name], ""] if _WRITTEN[name] else []


_MARKUP_START = re.compile(r"\s*([*+-]\s|#\.\s|\d+[.)]\s|\.\.\s|:\w[^:]*:|>>>)")


def preformatted_blocks(app, what, name, obj, options, lines):
    """Show an indented block that follows a plain paragraph as preformatted text, as ``help()``
    does: a table or a diagram in a docstring (``ptlm_lite.suite``'s table of tasks). Without a
    ``::`` above it, reST reads such a block as a block quote, and a line indented further inside
    it ("Unexpected indentation") fails the build. Blocks under a list item, a directive, a field
    or a paragraph that ends with ``::`` are left alone."""
    if what == "data":
        return
    out, i = [], 0
    while i < len(lines):
        line = lines[i]
        starts_block = (
            line.strip() and line[:1].isspace() and i >= 2 and not lines[i - 1].strip()
        )
        if starts_block:
            # the paragraph above: its last and first lines, both at the margin
            j = i - 1
            while j >= 0 and not lines[j].strip():
                j -= 1
            k = j
            while k > 0 and lines[k - 1].strip():
                k -= 1
            above = lines[k : j + 1] if j >= 0 else []
            if (
                above
                and all(not a[:1].isspace() for a in above)
                and not above[-1].rstrip().endswith("::")
                and not _MARKUP_START.match(above[0])
            ):
                out += ["::", ""]
        out.append(line)
        i += 1
    lines[:] = out


def skip_undocumented(app, what, name, obj, skip, options):
    """Keep undocumented module-level constants (``:undoc-members:``), drop the rest of
    the undocumented members: methods, class attributes, functions and classes without a
    docstring.
    """
    if skip:
        return None
    if what == "module" and not (
        inspect.isroutine(obj) or inspect.isclass(obj) or inspect.ismodule(obj)
    ):
        # a constant (ConstantDocumenter documents it); other module data
        # (``annotations`` from __future__, a TypeVar) only when documented with
        # ``#:``, which autodoc handles itself
        return None if _is_constant(name, obj) or _has_own_doc(obj) else True
    if inspect.ismodule(obj):
        return True
    if inspect.isclass(obj):
        return not obj.__dict__.get("__doc__")
    if isinstance(obj, (staticmethod, classmethod)):
        obj = obj.__func__
    if isinstance(obj, property) or inspect.isroutine(obj):
        # its own, not an inherited one
        return not (getattr(obj, "__doc__", None) or "").strip()
    # a class attribute: only when it has its own doc
    return not _has_own_doc(obj)


# Long names in inline code (``OpenAIGPTLMHeadModel.from_pretrained``) and signatures
# may break anywhere, on every page, so that none is wider than a phone's screen; a
# progress bar wraps its counts below it rather than shrink to nothing.
NARROW_CSS = """<style>
  article code.literal, article dt.sig, article dt.sig * { overflow-wrap: anywhere; }
  article dt.sig, article code.literal span.pre { white-space: normal; }
  /* tqdm's progress bar (an HBox: label, bar, counts) keeps its bar on a phone */
  article .widget-hbox:has(> .widget-hprogress) { flex-wrap: wrap; }
  article .widget-hprogress { min-width: 120px; flex: 1 1 120px; }
</style>"""


def narrow_screens(app, pagename, templatename, context, doctree):
    context["metatags"] = context.get("metatags", "") + NARROW_CSS


def always_reread(app, env, added, changed, removed):
    """Re-read the API pages on every build: they show the package's docstrings, and
    Sphinx does not notice a change in a module that a page documents only through a
    re-export.
    """
    return sorted(
        d
        for d in env.found_docs
        if d.startswith("book/api") and d not in added | changed
    )


def setup(app):
    app.setup_extension("sphinx.ext.autodoc")
    app.add_autodocumenter(ConstantDocumenter, override=True)
    app.connect("autodoc-skip-member", skip_undocumented)
    # after napoleon
    app.connect("autodoc-process-docstring", preformatted_blocks, priority=550)
    app.connect("autodoc-process-docstring", keep_written, priority=600)
    app.connect("html-page-context", narrow_screens)
    app.connect("env-get-outdated", always_reread)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
