"""Figure builders: structure that a student would notice if it broke (labels, scales, greying, sizes)."""
import ast
import json
import pathlib
import re
import sys

import numpy as np
import pytest

import explorer.figures as F
from explorer.figures.attention import attention_overview_figure
from explorer.figures.common import (
    CHAR_WIDTH,
    CHART_WIDTH,
    FONT_SIZE,
    MARGIN,
    TOOLBAR_PX,
    band_label_places,
    figure_to_json,
    index_labels,
)
from explorer.figures.embeddings import plot_size
from explorer.figures.grokking import frequency_norms_figure, phase_curves_figure
from explorer.figures.heads import HEAD_TABLE_COLUMNS
from explorer.figures.plain import AXIS, axis_key
from explorer.figures.progress import MIN_NATS_SPAN, progress_figure
from tests.helpers import assert_plotly_would_send_the_same

rng = np.random.default_rng(0)
FIGURES_DIR = pathlib.Path(F.__file__).parent


def random_patterns(*shape) -> np.ndarray:
    """Causal softmax patterns of shape [..., T, T]."""
    x = rng.normal(size=shape) * 2
    T = shape[-1]
    x[..., np.triu_indices(T, 1)[0], np.triu_indices(T, 1)[1]] = -np.inf
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def random_stats(L: int, H: int) -> dict[str, np.ndarray]:
    keys = ["entropy", "prev_token", "self", "first_token", "mean_distance", "entropy_no_sink",
            "prev_token_no_sink", "self_no_sink", "mean_distance_no_sink"]
    return {k: rng.uniform(0, 1, (L, H)).astype(np.float32) for k in keys}


TOKENS = list("hello␣hello⏎")  # duplicates on purpose: labels must still be unique
T = len(TOKENS)


