"""Charts stay readable at a real model's size: every part of the logit split has its own labelled row (SmolLM2's 30
layers), every category axis labels its categories itself (Plotly.js skipped every second label of a 24-piece
prompt), thin tokens such as ',' read, and titles sit below the toolbar (tests/test_readable_browser.py looks at
the drawn page)."""
import re

import numpy as np
import pytest

import explorer.figures as F
from explorer.figures.attention import attention_overview_figure
from explorer.figures.attribution import PART_SERIES, attribution_figure, head_source_figure, patching_figure
from explorer.figures.circuits import composition_figure, copying_figure, token_circuit_figure
from explorer.figures.common import (
    CHAR_WIDTH,
    CHART_WIDTH,
    FONT_SIZE,
    SLANT_PITCH,
    SMALL_FONT,
    THIN_MARK_SCALE,
    TICK_PITCH,
    TITLE_BAND,
    TOOLBAR_PX,
    WHITESPACE_MARKS,
    WIDE_CHART,
    axis_categories,
    axis_length,
    index_labels,
    label_step,
    thin_mark_scale,
    visible_tick,
)
from explorer.figures.compare import character_bits_figure, next_token_pair_figure
from explorer.figures.experiments import loss_change_figure, next_token_change_figure
from explorer.figures.features import logit_effects_figure
from explorer.figures.grokking import logit_fourier_figure
from explorer.figures.plain import AXIS, axis_key, props
from explorer.figures.roles import role_map_figure, role_scores_over_steps_figure
from explorer.teaching import captions
from explorer.teaching.captions_attribution import attribution_caption, source_caption
from model_core.data.tokenization import visible
from tests.helpers import assert_plotly_would_send_the_same

rng = np.random.default_rng(7)
LONG_TOKENS = ["The", "␣quick", "␣brownish", "␣characteristically", "␣fox", "␣jumps", "␣over", "␣the", "␣lazy",
               "␣dog", "!", "␣And"]
T_LONG = len(LONG_TOKENS)


def smollm2_parts(n_layers: int = 30) -> list[tuple[str, float]]:
    """Parts shaped like SmolLM2's: the largest is layer 23's attention, beside a small layer 23 FFN."""
    parts = [("embeddings", 0.3)]
    for layer in range(n_layers):
        parts += [(f"layer {layer} attention", float(rng.normal(0, 0.3))), (f"layer {layer} FFN",
                                                                              float(rng.normal(0, 0.3)))]
    parts[1 + 2 * 23] = ("layer 23 attention", 1.92)
    parts[2 + 2 * 23] = ("layer 23 FFN", 0.05)
    return parts + [("biases", 0.0)]


def drawn_every_label(fig, axis: str, n_categories: int) -> bool:
    """Plotly.js skips category tick labels closer than 1.2 × their font (axes.prepTicks: nticks = length /
    bigFont(size)); the axis's length is the figure's height less its margins, times its domain."""
    layout = fig.layout
    margin = layout.margin
    domain = layout[axis].get("domain", [0, 1])
    length = (layout.height - margin["t"] - margin["b"]) * (domain[1] - domain[0])
    font = layout[axis].get("tickfont", {}).get("size", layout.font.size)
    return length / n_categories >= round(1.2 * font)


def test_every_part_of_a_30_layer_split_has_its_own_labelled_row():
    parts = smollm2_parts()
    heads = rng.normal(0, 0.1, size=(30, 9))
    fig = attribution_figure(heads, parts, "the logit of ␣Paris")
    bars = [t for t in fig.data if t.type == "bar"]
    rows = ["embeddings", *[f"layer {i}" for i in range(30)], "biases"]
    assert fig.layout.yaxis2.categoryarray == rows and drawn_every_label(fig, "yaxis2", len(rows))
    by_series = {t.name: dict(zip(t.y, t.customdata)) for t in bars}
    assert set(by_series) == set(PART_SERIES)
    assert all(by_series["attention (all heads)"][f"layer {i}"] == f"layer {i} attention" for i in range(30))
    assert all(by_series["FFN"][f"layer {i}"] == f"layer {i} FFN" for i in range(30))
    assert sum(len(t.x) for t in bars) == len(parts)  # every part drawn once
    caption = attribution_caption("The logit of ␣Paris", 2.0, 2.0, heads, parts)
    assert "the largest part overall is layer 23 attention (+1.92)" in caption
    attention = next(t for t in bars if t.name == "attention (all heads)")
    biggest = int(np.argmax(attention.x))
    assert attention.y[biggest] == "layer 23" and attention.customdata[biggest] == "layer 23 attention"
    # attention sits above the MLP in its row (the y axis runs top-down), neither over the other
    (a_off, a_width, _), (m_off, _, _) = PART_SERIES["attention (all heads)"], PART_SERIES["FFN"]
    assert a_off + a_width <= m_off + 1e-9
    assert_plotly_would_send_the_same(fig)


