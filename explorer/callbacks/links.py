"""Opening a link: its query (?tab=residual&prompt=...&layer=2) applied to a session and to the page's controls."""
from explorer.callbacks.models import model_summary, opening_note, pick_shipped, slider_maxima
from explorer.callbacks.presets import preset_settings
from explorer.common.controls import SLIDER_MAX
from explorer.state.session import Session
from explorer.teaching import view_params

MODEL_SIZED = ("layer", "head", "query")  # parameters whose range depends on the inspected model


def apply_link(session: Session, query: dict) -> tuple[str, list[str], dict]:
    """query {name: text} -> (model summary, a note per ignored or changed parameter, parsed values).

    A named shipped model is opened first, so layer, head and query are checked against that model."""
    own = {name: text for name, text in dict(query).items()  # not Gradio's (?__theme=dark), nor a notebook view's number
           if not name.startswith("__") and name != "view"}
    opened = open_read_only_copy(session, own.pop("open")) if "open" in own else []
    values, notes = view_params.parse_params(own)
    notes = opened + notes
    if "preset" in values:  # the preset's controls, then the settings given beside it
        values = {**preset_settings(values["preset"]), **values}
    name = values.get("model")
    if name is not None and session.inspected.shared_key != f"shipped:{name}":
        pick_shipped(session, name)
    notes += fit_to_model(session, values)
    own_prompt = session.inspected.held.prompt if session.inspected.held is not None else None
    if own_prompt and "prompt" not in values:  # a notebook's model opens on a prompt in its own vocabulary
        values["prompt"] = own_prompt
    return model_summary(session), notes, values


def open_read_only_copy(session: Session, token) -> list[str]:
    """?open=TOKEN, written by the teacher page: inspect the student's model copy it names; -> [a note] when the
    token is unknown, used or expired."""
    from explorer.classroom.room import ROOM

    found = ROOM.copies.take(token)
    if found is None:
        return ["This link to a student's model was used already or has expired: open it again from the teacher "
                "page."]
    session.inspected.use(*found)
    session.member.teacher = True
    return []


def fit_to_model(session: Session, values: dict) -> list[str]:
    """Clamp layer, head and query (in place) to the inspected model; -> a note per value moved."""
    maxima, notes = slider_maxima(session), []
    for name in MODEL_SIZED:
        value = values.get(name)
        if isinstance(value, int) and value > maxima[name] and maxima[name] < SLIDER_MAX[name]:
            notes.append(f"{name}={value} is past this model's last {name} ({maxima[name]}): showing "
                         f"{maxima[name]}.")
            values[name] = maxima[name]
    return notes


def opening_for_link(session: Session, query: dict):
    """Before a link's model opens: the note saying a pretrained one takes a while the first time."""
    return opening_note(session, dict(query).get("model"))


def shipped_name(session: Session) -> str:
    """The shipped model the session inspects unchanged ('' for a trained or uploaded one): a link names it."""
    key = session.inspected.shared_key or ""
    return key.removeprefix("shipped:") if key.startswith("shipped:") else ""
