"""The numbers behind the charts, as files: each chart's traces as one CSV table, a tab's charts in one zip.

Pure functions (no gradio, no torch): figure JSON as Plotly writes it in, rows and a zip file out. Tables are
"long": one row per point (bar, line, scatter) or per cell (heatmap), so every chart fits the same columns."""
import base64
import csv
import io
import json
import re
import zipfile
from pathlib import Path

import numpy as np

COLUMNS = ["trace", "x", "y", "z", "text"]  # z: a heatmap cell's value, or a 3-D point's third coordinate
SLUG_CHARS = 24  # a prompt in a file name: its first line, cut to this many characters


def slug(text, limit: int = 40) -> str:
    """'First Citizen:\\nBefore we…' -> 'First_Citizen': letters and digits of the first line, joined by _."""
    first_line = str(text or "").strip().split("\n")[0][:limit]
    return "_".join(re.findall(r"[A-Za-z0-9]+", first_line)) or "empty"


def export_name(tab: str, chart: str, model: str, prompt: str | None = None) -> str:
    """'attention-selected-head-shakespeare-First_Citizen' (no extension): what, from which model, on what."""
    parts = [slug(tab).lower(), slug(chart).lower().replace("_", "-"), slug(model)]
    if prompt:
        parts.append(slug(prompt, SLUG_CHARS))
    return "-".join(parts)


def decode_array(value):
    """A Plotly JSON array (a list, or a typed array {"dtype", "bdata", "shape"}) -> numpy array or list."""
    if isinstance(value, dict) and "bdata" in value:
        flat = np.frombuffer(base64.b64decode(value["bdata"]), dtype=np.dtype(value["dtype"]))
        shape = [int(s) for s in str(value.get("shape", len(flat))).split(",")]
        return flat.reshape(shape)
    return value


def _cell(value):
    """One CSV cell: None and NaN stay empty, numpy scalars become plain numbers."""
    if value is None:
        return ""
    if isinstance(value, (float, np.floating)) and not np.isfinite(value):
        return ""
    if isinstance(value, np.floating):  # shortest text that reads back as the same float32/64: 0.1, not 0.100000001
        return float(str(value))
    return value.item() if isinstance(value, np.generic) else value


def _column(trace: dict, key: str, n: int) -> list:
    """trace[key] as a list of n values ('' when absent or not one value per point, e.g. a single text)."""
    value = decode_array(trace.get(key))
    if value is None or isinstance(value, (str, int, float)):
        return [""] * n
    values = list(np.asarray(value, dtype=object).ravel()) if isinstance(value, np.ndarray) else list(value)
    return values if len(values) == n else [""] * n


def trace_rows(trace: dict, name: str) -> list[list]:
    """One trace -> rows of COLUMNS: a heatmap gives one row per cell (x = column label, y = row label)."""
    if trace.get("type") == "heatmap":
        z = decode_array(trace.get("z"))
        z = z if isinstance(z, np.ndarray) else np.asarray(z, dtype=np.float64)  # JSON null (masked) -> NaN
        if z.ndim != 2:
            return []
        xs, ys = _column(trace, "x", z.shape[1]), _column(trace, "y", z.shape[0])
        xs = [x if x != "" else j for j, x in enumerate(xs)]
        ys = [y if y != "" else i for i, y in enumerate(ys)]
        return [[name, xs[j], ys[i], _cell(z[i, j]), ""] for i in range(z.shape[0]) for j in range(z.shape[1])]
    n = max((len(np.atleast_1d(decode_array(trace[k]))) for k in ("x", "y") if trace.get(k) is not None), default=0)
    xs, ys, zs = (_column(trace, k, n) for k in ("x", "y", "z"))
    texts = _column(trace, "text", n)
    if trace.get("x") is None:  # a bar or line given only y: its x is the point's index
        xs = list(range(n))
    return [[name, _cell(x), _cell(y), _cell(z), t] for x, y, z, t in zip(xs, ys, zs, texts)]


def figure_rows(figure: dict) -> list[list]:
    """Every trace of a figure (dict with "data") -> rows of COLUMNS, traces named by their name or index."""
    rows = []
    for i, trace in enumerate(figure.get("data") or []):
        rows += trace_rows(trace, str(trace.get("name") or f"trace {i}"))
    return rows


def figure_dict(value) -> dict | None:
    """What a chart component holds (figure JSON string, gr.Plot's {"plot": json}, or a dict) -> figure dict."""
    if isinstance(value, dict) and isinstance(value.get("plot"), str):
        value = value["plot"]
    if isinstance(value, str):
        if not value.strip():
            return None
        value = json.loads(value)
    return value if isinstance(value, dict) and "data" in value else None


def csv_text(header: list, rows: list[list]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    return out.getvalue()


def write_zip(path: Path, tables: dict[str, tuple[list, list[list]]], about: dict) -> Path:
    """tables {file stem: (header, rows)} -> path, a zip of one CSV per table plus settings.json (about)."""
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as z:
        for stem, (header, rows) in tables.items():
            z.writestr(f"{stem}.csv", csv_text(header, rows))
        z.writestr("settings.json", json.dumps(about, indent=2, ensure_ascii=False, default=str))
    return path
