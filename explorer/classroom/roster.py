"""The class as the teacher page shows it: one row per session (name, model, run, last activity), the loss curves
of every run, and a leaderboard by the latest validation loss per corpus. Read-only: nothing here changes a session, and a
shared shipped model is read without being copied."""
import statistics
import time
from typing import Optional

import numpy as np

from explorer.common.wording import model_shape

CURVE_POINTS = 200  # points per loss curve sent to the page
NAME_CHARS = 40


def display_name(session) -> str:
    if session.member.teacher:
        return "you (the teacher)"
    return session.member.display_name or f"(no name) #{session.member.student_id}"


def student_row(session, now: Optional[float] = None) -> dict:
    """{id, name, model, run, idle_seconds, page_open} of one session."""
    now = time.monotonic() if now is None else now
    return {"id": session.member.student_id, "name": display_name(session), "model": model_facts(session),
            "run": run_facts(session.workspace.run), "idle_seconds": round(max(0.0, now - session.last_seen), 1),
            "page_open": session.detached_at is None, "answers": len(session.member.answers)}


def model_facts(session) -> dict:
    """The student's own model: the one their run trains when they have a run, else the one they inspect."""
    run = session.workspace.run
    if run is not None:
        model, name, evals, steps = run.progress.model, f"trained on {run.corpus}", run.progress.evals, run.progress.step
    else:
        held = session.inspected.held
        model, name, evals, steps = held.model, session.inspected.name, held.evals, len(held.history)
    cfg = model.cfg
    return {"name": name, "shape": f"{model_shape(cfg.n_layers, cfg.n_heads)}, d_model {cfg.d_model}",
            "params": model.num_params(),
            "own": (run is not None or session.inspected.shared_key is None) and not session.member.teacher,
            "steps": steps, "val_loss": last_val_loss(evals), "val_step": last_val_step(evals),
            # a run's losses were measured by this server; any other model's came with its file (an uploaded .zip
            # may say anything: the page marks them and ranks them after the measured ones)
            "val_source": "measured" if run is not None else "file", "corpus": corpus_of(session)}


def run_facts(run) -> Optional[dict]:
    if run is None:
        return None
    p = run.progress
    recent = [m["tokens_per_sec"] for m in p.history[-10:] if m.get("tokens_per_sec")]
    return {"state": p.state, "step": p.step, "max_steps": p.cfg.max_steps,
            "tokens_per_sec": round(statistics.median(recent)) if recent and p.state == "running" else None,
            "corpus": run.corpus}


def corpus_of(session) -> Optional[str]:
    """The text and tokens the model's losses are measured on ("shakespeare, characters"): only models that share
    it are ranked together."""
    run = session.workspace.run
    corpus, tokenizer = (run.corpus, run.progress.tokenizer) if run is not None else (session.inspected.held.corpus,
                                                                                     session.inspected.held.tokenizer)
    if not corpus:
        return None
    kind = type(tokenizer).__name__.removesuffix("Tokenizer").lower()
    return f"{corpus}, {kind} tokens ({tokenizer.vocab_size})" if tokenizer is not None else corpus


def last_val_loss(evals: list) -> Optional[float]:
    for e in reversed(evals or []):
        if e.get("val_loss") is not None:
            return round(float(e["val_loss"]), 4)
    return None


def last_val_step(evals: list) -> Optional[int]:
    """The step of the last evaluation with a validation loss (a loss measured at step 0 is the untrained one)."""
    return next((int(e.get("step", 0)) for e in reversed(evals or []) if e.get("val_loss") is not None), None)


def loss_curve(session) -> Optional[dict]:
    """{name, steps, loss, val_steps, val_loss} of the session's run (thinned to CURVE_POINTS), or None."""
    run = session.workspace.run
    if run is None or not run.progress.history or session.member.teacher:
        return None
    history, evals = list(run.progress.history), list(run.progress.evals)
    keep = np.unique(np.linspace(0, len(history) - 1, min(len(history), CURVE_POINTS)).round().astype(int))
    vals = [e for e in evals if e.get("val_loss") is not None]
    return {"name": display_name(session), "id": session.member.student_id,
            "steps": np.array([history[i]["step"] for i in keep], dtype=np.int32),
            "loss": np.array([history[i]["loss"] for i in keep], dtype=np.float32),
            "val_steps": np.array([e["step"] for e in vals], dtype=np.int32),
            "val_loss": np.array([e["val_loss"] for e in vals], dtype=np.float32)}


def leaderboard(rows: list[dict]) -> list[dict]:
    """[{corpus, rows: [{name, id, val_loss, val_step, val_source, steps}]}] for every corpus some own model was
    trained on: losses on different corpora (or tokenizers) are not comparable, so each corpus ranks apart. Each
    ranks by the latest evaluation of each model: those measured here first, best first, then the losses reported by
    uploaded files (unchecked: a file claiming 0.01 is listed, never ranked above a measured one)."""
    boards: dict[str, list] = {}
    for row in rows:
        model = row["model"]
        if model["own"] and model["val_loss"] is not None and model["corpus"]:
            boards.setdefault(model["corpus"], []).append(
                {"name": row["name"], "id": row["id"], "val_loss": model["val_loss"], "val_step": model["val_step"],
                 "val_source": model["val_source"], "steps": model["steps"]})
    return [{"corpus": corpus, "rows": sorted(entries, key=lambda e: (e["val_source"] != "measured", e["val_loss"]))}
            for corpus, entries in sorted(boards.items())]


def clean_name(text) -> str:
    """A display name as typed, trimmed to NAME_CHARS printable characters ('' when none)."""
    if not isinstance(text, str):
        return ""
    return " ".join("".join(c for c in text if c.isprintable()).split())[:NAME_CHARS]
