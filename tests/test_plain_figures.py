"""explorer.figures.plain: figures as plain dicts read as plotly.py reads them, serialised as Plotly.js reads them."""
import base64
import json

import numpy as np
import plotly.graph_objects as go
import pytest

from explorer.figures.plain import Figure, bar, heatmap, props, scatter, subplots, typed_array
from tests.helpers import assert_plotly_would_send_the_same


def decoded(spec: dict) -> np.ndarray:
    dtypes = {"f4": np.float32, "f8": np.float64, "i1": np.int8, "i2": np.int16, "i4": np.int32, "u1": np.uint8}
    values = np.frombuffer(base64.b64decode(spec["bdata"]), dtype=dtypes[spec["dtype"]])
    return values.reshape([int(n) for n in spec["shape"].split(",")]) if "shape" in spec else values


@pytest.mark.parametrize("values, dtype", [
    (np.arange(6, dtype=np.float32).reshape(2, 3), "f4"), (np.array([1.5, np.nan]), "f8"),
    (np.array([1, 2, 300]), "i2"), (np.array([-5, 100]), "i1"), (np.array([0, 255], dtype=np.uint8), "u1"),
])
def test_numpy_arrays_travel_as_typed_arrays_and_decode_to_the_same_values(values, dtype):
    spec = typed_array(values)
    assert spec["dtype"] == dtype
    np.testing.assert_array_equal(decoded(spec), values)


def test_what_has_no_typed_array_travels_as_a_list():
    assert typed_array(np.array(["a", "b"])) == ["a", "b"]
    assert typed_array(np.array([2 ** 40])) == [2 ** 40]  # too large for Plotly.js's 32-bit integers
    assert typed_array(np.zeros(0)) == []


def test_magic_underscores_titles_and_colour_scales_read_as_plotly_reads_them():
    p = props(dict(title_text="x", title_font_size=12, paper_bgcolor="white", xaxis=dict(title="k"),
                   colorscale="RdBu_r", hovertemplate=None))
    assert p == {"title": {"text": "x", "font": {"size": 12}}, "paper_bgcolor": "white",
                 "xaxis": {"title": {"text": "k"}}, "colorscale": p["colorscale"]}
    assert p.colorscale[0][1] == "rgb(5,48,97)" and p.title.font.size == 12 and p.missing is None


def test_updates_merge_like_go_figure_and_axes_follow_rows_and_columns():
    fig = subplots(rows=2, cols=2, subplot_titles=("a", "b", "c", "d"))
    fig.add_trace(bar(x=[1], y=[2]), row=2, col=2)
    fig.update_xaxes(type="category").update_xaxes(title_text="col 1", col=1).update_yaxes(title_text="r2c2", row=2,
                                                                                           col=2)
    fig.update_layout(title=dict(text="T"), height=300).update_layout(title_font_size=20)
    assert fig.data[0].xaxis == "x4" and fig.layout.xaxis4.type == "category"
    assert [fig.layout[f"xaxis{s}"].title for s in ("", "2", "3", "4")] == [{"text": "col 1"}, None,
                                                                            {"text": "col 1"}, None]
    assert fig.layout.yaxis4.title.text == "r2c2" and fig.layout.title == {"text": "T", "font": {"size": 20}}
    assert [a.text for a in fig.layout.annotations] == ["a", "b", "c", "d"]
    assert_plotly_would_send_the_same(fig)


def test_lines_bands_and_frames_are_what_plotly_would_send():
    fig = Figure(scatter(x=np.arange(4), y=np.array([1.0, np.nan, 2.0, 3.0]), name="loss"))
    fig.add_hline(y=1.5, line=dict(dash="dash"), annotation_text="mean 1.50")
    fig.add_vline(x=2.5).add_vrect(x0=0.5, x1=1.5, fillcolor="grey", opacity=0.2, line_width=0,
                                   annotation_text="masked")
    fig.update_layout(template="plotly_white", height=300)
    assert_plotly_would_send_the_same(fig)
    text = fig.to_json()
    assert "NaN" not in text and json.loads(text)["layout"]["template"]["layout"]["paper_bgcolor"] == "white"
    animated = Figure(data=[scatter(x=[0], y=[0])], frames=[dict(data=[scatter(x=[1], y=[1])], name="1")])
    assert json.loads(animated.to_json())["frames"][0]["name"] == "1"
    assert_plotly_would_send_the_same(animated)


def test_a_plain_figure_costs_a_small_fraction_of_a_validated_one():
    """The reason this module exists, checked by counting work rather than timing it: building 64 heatmaps
    makes no plotly.py objects at all."""
    before = go.Heatmap.__init__
    calls = []
    go.Heatmap.__init__ = lambda self, *a, **k: (calls.append(1), before(self, *a, **k))[1]
    try:
        fig = Figure([heatmap(z=np.zeros((8, 8), np.float32)) for _ in range(64)])
        fig.to_json()
    finally:
        go.Heatmap.__init__ = before
    assert calls == [] and len(fig.data) == 64
