"""Figures as the plain dicts Plotly.js draws, built without plotly.py's per-property validation.

A `go.Figure` checks every property against Plotly's schema as it is set: for the Attention tab that was ~100 ms
of a click whose forward pass takes 3 ms. `Figure` keeps the few methods our figure functions use
(`add_trace`, `update_layout`, `update_xaxes`, `add_vline`, ...) with the same meaning, stores plain dicts, and
serialises once: numpy arrays become Plotly.js typed arrays (base64), the theme's template is serialised once
per set of trace types. Subplot grids take their axes from plotly's own `make_subplots`, computed once per
shape. Properties read as attributes (`fig.layout.title.text`), as on a `go.Figure`."""
import base64
import copy
import re
from functools import lru_cache

import numpy as np
import orjson

AXIS = re.compile(r"^([xy])axis(\d*)$")
TYPED = {"float64": "f8", "float32": "f4", "int32": "i4", "uint32": "u4", "int16": "i2", "uint16": "u2",
         "int8": "i1", "uint8": "u1"}  # numpy dtype -> Plotly.js typed-array dtype
# The only Plotly.js property names with an underscore (plotly.py's schema); every other underscore in a keyword
# is a "magic underscore" path: title_text -> title.text
UNDERSCORED = {"paper_bgcolor", "plot_bgcolor", "error_x", "error_y", "error_z", "copy_ystyle", "copy_zstyle"}


class Props(dict):
    """A dict whose keys also read and write as attributes; a property never set reads as None."""

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return self.get(name)

    def __setattr__(self, name, value):
        self[name] = props(value)

    def __deepcopy__(self, memo):
        return Props({k: copy.deepcopy(v, memo) for k, v in self.items()})


def props(value):
    """dicts (at any depth, also inside lists) -> Props, with 'magic underscores' spelt out:
    {"title_text": "x"} -> {"title": {"text": "x"}}, as go.Figure reads them (no Plotly.js name has one);
    a title given as text is its text, a colour scale's name its colours."""
    if isinstance(value, dict):
        out = Props()
        for key, item in value.items():
            if item is None:  # unset, as go.Figure reads None: nothing is sent
                continue
            path = key.split("_") if "_" in key and key not in UNDERSCORED else [key]
            if path[-1] == "title" and isinstance(item, str):  # a title given as text, as go.Figure reads it
                path = path + ["text"]
            elif path[-1] == "colorscale" and isinstance(item, str):  # "RdBu_r" is plotly.py's, not Plotly.js's
                item = named_colorscale(item)
            _merge(out, _nested(path, props(item)))
        return out
    if isinstance(value, (list, tuple)) and any(isinstance(v, dict) for v in value):
        return [props(v) for v in value]
    return value


@lru_cache(maxsize=32)
def named_colorscale(name: str) -> list:
    """'Viridis', 'RdBu_r' -> [[0, colour], ..., [1, colour]], as plotly.py sends a named scale."""
    from plotly.colors import get_colorscale

    return [[float(stop), colour] for stop, colour in get_colorscale(name)]


def _nested(path: list, value) -> Props:
    """['font', 'size'], 12 -> {'font': {'size': 12}}."""
    for name in reversed(path):
        value = Props({name: value})
    return value


def merge(target: Props, updates: dict) -> Props:
    """Merge updates into target as go.Figure.update does: dicts merge key by key, anything else replaces."""
    return _merge(target, props(updates))


def _merge(target: Props, updates: Props) -> Props:
    for key, value in updates.items():
        if isinstance(value, dict) and isinstance(target.get(key), dict):
            _merge(target[key], value)
        else:
            target[key] = value
    return target


def trace(kind: str, **properties) -> Props:
    """One trace: trace("heatmap", z=..., x=...) is go.Heatmap(z=..., x=...) without validation."""
    return Props(type=kind, **props(properties))


def heatmap(**properties) -> Props:
    return trace("heatmap", **properties)


def scatter(**properties) -> Props:
    return trace("scatter", **properties)


def scatter3d(**properties) -> Props:
    return trace("scatter3d", **properties)


def bar(**properties) -> Props:
    return trace("bar", **properties)


