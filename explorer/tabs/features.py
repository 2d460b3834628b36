"""Features tab: a sparse autoencoder's features instead of neurons; one feature read in full; steering with it."""
import gradio as gr

from explorer.tabs.binding import bind
from explorer.tabs.common import ANALYSIS, API, GENERATION, caption, clear_when_changed, model_slider, run_button
from explorer.tabs.export_button import data_button
from explorer.tabs.features_training import build_features_training
from explorer.tabs.lazy import callbacks
from explorer.tabs.raw_inputs import RawFile, RawNumber, RawRadio, RawSlider
from explorer.teaching.view_params import register_action

features_page, features_list, feature_view, steer_view = callbacks("features", "features_page", "features_list",
                                                                   "feature_view", "steer_view")
load_sae_upload = callbacks("features_source", "load_sae_upload")
ORDERS = ["activation at the chosen token", "density"]  # explorer.callbacks.features.ORDERS (read before torch)
LIST_HEADERS = ["feature", "activation here", "density", "largest activation", "fires hardest on"]
NEURON_HEADERS = ["FFN neuron", "correlation with this feature", "features this neuron also follows"]

INTRO = """A neuron of the FFN often fires for several unrelated things: the model stores more ideas than it has
neurons, as directions that share them (**superposition**). A **sparse autoencoder (SAE)** rewrites one layer's
activation as a sum of a few **features**, each a direction of its own, chosen from many more than there are
neurons; features tend to mean one thing each. Pick a feature from the list (or type its number) to read it."""


def build_features_tab(prompt, drop, model_info):
    """prompt, drop: the shared prompt box and its drop-unknown checkbox. -> (view, inputs, outputs), named controls."""
    gr.Markdown(INTRO)
    run = run_button("Show features")
    with gr.Row():
        order = RawRadio(ORDERS, value=ORDERS[0], label="List features by")
        position = model_slider("query", "Token of the prompt (-1 = last)")
        feature = RawNumber(-1, label="Feature (-1: the strongest at the chosen token)", precision=0, minimum=-1)
    list_note = caption()
    with gr.Row():
        listing = gr.Dataframe(headers=LIST_HEADERS, label="Features", interactive=False, scale=3,
                               elem_id="features-listing")
        density = gr.Plot(label="How often the features fire", scale=2)
    note = caption()
    on_prompt = gr.HTML(label=_heading("The prompt, coloured by the feature"))  # HTML shows no label
    examples = gr.HTML(label=_heading("Top activating contexts in the validation text"))
    with gr.Row():
        hist = gr.Plot(label="Activation histogram")
        logits = gr.Plot(label="Tokens it promotes and suppresses")
    neurons = gr.Dataframe(headers=NEURON_HEADERS, label="FFN neurons that follow the feature", interactive=False)
    list_outputs, feature_outputs = [listing, density, list_note], [on_prompt, examples, hist, logits, neurons, note]
    inputs, outputs = [prompt, order, position, feature, drop], list_outputs + feature_outputs
    page = bind(features_page)
    run.click(page, inputs, outputs, api_visibility="private", **ANALYSIS)
    listed = gr.Button("List features", size="sm", visible=False)  # the API's listing endpoint
    listed.click(bind(features_list), [prompt, order, position, drop], list_outputs, api_name="features", **API,
                 **ANALYSIS)
    shown = gr.Button("Show feature", size="sm")
    show = bind(feature_view)
    shown.click(show, [prompt, feature, position, drop], feature_outputs, api_name="feature", **API, **ANALYSIS)
    feature.submit(show, [prompt, feature, position, drop], feature_outputs, api_visibility="private", **ANALYSIS)
    for control in (order, position):  # the student's moves; a lesson step or link redraws the tab itself (and
        # sets `query` on every tab: a listing there would fail on a model without an SAE)
        control.input(bind(features_list), [prompt, order, position, drop], list_outputs,
                       api_visibility="private", **ANALYSIS)
    listing.select(_clicked_feature, None, feature, api_visibility="private", concurrency_limit=None).then(
        show, [prompt, feature, position, drop], feature_outputs, api_visibility="private", **ANALYSIS)
    steering = _build_steering(prompt, feature, drop, model_info)
    build_features_training()
    with gr.Accordion("Load an SAE for the inspected model", open=False):
        gr.Markdown("SAEs ship for the Shakespeare model and SmolLM2-135M-Instruct. For a model you trained, train "
                    "one above, or with `python -m model_core.features train --checkpoint YOUR.zip --hook blocks.1.hook_resid_post "
                    "--features 1024 --k 32 --out sae` and upload that folder as a .zip (SAELens's format: "
                    "cfg.json + sae_weights.safetensors; SAELens's own SAEs load too).")
        upload = RawFile(label=".zip of an SAE folder", file_types=[".zip"], type="filepath")
        status = gr.Markdown()
    upload.upload(bind(load_sae_upload), upload, status, api_name="load_sae", **API)
    data_button("features", outputs, inputs)
    return (page, inputs, outputs), {"feature": feature, "feature_order": order, "query": position, **steering}


def _heading(label: str) -> str:
    """A heading above the next box, for boxes that show no label of their own (lessons name them); -> label."""
    gr.Markdown(f"**{label}**")
    return label


def _build_steering(prompt, feature, drop, model_info) -> dict:
    """The steering controls and button (model_info: the model line above the tabs; a new model clears the texts);
    -> its controls by the names links and lessons give them."""
    gr.Markdown("### Steer with the feature\nAdd the feature's direction at its layer while the model writes: "
                "a multiple of its largest natural activation, at every position. Negative values push away.")
    with gr.Row():
        strength = RawSlider(-20, 20, value=4, step=0.5, label="Strength (× the feature's largest activation)")
        length = RawSlider(10, 300, value=80, step=10, label="New tokens")
        temperature = RawSlider(0, 2, value=0.8, step=0.05, label="Temperature")
        seed = RawNumber(0, label="Seed", precision=0)
    go = gr.Button("Steer", variant="primary")
    note = caption()
    texts = gr.HTML(label="Without and with steering")
    steer, inputs = bind(steer_view), [prompt, feature, strength, length, temperature, seed, drop]
    go.click(steer, inputs, [texts, note], api_name="steer", **API, **GENERATION)
    register_action("Steer", steer, inputs, [texts, note])  # a lesson step may press it when it opens
    clear_when_changed([*inputs, model_info], [texts, note], "Steer")
    return {"strength": strength, "steer_tokens": length, "steer_temperature": temperature, "steer_seed": seed}


def _clicked_feature(evt: gr.SelectData):
    """A click on a listing row -> that row's feature number."""
    row = evt.row_value if isinstance(getattr(evt, "row_value", None), list) else None
    return int(row[0]) if row and str(row[0]).isdigit() else gr.skip()