def test_an_attention_only_model_gets_full_width_bars():
    parts = [("embeddings", 0.1), ("layer 0 attention", 0.5), ("layer 1 attention", -0.2), ("biases", 0.0)]
    fig = attribution_figure(np.zeros((2, 2)), parts, "x")
    attention = next(t for t in fig.data if t.name == "attention (all heads)")
    assert attention.width == PART_SERIES["embeddings, biases"][1] and list(attention.y) == ["layer 0", "layer 1"]


def index_token_axes() -> list[tuple[str, object, str, list[str]]]:
    """(name, figure, axis key, its labels) for every figure that draws an index:token axis."""
    labels, T = index_labels(LONG_TOKENS), len(LONG_TOKENS)
    pattern = np.tril(rng.random((T, T)))
    pattern /= pattern.sum(-1, keepdims=True)
    stream = rng.normal(size=(3, T, 8))
    return [
        ("attention_head_figure", F.attention_head_figure(pattern, LONG_TOKENS, 0, 0), "xaxis", labels),
        ("attention_head_figure (queries)", F.attention_head_figure(pattern, LONG_TOKENS, 0, 0), "yaxis", labels),
        ("query_attention_bars_figure", F.query_attention_bars_figure(pattern, LONG_TOKENS, 5), "xaxis", labels),
        ("token_index_figure", F.token_index_figure(np.arange(T), LONG_TOKENS), "xaxis", labels),
        ("residual_heatmap_figure", F.residual_heatmap_figure(stream, LONG_TOKENS), "xaxis", labels),
        ("update_vs_residual_figure", F.update_vs_residual_figure(rng.random(T), rng.random(T), LONG_TOKENS, 0),
         "xaxis", labels),
    ]


ACROSS_THE_PAGE = ("attention_head_figure", "query_attention_bars_figure")  # drawn at the page's width


def test_index_token_axes_label_every_position_and_hover_keeps_them_whole():
    """Every index:token axis lists its labels itself (Plotly skips none), an x axis turns them to the first angle
    at which none overlap (autotickangles, ending upright; 45° only where it keeps them apart), no axis pins an angle, margins grow to fit them, and
    the categories (what hover shows) are the whole index:token labels."""
    for name, fig, key, labels in index_token_axes():
        axis = fig.layout[key]
        assert axis["type"] == "category" and axis["automargin"] and "tickangle" not in axis, name
        assert axis["tickmode"] == "array" and list(axis["tickvals"]) == labels, name
        if key.startswith("x"):  # 45° only where slanted labels stay apart, else straight to upright
            spacing = axis_length(fig, key, WIDE_CHART if name in ACROSS_THE_PAGE else CHART_WIDTH) / len(labels)
            slant = spacing >= SLANT_PITCH * axis["tickfont"]["size"]
            assert list(axis["autotickangles"]) == ([0, -45, -90] if slant else [0, -90]), name
        trace = fig.data[0]
        assert list(trace.x if key.startswith("x") else trace.y) == labels, name
        assert_plotly_would_send_the_same(fig)


SMOLLM2_PROMPT = ["The", "␣purple", "␣ot", "ter", "␣sang", "␣seven", "␣quiet", "␣songs", "␣to", "␣the", "␣moon",
                  "."] * 2  # the 24 pieces of a-real-model's induction prompt


