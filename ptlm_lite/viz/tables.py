"""Comparison tables that filter and sort in the browser, with or without a kernel.

Introduced in the synthesis chapter (the articles' tables of LM type, feature extractor,
context direction), whose measured columns come from the book's own runs. The output is
plain HTML and a few lines of inline JavaScript, so it works in Jupyter, Colab and the
static book alike.
"""

from __future__ import annotations

from typing import Sequence

from ._html import esc, stable_id

TABLE_CLASS = "ptlm-table"

_JS = """<script>(function () {
  var s = document.currentScript;
  var root = (s && s.previousElementSibling && s.previousElementSibling.id === %(id)s)
             ? s.previousElementSibling : document.getElementById(%(id)s);
  if (!root || root.dataset.ready) return;
  root.dataset.ready = '1';
  var body = root.querySelector('tbody'), rows = Array.prototype.slice.call(body.rows);
  var text = root.querySelector('input.ptlm-filter'), count = root.querySelector('.ptlm-count');
  var selects = Array.prototype.slice.call(root.querySelectorAll('select.ptlm-col'));
  function apply() {
    var terms = text.value.toLowerCase().split(/\\s+/).filter(Boolean), shown = 0;
    rows.forEach(function (r) {
      var t = r.textContent.toLowerCase();
      var ok = terms.every(function (w) { return t.indexOf(w) >= 0; }) &&
        selects.every(function (sel) {
          return !sel.value || r.cells[+sel.dataset.col].textContent.trim() === sel.value; });
      r.style.display = ok ? '' : 'none'; if (ok) shown++;
    });
    count.textContent = shown + ' of ' + rows.length + ' rows';
  }
  text.addEventListener('input', apply);
  selects.forEach(function (sel) { sel.addEventListener('change', apply); });
  Array.prototype.forEach.call(root.querySelectorAll('thead th[data-col]'), function (th) {
    th.style.cursor = 'pointer';
    th.addEventListener('click', function () {
      var c = +th.dataset.col, dir = th.dataset.dir === 'asc' ? -1 : 1;
      Array.prototype.forEach.call(root.querySelectorAll('thead th'), function (o) {
        o.dataset.dir = ''; var a = o.querySelector('.ptlm-arrow'); if (a) a.textContent = ''; });
      th.dataset.dir = dir > 0 ? 'asc' : 'desc';
      th.querySelector('.ptlm-arrow').textContent = dir > 0 ? ' \\u25b2' : ' \\u25bc';
      function key(r) { var v = r.cells[c].dataset.v; return v === undefined ? r.cells[c].textContent : +v; }
      rows.sort(function (a, b) {
        var x = key(a), y = key(b);
        if (typeof x === 'number' && typeof y === 'number') return dir * (x - y);
        return dir * String(x).localeCompare(String(y));
      });
      rows.forEach(function (r) { body.appendChild(r); });
    });
  });
  apply();
})();</script>"""

_CSS = (
    "<style>.ptlm-table table{border-collapse:collapse;font-size:13px;margin-top:4px}"
    ".ptlm-table th,.ptlm-table td{border-bottom:1px solid #ddd;padding:3px "
    "8px;text-align:left}"
    ".ptlm-table td.num{text-align:right;font-variant-numeric:tabular-nums}"
    ".ptlm-table thead th{background:#f3f5f8;user-select:none}"
    ".ptlm-table "
    ".ptlm-controls{font-size:13px;display:flex;flex-wrap:wrap;gap:8px;align-items:center}"
    "</style>"
)


class Table:
    """What :func:`table` returns: a DataFrame shown with its numbers rounded and its
    empty cells as a dash, as HTML in a notebook and as text elsewhere; ``.df`` is it.
    """

    def __init__(self, df, missing: str):
        self.df = df
        self.missing = missing

    def _repr_html_(self) -> str:
        return self.df.to_html(na_rep=self.missing, notebook=True)

    def __repr__(self) -> str:
        return self.df.to_string(na_rep=self.missing)


def table(df, digits: int = 3, missing: str = "\u2014") -> Table:
    """``df`` rounded to ``digits`` decimals, with the cells that have no value (NaN,
    ``<NA>``) shown as ``missing``: a baseline's standard deviation over seeds when it
    ran once, a column that does not apply to a row. pandas would print ``NaN``, which
    reads as a failed computation.
    """
    import pandas as pd

    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"table needs a pandas DataFrame, got {type(df).__name__}")
    if not isinstance(digits, int) or isinstance(digits, bool) or digits < 0:
        raise ValueError(f"digits must be a whole number >= 0, got {digits!r}")
    out = df.round(digits)
    for c in out.columns:  # pandas' na_rep reaches NaN in float columns only
        col = out[c]
        if not pd.api.types.is_float_dtype(col.dtype) and col.isna().any():
            out[c] = col.astype(object).where(col.notna(), missing)
    return Table(out, missing)


