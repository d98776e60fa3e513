"""ptlm_lite.viz: the widgets build, switch in the browser (jslink), and refuse bad
input clearly.

Browser behaviour (the static book) is tested in tests/browser/; these tests need no
browser.
"""

import pathlib
import re
import subprocess
import sys

import pytest
import torch

pytest.importorskip("ipywidgets")
import ipywidgets as w  # noqa: E402

from ptlm_lite import masks  # noqa: E402
from ptlm_lite import viz  # noqa: E402

TOKENS = ["the", "cat", "sat", "[PAD]"]


def pages_and_control(box):
    """(control, pages) of a stepper, checking the browser-side link between them."""
    assert isinstance(box, w.VBox) and "ptlm-stepper" in box._dom_classes
    ctrl, pages = box.children
    return ctrl, pages


def links_of(ctrl, pages):
    """The jslinks whose ends are ctrl and pages (a Link widget lives in the widget
    registry).
    """
    from ipywidgets.widgets import widget as widget_module
    from ipywidgets.widgets.widget_link import Link

    # 8.1+ / older
    registry = getattr(widget_module, "_instances", None) or w.Widget.widgets
    found = []
    for widget in list(registry.values()):
        if isinstance(widget, Link):
            (a, an), (b, bn) = widget.source, widget.target
            if a is ctrl and b is pages:
                found.append((an, bn))
    return found


def test_importing_viz_imports_no_heavy_library():
    code = (
        "import sys, ptlm_lite.viz; "
        "print([m for m in ('ipywidgets', 'matplotlib', 'bertviz', 'pandas') if m "
        "in sys.modules])"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]"


# ---------------------------------------------------------------- stepper
def test_stepper_buttons_link_index_to_pages():
    box = viz.stepper({"a": "<b>A</b>", "b": "<i>B</i>"})
    ctrl, pages = pages_and_control(box)
    assert isinstance(ctrl, w.ToggleButtons) and list(ctrl.options) == ["a", "b"]
    assert [c.value for c in pages.children] == ["<b>A</b>", "<i>B</i>"]
    # linked in the browser: ToggleButtons.index (not .value) -> selected_index
    assert links_of(ctrl, pages) == [("index", "selected_index")]
    assert pages.selected_index == 0


def test_stepper_slider_for_many_views_and_labels_in_views():
    box = viz.stepper(
        [f"<p>{i}</p>" for i in range(12)], labels=[f"step {i}" for i in range(12)]
    )
    ctrl, pages = pages_and_control(box)
    assert isinstance(ctrl, w.SelectionSlider) and len(ctrl.options) == 12
    assert links_of(ctrl, pages) == [("index", "selected_index")]
    assert "step 3" in pages.children[3].value  # the view says which, too


def test_slider_label_is_the_value_it_selects():
    """Issue 26: the readout said "3" beside a view titled "τ = 2.0"; a stepper's
    slider shows the label of the view it selects, at every position."""
    labels = [f"τ = {t}" for t in (0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0)]
    box = viz.stepper([f"<p>{x}</p>" for x in labels], labels, control="slider")
    ctrl, pages = pages_and_control(box)
    assert ctrl.readout and "ptlm-slider" in ctrl._dom_classes
    for i, label in enumerate(labels):
        ctrl.index = i
        assert ctrl.label == ctrl.value == label
        assert label in pages.children[i].value
    # repeated labels stay distinct (a SelectionSlider needs distinct options)
    ctrl, _ = pages_and_control(
        viz.stepper(["a", "b", "c"], ["x", "x", "y"], control="slider")
    )
    assert list(ctrl.options) == ["x", "x (2)", "y"]


def test_stepper_uses_stack_or_tab():
    _, pages = pages_and_control(viz.stepper(["x", "y"]))
    assert isinstance(pages, w.Stack if hasattr(w, "Stack") else w.Tab)


def test_stepper_falls_back_to_tab_without_stack(monkeypatch):
    """Colab's ipywidgets 7 has no Stack: Tab (with titles) is what both versions have."""
    monkeypatch.delattr(w, "Stack")
    _, pages = pages_and_control(viz.stepper({"first": "x", "second": "y"}))
    assert isinstance(pages, w.Tab)
    assert [pages.get_title(i) for i in range(2)] == ["first", "second"]