def category_axes(fig) -> list[tuple[str, list]]:
    """(layout key, categories) of every category axis that shows tick labels."""
    return [(key, axis_categories(fig, key)) for key in fig.layout if AXIS.match(key)
            and fig.layout[key].get("showticklabels") is not False and axis_categories(fig, key)]


def test_a_24_piece_prompt_labels_every_key_and_query_of_a_head():
    """a-real-model: "row 16 looks at piece 5" must be checkable on the axes (Plotly drew every second label)."""
    T = len(SMOLLM2_PROMPT)
    fig = F.attention_head_figure(np.tril(np.ones((T, T))) / np.arange(1, T + 1)[:, None], SMOLLM2_PROMPT, 17, 4)
    labels = index_labels(SMOLLM2_PROMPT)
    for key in ("xaxis", "yaxis"):
        assert list(fig.layout[key].tickvals) == labels, key
        assert fig.layout[key].tickfont.size >= SMALL_FONT
    assert "16:␣sang" in fig.layout.yaxis.tickvals and "5:␣seven" in fig.layout.xaxis.tickvals
    assert drawn_every_label(fig, "yaxis", T)  # Plotly's own spacing rule holds too: the rows are tall enough


def test_thirty_next_characters_are_all_labelled_and_a_comma_reads():
    """temperature-top-p: the bars of 'i', 'a', 'r' and the space had no label; SmolLM2's ',' was a speck."""
    chars = list("eaiory␣uhnslt,.'!?:;-bcdfgkmpw")
    probs = np.linspace(1, 0.01, len(chars))
    probs /= probs.sum()
    fig = F.next_token_figure(probs, probs, np.zeros(len(chars), bool), chars)
    axis = fig.layout.xaxis
    assert list(axis.tickvals) == chars and axis.tickfont.size >= SMALL_FONT
    text = dict(zip(axis.tickvals, axis.ticktext))
    assert fig.layout.annotations[0].text == f"most likely: e ({probs[0]:.0%})"  # large, in the empty top right
    scale = thin_mark_scale(axis_length(fig, "xaxis") / len(chars), axis.tickfont.size)  # as large as fits
    assert scale > 1
    assert text["i"] == "i" and text["␣"] == f"“<span style='font-size:{scale:g}em'><b>␣</b></span>”"  # a space too
    for mark in ",.'!:;-":  # thin marks are drawn larger and bold, in quotes
        assert text[mark] == f"“<span style='font-size:{scale:g}em'><b>{mark}</b></span>”", mark
    comma_first = F.next_token_figure(np.array([0.93, 0.05, 0.02]), np.array([0.93, 0.05, 0.02]), np.zeros(3, bool),
                                      [",", "␣in", "␣there"])  # SmolLM2 after "Once upon a time"
    assert comma_first.layout.annotations[0].text == f"most likely: {visible_tick(',')} (93%)"
    assert_plotly_would_send_the_same(fig)


def test_visible_tick_makes_thin_marks_readable_and_leaves_words_alone():
    big = "<span style='font-size:1.5em'><b>{}</b></span>"
    assert visible_tick(",") == f"“{big.format(',')}”" and visible_tick("12:.") == f"12:“{big.format('.')}”"
    assert visible_tick("...") == f"“{big.format('...')}”" and visible_tick("␣,") == f"“{big.format('␣,')}”"
    assert visible_tick("a,") == "a," and visible_tick("12") == "12" and visible_tick("␣the") == "␣the"
    assert visible_tick("layer 0") == "layer 0" and visible_tick("") == "" and visible_tick("␣␣a") == "␣␣a"


def test_a_space_or_a_line_break_alone_is_a_large_visible_symbol():
    """A student's walk: the space and line-break bars had a speck of a label (␣, ⏎ at tick size). Every symbol
    the tokenizers' labels use for whitespace (model_core's visible) is drawn large, alone or after its index."""
    big = "<span style='font-size:1.5em'><b>{}</b></span>"
    assert WHITESPACE_MARKS == set(visible(" \n\t\r"))
    for raw in (" ", "\n", "\t", "\r", "\n\n", " \n"):
        symbol = visible(raw)
        assert visible_tick(symbol) == f"“{big.format(symbol)}”", repr(raw)
        assert visible_tick(f"3:{symbol}") == f"3:“{big.format(symbol)}”", repr(raw)
    labels = [visible(c) for c in "e \n"]
    fig = F.next_token_figure(np.array([0.5, 0.3, 0.2]), np.array([0.5, 0.3, 0.2]), np.zeros(3, bool), labels)
    assert list(fig.layout.xaxis.ticktext) == ["e", f"“{big.format('␣')}”", f"“{big.format('⏎')}”"]  # room for 1.5
    assert fig.layout.xaxis.tickfont.size >= SMALL_FONT


