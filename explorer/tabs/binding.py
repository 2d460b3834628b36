"""Connect plain callbacks (session first) to Gradio events (session looked up from the request).

Every call holds its session's lock for its whole length: hooks are global state on a model, so two calls
of one session (an analysis and a generation, a double click) must never run on its model at once.
Sessions have their own model objects, so different sessions never wait for each other. Heavy callbacks
(heavy=True) first take their turn in the heavy slot (explorer.state.heavy_slot), then the session's lock."""
import functools
import inspect
import json
import threading
from collections import OrderedDict

import gradio as gr
from gradio.components.plot import PlotData

from explorer.common.app_state import wait_for_warm_up
from explorer.common.errors import UserError, friendly, refusal
from explorer.tabs.lazy import LazyCallback
from explorer.teaching import view_params

SHARED_RESULTS = 256  # analyses of shipped models kept for every session to reuse


class SharedResults:
    """Results of analyses of unmodified shipped models, keyed by (model, callback, inputs): a class opens
    the same default prompt on the same model, and the second student on gets it for free. When thirty
    students ask at once, one computes and the others wait for that result (single flight). Results are
    figures and tables that Gradio only reads."""

    def __init__(self, capacity: int = SHARED_RESULTS):
        self.capacity, self._items, self._lock = capacity, OrderedDict(), threading.Lock()
        self._computing: dict = {}  # key -> Event set when the first caller has finished
        self.hits = self.misses = 0

    def get_or_compute(self, key, compute):
        """The stored result for key, or compute() once however many callers ask at the same time."""
        while True:
            with self._lock:
                if key in self._items:
                    self._items.move_to_end(key)
                    self.hits += 1
                    return self._items[key]
                running = self._computing.get(key)
                if running is None:
                    self._computing[key] = threading.Event()
                    self.misses += 1
                    break
            running.wait()  # then look again: stored, or the first caller failed and we compute ourselves
        try:
            result = compute()
            with self._lock:
                self._items[key] = result
                while len(self._items) > self.capacity:
                    self._items.popitem(last=False)
            return result
        finally:
            with self._lock:
                self._computing.pop(key).set()


SHARED = SharedResults()


def _key(inputs: list):
    """The inputs as a string key, or None when one of them has no plain form (it is then not shared)."""
    try:
        return json.dumps(inputs, default=_plain)
    except (TypeError, ValueError):
        return None


def _plain(value):
    if hasattr(value, "values") and hasattr(value.values, "tolist"):  # a DataFrame from a gr.Dataframe
        return value.values.tolist()
    raise TypeError(type(value).__name__)


def serialised_figures(result):
    """result with each Plotly figure replaced by the JSON gr.Plot would make of it, made once for every
    session that reuses the result (serialising the attention views' figures costs ~20 ms per call)."""
    if isinstance(result, tuple):
        return tuple(serialised_figures(item) for item in result)
    if hasattr(result, "to_plotly_json") and hasattr(result, "to_json"):
        return PlotData(type="plotly", plot=result.to_json())
    return result


def bind(fn, shared: bool = False, names=None, heavy: bool = False, fields: dict = None):
    """fn(session, *inputs) -> a Gradio handler that finds this browser session's Session. shared=True: fn
    is a pure view of (model, inputs), whose result sessions inspecting the same shipped model may reuse.
    heavy=True: fn runs in the heavy slot's turns (wire it with tabs.common.HEAVY).
    fields {name: component}: fn returns {name: value} (see by_name), wired with outputs_of(fields).
    The handler's API parameters are named as fn's (after the session), or `names` where fn takes *values."""
    safe = friendly(fn if fields is None else _named(fn, fields))

    def run(session, inputs):
        with session.lock:
            while session.notices:
                gr.Warning(session.notices.pop(0), duration=None)
            refuse_unread(session, fn)
            shared_key = session.inspected.shared_key
            key = (shared_key, fn.__name__, _key(list(inputs))) if shared and shared_key else None
            if key is not None and key[2] is not None:
                return SHARED.get_or_compute(key, lambda: serialised_figures(safe(session, *inputs)))
            return safe(session, *inputs)

    def handler(request: gr.Request, *inputs):
        wait_for_warm_up()  # its imports first: see explorer.common.app_state
        from explorer.state.session import REGISTRY  # torch: loaded once the server is up (explorer.tabs.lazy)

        address = client_address(request)
        session = REGISTRY.get(request.session_hash if request else "local", address)
        if not heavy:
            return run(session, inputs)
        from explorer.state.heavy_slot import HEAVY_SLOT, Job

        try:
            with HEAVY_SLOT.turn(Job(session, address, client_gone(request))):
                return run(session, inputs)
        except UserError as err:  # refused or stopped by the slot (fn's own errors are gr.Error already)
            raise refusal(str(err)) from None

    handler.__name__ = fn.__name__
    handler.__doc__ = fn.__doc__
    handler.__signature__ = api_signature(fn, names)
    return handler