def test_stepper_embeds_figures_as_small_pngs():
    from matplotlib.figure import Figure

    fig = Figure(figsize=(3, 2))
    fig.add_subplot(111).plot([0, 1], [1, 0])
    _, pages = pages_and_control(viz.stepper([fig, "<p>text</p>"]))
    html = pages.children[0].value
    assert html.startswith(
        '<div style="overflow-x:auto"><img src="data:image/png;base64,'
    )
    assert len(html) < 30_000


@pytest.mark.parametrize("views", [[], {}])
def test_stepper_without_views_is_an_error(views):
    with pytest.raises(ValueError, match="at least one view"):
        viz.stepper(views)


def test_stepper_bad_views_and_labels():
    with pytest.raises(TypeError, match="views must be"):
        viz.stepper("<p>one string</p>")
    with pytest.raises(ValueError, match="one entry per view"):
        viz.stepper(["a", "b"], labels=["only one"])
    with pytest.raises(TypeError, match="HTML string, a matplotlib Figure"):
        viz.stepper([object()])
    with pytest.raises(ValueError, match="control must be"):
        viz.stepper(["a"], control="knob")


# ---------------------------------------------------------------- masks
def cells(html):
    """The mask drawn in an HTML table, read back as rows of 0/1."""
    body = html.split("<tbody>")[1]
    return [
        [1 if c == "y" else 0 for c in re.findall(r'<td class="(y|n)"', row)]
        for row in body.split("</tr>")
        if "<td" in row
    ]


def test_mask_explorer_draws_each_mask_exactly():
    named = {
        "causal": masks.causal_mask(4),
        "bidirectional": masks.full_mask(4),
        "padding": masks.padding_mask(torch.tensor([[1, 1, 1, 0]]).bool())[0].expand(
            4, 4
        ),
    }
    ctrl, pages = pages_and_control(viz.mask_explorer(named, TOKENS))
    assert list(ctrl.options) == list(named)
    for (name, m), page in zip(named.items(), pages.children):
        assert cells(page.value) == m.int().tolist(), name
        assert "may attend (True)" in page.value  # the legend
        assert "&lt;" not in page.value or "[PAD]" in TOKENS
    assert "[PAD]" in pages.children[0].value


def test_mask_explorer_cross_attention_uses_key_tokens():
    m = masks.cross_mask(torch.tensor([[1, 1, 1, 0]]).bool(), 2)  # (1, 2, 4)
    _, pages = pages_and_control(viz.mask_explorer({"cross": m}, ["<s>", "le"], TOKENS))
    assert cells(pages.children[0].value) == [[1, 1, 1, 0], [1, 1, 1, 0]]
    assert "&lt;s&gt;" in pages.children[0].value  # token labels are escaped, not tags


def test_mask_explorer_rejects_bad_input():
    with pytest.raises(ValueError, match="same shape"):
        viz.mask_explorer(
            {"a": masks.causal_mask(4), "b": masks.causal_mask(3)}, TOKENS
        )
    with pytest.raises(TypeError, match="bool tensor"):
        viz.mask_explorer({"a": masks.causal_mask(4).float()}, TOKENS)
    with pytest.raises(ValueError, match="one label per query"):
        viz.mask_explorer({"a": masks.causal_mask(4)}, TOKENS[:3])
    with pytest.raises(ValueError, match="key_tokens"):
        viz.mask_explorer({"a": torch.ones(2, 4, dtype=torch.bool)}, ["x", "y"])
    with pytest.raises(ValueError, match="one label per key"):
        viz.mask_explorer({"a": torch.ones(2, 4, dtype=torch.bool)}, ["x", "y"], ["k"])
    with pytest.raises(ValueError, match="masks is empty"):
        viz.mask_explorer({}, TOKENS)
    with pytest.raises(TypeError, match="dict"):
        viz.mask_explorer([masks.causal_mask(4)], TOKENS)
    with pytest.raises(ValueError, match="2-D"):
        viz.mask_explorer({"a": torch.ones(4, dtype=torch.bool)}, TOKENS)