def test_figure_modules_import_only_numpy_plotly_and_orjson():
    allowed = {"numpy", "plotly", "orjson"} | set(sys.stdlib_module_names)  # no torch, no gradio
    # each other, the plain-data control names, and counts in words ("1 layer × 1 head"), both pure Python
    ours = ("explorer.figures", "explorer.common.controls", "explorer.common.wording")
    for path in FIGURES_DIR.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                modules = {alias.name for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                modules = {node.module}
            else:
                continue
            roots = {m.split(".")[0] for m in modules if not m.startswith(ours)}
            assert roots <= allowed, f"{path.name} imports {roots - allowed}"


def test_index_labels_are_unique_even_for_repeated_tokens():
    labels = index_labels(TOKENS)
    assert labels[:3] == ["0:h", "1:e", "2:l"] and len(set(labels)) == T


def test_attention_grid_structure_and_selected_outline():
    P = random_patterns(2, 3, T, T)
    fig = F.attention_grid_figure(P, TOKENS, selected=(1, 2))
    assert len(fig.data) == 6
    texts = [a.text for a in fig.layout.annotations]
    assert texts[:5] == [f"L{l}·H{h}" for l in range(2) for h in range(3)][:5]
    assert "L1·H2" in texts[5] and "color" in texts[5]  # the selected head's title in red
    assert list(fig.data[0].x) == index_labels(TOKENS)
    assert "query %{y} → key %{x}" in fig.data[0].hovertemplate
    outline = fig.layout.shapes[0]
    assert outline.xref == "x6 domain"  # L1·H2 is the 6th panel
    assert outline.y1 <= 1.0  # the outline stops below the title, never across it
    bar = fig.layout.coloraxis.colorbar
    assert list(bar.ticktext)[0] == "0" and list(bar.ticktext)[-1] == "1"  # reads as 0..1
    assert fig.layout.coloraxis.cmin == 0 and fig.layout.coloraxis.cmax == 100  # whole percents
    assert fig.data[5].z.dtype == np.uint8 and fig.data[5].z.max() <= 100
    assert np.allclose(fig.data[5].z / 100, P[1, 2], atol=0.006)


def test_attention_grid_is_small_for_8x8_heads_64_positions():
    """What the browser receives stays small; how long building it takes is measured by python -m bench.app."""
    P = random_patterns(8, 8, 64, 64)
    fig = F.attention_grid_figure(P, [chr(97 + i % 26) for i in range(64)], selected=(0, 0))
    assert len(fig.data) == 64
    assert len(figure_to_json(fig)) < 1_500_000


def test_live_attention_figure_is_compact_and_keeps_zoom():
    fig = F.live_attention_figure(random_patterns(8, 8, 16, 16), [str(i) for i in range(16)])
    assert fig.layout.height <= 300 and fig.layout.uirevision == "live"
    assert len(fig.data) == 64


def test_attention_head_figure_axes_scale_and_hover():
    P = random_patterns(T, T)
    fig = F.attention_head_figure(P, TOKENS, layer=1, head=2)
    trace = fig.data[0]
    assert (trace.zmin, trace.zmax) == (0, 1)
    assert list(trace.x) == list(trace.y) == index_labels(TOKENS)
    assert fig.layout.yaxis.autorange == "reversed"  # position 0 at the top
    assert "query %{y} → key %{x}" in trace.hovertemplate and "weight" in trace.hovertemplate
    assert "L1·H2" in fig.layout.title.text
    assert trace.z.dtype == np.float32


def test_attention_steps_figure_masks_render_as_blank():
    scores = rng.normal(size=(T, T))
    masked = scores.copy()
    masked[np.triu_indices(T, 1)] = -np.inf
    fig = F.attention_steps_figure(scores, masked, random_patterns(T, T), rng.normal(size=(T, 4)), TOKENS, 0, 1)
    assert [a.text for a in fig.layout.annotations] == list(F.attention.STEP_TITLES)
    assert len(fig.data) == 4
    z = np.asarray(fig.data[1].z, dtype=float)
    assert np.isnan(z[np.triu_indices(T, 1)]).all() and not np.isinf(z).any()
    assert "masked" in fig.data[1].hovertemplate and "masked" in fig.layout.coloraxis.colorbar.title.text
    assert (fig.layout.coloraxis2.cmin, fig.layout.coloraxis2.cmax) == (0, 1)
    assert fig.layout.coloraxis3.cmid == 0 and np.asarray(fig.data[3].z).shape == (T, 4)


def test_query_attention_bars_grey_zero_future():
    P = random_patterns(T, T)
    fig = F.query_attention_bars_figure(P, TOKENS, query=5, layer=1, head=2)
    bars = fig.data[0]
    assert fig.layout.title.text == "Where 5:␣ looks (layer 1, head 2)"
    assert np.all(np.asarray(bars.y)[6:] == 0)
    assert all(c == F.common.GREY for c in bars.marker.color[6:])
    assert F.common.GREY not in bars.marker.color[:6]


def test_head_statistics_table():
    stats = random_stats(2, 3)
    rows = F.head_statistics_table(stats)
    assert len(rows) == 6 and all(len(r) == len(F.HEAD_TABLE_HEADERS) for r in rows)
    assert rows[4][0] == "L1·H1"
    assert rows[4][2] == round(float(stats["prev_token"][1, 1]), 3)
    for i, row in enumerate(rows):  # every value sits under its own header, rounded to 3 decimals
        layer, head = divmod(i, 3)
        assert row[1:] == [round(float(stats[key][layer, head]), 3) for key, _ in HEAD_TABLE_COLUMNS]


def test_residual_line_figures():
    L = 3
    norms = rng.uniform(1, 2, (L, T))
    fig = F.residual_norms_figure(norms, norms + 1, norms + 2)
    assert len(fig.data) == 3 and list(fig.data[0].x) == [0, 1, 2]
    assert np.allclose(fig.data[2].y, (norms + 2).mean(1), atol=1e-3)
    fig = F.update_norms_figure(norms, 2 * norms)
    assert [t.name for t in fig.data] == ["attention update", "FFN update"]
    assert np.allclose(fig.data[0].y, norms.mean(1), atol=1e-3) and np.allclose(fig.data[1].y, 2 * norms.mean(1),
                                                                               atol=1e-3)
    fig = F.update_vs_residual_figure(norms[0], norms[1], TOKENS, 1)
    shown = float(re.search(r"\(mean ([-0-9.e+]+)\)", fig.data[0].name).group(1))  # 3 significant digits: 1.5, 1.47
    assert shown == pytest.approx(norms[0].mean(), rel=5e-3) and list(fig.data[0].x) == index_labels(TOKENS)
    assert np.allclose(fig.data[0].y, norms[0], atol=1e-3) and np.allclose(fig.data[1].y, norms[1], atol=1e-3)
    assert "Layer 1" in fig.layout.title.text
    fig = F.variance_figure(norms[0], norms[1], TOKENS, 0)
    assert len(fig.data) == 2 and "variance of residual" in fig.layout.title.text


def test_residual_heatmap_modes():
    stream = rng.normal(size=(4, T, 8))
    fig = F.residual_heatmap_figure(stream, TOKENS)
    assert np.asarray(fig.data[0].z).shape == (4, T)
    assert list(fig.data[0].y) == ["embed", "after L0", "after L1", "after L2"]
    full = F.residual_heatmap_figure(stream, TOKENS, mode="full").data[0]
    assert np.asarray(full.z).shape == (4, T * 8) and full.zmid == 0 and full.zmin == -full.zmax
    with pytest.raises(ValueError, match="'norm' or 'full'"):
        F.residual_heatmap_figure(stream, TOKENS, mode="pixels")


def test_logit_lens_figure_text_and_top_k_hover():
    k, rows = 3, 4
    labels = np.array(list("abcdef"))[rng.integers(0, 6, (rows, T, k))]
    probs = np.sort(rng.uniform(0, 0.3, (rows, T, k)), -1)[..., ::-1]
    fig = F.logit_lens_figure(labels[..., 0], probs[..., 0], TOKENS, top_k_labels=labels, top_k_probs=probs)
    trace = fig.data[0]
    assert (trace.zmin, trace.zmax) == (0, 1) and trace.texttemplate == "%{text}"
    assert trace.y[0] == "embed" and trace.y[-1].endswith("(final)")
    assert trace.customdata[0][0].startswith(f"1. {labels[0, 0, 0]}") and trace.customdata[0][0].count("<br>") == 2
    long = F.logit_lens_figure(labels[..., 0].repeat(6, 1), probs[..., 0].repeat(6, 1), TOKENS * 6)
    assert long.data[0].texttemplate is None  # 72 positions: too narrow for cell text


def test_pca_scatter_2d_3d_and_many_points():
    fig = F.pca_scatter_figure(rng.normal(size=(T, 2)), TOKENS, np.arange(T), "Token PCA", [0.34, 0.12])
    assert fig.layout.xaxis.title.text == "PC1 (34%)" and fig.data[0].mode == "markers+text"
    assert fig.data[0].textfont.size >= 12 and list(fig.data[0].customdata) == TOKENS
    fig = F.pca_scatter_figure(rng.normal(size=(4096, 2)), [str(i) for i in range(4096)])
    assert fig.data[0].mode == "markers" and fig.data[0].text is None
    fig = F.pca_scatter_figure(rng.normal(size=(20, 3)), [str(i) for i in range(20)], explained=[.3, .2, .1])
    assert fig.data[0].type == "scatter3d" and fig.layout.scene.zaxis.title.text == "PC3 (10%)"


@pytest.mark.parametrize("spread", [(5.0, 0.5), (0.2, 3.0)])  # PC1 long and flat, or a narrow tall cloud
def test_a_2d_map_draws_one_unit_as_long_across_as_up(spread):
    """Which points sit close (seed 002 asks) reads true only when both axes have the same scale."""
    coords = rng.normal(size=(40, 2)) * np.array(spread)
    for color in (None, np.arange(40)):
        fig = F.pca_scatter_figure(coords, [str(i) for i in range(40)], color)
        width, height = plot_size(fig, color is not None)
        (x0, x1), (y0, y1) = fig.layout.xaxis.range, fig.layout.yaxis.range
        assert (x1 - x0) / width == pytest.approx((y1 - y0) / height, rel=1e-9)
        assert x0 < coords[:, 0].min() and coords[:, 0].max() < x1 and y0 < coords[:, 1].min() < coords[:, 1].max() < y1


def test_a_character_maps_points_are_coloured_by_kind_with_a_legend():
    """The seed-000 lesson asks whether the vowels sit together: on a character vocabulary's map each kind has its
    colour, named in the legend, even where a crowd leaves a point without its label."""
    labels = list("aeixyzAB7,") + ["⏎"]
    fig = F.pca_scatter_figure(rng.normal(size=(len(labels), 2)), labels)
    colour = dict(zip(labels, fig.data[0].marker.color))
    assert colour["a"] == colour["e"] == colour["i"] != colour["x"] == colour["z"]
    assert len({colour["a"], colour["x"], colour["A"], colour["7"], colour[","]}) == 5 and colour["⏎"] == colour[","]
    legend = {t.name: t.marker.color for t in fig.data[1:]}
    assert legend == {"vowels (a e i o u)": colour["a"], "other small letters": colour["x"], "capitals": colour["A"],
                      "digits": colour["7"], "spaces and punctuation": colour[","]}
    assert fig.data[0].showlegend is False and fig.layout.showlegend is True
    pieces = F.pca_scatter_figure(rng.normal(size=(4, 2)), ["the", "a", "ing", "."])  # BPE pieces: one colour
    assert len(pieces.data) == 1 and pieces.data[0].marker.color == F.common.BLUE


def test_the_surprise_difference_has_a_legend_entry_per_sign():
    """Compare's lower panel: B − A in red where B finds a character harder, purple where it predicts it better,
    each named in the legend (one 'B − A' entry in one colour left the other colour unexplained)."""
    from explorer.figures.compare import character_bits_figure
    fig = character_bits_figure([1.0, 2.0, 3.0], [2.0, 1.0, 3.0], ["0:a", "1:b", "2:c"], "x", "y")
    harder, better = fig.data[2], fig.data[3]
    assert "harder" in harder.name and "better" in better.name and harder.marker.color != better.marker.color
    assert list(harder.y) == [1.0, None, None] and list(better.y) == [None, -1.0, None]
    assert better.marker.color not in (fig.data[0].line.color, fig.data[1].line.color)  # not a model's colour
    assert fig.layout.barmode == "relative"  # each bar centred on its character, not half of a pair


def test_each_models_next_tokens_lie_flat_likeliest_on_top():
    """SmolLM2's tokens of several marks ("⏎⏎", "␣␣␣␣") stood upright in a stack nobody could read."""
    from explorer.figures.compare import next_token_pair_figure
    fig = next_token_pair_figure([0.1, 0.6, 0.3], ["a", "⏎⏎", "␣␣␣␣"], [0.5, 0.5], ["x", "y"], "A", "B", top_n=2)
    assert fig.data[0].orientation == "h" and list(fig.data[0].y) == ["⏎⏎", "␣␣␣␣"]
    assert list(fig.data[0].x) == [0.6, 0.3] and fig.layout.yaxis.autorange == "reversed"


def test_embedding_figures():
    fig = F.positional_heatmap_figure(rng.normal(size=(T, 16)), TOKENS)
    assert fig.data[0].zmid == 0 and list(fig.data[0].y) == index_labels(TOKENS)
    assert list(F.positional_heatmap_figure(rng.normal(size=(5, 4))).data[0].y) == ["0", "1", "2", "3", "4"]
    fig = F.embedding_norms_figure(np.ones(T), np.full(T, 0.5), TOKENS)
    assert len(fig.data) == 2 and "mean 0.5" in fig.data[1].name


def test_ffn_figures_and_table():
    pre_h, pre_e = np.histogram(rng.normal(size=500), 20)
    post_h, post_e = np.histogram(rng.uniform(size=500), 20)
    fig = F.ffn_histograms_figure(pre_h, pre_e, post_h, post_e, 1, "GELU")
    assert len(fig.data) == 2 and fig.layout.annotations[1].text == "after GELU"
    fraction = rng.uniform(0.1, 1, 64)
    fraction[[3, 10, 40]] = 0
    fig = F.neuron_sparsity_figure(fraction, np.array([0.4, 0.6]), layer=1)
    assert list(fig.data[1].x) == [3, 10, 40] and fig.data[1].marker.color == F.common.RED
    assert "3 of 64 dead" in fig.layout.title.text
    rows = F.top_tokens_table(np.array([7, 0]), np.array([2.5, 1.0]), TOKENS)
    assert rows[0] == [1, "7:e", 2.5, "ello␣h[e]ll"] and rows[1][3] == "[h]el"


def test_the_ffn_title_counts_what_its_bars_show():
    """The title said '264 of 512 neurons dead' beside a bar of 97 % 'inactive share': two measures, two words.
    Its count is now the neurons whose bar is 0 (each marked red), its share the layer's bar beside them, which is
    the mean of those bars; a neuron active once is not counted dead."""
    fraction = rng.uniform(0.1, 1, 64)
    fraction[[3, 10, 40]] = 0
    fraction[20] = 0.0004  # active at 1 position in 2,500: rare, not dead
    fig = F.neuron_sparsity_figure(fraction, np.array([0.4, 1 - fraction.mean(), 0.9]), layer=1)
    neurons, dead, layers = fig.data
    title = fig.layout.title.text
    count, total = re.search(r"(\d+) of (\d+) dead", title).groups()
    assert list(dead.x) == list(np.flatnonzero(np.asarray(neurons.y) == 0)) == [3, 10, 40]
    assert (int(count), int(total)) == (len(dead.x), len(neurons.y)) and neurons.y[20] > 0
    shown = layers.y[layers.marker.color.index(F.common.ORANGE)]
    assert f"mean active share {shown:.0%} (orange bar)" in title and abs(shown - np.mean(neurons.y)) < 1e-3
    assert [a.text for a in fig.layout.annotations] == ["mean active share per layer"]


def test_next_token_figure_greys_cut_tokens_and_zeroes_after():
    V = 40
    before = rng.dirichlet(np.ones(V))
    removed = np.ones(V, bool)
    removed[np.argsort(-before)[:5]] = False
    after = np.where(removed, 0, before) / before[~removed].sum()
    labels = [f"t{i}" for i in range(V)]
    fig = F.next_token_figure(before, after, removed, labels, top_n=12)
    model, filtered = fig.data[0], fig.data[1]
    assert len(model.x) == 12 and list(model.x[:5]) == [labels[i] for i in np.argsort(-before)[:5]]
    assert list(model.marker.color[5:]) == [F.common.GREY] * 7 and F.common.GREY not in model.marker.color[:5]
    top = np.argsort(-before)[:12]  # the bars, most likely first
    assert np.allclose(model.y, before[top], atol=1e-4) and np.allclose(filtered.y, after[top], atol=1e-4)
    assert np.all(np.asarray(filtered.y)[5:] == 0)
    assert "35 of 40" in fig.layout.title.text
    assert any("cut" in t.name for t in fig.data)  # the legend explains the grey bars


@pytest.mark.parametrize("after_name", ["after temperature 0 (always the top token)", "after temperature 1"])
def test_the_top_token_note_sits_above_every_bar_and_tick(after_name):
    """At temperature 0 one token has all the probability: its bar reached the plot's top, where the corner note
    covered it and the 100 % tick. The axis leaves the note's band (its lines, measured from the plot's top) above the
    tallest bar, and names no probability above 100 %."""
    before = np.r_[0.21, np.full(30, 0.79 / 30)]
    after = np.r_[1.0, np.zeros(30)] if "0" in after_name else before
    fig = F.next_token_figure(before, after, after == 0, [f"t{i}" for i in range(31)], after_name=after_name)
    note = fig.layout.annotations[0]
    assert (note.yref, note.y, note.yanchor) == ("paper", 1, "top")
    plot_px = fig.layout.height - fig.layout.margin.t - fig.layout.margin.b
    note_px = (note.text.count("<br>") + 1) * (FONT_SIZE + 2) * 1.3
    low, high = fig.layout.yaxis.range
    assert max(after.max(), before.max()) <= (high - low) * (1 - note_px / plot_px)
    assert max(fig.layout.yaxis.tickvals or [0]) <= 1


def drawn_label_boxes(fig) -> list:
    """The px boxes of a 2-D map's drawn text labels, as explorer.figures.label_places estimates them."""
    from explorer.figures.embeddings import LABEL_FONT, MARKER_PX
    from explorer.figures.label_places import beside, x_pixels, y_pixels

    trace, margin = fig.data[0], fig.layout.margin
    width, height = CHART_WIDTH - margin.l - margin.r, fig.layout.height - margin.t - margin.b
    xs = x_pixels(trace.x, fig.layout.xaxis.range, width)
    ys = y_pixels(trace.y, fig.layout.yaxis.range, height)
    return [beside(x, y, text, LABEL_FONT, place, MARKER_PX / 2)
            for x, y, text, place in zip(xs, ys, trace.text, trace.textposition) if text]


def test_the_token_map_labels_never_pile_on_each_other():
    """Seed 000's token map: the labels of a crowd of characters piled on one another. Each label takes a free
    place beside its point (above, below, right, left), one with none is left off (hover names every point), and
    points apart are all labelled."""
    crowd = np.r_[rng.normal(0, 0.05, (40, 2)), rng.uniform(-3, 3, (6, 2))]
    labels = [chr(65 + i) for i in range(26)] + [chr(97 + i) for i in range(20)]
    fig = F.pca_scatter_figure(crowd, labels)
    boxes = drawn_label_boxes(fig)
    assert 6 <= len(boxes) < len(labels)
    for i, a in enumerate(boxes):
        assert all(a[2] <= b[0] or b[2] <= a[0] or a[3] <= b[1] or b[3] <= a[1] for b in boxes[:i])
    assert list(fig.data[0].customdata) == labels  # hover still names each point
    apart = F.pca_scatter_figure(np.array([[0, 0], [1, 0], [0, 1], [1, 1]]), list("abcd"))
    assert list(apart.data[0].text) == list("abcd") and set(apart.data[0].textposition) == {"top center"}


@pytest.mark.parametrize("n_layers, n_heads, links", [
    (3, 2, [(0, 0, 2, 0, 0.33)]),  # the middle of the arrow is the head L1·H0
    (2, 1, [(0, 0, 1, 0, 0.33)]),
    (2, 4, [(0, 0, 1, 1, 0.33), (0, 3, 1, 2, 0.2), (0, 0, 1, 2, 0.1)]),  # two arrows from one head
])
def test_an_arrows_label_lies_on_the_arrow_clear_of_heads_names_and_other_labels(n_layers, n_heads, links):
    """The induction circuit wrote 'K 0.33' on a head's dot: each label sits on its arrow, between its ends, and
    covers no head, no head's name and no other label."""
    from explorer.figures.circuits import EDGE_FONT, NODE_PX, induction_circuit_figure
    from explorer.figures.label_places import beside, marker_boxes, text_box, x_pixels, y_pixels

    fig = induction_circuit_figure(n_layers, n_heads, {(0, 0): 0.9}, {(n_layers - 1, 0): 0.8}, links)
    margin = fig.layout.margin
    width, height = CHART_WIDTH - margin.l - margin.r, fig.layout.height - margin.t - margin.b
    x_range, y_range = fig.layout.xaxis.range, fig.layout.yaxis.range[::-1]

    def px(x, y):
        return float(x_pixels(x, x_range, width)), float(y_pixels(y, y_range, height, True))

    heads = fig.data[0]
    taken = [box for x, y, name in zip(heads.x, heads.y, heads.text)
             for box in (marker_boxes(*zip(px(x, y)), NODE_PX / 2)[0],
                         beside(*px(x, y), name, FONT_SIZE, "middle right", NODE_PX / 2))]
    labels = [a for a in fig.layout.annotations if a.text.startswith("K ")]
    assert [a.text for a in labels] == [f"K {score:.2f}" for *_, score in links]
    for a, (l1, h1, l2, h2, _) in zip(labels, links):
        t = (a.x - l1) / (l2 - l1)
        assert 0.2 <= t <= 0.8 and a.y == pytest.approx(h1 + t * (h2 - h1))  # on the arrow
        box = text_box(*px(a.x, a.y), a.text, EDGE_FONT)
        assert all(box[2] <= b[0] or b[2] <= box[0] or box[3] <= b[1] or b[3] <= box[1] for b in taken), a.text
        taken.append(box)


def test_temperature_curve_and_generation_table():
    logits = rng.normal(size=50)
    fig = F.temperature_curve_figure(logits, [0.5, 1, 2], [f"t{i}" for i in range(50)])
    assert len(fig.data) == 3 and list(fig.data[0].x) == [f"t{i}" for i in np.argsort(-logits)[:10]]
    for trace, t in zip(fig.data, [0.5, 1, 2]):  # softmax over the whole vocabulary, shown for the top 10
        p = np.exp(logits / t) / np.exp(logits / t).sum()
        assert trace.name == f"T = {t:g}" and np.allclose(trace.y, p[np.argsort(-logits)[:10]], atol=1e-4)
    assert len(F.temperature_curve_figure(None, [0.5, 1]).data[0].x) == 100
    rows = F.generation_steps_table([{"token_label": "a", "prob": 0.5, "model_prob": 0.4, "logprob": -0.7},
                                     {"token_label": "b", "prob": 0.25, "model_prob": 0.2, "logprob": -1.4}])
    assert rows[1] == [2, "b", 0.25, 0.2, -2.1] and len(rows[0]) == len(F.GENERATION_TABLE_HEADERS)


def test_a_temperature_keeps_its_colour_whatever_is_drawn_beside_it():
    """The slider's temperature joins 0.5, 1 and 2: moving it used to shift T = 1 from orange to green and back."""
    logits, labels = rng.normal(size=20), [f"t{i}" for i in range(20)]

    def colours(temperatures):
        fig = F.temperature_curve_figure(logits, temperatures, labels)
        return {t.name: t.line.color for t in fig.data}

    first = colours([0.5, 1.0, 2.0])
    for temperatures in ([0.3, 0.5, 1.0, 2.0], [0.5, 0.7, 1.0, 2.0], [0.5, 1.0, 1.5, 2.0], [0.5, 1.0, 2.0, 2.5],
                         [2.0, 1.0, 0.5]):
        now = colours(temperatures)
        assert all(now[name] == colour for name, colour in first.items()), temperatures
        extra = set(now) - set(first)
        assert all(now[name] not in first.values() for name in extra), temperatures  # the slider's own stands out
    assert colours([0.3, 0.5, 1.0, 2.0])["T = 0.3"] == colours([0.5, 1.0, 2.0, 2.5])["T = 2.5"]  # "your setting"
    assert [t.line.color for t in F.temperature_curve_figure(None, [0.5, 1.0, 2.0]).data] == list(first.values())


def axis_of(fig, t) -> dict:
    """The layout of the y axis trace t is drawn on."""
    return fig.layout[axis_key(t.yaxis or "y")]


def px_above_bottom(fig, axis: dict, value: float) -> float:
    """How many pixels above its panel's bottom edge a value sits on this y axis."""
    low, high = axis.range
    bottom, top = axis.domain or [0, 1]
    plot = fig.layout.height - fig.layout.margin["t"] - fig.layout.margin["b"]
    return (value - low) / (high - low) * (top - bottom) * plot


PROGRESS_CASES = {  # a run of each task as its evaluations report it, and one with only the nats measure
    "induction": {"induction": [0.02, 0.05, 0.45, 0.6], "k_composition": [0.1, 0.1, 0.3, 0.35],
                  "icl": [0.0, -0.1, -1.4, -1.6]},
    "grokking": {"train_acc": [0.1, 0.9, 1.0, 1.0], "val_acc": [0.0, 0.0, 0.0, 0.2],
                 "restricted_loss": [4.0, 3.0, 1.0, 0.0], "excluded_loss": [4.0, 4.5, 5.0, 6.0]},
    "icl only": {"icl": [0.0, -0.3, -1.2, -1.4]},
}


@pytest.mark.parametrize("case", sorted(PROGRESS_CASES))
def test_the_progress_chart_puts_each_unit_in_its_own_panel_with_0_in_view(case):
    """Nats on a second y axis over the scores put the right axis's 0 beside the left axis's 1: the in-context-
    learning score seemed to start at 1. Each unit has its own panel now, every y axis runs upwards through 0."""
    fig = progress_figure([0, 100, 200, 300], PROGRESS_CASES[case], max_step=300)
    y_axes = [fig.layout[k] for k in fig.layout if (m := AXIS.match(k)) and m[1] == "y"]
    for axis in y_axes:
        low, high = axis.range
        assert low <= 0 < high and axis.autorange != "reversed" and axis.overlaying is None, axis
    nats = {t.yaxis for t in fig.data if "nats" in t.name}
    scores = {t.yaxis for t in fig.data if "nats" not in t.name}
    assert len(nats) <= 1 and len(scores) <= 1 and not nats & scores and len(y_axes) == len(nats | scores)
    if nats and scores:  # scores above, nats below, on one step axis
        assert fig.layout[axis_key(*nats)].domain[1] < fig.layout[axis_key(*scores)].domain[0]
    assert all(fig.layout[k].range == [0, 300] for k in fig.layout if (m := AXIS.match(k)) and m[1] == "x")


def test_the_progress_charts_score_axis_names_what_it_holds():
    """'score / accuracy' beside an induction run's scores promised an accuracy that was not there."""
    titles = {case: [fig.layout[k].title.text for k in fig.layout if (m := AXIS.match(k)) and m[1] == "y"]
              for case, fig in ((c, progress_figure([0, 1, 2, 3], PROGRESS_CASES[c])) for c in PROGRESS_CASES)}
    assert titles == {"induction": ["score", "nats"], "grokking": ["accuracy", "nats"], "icl only": ["nats"]}


def test_a_progress_line_at_0_is_drawn_inside_its_panel():
    """A test accuracy of 0 lay on the x axis, half cut off by the plot's edge: it seemed not to be there."""
    fig = progress_figure([0, 100, 200, 300], PROGRESS_CASES["grokking"], max_step=300)
    for t in fig.data:
        lowest = float(np.nanmin(t.y))
        marker_and_line = 6 / 2 + 2 / 2  # Plotly's default marker radius and half its line width, in px
        assert px_above_bottom(fig, axis_of(fig, t), lowest) > marker_and_line, t.name
    accuracy = next(t for t in fig.data if t.name.startswith("test accuracy"))
    assert "markers" in accuracy.mode and axis_of(fig, accuracy).range[0] < 0


def test_the_grokking_labs_accuracy_at_0_is_drawn_inside_its_chart():
    """The lab's accuracy chart had the same fault: its axis began at 0, so a test accuracy of 0 hid on the x axis."""
    from explorer.figures.grokking import accuracy_figure
    fig = accuracy_figure([0, 100, 200], [0.1, 1.0, 1.0], [0.0, 0.0, 0.3])
    test = next(t for t in fig.data if t.name == "test accuracy")
    assert px_above_bottom(fig, axis_of(fig, test), 0.0) > 2 / 2  # half the line's width clear of the edge


def test_the_progress_charts_nats_axis_does_not_magnify_noise():
    """An in-context-learning score that moves by 0.005 nats drew as a signal filling the chart's nats axis."""
    steps = [0, 100, 200, 300]
    flat = progress_figure(steps, {"induction": [0.1, 0.1, 0.2, 0.2], "icl": [0.001, -0.002, 0.003, -0.001]})
    low, high = axis_of(flat, flat.data[1]).range
    assert high - low >= MIN_NATS_SPAN and low <= -0.002 and high >= 0.003
    learnt = progress_figure(steps, {"icl": [-0.01, -0.3, -1.2, -1.4]})
    low, high = axis_of(learnt, learnt.data[0]).range
    assert low <= -1.4 and 0 < high < 0.2  # covers the values and 0, without much room to spare
    assert "yaxis2" not in progress_figure(steps, {"induction": [0.1, 0.2, 0.3, 0.4]}).layout


def test_a_tasks_token_chart_shows_whole_examples_apart():
    ids = [3, 4, 9, 7, 1, 1, 9, 2]
    fig = F.token_index_figure(ids, [str(i) for i in ids], examples=[0, 0, 0, 0, 1, 1, 1, 1])
    bars = fig.data[0]
    assert list(bars.customdata) == [1, 1, 1, 1, 2, 2, 2, 2] and "example %{customdata}" in bars.hovertemplate
    assert len(set(bars.marker.color[:4])) == 1 and bars.marker.color[3] != bars.marker.color[4]
    assert "first 2 examples" in fig.layout.title.text


def test_data_training_and_building_block_figures():
    fig = F.token_index_figure(np.arange(T), TOKENS)
    assert list(fig.data[0].x) == index_labels(TOKENS) and fig.layout.yaxis.title.text == "token id"
    steps = np.arange(100)
    batch_loss = rng.uniform(1, 2, 100)
    fig = F.loss_figure(steps, batch_loss, [0, 50], [2.0, 1.5], [1.9, 1.4])
    assert [(t.name, list(t.x)) for t in fig.data] == [
        ("train loss (each batch)", list(steps)), ("train loss (evaluated)", [0, 50]), ("validation loss", [0, 50])]
    assert np.allclose(fig.data[0].y, batch_loss, atol=1e-4) and np.allclose(fig.data[2].y, [2.0, 1.5])
    assert np.allclose(fig.data[1].y, [1.9, 1.4])
    assert [t.name for t in F.loss_figure(steps, batch_loss).data] == ["train loss (each batch)"]
    assert [t.name for t in F.activation_functions_figure().data] == ["ReLU", "GELU", "SiLU"]
    fig = F.layernorm_effect_figure(rng.normal(2, 3, 300), rng.normal(0, 1, 300))
    assert len(fig.data) == 2 and len(fig.layout.shapes) == 6  # mean and ±1 std in each panel


def every_figure() -> list:
    P = random_patterns(2, 2, T, T)
    return [
        F.attention_grid_figure(P, TOKENS), F.attention_head_figure(P[0, 0], TOKENS, 0, 0),
        attention_overview_figure(random_stats(30, 9), random_patterns(1, 9, T, T)[0], TOKENS, (4, 2)),
        F.query_attention_bars_figure(P[0, 0], TOKENS, 3),
        F.residual_heatmap_figure(rng.normal(size=(3, T, 8)), TOKENS),
        F.next_token_figure(np.full(5, .2), np.full(5, .2), np.zeros(5, bool), list("abcde")),
        F.activation_functions_figure(), F.token_index_figure(np.arange(T), TOKENS),
        phase_curves_figure([0, 50, 700, 3000], {"train loss": [4.1, 0.03, 0.01, 3e-7]},
                            [(0, 50, "memorise"), (50, 700, "build the circuit"), (700, 3000, "clean up")]),
        frequency_norms_figure(rng.random(30), [3, 21]),
    ]


def test_projector_readability_and_json():
    for fig in every_figure():
        layout = fig.layout
        assert layout.font.size >= 12 and layout.height and layout.title.text.strip()
        parsed = json.loads(figure_to_json(fig))
        assert parsed["layout"]["template"]["layout"]["paper_bgcolor"] == "white"  # plotly_white, spelt out
        assert set(parsed) >= {"data", "layout"} and "uid" not in parsed["data"][0]


def test_large_heatmap_payload_stays_small():
    fig = F.attention_head_figure(random_patterns(256, 256), [chr(97 + i % 26) for i in range(256)], 0, 0)
    assert fig.data[0].text is None  # no per-cell strings
    assert len(figure_to_json(fig)) < 400_000


@pytest.mark.slow
def test_plain_figures_are_what_plotly_would_send():
    for fig in every_figure():
        assert_plotly_would_send_the_same(fig)


def test_the_phase_curves_keep_losses_far_below_a_millionth_on_their_log_axis():
    fig = phase_curves_figure([0, 100, 200], {"train loss": [4.1, 2e-6, 3e-8]}, [(0, 100, "memorise")])
    np.testing.assert_allclose(list(fig.data[0].y), [4.1, 2e-6, 1e-7], rtol=1e-6)  # clipped at 1e-7, never 0


@pytest.mark.parametrize("p, keys", [(59, [1, 21, 23]), (113, [14, 35, 41, 42, 52])])
def test_every_key_frequency_has_its_label(p, keys):
    fig = frequency_norms_figure(np.ones(p // 2 + 1), keys)
    ticks = list(fig.layout.xaxis.tickvals)
    assert set(keys) <= set(ticks) and (len(ticks) == p // 2 or len(ticks) < 20)


PLOT_PX = CHART_WIDTH - MARGIN["l"] - MARGIN["r"]
ANNOTATION_BOX_PX = FONT_SIZE * 1.3 + 4  # Plotly's annotation box: a line of text, 1 px padding and border each side


def label_extents(fig) -> list[tuple[float, float, float]]:
    """(left, right, yshift) of each annotation of a chart, in shares of the plot's width (text width estimated)."""
    return [(a.x, a.x + len(a.text) * FONT_SIZE * CHAR_WIDTH / PLOT_PX, a.yshift or 0) for a in fig.layout.annotations]


@pytest.mark.parametrize("phases", [
    [(0, 50, "memorise"), (50, 700, "build the circuit"), (700, 3000, "clean up")],  # the shipped run
    [(0, 2900, "memorise"), (2900, 2990, "build the circuit"), (2990, 3000, "clean up")],  # all at the right edge
    [(0, 150, "memorise"), (150, 300, "build the circuit"), (300, 3000, "clean up")],  # all three close together
])
def test_the_phase_names_lie_above_the_plot_and_apart(phases):
    """Phase names were cut at the chart's right edge, drawn over each other or over the loss curves: they stand in
    rows above the plot, within its width, side by side or a whole box apart, under the legend, in the top margin."""
    fig = phase_curves_figure([0, 1500, 3000], {"train loss": [4.1, 0.03, 3e-7]}, phases)
    labels = label_extents(fig)
    assert [a.text for a in fig.layout.annotations] == [name for *_, name in phases]
    assert all(a.xref == "x domain" and a.yref == "y domain" and a.y == 1 and a.yanchor == "bottom"
               for a in fig.layout.annotations)  # above the plot's top edge: never over a curve
    assert all(0 <= left and right <= 1 and shift >= 0 for left, right, shift in labels)
    for i, (left, right, shift) in enumerate(labels):  # side by side, or a whole box apart (20 px overlapped)
        assert all(abs(shift - other_shift) >= ANNOTATION_BOX_PX or right <= other_left or left >= other_right
                   for other_left, other_right, other_shift in labels[:i])
    names_top = max(shift for *_, shift in labels) + ANNOTATION_BOX_PX  # px above the plot
    plot_px = fig.layout.height - fig.layout.margin.t - fig.layout.margin.b
    assert fig.layout.legend.yanchor == "bottom" and fig.layout.legend.y >= 1 + names_top / plot_px
    assert fig.layout.margin.t >= names_top + 2 * ANNOTATION_BOX_PX + TOOLBAR_PX  # the legend and title above them


def test_a_band_name_is_placed_a_row_lower_only_when_it_must():
    places = band_label_places([(0, 10, "a"), (50, 60, "b"), (51, 60, "c")], (0, 100))
    assert [row for _, row in places] == [0, 0, 1] and places[1][0] == 0.5


def test_the_svg_button_sits_beside_the_camera():
    """The chart toolbar's SVG button fell onto a line of its own, over the chart's title ('suppresses (red)')."""
    from explorer.tabs.export_button import EXPORT_JS
    assert "svg.style.display = 'inline-block'" in EXPORT_JS


def test_the_report_card_gives_its_explanation_a_wrapping_column():
    from explorer.common.controls import REPORT_HEADERS
    from explorer.tabs.heads import REPORT_WIDTHS
    widths = [float(w.rstrip("%")) for w in REPORT_WIDTHS]
    assert len(widths) == len(REPORT_HEADERS) and sum(widths) == pytest.approx(100)
    assert max(widths) == widths[REPORT_HEADERS.index("explanation")]


def test_heads_overview_colour_bar_reads_in_the_percents_its_cells_print():
    """The overview's cells print whole percents (%{z} of 0..100), so its colour bar reads 0%..100%, not 0..1."""
    fig = attention_overview_figure(random_stats(3, 2), random_patterns(1, 2, T, T)[0], TOKENS, (1, 1))
    cells = [t for t in fig.data if (t.name or "").startswith("overview:")]
    assert len(cells) == 3 and all(t.texttemplate == "%{z}" and np.asarray(t.z).max() <= 100 for t in cells)
    bar = fig.layout.coloraxis.colorbar
    assert (fig.layout.coloraxis.cmin, fig.layout.coloraxis.cmax) == (0, 100)
    assert list(bar.ticktext) == ["0%", "25%", "50%", "75%", "100%"] and "%" in bar.title.text


# The Train tab at a 1400 px wide window: Gradio's page is at most 1280 px wide, the loss chart 3/5 of a row (beside
# the live attention), the progress chart the whole row; a little less for the page's padding.
TRAIN_TAB_CHARTS_PX = {"loss": 700, "progress": 1200}
PLOTLY_LEGEND = dict(entry_px=40 + 5, row_px=FONT_SIZE * 1.3 + 3, row_gap=10, pad=10)  # textGap, itemGap, groups


def legend_bottom_up(fig, chart_px: int) -> tuple[float, float]:
    """(bottom, top) of a figure's legend above the plot, in px from the chart's top: its entries wrapped into rows
    as Plotly wraps them (text at most 0.6 of the font per character), the rows of one group each plus the gap."""
    shown = sorted((t for t in fig.data if t.get("name") and t.get("showlegend") is not False),
                   key=lambda t: t.get("legendrank") or 1000)
    width, rows, used = chart_px - fig.layout.margin["l"] - fig.layout.margin["r"], 1, 0.0
    for t in shown:
        entry = PLOTLY_LEGEND["entry_px"] + len(t.name) * FONT_SIZE * 0.6
        rows, used = (rows + 1, entry) if used and used + entry > width else (rows, used + entry)
    height = rows * PLOTLY_LEGEND["row_px"] + (rows - 1) * PLOTLY_LEGEND["row_gap"] + PLOTLY_LEGEND["pad"]
    top_margin = fig.layout.margin["t"]
    plot_px = fig.layout.height - top_margin - fig.layout.margin["b"]
    bottom = top_margin - (fig.layout.legend.y - 1) * plot_px  # legend y = 1.02: just above the plot
    return bottom, bottom - height


@pytest.mark.parametrize("label", ["previous run (weight decay 2.0)",
                                   "previous run (learning rate 0.001, weight decay 2.0, …)"])
def test_a_previous_runs_entry_never_pushes_the_legend_into_the_title(label):
    """With the previous run's faded curves the Train tab's legends wrapped to a second row, over the chart titles."""
    from explorer.figures.common import TOOLBAR_PX
    from explorer.figures.training import loss_figure

    grokking = {"train_acc": [0, 1], "val_acc": [0, 0.2], "restricted_loss": [4, 2], "excluded_loss": [4, 5]}
    induction = {"induction": [0, 0.5], "prev_token": [0, 0.6], "k_composition": [0, 0.2], "icl": [0, -0.5]}
    figures = [("loss", loss_figure([1, 2], [4, 3], [0, 2], [4, 3], [4, 3], previous=(label, [0, 2], [4, 3], [4, 2])))]
    figures += [("progress", progress_figure([0, 2], series, previous=(label, [0, 2], series)))
                for series in (grokking, induction)]
    for chart, fig in figures:
        title_bottom = TOOLBAR_PX + (fig.layout.title.font.size or FONT_SIZE) * 1.3
        bottom, top = legend_bottom_up(fig, TRAIN_TAB_CHARTS_PX[chart])
        assert top >= title_bottom, (chart, fig.layout.margin["t"], top, title_bottom)
        assert fig.layout.height - fig.layout.margin["t"] - fig.layout.margin["b"] >= 250  # the plot kept its height
