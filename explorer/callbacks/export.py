"""'Download data': a zip of the numbers behind every chart a tab shows, and of a training run's history."""
from pathlib import Path

from explorer.common.controls import FIGURE
from explorer.common.tempfiles import new_temp_dir
from explorer.figures import export
from explorer.state.session import Session

HISTORY_KEYS = ("step", "loss", "lr", "grad_norm", "tokens_per_sec", "elapsed")  # per-step columns, when present


def _table(value) -> tuple[list, list[list]] | None:
    """A gr.Dataframe value (DataFrame, {"headers", "data"} or rows) -> (header, rows)."""
    if hasattr(value, "columns") and hasattr(value, "values"):
        return [str(c) for c in value.columns], value.values.tolist()
    if isinstance(value, dict) and "data" in value:
        return list(value.get("headers") or []), list(value["data"])
    return None


def shown_tables(charts: list[tuple[str, str]], values: list) -> dict[str, tuple[list, list[list]]]:
    """charts [(name, kind)] with their shown values -> {file stem: (header, rows)}; empty charts are skipped."""
    tables = {}
    for (name, kind), value in zip(charts, values):
        if kind == FIGURE:
            figure = export.figure_dict(value)
            table = (export.COLUMNS, export.figure_rows(figure)) if figure else None
        else:
            table = _table(value)
        if table and table[1]:
            tables[export.slug(name).lower()] = table
    return tables


def history_tables(session: Session) -> dict[str, tuple[list, list[list]]]:
    """The training run (or the inspected model's recorded history): per-step losses, evaluations, samples."""
    run = session.workspace.run
    source = run.progress if run is not None else session.inspected.checkpoint
    history, evals = list(source.history or []), list(source.evals or [])
    tables = {}
    if history:
        keys = [k for k in HISTORY_KEYS if k in history[0]]
        tables["loss_per_step"] = (keys, [[m.get(k) for k in keys] for m in history])
    if evals:
        tables["evaluations"] = (["step", "train_loss", "val_loss"],
                                 [[e.get("step"), e.get("train_loss"), e.get("val_loss")] for e in evals])
    if run is not None and run.progress.samples:
        tables["samples"] = (["step", "sample"], [[step, text] for step, text in run.progress.samples])
    return tables


def data_zip(session: Session, tab: str, charts: list[tuple[str, str]], settings: list[str], *values) -> str:
    """values = the charts' shown values, then the settings' values -> path of the tab's data zip."""
    shown, chosen = values[: len(charts)], values[len(charts):]
    tables = shown_tables(charts, list(shown))
    if tab == "train":
        tables.update(history_tables(session))
    about = {"tab": tab, "model": session.inspected.name, "settings": dict(zip(settings, chosen)),
             "charts": {export.slug(name).lower() + ".csv": name for name, _ in charts},
             "columns": "trace, x, y, z (a heatmap cell's value), text; one row per point or cell"}
    prompt = next((v for k, v in about["settings"].items() if k.lower().startswith("prompt")), None)
    name = export.export_name(tab, "data", session.inspected.name, prompt if isinstance(prompt, str) else None)
    return str(export.write_zip(Path(new_temp_dir()) / f"{name}.zip", tables, about))