def test_permutation_explorer_shows_both_streams():
    words = ["我", "爱", "生", "活"]
    ctrl, pages = pages_and_control(
        viz.permutation_explorer(words, [[0, 1, 2, 3], [2, 0, 3, 1]])
    )
    assert list(ctrl.options) == ["0→1→2→3", "2→0→3→1"]
    html = pages.children[1].value
    content, query = masks.permutation_masks([2, 0, 3, 1])
    tables = html.split('<table class="ptlm-mask"')[1:]
    assert len(tables) == 2
    assert cells(tables[0]) == content.int().tolist()
    assert cells(tables[1]) == query.int().tolist()
    assert all(q[i] == 0 for i, q in enumerate(cells(tables[1])))  # never sees itself
    assert "生<sub>2</sub> → 我<sub>0</sub>" in html  # the order, in words


def test_permutation_explorer_rejects_bad_orders():
    with pytest.raises(ValueError, match="orders is empty"):
        viz.permutation_explorer(["a", "b"], [])
    with pytest.raises(ValueError, match="permutation"):
        viz.permutation_explorer(["a", "b"], [[0, 1, 2]])
    with pytest.raises(ValueError, match="permutation"):
        viz.permutation_explorer(["a", "b", "c"], [[0, 0, 1]])


# ---------------------------------------------------------------- attention
def fake_attentions(L=2, B=1, H=2, T=4, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [torch.softmax(torch.randn(B, H, T, T, generator=g), -1) for _ in range(L)]


def test_attention_heatmaps_one_view_per_layer():
    ctrl, pages = pages_and_control(
        viz.attention_heatmaps(fake_attentions(L=3), TOKENS)
    )
    assert list(ctrl.options) == ["layer 0", "layer 1", "layer 2"]
    assert all('<img src="data:image/png' in c.value for c in pages.children)
    sizes = [len(c.value) for c in pages.children]
    assert max(sizes) < 60_000, sizes
    assert len(set(c.value for c in pages.children)) == 3


def test_attention_heatmaps_per_head_and_3d_input():
    att = [a[0] for a in fake_attentions(L=2, H=3)]  # (H, T, T) per layer
    ctrl, pages = pages_and_control(viz.attention_heatmaps(att, TOKENS, per="head"))
    assert len(pages.children) == 6 and ctrl.options[0] == "L0 H0"


def test_attention_heatmaps_rejects_bad_input():
    with pytest.raises(ValueError, match="4 labels"):
        viz.attention_heatmaps(fake_attentions(), TOKENS[:3])
    with pytest.raises(ValueError, match="same"):
        viz.attention_heatmaps(
            fake_attentions(T=4)[:1] + fake_attentions(T=3)[:1], TOKENS
        )
    with pytest.raises(ValueError, match="empty"):
        viz.attention_heatmaps([], TOKENS)
    with pytest.raises(ValueError, match="layer 5 does not exist"):
        viz.attention_heatmaps(fake_attentions(), TOKENS, layers=[5])
    with pytest.raises(ValueError, match="batch=3"):
        viz.attention_heatmaps(fake_attentions(), TOKENS, batch=3)


@pytest.mark.parametrize("view", ["bertviz_head_view", "bertviz_model_view"])
def test_bertviz_bridge_needs_no_cdn_in_the_book(view, monkeypatch):
    pytest.importorskip("bertviz")
    monkeypatch.setenv("PTLM_BERTVIZ_SCRIPTS", "linked")  # as scripts/execute.py stores
    out = getattr(viz, view)(fake_attentions(B=2), TOKENS, batch=1)
    html = out.data
    assert 'class="ptlm-bertviz' in html
    # no CDN script tag: require.js is loaded on demand
    assert "<script src=" not in html
    assert "window.ptlmBookJs" in html  # the book's copies when it is the book ...
    # ... bertviz's CDNs only outside it (Jupyter, Colab), and a message if they fail
    assert "cdnjs.cloudflare.com" in html
    assert "s.onerror" in html and "scripts/install.sh" in html
    assert not re.search(r"bertviz-[0-9a-f]{32}", html)  # stable ids, not random uuids
    for t in TOKENS:
        assert f'"{t}"' in html


@pytest.mark.parametrize("view", ["bertviz_head_view", "bertviz_model_view"])
def test_bertviz_view_carries_its_scripts_in_a_kernel(view, monkeypatch):
    """In a kernel run from the checkout (the copies on disk), a view draws with no
    network: d3 and jQuery are in it, and nothing is fetched (tests/browser draws one
    with every request refused)."""
    pytest.importorskip("bertviz")
    from ptlm_lite.viz import bertviz_views as av

    if av._vendor_paths() is None:
        pytest.fail(
            f"no d3/jQuery copies in {av.vendor_dir()}: run python scripts/assets.py",
            pytrace=False,
        )
    monkeypatch.delenv("PTLM_BERTVIZ_SCRIPTS", raising=False)
    assert av.scripts_mode() == "inline"  # the default when the copies are there
    html = getattr(viz, view)(fake_attentions(), TOKENS).data
    assert "cdnjs" not in html and "<script src=" not in html
    assert "d3js.org" in html and "noConflict(true)" in html  # both libraries, inline
    assert html.count("</script>") == 1  # one script element: nothing ends it early
    monkeypatch.setenv("PTLM_BERTVIZ_SCRIPTS", "linked")
    assert len(getattr(viz, view)(fake_attentions(), TOKENS).data) < len(html) - 300_000


def test_bertviz_looks_for_the_copies_where_scripts_assets_puts_them():
    """The package cannot import scripts/; a rename in scripts/assets.py would make every
    kernel view fall back to the CDNs without a word. This says it instead."""
    import importlib.util

    from ptlm_lite.viz import bertviz_views as av

    path = pathlib.Path(__file__).resolve().parents[1] / "scripts" / "assets.py"
    spec = importlib.util.spec_from_file_location("book_assets", path)
    assets = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(assets)
    assert av.vendor_dir() == assets.VENDOR
    assert set(av.VENDOR_FILES.values()) <= {name for _, _, name in assets.FILES}


def test_bertviz_scripts_mode_rejects_bad_values(monkeypatch, tmp_path):
    from ptlm_lite.viz import bertviz_views as av

    monkeypatch.setenv("PTLM_BERTVIZ_SCRIPTS", "cdn")
    with pytest.raises(ValueError, match="PTLM_BERTVIZ_SCRIPTS must be 'inline' or"):
        av.scripts_mode()
    # inline asked for, copies missing: say where they go and how to get them
    monkeypatch.setattr(av, "vendor_dir", lambda: tmp_path / "vendor")
    monkeypatch.setenv("PTLM_BERTVIZ_SCRIPTS", "inline")
    with pytest.raises(FileNotFoundError, match="scripts/assets.py"):
        av.scripts_mode()
    monkeypatch.delenv("PTLM_BERTVIZ_SCRIPTS")
    assert av.scripts_mode() == "linked"  # unset and no copies: the CDNs


def test_bertviz_bridge_is_stable_across_runs():
    pytest.importorskip("bertviz")
    from ptlm_lite.viz import _html

    att = fake_attentions()
    first = viz.bertviz_head_view(att, TOKENS).data
    _html._counter = iter(range(10**6))
    a = viz.bertviz_head_view(att, TOKENS).data
    _html._counter = iter(range(10**6))
    b = viz.bertviz_head_view(att, TOKENS).data
    assert a == b and first.count("bertviz-") == a.count("bertviz-")


def test_bertviz_bridge_rejects_cross_shapes():
    pytest.importorskip("bertviz")
    with pytest.raises(ValueError, match="Tq must equal Tk"):
        viz.bertviz_head_view([torch.rand(1, 2, 3, 4)], ["a", "b", "c"])


# ---------------------------------------------------------------- tables
def test_comparison_table_html_and_script():
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame(
        {
            "model": ["BERT", "GPT", "XLNet"],
            "type": ["AE", "AR", "AR"],
            "params (M)": [110, 117, 110.5],
        }
    )
    table = viz.comparison_table(df, caption="demo")
    html = table._repr_html_()
    assert html.count("<tr>") == 4 and "input" in html and "<script>" in html
    assert 'data-v="110.5"' in html  # numbers sort as numbers
    # a menu for the small text column
    assert '<select class="ptlm-col" data-col="1">' in html
    assert "3 of 3 rows" in html
    assert viz.comparison_table(df).html.split('id="')[1][:20].startswith("ptlm-table-")


def test_comparison_table_rejects_empty_and_non_frames():
    pd = pytest.importorskip("pandas")
    with pytest.raises(ValueError, match="at least one row"):
        viz.comparison_table(pd.DataFrame({"a": []}))
    with pytest.raises(ValueError, match="at least one row"):
        viz.comparison_table(pd.DataFrame())
    with pytest.raises(TypeError, match="DataFrame"):
        viz.comparison_table([{"a": 1}])
    with pytest.raises(ValueError, match="not columns"):
        viz.comparison_table(pd.DataFrame({"a": [1]}), filter_columns=["b"])


def test_table_shows_a_dash_not_nan_and_rounds():
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame(
        {
            "mean": [0.83333, 0.65],
            "std": [0.0601, float("nan")],  # a baseline that ran once
            "seeds": pd.array([3, None], dtype="Int64"),
            "one class only": [False, None],
        },
        index=["pre-trained", "majority class"],
    )
    shown = viz.table(df)
    text, html = repr(shown), shown._repr_html_()
    for out in (text, html):
        assert "NaN" not in out and "<NA>" not in out and "None" not in out
        assert "0.833" in out and "0.83333" not in out
    assert text.splitlines()[2].split()[2:] == ["0.650", "\u2014", "\u2014", "\u2014"]
    assert html.count("<td>\u2014</td>") == 3 and 'class="dataframe"' in html
    assert shown.df is not df and df["std"].isna().sum() == 1  # its input is left as is
    assert "-" in repr(viz.table(df, missing="-"))
    with pytest.raises(TypeError, match="DataFrame"):
        viz.table([1, 2])
    with pytest.raises(ValueError, match="digits"):
        viz.table(df, digits=-1)


# ---------------------------------------------------------------- training curves
def test_training_curve_records_and_draws_without_a_kernel():
    curve = viz.TrainingCurve("t", live=None)  # not in a kernel: nothing displayed
    assert curve.live is False
    for step in range(1, 51):
        curve(step, 2.0 / step)
    curve.log(50, val_loss=0.2)
    assert curve.finish() is None and curve.finished
    fig = curve.figure()
    ax = fig.axes[0]
    assert ax.get_yscale() == "log"
    labels = [line.get_label() for line in ax.get_lines()]
    assert "val_loss" in labels and any(
        label.startswith("training") for label in labels
    )
    assert curve._repr_png_()[:8] == b"\x89PNG\r\n\x1a\n"


def test_training_curve_live_updates_one_display(monkeypatch):
    import IPython.display as d

    shown, updates = [], []

    class Handle:
        def update(self, obj):
            updates.append(obj)

    def fake_display(obj, display_id=None):
        shown.append(obj)
        return Handle()

    monkeypatch.setattr(d, "display", fake_display)
    curve = viz.TrainingCurve(live=True, min_interval=0.0)
    for step in range(1, 4):
        curve(step, 1.0 / step)
    curve.finish()
    # one display, updated in place: the notebook stores one image
    assert len(shown) == 1
    assert len(updates) >= 1


def test_training_curve_from_history_and_callback_contract():
    from ptlm_lite.train import train

    net = torch.nn.Linear(2, 1)
    curve = viz.live_loss_plot(live=False)
    hist = train(
        net,
        lambda step: (torch.randn(8, 2), torch.zeros(8, 1)),
        steps=5,
        progress=False,
        callback=curve,
        loss_fn=lambda m, b: ((m(b[0]) - b[1]) ** 2).mean(),
    )
    assert curve.steps == [1, 2, 3, 4, 5] and curve.losses == pytest.approx(hist.losses)
    again = viz.TrainingCurve.from_history(hist)
    assert again.losses == pytest.approx(hist.losses)


def test_diagram_draws_boxes_arrows_and_links_from_text():
    from ptlm_lite.viz import diagram, diagram_svg

    svg = diagram_svg(
        "ids\nEmbeddings: token + position\nStack × N: causal mask\n---\nother\nbox",
        links=[(0, 2, 1, 1, "cross")],
        title="t",
    )
    # 3 in-column arrows + 1 link
    assert svg.count("<rect") == 5 and svg.count("marker-end") == 3 + 1
    assert "causal mask" in svg and "Stack × N" in svg and "cross" in svg
    assert "<script" not in svg  # static: works without a kernel
    assert "svg" in diagram("a\nb")._repr_html_()
    with pytest.raises(ValueError, match="links entry"):
        diagram_svg("a\nb", links=[(0, 5, 0, 0)])
    with pytest.raises(ValueError, match="spec must be a non-empty string"):
        diagram_svg("  ")


def test_every_diagram_label_fits_inside_its_box():
    """Labels were drawn centred in boxes of a fixed 230 px, and long ones ran out of
    them on the page (ALBERT's "LayerNorm, then E x H up to the width H", 255 px)."""
    import re

    from ptlm_lite.viz.diagram import BOX_W, TEXT_PAD, diagram_svg, text_px

    short = diagram_svg("a\nb: c")
    assert f'width="{BOX_W}"' in short  # short labels keep the usual box
    long = "choose each unit (p = 0.15), hide it whole"
    svg = diagram_svg(
        f"ids\nmask: {long}\n---\n[CLS] sentence A [SEP] sentence B [SEP]"
    )
    box = float(re.search(r'<rect [^>]*width="([\d.]+)"', svg).group(1))
    labels = re.findall(r'font-size="([\d.]+)"[^>]*>([^<]+)</text>', svg)
    assert len(labels) == 4
    for size, text in labels:
        assert text_px(text, float(size)) + 2 * TEXT_PAD <= box + 1e-9, text
    assert box > BOX_W


# --- figures that stay legible on a phone, sharp, and rendered by the book (issue 26)


def test_a_wide_figure_is_narrowed_until_its_text_fits_a_phone():
    from ptlm_lite.viz import _html as H

    fig = H.new_figure((7.2, 3.0))  # 720 CSS px at 100 dpi: 10-pt ticks -> 6.6 px
    axes = fig.subplots(1, 2)
    for ax in axes:
        ax.plot([1, 2, 3])
        ax.set_title("a title")
    fig.tight_layout()
    png = H.figure_to_png(fig, dpi=H.BOOK_DPI, scale=H.PIXEL_RATIO)
    width = H.png_size(png)[0]
    font = H.png_font_px(png)
    on_phone = font * min(width / H.PIXEL_RATIO, H.PHONE_PX) / width
    on_desktop = font / H.PIXEL_RATIO
    assert on_phone >= H.MIN_LABEL_PX - 0.05 and on_desktop >= H.MIN_LABEL_PX
    # without fitting, the same figure is too small on a phone (what the book had)
    fig = H.new_figure((7.2, 3.0))
    fig.subplots(1, 2)[0].plot([1, 2])
    png = H.figure_to_png(fig, dpi=H.BOOK_DPI, scale=H.PIXEL_RATIO, fit=False)
    width, font = H.png_size(png)[0], H.png_font_px(png)
    assert font * min(width / H.PIXEL_RATIO, H.PHONE_PX) / width < H.MIN_LABEL_PX


def test_inline_figures_are_rendered_by_the_book_in_a_kernel(tmp_path):
    """matplotlib loads its backend on the first figure, and matplotlib-inline then put
    its own PNG formatter over the book's: inline figures had no font record, 72 dpi.
    Now every inline figure is the book's: 2x pixels, shown at half (width metadata),
    its smallest font recorded."""
    import base64

    import nbformat
    from nbclient import NotebookClient

    from ptlm_lite.viz import _html as H

    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell(
            "import matplotlib.pyplot as plt\nfrom ptlm_lite import viz"
        ),
        nbformat.v4.new_code_cell(
            "fig, ax = plt.subplots(figsize=(4, 2))\nax.plot([1, 2])\nplt.show()"
        ),
    ]
    NotebookClient(nb, kernel_name="python3", timeout=120).execute()
    (out,) = [o for o in nb.cells[1].outputs if "image/png" in o.get("data", {})]
    png = base64.b64decode(out["data"]["image/png"])
    assert H.png_font_px(png) is not None
    width = out["metadata"]["image/png"]["width"]
    assert width == round(H.png_size(png)[0] / H.PIXEL_RATIO)
    assert 4 * H.BOOK_DPI * 0.8 < width <= 4 * H.BOOK_DPI  # tight bbox, 100 dpi
