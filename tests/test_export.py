"""Export: chart figures -> CSV tables, a tab's data zip (one CSV per chart, the shown numbers), the Train
tab's history, and the file names of exported images and zips."""
import csv
import io
import json
import zipfile

import gradio as gr
import numpy as np
import plotly.graph_objects as go

from explorer.callbacks.export import data_zip
from explorer.callbacks.residual import residual_view
from explorer.common.controls import FIGURE, TABLE
from explorer.figures import export
from explorer.figures.common import figure_to_json
from explorer.tabs.export_button import chart_kind
from explorer.tabs.live_plot import live_plot
from model_core.checkpoints.checkpoint import Checkpoint
from tests.helpers import PROMPT, tiny_session

RESIDUAL_CHARTS = ["Residual norm across layers", "Update size per layer", "Update vs residual per position",
                   "The residual stream, layer by layer", "Variance: residual vs attention output", "Logit lens"]


def read_zip(path) -> tuple[dict[str, list[dict]], dict]:
    with zipfile.ZipFile(path) as z:
        tables = {n[:-4]: list(csv.DictReader(io.StringIO(z.read(n).decode()))) for n in z.namelist()
                  if n.endswith(".csv")}
        return tables, json.loads(z.read("settings.json"))


def shown_numbers(fig: go.Figure) -> list[list[float]]:
    """Per trace, the numbers the chart draws: a heatmap's cells row by row, otherwise the y values."""
    out = []
    for trace in fig.data:
        values = trace.z if trace.type == "heatmap" else trace.y
        out.append(np.asarray(values, dtype=np.float64).ravel().tolist())
    return out


def test_export_name_says_tab_chart_model_and_prompt():
    name = export.export_name("Attention", "Selected head", "shakespeare", "First Citizen:\nBefore we proceed")
    assert name == "attention-selected-head-shakespeare-First_Citizen"
    assert export.export_name("Residual stream", "Logit lens", "trained on x.txt (30 steps)") == \
        "residual_stream-logit-lens-trained_on_x_txt_30_steps"
    assert export.slug("   ") == "empty"


def test_figure_rows_cover_heatmaps_bars_and_lines_with_blank_masked_cells():
    z = np.array([[0.5, np.nan], [0.25, 0.75]], dtype=np.float32)
    fig = go.Figure([go.Heatmap(z=z, x=["0:a", "1:b"], y=["0:a", "1:b"], name="head"),
                     go.Bar(x=["a", "b", "c"], y=np.array([3, 1, 2]), name="counts"),
                     go.Scatter(y=np.array([0.1, 0.2]), name="loss")])
    rows = export.figure_rows(export.figure_dict(figure_to_json(fig)))  # typed arrays, as the browser holds them
    assert rows[:4] == [["head", "0:a", "0:a", 0.5, ""], ["head", "1:b", "0:a", "", ""],
                        ["head", "0:a", "1:b", 0.25, ""], ["head", "1:b", "1:b", 0.75, ""]]
    assert rows[4:7] == [["counts", "a", 3, "", ""], ["counts", "b", 1, "", ""], ["counts", "c", 2, "", ""]]
    assert [r[1:3] for r in rows[7:]] == [[0, 0.1], [1, 0.2]]
    assert export.figure_dict("") is None and export.figure_dict({"type": "plotly", "plot": "{}"}) is None


def test_residual_tab_zip_has_one_csv_per_chart_with_the_shown_numbers():
    session = tiny_session()
    *figures, caption = residual_view(session, PROMPT, 1, "norm")
    shown = [gr.Plot().postprocess(f).model_dump() for f in figures]  # what gr.Plot sends back as an input
    charts = [(name, FIGURE) for name in RESIDUAL_CHARTS]
    path = data_zip(session, "residual", charts, ["Prompt", "Layer", "caption 1"], *shown, PROMPT, 1, caption)
    assert path.endswith("residual-data-tiny-First_Citizen.zip")
    tables, about = read_zip(path)
    assert sorted(tables) == sorted(export.slug(n).lower() for n in RESIDUAL_CHARTS)
    assert about["model"] == "tiny" and about["settings"]["Prompt"] == PROMPT and about["settings"]["Layer"] == 1
    assert about["settings"]["caption 1"] == caption
    for name, fig in zip(RESIDUAL_CHARTS, figures):
        rows = tables[export.slug(name).lower()]
        start = 0
        for trace, expected in zip(fig.data, shown_numbers(fig)):
            column = "z" if trace.type == "heatmap" else "y"
            got = [float(r[column]) if r[column] else np.nan for r in rows[start: start + len(expected)]]
            np.testing.assert_allclose(got, expected, rtol=1e-6, err_msg=f"{name}: {trace.name}")
            start += len(expected)
        assert start == len(rows)  # nothing but the shown numbers


def test_tables_and_live_charts_are_exported_and_other_components_are_not():
    with gr.Blocks():
        live, plot, table, text = live_plot(100), gr.Plot(), gr.Dataframe(), gr.Textbox()
    assert [chart_kind(c) for c in (live, plot, table, text)] == [FIGURE, FIGURE, TABLE, None]
    session = tiny_session()
    table_value = {"headers": ["head", "entropy"], "data": [["L0·H0", 1.5], ["L0·H1", 0.5]]}
    live_value = figure_to_json(go.Figure(go.Scatter(x=[0, 10], y=[4.2, 3.1], name="train")))
    path = data_zip(session, "attention", [("Head statistics", TABLE), ("Live", FIGURE), ("Empty", FIGURE)], [],
                    table_value, live_value, "")
    tables, _ = read_zip(path)
    assert sorted(tables) == ["head_statistics", "live"]  # an empty chart gives no file
    assert tables["head_statistics"][1] == {"head": "L0·H1", "entropy": "0.5"}
    assert [(r["x"], r["y"]) for r in tables["live"]] == [("0", "4.2"), ("10", "3.1")]


def test_train_tab_zip_holds_the_run_history():
    session = tiny_session()
    history = [{"step": s, "loss": 4.0 - s / 10, "lr": 0.01, "tokens_per_sec": 100.0} for s in range(1, 6)]
    evals = [{"step": 5, "train_loss": 3.5, "val_loss": 3.7}]
    model, tok = session.inspected.model, session.inspected.tokenizer
    session.inspected.use(Checkpoint(model, tok, history=history, evals=evals), "tiny")
    tables, about = read_zip(data_zip(session, "train", [], ["Layers"], 2))
    assert [float(r["loss"]) for r in tables["loss_per_step"]] == [m["loss"] for m in history]
    assert set(tables["loss_per_step"][0]) == {"step", "loss", "lr", "tokens_per_sec"}
    assert tables["evaluations"] == [{"step": "5", "train_loss": "3.5", "val_loss": "3.7"}]
    assert about["tab"] == "train" and about["settings"] == {"Layers": 2}