def test_the_logit_split_says_which_way_is_up_in_its_caption_and_on_its_axes():
    """Experiments, Split the logit: the caption and the axis titles say that a part above 0 pushes the logit up."""
    heads = np.array([[0.5, -2.0], [0.1, 0.2]])
    parts = [("embeddings", 0.5), ("layer 0 attention", -1.5), ("layer 1 attention", 0.3)]
    caption = attribution_caption("The logit of x", 3.0, 3.0, heads, parts)
    assert "A part above 0 pushes the logit up" in caption and "a part below 0 pushes it down" in caption
    assert "bar to the right of 0" in caption and "bar to the left of 0" in caption
    split = attribution_figure(heads, parts, "the logit of x")
    by_read = head_source_figure(np.array([0.2, -0.7]), ["0:a", "1:b"], "L0·H1", "the logit of x")
    assert split.layout.xaxis2.title.text == "part of the logit (above 0 pushes it up, below 0 down)"
    assert by_read.layout.yaxis.title.text.replace("<br>", " ") == "part of the logit above 0 pushes it up, below 0 down"
    assert source_caption("L0·H1", np.array([0.2, -0.7]), ["0:a", "1:b"]).endswith("pushes the prediction down.")
    assert source_caption("L0·H1", np.array([0.9, -0.1]), ["0:a", "1:b"]).endswith("pushes the prediction up.")


def test_the_head_source_axis_title_fits_beside_its_plot():
    """Who wrote the answer, steps 1-2: the vertical axis title ran past the plot, over the chart's title. Each of
    its lines is shorter than the plot is high, and the left margin holds its lines beside the tick labels."""
    fig = head_source_figure(rng.normal(size=T_LONG), index_labels(LONG_TOKENS), "L3·H1", "the logit of ␣Mary")
    lines = fig.layout.yaxis.title.text.split("<br>")
    plot_px = fig.layout.height - fig.layout.margin.t - fig.layout.margin.b
    assert max(len(line) for line in lines) * FONT_SIZE * CHAR_WIDTH <= plot_px
    assert fig.layout.margin.l >= len(lines) * 1.3 * FONT_SIZE + 40  # the title's lines and the tick labels


@pytest.mark.parametrize("chart", ["token indices", "next token"])
def test_thin_marks_are_drawn_only_as_large_as_the_room_between_labels(chart):
    """Seed 000's 50 Shakespeare characters: the quoted ':', '⏎' and ',' (drawn 1.5 times the tick font) turned
    upright ran into their neighbours. A thin mark is drawn only as large as the room between two labels allows
    (turned upright a label is as thick as its largest text), bold and quoted at any size; the labels are not
    thinned for it, and turn to 45° only where that room allows it too."""
    tokens = [visible(c) for c in "First Citizen:\nBefore we proceed any further, hear me speak.\n\nAll:"][:50]
    if chart == "token indices":
        fig, width = F.token_index_figure(np.arange(len(tokens)), tokens), WIDE_CHART
    else:
        fig, width = F.next_token_figure(np.full(50, 0.02), np.full(50, 0.02), np.zeros(50, bool), tokens), CHART_WIDTH
    axis = fig.layout.xaxis
    spacing = axis_length(fig, "xaxis", width) / len(axis_categories(fig, "xaxis")) * label_step(fig, "xaxis")
    scales = [float(m) for t in axis.ticktext for m in re.findall(r"font-size:([\d.]+)em", t)]
    assert len(scales) >= 5 and all(1 <= scale <= THIN_MARK_SCALE for scale in scales)
    assert max(scales) * TICK_PITCH * axis.tickfont.size <= spacing + 0.01
    if -45 in axis.autotickangles:
        assert spacing >= SLANT_PITCH * max(scales) * axis.tickfont.size
    plain = F.token_index_figure(np.arange(50), [c if c.isalpha() else "x" for c in tokens])  # no thin marks
    assert label_step(plain, "xaxis") == label_step(fig, "xaxis") or chart == "next token"


