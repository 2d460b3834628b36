"""Named controls: the parameters a link (?tab=...&layer=2) or a lesson step may set.

Tabs register their controls by name while the UI is built (register_control); links and lessons then turn
{name: text} into component updates through the same registry, so both accept exactly the same names.
One name may stand for several components that mean the same thing in different tabs (the layer slider of
the Attention, Residual and FFN tabs): a value sets all of them."""
import difflib
import math
from dataclasses import dataclass, field

import gradio as gr

from explorer.common.shipped_list import shipped_models
from explorer.common.views import TAB_IDS
from explorer.teaching.lessons import Validate, settings_validator, shipped_lessons

SPECIAL = ("model", "lesson")  # names that set no component: the ui applies them itself
TEXT_CAP = 2000  # characters a link or lesson may put into one text box


@dataclass
class Control:
    name: str  # the parameter name in links and lesson files
    component: gr.components.Component  # the first registered: its range and choices validate values
    advanced: bool = False  # hidden while a lesson asks for the simple view
    also: list = field(default_factory=list)  # further components the same value sets (other tabs' copies)

    @property
    def components(self) -> list:
        return [self.component, *self.also]


@dataclass
class Action:
    """A button a lesson step may press (`press: Split the logit`): its handler, wired as the button's is."""
    label: str  # the button's label, as lesson files name it
    handler: object  # handler(request, *inputs) -> outputs (a bound callback)
    inputs: list
    outputs: list


CONTROLS: dict[str, Control] = {}  # filled while build_app() runs; cleared at its start
ACTIONS: dict[str, Action] = {}  # label -> the button a lesson step may press, registered by its tab
TAB_TRACKER: list = []  # [hidden textbox holding the selected tab id], set by register_tabs


def reset_controls() -> None:
    CONTROLS.clear()
    ACTIONS.clear()
    TAB_TRACKER.clear()


def register_action(label: str, handler, inputs: list, outputs: list) -> None:
    """Let lesson steps press the button labelled label, which runs handler(request, *inputs) into outputs."""
    if label in ACTIONS:
        raise ValueError(f"two buttons are registered as {label!r}")
    ACTIONS[label] = Action(label, handler, list(inputs), list(outputs))


def register_control(name: str, component, advanced: bool = False, *, also=()):
    """Give component a parameter name (also: more components the same value sets); returns component so
    tabs can register where they build."""
    if name in CONTROLS or name in SPECIAL:
        raise ValueError(f"two controls are registered as {name!r}")
    CONTROLS[name] = Control(name, component, advanced, list(also))
    return component


def register_tabs(tabs: gr.Tabs, tracker: gr.Textbox) -> None:
    """tabs: the app's gr.Tabs (the `tab` parameter selects one); tracker: a hidden textbox that the tabs'
    select events keep equal to the selected tab id (a link button reads it)."""
    CONTROLS["tab"] = Control("tab", tabs)
    TAB_TRACKER[:] = [tracker]


def names() -> list[str]:
    """Every parameter name a link or lesson step may use."""
    return [*CONTROLS, *SPECIAL]


def lesson_validator() -> Validate:
    """validate(key, value) for lesson steps: the registered controls' names and the link parser's values, and the
    registered buttons for `press`."""
    return settings_validator(names(), parse_params, list(ACTIONS))


def components() -> list:
    """The components updates_for() answers for, in a fixed order (use as an event's outputs)."""
    return [c for control in CONTROLS.values() for c in control.components] + TAB_TRACKER


def advanced_components() -> list:
    return [c for control in CONTROLS.values() if control.advanced for c in control.components]


def tab_of(component):
    """The id of the gr.Tab the component sits in (None: outside the tabs, like the shared prompt)."""
    block = component.parent
    while block is not None and not isinstance(block, gr.Tab):
        block = block.parent
    return None if block is None else block.id


def initial_value(component):
    """The value the component shows on a fresh page (None for one that is not plain data)."""
    value = component.value
    return value if isinstance(value, (str, int, float, bool, list, type(None))) else None


def defaults_on(tabs) -> dict:
    """{name: value on a fresh page} of every control shown on one of tabs (tab ids) or outside the tabs (the
    prompt): what a lesson whose steps show those tabs opens on, whatever an earlier lesson or the student left."""
    shown = {None, *tabs}
    return {name: initial_value(control.component) for name, control in CONTROLS.items()
            if name != "tab" and shown & {tab_of(c) for c in control.components}}