# the callback modules whose views read a model's weights, which a model read from its forward pass does not give
NEEDS_WEIGHTS = {"heads": "heads", "ffn": "ffn", "features": "features", "features_source": "features",
                 "features_training": "features", "blocks": "blocks", "experiments": "experiments",
                 "circuits": "heads", "attribution": "experiments", "export": "export", "graph": "graph",
                 "graph_edits": "graph", "graph_source": "graph", "graph_training": "graph"}


def refuse_unread(session, fn) -> None:
    """A refusal, in one sentence, of a view that needs the weights of a model read from its forward pass
    (transformer_explorer.show on a learner's own class: model_core.foreign.read_model)."""
    model = session.inspected.held.model if session.inspected.held is not None else None
    view = NEEDS_WEIGHTS.get(getattr(fn, "__module__", "").rsplit(".", 1)[-1])
    if view is None or not getattr(model, "reads_whole_window", False):
        return
    from explorer.common.views import VIEWS

    label = next((v.label for v in VIEWS if v.id == view), view.capitalize())
    raise refusal(f"The {label} tab reads a model's weights by name; {model.layout.kind} was read from its own "
                  "forward pass, which gives the Attention, Residual stream, Embeddings and Sampling tabs what they "
                  "draw. A model of a family the explorer converts opens every tab (docs/notebooks.md).")


def client_address(request) -> str:
    """The client's IP address as the server sees it ('' when unknown: a direct call in a test)."""
    client = getattr(getattr(request, "request", None), "client", None)
    return str(client.host) if client is not None and getattr(client, "host", None) else ""


def client_gone(request):
    """-> a function telling whether the client that sent request has gone: Gradio marks a session's events not
    alive when its page disconnects (queue.clean_events) or the event is cancelled."""
    session_hash = getattr(request, "session_hash", None)
    app = getattr(getattr(request, "request", None), "app", None)
    queue = getattr(app.get_blocks(), "_queue", None) if hasattr(app, "get_blocks") else None
    if queue is None or session_hash is None:
        return lambda: False

    def gone() -> bool:
        events = [e for jobs in list(queue.active_jobs) if jobs for e in list(jobs) if e.session_hash == session_hash]
        return bool(events) and not any(e.alive for e in events)
    return gone


def by_name(result: dict, fields: dict) -> dict:
    """A view's result {field: value} -> {component: update} for Gradio: fields {name: component} say where each
    field goes, the field "controls" holds parsed link values for the controls they name
    (explorer.teaching.view_params); a component whose field is left out keeps what it shows."""
    unknown = set(result) - set(fields) - {"controls"}
    if unknown:
        raise KeyError(f"no component for the fields {sorted(unknown)}")
    shown = {fields[name]: value for name, value in result.items() if name != "controls"}
    return {**shown, **view_params.updates_for(result.get("controls", {}))}


def _named(fn, fields: dict):
    @functools.wraps(fn)
    def named(*args):
        return by_name(fn(*args), fields)
    return named


def outputs_of(fields: dict) -> list:
    """The outputs of an event bound with fields: its components, then every named control."""
    return [*fields.values(), *view_params.components()]


REQUEST = inspect.Parameter("request", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=gr.Request)


def api_signature(fn, names=None) -> inspect.Signature:
    """(request, then fn's parameters after the session): Gradio names an endpoint's inputs after its handler's
    parameters, so API callers can pass them by keyword (`layer=1`) and an added input breaks nobody."""
    if names is None:
        params = list((fn.signature() if isinstance(fn, LazyCallback) else inspect.signature(fn)).parameters.values())
        params = params[1:]
    else:
        params = [inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD) for name in names]
    return inspect.Signature([REQUEST, *params])