class Figure:
    """data (traces), layout and frames as Props; the subset of go.Figure's methods our figures use."""

    def __init__(self, data=None, layout=None, frames=None):
        data = [data] if isinstance(data, dict) else data or []
        self.data = [props(t) for t in data]
        self.layout = props(dict(layout or {}))
        self.frames = [props(f) for f in frames or []]
        self.cells: dict = {}  # (row, col) -> (x axis ref, y axis ref), for subplot grids

    def add_trace(self, new_trace, row: int | None = None, col: int | None = None) -> "Figure":
        new_trace = props(new_trace)
        if row is not None:
            new_trace["xaxis"], new_trace["yaxis"] = self.cells[(row, col or 1)]
        self.data.append(new_trace)
        return self

    def update_layout(self, updates: dict | None = None, **properties) -> "Figure":
        merge(self.layout, {**(updates or {}), **properties})
        return self

    def update_traces(self, **properties) -> "Figure":
        for t in self.data:
            merge(t, properties)
        return self

    def update_xaxes(self, row: int | None = None, col: int | None = None, **properties) -> "Figure":
        return self._update_axes("x", row, col, properties)

    def update_yaxes(self, row: int | None = None, col: int | None = None, **properties) -> "Figure":
        return self._update_axes("y", row, col, properties)

    def _update_axes(self, letter: str, row, col, properties: dict) -> "Figure":
        for name in self.axis_names(letter, row, col):
            merge(self.layout.setdefault(name, Props()), properties)
        return self

    def axis_names(self, letter: str, row: int | None = None, col: int | None = None) -> list[str]:
        """Layout keys of the x or y axes in the (row, col) cells (None: every row / column), as go.Figure."""
        if self.cells:
            refs = [ref for (r, c), ref in self.cells.items() if row in (None, r) and col in (None, c)]
            return [axis_key(ref[0 if letter == "x" else 1]) for ref in refs]
        found = sorted((k for k in self.layout if (m := AXIS.match(k)) and m[1] == letter), key=len)
        return found or [f"{letter}axis"]

    def axis(self, letter: str, row: int, col: int) -> Props:
        """The layout of the x or y axis of one cell of a subplot grid."""
        return self.layout[self.axis_names(letter, row, col)[0]]

    def add_shape(self, **shape) -> "Figure":
        self.layout.setdefault("shapes", []).append(props(shape))
        return self

    def add_annotation(self, **annotation) -> "Figure":
        self.layout.setdefault("annotations", []).append(props(annotation))
        return self

    def add_vline(self, x, row: int | None = None, col: int | None = None, **line) -> "Figure":
        """A vertical line across the whole height of one cell (or the plot)."""
        xref, yref = self.cells[(row, col)] if row is not None else ("x", "y")
        return self.add_shape(type="line", x0=x, x1=x, xref=xref, y0=0, y1=1, yref=f"{yref} domain", **line)

    def add_hline(self, y, annotation_text: str | None = None, annotation_position: str = "top right",
                  **line) -> "Figure":
        """A horizontal line across the whole width, with a label at its right end (above it)."""
        self.add_shape(type="line", y0=y, y1=y, yref="y", x0=0, x1=1, xref="x domain", **line)
        if annotation_text:
            side = "right" if "right" in annotation_position else "left"
            self.add_annotation(text=annotation_text, x=1 if side == "right" else 0, xref="x domain", y=y,
                                yref="y", xanchor=side, yanchor="bottom", showarrow=False)
        return self

    def add_vrect(self, x0, x1, annotation_text: str | None = None, annotation_position: str = "top left",
                  annotation_yshift: float = 0, **shape) -> "Figure":
        """A shaded band from x0 to x1 over the whole height, its label in a top corner inside it (moved up by
        annotation_yshift pixels)."""
        self.add_shape(type="rect", x0=x0, x1=x1, xref="x", y0=0, y1=1, yref="y domain", **shape)
        if annotation_text:
            side = "left" if "left" in annotation_position else "right"
            label = dict(yshift=annotation_yshift) if annotation_yshift else {}
            self.add_annotation(text=annotation_text, x=x0 if side == "left" else x1, xref="x", y=1,
                                yref="y domain", xanchor=side, yanchor="top", showarrow=False, **label)
        return self

    def to_plotly_json(self) -> dict:
        """{"data", "layout"(, "frames")} with the template still named (to_json spells it out)."""
        out = {"data": self.data, "layout": self.layout}
        return {**out, "frames": self.frames} if self.frames else out

    to_dict = to_plotly_json

    def to_json(self) -> str:
        """The figure as Plotly.js reads it: typed arrays, the named template spelt out, NaN as null."""
        template = self.layout.get("template") or "plotly"
        if isinstance(template, str):
            template = template_json(template, tuple(sorted({t.get("type", "scatter") for t in self.data})))
        layout = {**self.layout, "template": template}
        return orjson.dumps({**self.to_plotly_json(), "layout": layout}, default=_typed).decode()


