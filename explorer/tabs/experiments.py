"""Experiments tab: knock out heads, attention layers, FFN layers or neurons; see what changes; the importance map."""
import gradio as gr

from explorer.common.shipped_list import model_choices, shipped_models
from explorer.tabs.attribution import build_attribution_section
from explorer.tabs.binding import bind
from explorer.tabs.common import API, HEAVY, caption, model_slider, run_button
from explorer.tabs.export_button import data_button
from explorer.tabs.lazy import callbacks
from explorer.tabs.raw_inputs import RawDropdown, RawFile, RawNumber, RawRadio, RawSlider
from explorer.teaching.glossary import explained
from explorer.teaching.view_params import register_control

(compare_view, copy_inspected_as_b, load_nanogpt_as_b, load_zip_as_b, snapshot_menu, swap_models, use_shipped_as_b,
 use_snapshot_as_b) = callbacks("second_model", "compare_view", "copy_inspected_as_b", "load_nanogpt_as_b", "load_zip_as_b",
                                "snapshot_menu", "swap_models", "use_shipped_as_b", "use_snapshot_as_b")
ablation_view, importance_view, top_head_inputs = callbacks("experiments", "ablation_view", "importance_view",
                                                            "top_head_inputs")

INTRO = f"""To learn what a part of the model *does*, switch it off and watch what changes. Pick heads, layers or
neurons to knock out; the prompt, the seed and the validation text stay the same, so every difference below is
caused by the knocked-out part. Losses are in {explained("nats")}.

**Mean** ablation (the default) replaces the part's output with its *average* over the validation text: the
part stops saying anything about this particular input, but the next layer still receives the kind of values it
was trained on. **Zero** ablation sets the output to 0, a value the model may never have seen, so part of the
damage it shows comes from the shock of the odd value rather than from the missing information."""

COMPARE_INTRO = """### Compare two models
Put a second model, **B**, beside the inspected one, **A**, and run both on the prompt above. When their
tokenizers differ (characters vs BPE pieces), loss per token is unfair: a model that predicts whole words at once
is more surprised per token. Both are therefore measured in **bits per character**: the total surprise divided by
the characters read. A *bit* is one yes-or-no question: 1 bit per character is as unsure as a choice between two
equally likely characters, 2 bits between four; fewer is better. Try: an early training snapshot of your run vs
the end of training (step 0 is the untrained model), the shipped Shakespeare model vs first-names, pre-norm vs
post-norm, char vs BPE. The slot holds one model, no larger than one you may train here."""

UNITS_HELP = "Layers, heads and neurons count from 0. Separate several with commas."


def build_experiments_tab(model_info, prompt, drop) -> dict:
    """model_info: the model line above the tabs, updated when model B becomes the inspected model; prompt,
    drop: the shared prompt box and its drop-unknown checkbox. -> its named controls shared with other tabs."""
    gr.Markdown(INTRO)
    run = run_button("Run ablation")
    gr.Markdown(UNITS_HELP)
    with gr.Row():
        heads = gr.Textbox("0.0", label="Heads (layer.head, e.g. 1.3, 2.0)", max_lines=1)
        register_control("heads", heads)  # links and lessons: ?tab=experiments&heads=0.1
        attn_layers = gr.Textbox("", label="Whole attention layers (e.g. 0, 2)", max_lines=1)
        mlp_layers = gr.Textbox("", label="Whole FFN layers (e.g. 1)", max_lines=1)
        neurons = gr.Textbox("", label="FFN neurons (layer.neuron, e.g. 0.17)", max_lines=1)
    with gr.Row():
        mode = RawRadio(["mean", "zero"], value="mean", label="Ablation: replace the output by")
        position = model_slider("query", "Position for the next-token chart (-1 = last)")
        temperature = RawSlider(0, 2, value=0.8, step=0.05, label="Temperature for the continuations")
        length = RawSlider(10, 300, value=120, step=10, label="New tokens")
        seed = RawNumber(0, label="Seed", precision=0)
    note = caption()
    numbers = gr.Markdown()
    losses = gr.Plot(label="Loss per position before and after")
    with gr.Row():
        dist = gr.Plot(label="Next-token distribution before and after")
        texts = gr.HTML(label="Continuations before and after")
    units = [heads, attn_layers, mlp_layers, neurons]
    inputs = [prompt, *units, mode, position, temperature, length, seed, drop]
    outputs = [losses, dist, texts, numbers, note]
    run.click(bind(ablation_view, heavy=True), inputs, outputs, api_name="ablate", **API, **HEAVY)

    gr.Markdown("### Importance map\nEvery head, then every FFN layer, knocked out alone (with the ablation chosen "
                "above): how much does the validation loss rise without it?")
    with gr.Row():
        map_go = gr.Button("Compute importance map", variant="primary")
        top_go = gr.Button("Knock out the most important head")
    map_note = caption()
    imap = gr.Plot(label="Importance map")
    map_go.click(bind(importance_view, heavy=True), [mode], [imap, map_note], api_name="importance_map", **API,
                 **HEAVY)
    top_go.click(bind(top_head_inputs, heavy=True), [mode], units, api_visibility="private", **HEAVY).then(
        bind(ablation_view, heavy=True), inputs, outputs, api_visibility="private", **HEAVY)
    data_button("experiments", [losses, dist, numbers, note, imap, map_note], inputs)
    controls = build_attribution_section(prompt, drop, model_info)
    build_compare_section(prompt, drop, model_info)
    return controls


