"""The public API names its parameters: scripts call by keyword (`client.predict(prompt=..., layer=1,
api_name="/attention")`), so an input added later with a default breaks no caller. These names are a promise, pinned
per tab in explorer/common/views.py: change one only on purpose, and say so in the release notes."""
import gradio as gr
import pytest

from explorer.common.views import VIEWS, public_api
from explorer.teaching.view_params import tab_of

pytestmark = pytest.mark.slow

PUBLIC = public_api()
OPTIONAL_UPLOADS = {("/data", "upload")}  # every other input but the uploads has a default


@pytest.fixture(scope="module")
def app() -> gr.Blocks:
    from explorer.ui import build_app
    return build_app()


@pytest.fixture(scope="module")
def api(app) -> dict:
    return app.get_api_info()["named_endpoints"]


def test_public_endpoints_and_their_parameter_names_are_pinned(api):
    assert {name: tuple(p["parameter_name"] for p in ep["parameters"]) for name, ep in api.items()} == PUBLIC


def test_no_parameter_is_positional_only(api):
    unnamed = [(name, p["parameter_name"]) for name, ep in api.items() for p in ep["parameters"]
               if p["parameter_name"].startswith("param_")]
    assert not unnamed


def test_every_input_but_an_upload_has_a_default(api):
    """A keyword caller may leave out any setting (it takes the control's initial value)."""
    required = {(name, p["parameter_name"]) for name, ep in api.items() for p in ep["parameters"]
                if not p["parameter_has_default"]}
    uploads = {(name, p["parameter_name"]) for name, ep in api.items() for p in ep["parameters"]
               if "upload" in p["parameter_name"]}
    assert required == uploads - OPTIONAL_UPLOADS


def test_the_pinned_names_are_the_ones_scripts_call():
    """A few by hand, so that a rename in views.py and the tab together still shows here."""
    assert PUBLIC["/attention"] == ("prompt", "layer", "head", "query", "drop_unknown")
    assert PUBLIC["/grokking"] == ("neuron",) and PUBLIC["/train_status"] == ()
    assert len(PUBLIC) == sum(len(view.api) for view in VIEWS)  # no endpoint in two views


def test_each_endpoint_is_published_from_the_tab_its_view_names(app):
    def tab_of_event(fn):
        while fn.targets[0][0] is None and fn.trigger_after is not None:  # a .then(): where its first event is
            fn = app.fns[fn.trigger_after]
        return tab_of(app.blocks[fn.targets[0][0]])

    published = {"/" + fn.api_name: tab_of_event(fn) for fn in app.fns.values() if fn.api_visibility == "public"}
    assert published == {name: view.id for view in VIEWS for name in view.api}