def axis_key(ref: str) -> str:
    """'x' -> 'xaxis', 'y3' -> 'yaxis3'."""
    return f"{ref[0]}axis{ref[1:]}"


def _typed(value):
    """orjson's fallback: numpy arrays as Plotly.js typed arrays (base64), numpy scalars as numbers."""
    if isinstance(value, np.ndarray):
        return typed_array(value)
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, Figure):
        return value.to_plotly_json()
    raise TypeError(f"not JSON: {type(value).__name__}")


def typed_array(values: np.ndarray):
    """{dtype, bdata[, shape]} as Plotly.js reads it (plotly.py's rules: int64 narrowed to fit); else a list."""
    if values.size == 0 or values.dtype.kind not in "fiu":
        return values.tolist()
    if values.dtype.kind in "iu" and values.dtype.itemsize == 8:
        lo, hi = int(values.min()), int(values.max())
        narrow = next((t for t in (np.int8, np.int16, np.int32) if np.iinfo(t).min <= lo and hi <= np.iinfo(t).max),
                      None)
        if narrow is None:
            return values.tolist()
        values = values.astype(narrow)
    code = TYPED.get(values.dtype.name)
    if code is None:
        return values.tolist()
    spec = {"dtype": code, "bdata": base64.b64encode(np.ascontiguousarray(values).tobytes()).decode("ascii")}
    if values.ndim > 1:
        spec["shape"] = ", ".join(str(n) for n in values.shape)
    return spec


@lru_cache(maxsize=64)
def template_json(name, kinds: tuple) -> orjson.Fragment:
    """A named Plotly template as JSON, with trace defaults only for the trace kinds in the figure (a whole
    template is ~10 KB; a figure needs a tenth of it). A template given as a dict is left as it is."""
    import plotly.io as pio

    template = pio.templates[name].to_plotly_json()
    template["data"] = {k: v for k, v in template.get("data", {}).items() if k in kinds}
    return orjson.Fragment(orjson.dumps(template, default=_typed))


@lru_cache(maxsize=64)
def _grid(rows: int, cols: int, options: tuple) -> tuple[dict, dict]:
    """plotly's make_subplots layout for this grid (axes, domains, titles) and each cell's axis refs."""
    from plotly.subplots import make_subplots

    fig = make_subplots(rows=rows, cols=cols, **{k: list(v) if isinstance(v, tuple) else v for k, v in options})
    cells = {(r + 1, c + 1): (cell[0].trace_kwargs["xaxis"], cell[0].trace_kwargs["yaxis"])
             for r, row in enumerate(fig._grid_ref) for c, cell in enumerate(row) if cell}
    layout = orjson.loads(orjson.dumps(fig.to_plotly_json()["layout"], default=_typed))
    layout.pop("template", None)  # named by the figure's style (to_json spells it out)
    return layout, cells


def subplots(rows: int = 1, cols: int = 1, **options) -> Figure:
    """An empty Figure laid out as make_subplots(rows, cols, **options) lays it out (computed once per shape)."""
    frozen = tuple(sorted((k, tuple(v) if isinstance(v, list) else v) for k, v in options.items()))
    layout, cells = _grid(rows, cols, frozen)
    fig = Figure(layout=copy.deepcopy(layout))
    fig.cells = dict(cells)
    return fig