def build_compare_section(prompt, drop, model_info):
    gr.Markdown(COMPARE_INTRO)
    with gr.Row():
        with gr.Column():
            shipped = RawDropdown(model_choices(), value=(shipped_models() or [None])[0], label="Shipped model")
            use = gr.Button("Use as model B")
        with gr.Column():
            copy = gr.Button("Copy the inspected model as model B")
            snapshot = RawDropdown([], label="Training snapshot of this session's run", allow_custom_value=True)
            with gr.Row():
                refresh = gr.Button("Refresh snapshots", size="sm")
                use_snapshot = gr.Button("Use snapshot as model B", size="sm")
            gr.Markdown("…or upload a **.zip checkpoint** saved by this app:")
            upload = RawFile(label=".zip checkpoint", file_types=[".zip"], type="filepath")
        with gr.Column():
            gr.Markdown("…or a **nanoGPT** character model: its **ckpt.pt**, then its dataset's **meta.pkl** "
                        "(only weights and plain data are read, never code):")
            ckpt = RawFile(label="ckpt.pt", file_types=[".pt"], type="filepath")
            meta = RawFile(label="meta.pkl", file_types=[".pkl"], type="filepath")
            nano = gr.Button("Open nanoGPT model as model B")
    status = gr.Markdown("No model B yet.")
    with gr.Row():
        compare = gr.Button("Compare A and B on the prompt", variant="primary", scale=3)
        swap = gr.Button("Swap: inspect B in every tab (A becomes B)", scale=1)
    note = caption()
    numbers = gr.Markdown()
    bits = gr.Plot(label="Bits per character, A and B")
    nxt = gr.Plot(label="Next token, A and B")
    grids = gr.Plot(label="Attention of every head, A and B")
    use.click(bind(use_shipped_as_b), shipped, status, api_name="model_b_shipped", **API)
    copy.click(bind(copy_inspected_as_b), None, status, api_name="model_b_copy", **API)
    refresh.click(bind(snapshot_menu), None, snapshot, api_visibility="private")
    use_snapshot.click(bind(use_snapshot_as_b), snapshot, status, api_visibility="private")
    upload.upload(bind(load_zip_as_b), upload, status, api_name="model_b_zip", **API)
    nano.click(bind(load_nanogpt_as_b), [ckpt, meta], status, api_name="model_b_nanogpt", **API)
    swap.click(bind(swap_models), None, [model_info, status], api_name="swap_models", **API)
    compare.click(bind(_compared, heavy=True), [prompt, drop], [bits, nxt, numbers, note, grids],
                  api_name="compare_models", **API, **HEAVY)
    data_button("compare", [bits, nxt, grids, numbers, note], [prompt, drop])


def _compared(session, prompt, drop_unknown=False):
    """compare_view, its attention grids hidden when one model has too many heads to draw them (its caption says
    so): an empty chart would look broken."""
    *shown, grids = compare_view(session, prompt, drop_unknown)
    return (*shown, gr.Plot(grids, visible=grids is not None))