def full_size(tick: str) -> str:
    """A tick text with its thin mark at THIN_MARK_SCALE, the size visible_tick draws it at where there is room."""
    return re.sub(r"font-size:[\d.]+em", f"font-size:{THIN_MARK_SCALE:g}em", tick)


def test_a_very_long_axis_shows_evenly_spaced_labels_that_fit_and_hover_names_every_one():
    T = 200
    tokens = [chr(97 + i % 26) for i in range(T)]
    fig = F.attention_head_figure(np.tril(np.ones((T, T))) / np.arange(1, T + 1)[:, None], tokens, 0, 0)
    labels = index_labels(tokens)
    for key in ("xaxis", "yaxis"):
        shown = list(fig.layout[key].tickvals)
        step = labels.index(shown[1])
        assert 1 < step and shown == labels[::step], key  # every step-th label, from the first
        assert axis_length(fig, key, WIDE_CHART) / len(labels) * step >= TICK_PITCH * fig.layout[key].tickfont.size
    assert list(fig.data[0].x) == labels and "%{x}" in fig.data[0].hovertemplate


def every_category_figure() -> list:
    """A figure of each kind that has category axes, at sizes the app draws."""
    P = np.tril(np.ones((T_LONG, T_LONG))) / np.arange(1, T_LONG + 1)[:, None]
    stats = {k: rng.uniform(0, 1, (30, 9)) for k in ("prev_token", "self", "first_token")}
    return [
        F.attention_head_figure(P, LONG_TOKENS, 0, 0), F.query_attention_bars_figure(P, LONG_TOKENS, 5),
        F.attention_steps_figure(P, P, P, rng.normal(size=(T_LONG, 4)), LONG_TOKENS, 0, 0),
        attention_overview_figure(stats, np.stack([P] * 9), LONG_TOKENS, (3, 1)),
        F.residual_heatmap_figure(rng.normal(size=(7, T_LONG, 8)), LONG_TOKENS),
        F.update_vs_residual_figure(rng.random(T_LONG), rng.random(T_LONG), LONG_TOKENS, 0),
        F.logit_lens_figure(np.full((31, T_LONG), "x"), rng.random((31, T_LONG)), LONG_TOKENS),
        F.token_index_figure(np.arange(50), [chr(97 + i % 26) for i in range(50)]),
        F.next_token_figure(np.full(30, 1 / 30), np.full(30, 1 / 30), np.zeros(30, bool), list("abcdefghijklmnopqrstuvwxyz,.;:")),
        F.temperature_curve_figure(rng.normal(size=40), [0.5, 1.0, 2.0], [f"w{i}" for i in range(40)]),
        F.embedding_norms_figure(rng.random(T_LONG), rng.random(T_LONG), LONG_TOKENS),
        F.positional_heatmap_figure(rng.normal(size=(64, 8)), [chr(97 + i % 26) for i in range(64)]),
        F.neuron_sparsity_figure(rng.random(64), rng.random(30), 0),
        token_circuit_figure(rng.normal(size=(12, 30)), list("abcdefghijkl"), [f"t{i}" for i in range(30)], "OV",
                             "attended", "output", "logit"),
        composition_figure(rng.random((4, 8, 4, 8)), "k"), copying_figure(rng.uniform(-1, 1, (30, 9))),
        role_map_figure(["induction"] * 24, [0.5] * 24, 4, 6),
        logit_fourier_figure(rng.random((59, 59)), [f"cos {i}" for i in range(59)]),
        character_bits_figure(rng.random(80), rng.random(80), index_labels(list("abcdefghij" * 8)), "A", "B"),
        next_token_pair_figure(rng.random(20), list("abcdefghijklmnopqrst"), rng.random(20), list("abcdefghijklmnopqrst"),
                               "A", "B"),
        loss_change_figure(rng.random(63), rng.random(63), index_labels(list("abcdefgh" * 8))[1:]),
        next_token_change_figure(rng.random(20), rng.random(20), list("abcdefghijklmnopqrst"), "after"),
        attribution_figure(rng.normal(size=(30, 9)), smollm2_parts(), "x"),
        head_source_figure(rng.normal(size=T_LONG), index_labels(LONG_TOKENS), "1.0", "x"),
        patching_figure(rng.random((30, T_LONG)), [f"layer {i}" for i in range(30)], index_labels(LONG_TOKENS), "p",
                        "position", "layer"),
        logit_effects_figure([f"up{i}" for i in range(10)], rng.random(10), [f"dn{i}" for i in range(10)],
                             -rng.random(10), 3),
    ]