def updates_for(values: dict) -> dict:
    """Parsed values (parse_params) -> {component: update} for the named controls (every component a name
    stands for; the tab tracker with `tab`); the other components() are left out, so they keep their values."""
    updates = {}
    for name, value in values.items():
        if name in CONTROLS:
            for component in CONTROLS[name].components:
                updates[component] = gr.Tabs(selected=value) if name == "tab" else gr.update(value=value)
    if "tab" in values:
        updates.update({tracker: values["tab"] for tracker in TAB_TRACKER})
    return updates


def parse_params(raw: dict[str, str]) -> tuple[dict[str, object], list[str]]:
    """{name: text} (a link's query or a lesson step) -> ({name: value} that passed, [a note per dropped one]).
    Never raises: an unknown name or a bad value is dropped with a note saying why."""
    values, notes = {}, []
    for name, text in raw.items():
        try:
            values[name] = _parse_one(name, text)
        except ValueError as err:
            notes.append(f"Ignored {name}={_shown(text)}: {err}")
    return values, notes


def _shown(text) -> str:
    text = str(text)
    return repr(text if len(text) <= 40 else text[:40] + "…")


def _parse_one(name: str, text):
    text = "" if text is None else str(text)
    if name == "tab":
        return _one_of(text.strip().lower(), TAB_IDS)
    if name == "model":
        return _one_of(text.strip(), shipped_models())
    if name == "lesson":
        return _one_of(text.strip(), list(shipped_lessons()))
    if name not in CONTROLS:
        close = difflib.get_close_matches(name, names(), n=1)
        raise ValueError("not a setting this app knows" + (f" (did you mean {close[0]}?)" if close else ""))
    return _parse_value(CONTROLS[name].component, text)


def _one_of(text: str, choices) -> str:
    if text not in choices:
        raise ValueError(f"choose one of {', '.join(choices) or '(none available)'}")
    return text


def _parse_value(component, text: str):
    """text -> the value for component, checked against its range or choices."""
    if isinstance(component, gr.Checkbox):
        return _boolean(text)
    if isinstance(component, (gr.Slider, gr.Number)):
        return _number(component, text)
    if isinstance(component, gr.CheckboxGroup):
        return [_choice(component, part.strip()) for part in text.split(",") if part.strip()]
    if isinstance(component, (gr.Dropdown, gr.Radio)):
        return _choice(component, text.strip())
    if isinstance(component, gr.Textbox):
        if len(text) > TEXT_CAP:
            raise ValueError(f"longer than {TEXT_CAP} characters")
        return text
    raise ValueError(f"a {type(component).__name__} cannot be set from a link")


def _boolean(text: str) -> bool:
    word = text.strip().lower()
    if word in ("true", "1", "yes", "on"):
        return True
    if word in ("false", "0", "no", "off"):
        return False
    raise ValueError("write true or false")


def _number(component, text: str):
    """A number within the component's minimum..maximum on its step grid; an int where the step is whole."""
    try:
        x = float(text.strip())
    except ValueError:
        raise ValueError("not a number") from None
    if not math.isfinite(x):
        raise ValueError("not a finite number")
    low, high = getattr(component, "minimum", None), getattr(component, "maximum", None)
    if (low is not None and x < low) or (high is not None and x > high):
        raise ValueError(f"must be between {_num(low)} and {_num(high)}")
    step = getattr(component, "step", None) if isinstance(component, gr.Slider) else None
    whole = (step is not None and float(step).is_integer()) or getattr(component, "precision", None) == 0
    if step:
        k = (x - (low or 0)) / step
        if abs(k - round(k)) > 1e-6:
            raise ValueError(f"must be a multiple of {_num(step)}" + (f" from {_num(low)}" if low else ""))
    if whole:
        if not x.is_integer():
            raise ValueError("must be a whole number")
        return int(x)
    return x


def _num(x) -> str:
    return "any" if x is None else f"{x:g}"


def _choice(component, text: str):
    """One of the component's choices, given as its value or its label."""
    pairs = [c if isinstance(c, tuple) else (c, c) for c in component.choices]
    for label, value in pairs:
        if text in (str(value), str(label)):
            return value
    if getattr(component, "allow_custom_value", False):
        return text
    raise ValueError(f"choose one of {', '.join(str(v) for _, v in pairs)}")