class ComparisonTable:
    """What :func:`comparison_table` returns: displays as HTML (``_repr_html_``);
    ``.html`` is the string; ``.df`` the DataFrame it shows.
    """

    def __init__(self, df, html: str):
        self.df = df
        self.html = html

    def _repr_html_(self) -> str:
        return self.html

    def __repr__(self) -> str:  # plain-text fallback (e.g. in a terminal)
        return self.df.to_string()


def comparison_table(
    df,
    *,
    caption: str = "",
    filter_columns: Sequence[str] | None = None,
    precision: int = 3,
    max_rows: int = 1000,
) -> ComparisonTable:
    """An interactive table from a pandas DataFrame: type to filter rows, pick a value
    in a column menu, click a header to sort (numbers sort as numbers).

    ``filter_columns`` get a drop-down of their values (default: text columns with 2-12
    distinct values). Works without a kernel: the filtering and sorting are a few lines
    of inline JavaScript.
    """
    import numbers

    import pandas as pd

    if not isinstance(df, pd.DataFrame):
        raise TypeError(
            f"comparison_table needs a pandas DataFrame, got {type(df).__name__}"
        )
    if len(df.columns) == 0 or len(df) == 0:
        raise ValueError(
            f"comparison_table needs a DataFrame with at least one row and one column; "
            f"got {len(df)} rows and {len(df.columns)} columns"
        )
    if len(df) > max_rows:
        raise ValueError(
            f"the DataFrame has {len(df)} rows; a comparison table shows at most "
            f"max_rows={max_rows}"
        )
    show_index = not isinstance(df.index, pd.RangeIndex)
    frame = df.reset_index() if show_index else df
    cols = [str(c) for c in frame.columns]
    if filter_columns is None:
        filter_columns = [
            c
            for c, s in zip(cols, (frame[c] for c in frame.columns))
            if not pd.api.types.is_numeric_dtype(s)
            and 2 <= s.astype(str).nunique() <= 12
        ]
    else:
        missing = [c for c in filter_columns if c not in cols]
        if missing:
            raise ValueError(
                f"filter_columns {missing} are not columns of the DataFrame; columns "
                f"are {cols}"
            )

    def cell(v):
        if isinstance(v, bool) or v is None or (isinstance(v, float) and v != v):
            return f"<td>{'' if v is None or v != v else esc(v)}</td>"
        if isinstance(v, numbers.Number):
            # integers as they are (years, counts); floats to `precision` significant
            # digits
            shown = f"{v:.{precision}g}" if isinstance(v, float) else str(v)
            return f'<td class="num" data-v="{float(v)!r}">{esc(shown)}</td>'
        return f"<td>{esc(v)}</td>"

    values = frame.to_numpy(dtype=object).tolist()
    tid = stable_id("ptlm-table", cols, values)
    head = "".join(
        f'<th data-col="{i}">{esc(c)}<span class="ptlm-arrow"></span></th>'
        for i, c in enumerate(cols)
    )
    body = "".join("<tr>" + "".join(cell(v) for v in row) + "</tr>" for row in values)
    menus = []
    for c in filter_columns:
        i = cols.index(c)
        opts = sorted({str(v) for v in frame.iloc[:, i].tolist()})
        menus.append(
            f'<label>{esc(c)} <select class="ptlm-col" data-col="{i}"><option value="">all</option>'
            + "".join(f'<option value="{esc(o)}">{esc(o)}</option>' for o in opts)
            + "</select></label>"
        )
    cap = (
        f"<caption style='caption-side:top;text-align:left'>{esc(caption)}</caption>"
        if caption
        else ""
    )
    html = (
        f'{_CSS}<div class="{TABLE_CLASS}" id="{tid}">'
        '<div class="ptlm-controls"><input class="ptlm-filter" type="search" placeholder="filter rows…" '
        'aria-label="filter rows">'
        + "".join(menus)
        + f'<span class="ptlm-count">{len(values)} of {len(values)} rows</span></div>'
        f"<table>{cap}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>"
        + _JS
        % {"id": repr(tid)}
    )
    return ComparisonTable(df, html)