@pytest.mark.slow
def test_every_category_axis_of_every_figure_labels_its_categories_itself():
    """No figure leaves a category axis to Plotly's thinning: each lists every category, or on a long axis every
    k-th at a spacing Plotly draws without touching; the tick text is the category (thin marks made visible)."""
    for fig in every_category_figure():
        axes = category_axes(fig)
        assert axes, fig.layout.title.text
        for key, categories in axes:
            axis, where = props(fig.layout[key]), f"{fig.layout.title.text}: {key}"
            assert axis.tickmode == "array", where
            shown = list(axis.tickvals)
            step = categories.index(shown[1]) if len(shown) > 1 else 1
            assert shown == categories[::step], where
            assert [full_size(t) for t in axis.ticktext] == [visible_tick(c) for c in shown], where
            assert axis.tickfont.size >= SMALL_FONT, where
            if step > 1:
                assert axis_length(fig, key, WIDE_CHART) / len(categories) * step >= TICK_PITCH * SMALL_FONT, where
        assert_plotly_would_send_the_same(fig)


def test_short_category_axes_show_every_label():
    """Axes whose categories fit are never thinned: every head, layer, token of a top list, part of a split (on an
    axis at least half the chart long; the four narrow panels of the steps figure may thin 21-letter tokens)."""
    for fig in every_category_figure():
        for key, categories in category_axes(fig):
            start, end = fig.layout[key].get("domain") or [0, 1]
            if len(categories) <= 30 and end - start >= 0.5:
                assert list(fig.layout[key]["tickvals"]) == categories, f"{fig.layout.title.text}: {key}"


def test_titles_sit_below_the_toolbar():
    """Plotly's toolbar (modebar) covers a chart's top right on hover: the OV circuit's toolbar covered its title."""
    for fig in every_category_figure():
        title = fig.layout.title
        assert title.yref == "container" and title.y == 1 and title.yanchor == "top", title.text
        assert title.pad.t >= TOOLBAR_PX and fig.layout.margin.t >= TITLE_BAND, title.text


DEFAULT_PROMPT_TOKENS = list("First␣Citizen:⏎Before␣we␣proceed␣any␣further,␣hear␣me␣speak.")  # the app's, 60 characters


def test_the_default_prompts_head_and_bars_label_every_position_and_the_steps_every_row():
    """The walk: the default prompt's head heatmap showed every second label, its four narrow panels every third."""
    T = len(DEFAULT_PROMPT_TOKENS)
    P = np.tril(np.ones((T, T))) / np.arange(1, T + 1)[:, None]
    labels = index_labels(DEFAULT_PROMPT_TOKENS)
    head = F.attention_head_figure(P, DEFAULT_PROMPT_TOKENS, 0, 0)
    bars = F.query_attention_bars_figure(P, DEFAULT_PROMPT_TOKENS, T - 1)
    for fig, key in ((head, "xaxis"), (head, "yaxis"), (bars, "xaxis")):
        assert list(fig.layout[key].tickvals) == labels, (fig.layout.title.text, key)
        assert axis_length(fig, key, WIDE_CHART) / T >= TICK_PITCH * fig.layout[key].tickfont.size
        assert label_step(fig, key) == 1
    assert captions.labels_shown(head, {"xaxis": "key position", "yaxis": "query position"}) == ""
    steps = F.attention_steps_figure(P, P, P, rng.normal(size=(T, 8)), DEFAULT_PROMPT_TOKENS, 0, 0)
    assert list(steps.layout.yaxis.tickvals) == labels  # every query row
    step = label_step(steps, "xaxis")  # too narrow for 60 keys: every step-th, said in the caption
    assert step > 1 and list(steps.layout.xaxis.tickvals) == labels[::step]
    assert axis_length(steps, "xaxis", WIDE_CHART) / T * step >= TICK_PITCH * SMALL_FONT
    note = captions.labels_shown(steps, {"yaxis": "query position", "xaxis": "key position"})
    assert note == f" Too many to label each: labelled are every {step}th key position (hover for any one)."


def test_a_short_prompts_steps_label_every_key_and_the_caption_says_nothing_of_labels():
    tokens = DEFAULT_PROMPT_TOKENS[:12]
    P = np.tril(np.ones((12, 12))) / np.arange(1, 13)[:, None]
    steps = F.attention_steps_figure(P, P, P, rng.normal(size=(12, 4)), tokens, 0, 0)
    for key in ("xaxis", "xaxis2", "xaxis3", "yaxis"):
        assert list(steps.layout[key].tickvals) == index_labels(tokens), key
    assert captions.labels_shown(steps, {"xaxis": "key position", "yaxis": "query position"}) == ""


def test_circuits_of_forty_long_tokens_label_every_token_on_both_axes():
    """SmolLM2's first 40 tokens are long special tokens: each still has its tick on both axes."""
    names = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<repo_name>", "<jupyter_output>"] * 8
    names = [f"{n}{i}" for i, n in enumerate(names)]
    for fig in (token_circuit_figure(rng.normal(size=(40, 40)), names, names, "OV", "attended", "output", "logit"),):
        for key in ("xaxis", "yaxis"):
            assert list(fig.layout[key].tickvals) == index_labels(names), key
            assert fig.layout[key].tickfont.size >= SMALL_FONT


def test_the_role_scores_loss_has_a_panel_of_its_own_from_0():
    """The loss was on a second y axis over the scores, its smallest value level with a score of 0: the loss
    seemed to fall to nothing. It has its own panel below now, on the same step axis, its axis starting at 0."""
    loss = np.array([4.17, 2.23, 2.0, 1.9, 1.64, np.nan])
    fig = role_scores_over_steps_figure(np.arange(6) * 200, {"self": rng.uniform(0, 1, 6)}, 0, 0, loss)
    scores, val = fig.data
    upper, lower = fig.layout[axis_key(scores.yaxis)], fig.layout[axis_key(val.yaxis)]
    assert upper is not lower and lower.domain[1] < upper.domain[0]
    assert lower.rangemode == "tozero" and upper.range[0] < 0 < upper.range[1] and upper.range[1] > 1
    assert not any(fig.layout[k].overlaying for k in fig.layout if AXIS.match(k))
    assert fig.layout[axis_key(scores.xaxis)].matches == val.xaxis  # one step axis: a change lines up
    alone = role_scores_over_steps_figure([0, 1], {"self": [0.1, 0.2]}, 0, 0)
    assert len(alone.data) == 1 and "yaxis2" not in alone.layout




def test_a_patching_chart_writes_only_the_shares_that_are_not_zero():
    """140 cells of "0%" hid the one patch that mattered: a share that rounds to 0 % is left blank (hover still
    gives it), every other is written, a negative one with its sign; in narrow cells without "%"."""
    restored = np.array([[0.0, 0.004, 0.94], [-0.003, 0.031, -0.2]])
    cells = patching_figure(restored, ["head 0", "head 1"], ["0:a", "1:b", "2:c"], "p", "position", "head").data[0]
    assert [list(row) for row in cells.text] == [["", "", "94%"], ["", "3%", "-20%"]]
    wide = patching_figure(np.ones((2, 34)), ["head 0", "head 1"], [f"{i}:a" for i in range(34)], "p", "position",
                           "head").data[0]
    assert set(wide.text[0]) == {"100"}  # 34 cells of 27 px: "100%" did not fit, the colour bar says "%"
