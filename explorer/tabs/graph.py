"""Graph tab: a prompt's attribution graph (circuit-tracer's method on the model's transcoders); a clicked node read
in full; pinned nodes and supernodes drawn as a subgraph; interventions; why a head attends where it does."""
import gradio as gr

from explorer.common.errors import UserError
from explorer.tabs.binding import bind
from explorer.tabs.common import ANALYSIS, API, HEAVY, caption, clear_when_changed, model_slider, run_button
from explorer.tabs.export_button import data_button
from explorer.tabs.graph_training import build_transcoder_training
from explorer.tabs.lazy import callbacks
from explorer.tabs.live_plot import live_plot
from explorer.tabs.raw_inputs import RawDropdown, RawNumber, RawRadio, RawSlider

graph_view, tab_view, missing, node_view, node_shown, json_file, json_api_file = callbacks(
    "graph", "attribution_graph_view", "graph_tab_view", "transcoders_missing", "graph_node_view", "graph_node_shown",
    "graph_json_file", "graph_json")
pin_node, group_pinned, pinned_view, graph_intervene, graph_qk, edge_qk = callbacks(
    "graph_edits", "pin_node", "group_pinned", "pinned_view", "graph_intervene", "graph_qk", "edge_qk")
MODES = ["set to", "multiply by"]  # explorer.callbacks.graph_edits.MODES (read before torch)
EDGE_HEADERS = ["direction", "node", "key", "weight"]  # explorer.callbacks.graph's (the API's rows)
SHOWN_EDGE_HEADERS = ["direction", "node", "weight"]  # the table's (a row's key is kept aside, by node name)
PAIR_HEADERS = ["query side", "key side", "part of the score"]

# The clicked node gets a ring (a layout shape, in the page alone: the next figure drawn replaces it). Plotly.purge
# drops the listener with the plot, so it is attached again once the next figure is drawn.
MARK_JS = """
const mark = () => {
  const gd = document.querySelector('#graph-chart .te-live-plot');
  if (!gd || !gd.on || !gd.data) {
    if (gd) gd.teMark = false;  // purged: its listener went with the plot
    setTimeout(mark, 500);
    return;
  }
  if (!gd.teMark) {
    gd.teMark = true;
    gd.on('plotly_click', (ev) => {
      const p = ev && ev.points && ev.points[0];
      if (!p || typeof p.customdata !== 'string' || p.customdata.includes('>')) return;
      const ring = {type: 'circle', xref: 'x', yref: 'y', xsizemode: 'pixel', ysizemode: 'pixel', xanchor: p.x,
                    yanchor: p.y, x0: -15, x1: 15, y0: -15, y1: 15, line: {color: '#111', width: 3}};
      window.Plotly.relayout(gd, {shapes: [ring]});
    });
  }
  setTimeout(mark, 1000);
};
mark();
"""

INTRO = """Which parts of the model made its next token? Each FFN layer is replaced by a **transcoder**: a few active
**features** per token that write what the FFN wrote (and an **error** node for what they miss). With attention and
norms frozen at this prompt's values everything is linear, so each node's direct effect on each later one is one
number: the **attribution graph**. Pruning keeps the nodes that carry most of the influence on the top logits.
**Trace** draws it for the prompt above (at most 63 tokens); click a node to read it, click an edge's middle to see
why attention carried it."""


def build_graph_tab(prompt, drop, model_info):
    """prompt, drop: the shared prompt box and its drop-unknown checkbox. -> (view, inputs, outputs), named controls."""
    gr.Markdown(INTRO)
    with gr.Row(equal_height=True):
        threshold = RawSlider(0.05, 1.0, value=0.8, step=0.05, scale=3, elem_id="graph-threshold",
                              label="Node threshold: keep the nodes holding this share of the influence")
        trace = run_button("Trace")
    scores = gr.Markdown(elem_id="graph-scores")
    note = caption()
    chart = live_plot(760, clickable=True, elem_id="graph-chart")
    inputs, outputs = [prompt, threshold, drop], [chart, scores, note]
    traced = bind(_traced, heavy=True)
    trace.click(traced, inputs, outputs, api_visibility="private", **HEAVY)
    threshold.release(traced, inputs, outputs, api_visibility="private", trigger_mode="always_last", **HEAVY)
    endpoint = gr.Button("Trace", visible=False)  # the API's endpoint: it refuses a model without transcoders
    endpoint.click(bind(graph_view, shared=True, heavy=True), inputs, outputs, api_name="attribution_graph", **API,
                   **HEAVY)
    view = bind(tab_view, shared=True, heavy=True)  # the tab's own draws (opened, a lesson step): no toast
    clear_when_changed([model_info], outputs, "Trace")
    key, edge, pins = _build_node_panel(prompt, drop, chart, model_info)
    _build_subgraph(prompt, drop, key, pins, model_info)
    _build_qk(prompt, drop, edge, model_info)
    data_button("graph", outputs, inputs)
    with gr.Row():
        to_json = gr.Button("Download the graph as circuit-tracer's JSON", size="sm", scale=0, min_width=320)
        graph_file = gr.File(label="Graph JSON", interactive=False, scale=2, height=60, visible=False)
    for changed in (prompt, model_info):  # the file of another prompt or model goes
        changed.change(None, None, graph_file, js="() => null", api_visibility="private", concurrency_limit=None)
    to_json.click(bind(_json_download), [prompt, threshold, pins, drop], graph_file, api_visibility="private",
                  **ANALYSIS)
    json_api = gr.Button("Graph JSON", visible=False)  # the API's endpoint, the file's path as its answer
    json_api.click(bind(json_api_file), [prompt, threshold, drop], graph_file, api_name="graph_json", **API,
                   **ANALYSIS)
    build_transcoder_training()
    return (view, inputs, outputs), {"node_threshold": threshold}


def _traced(session, prompt, node_threshold, drop_unknown):
    """Trace in the page: a model without transcoders is told so once (a toast, and the caption under an empty
    chart), with no error badges left on the outputs."""
    said = missing(session)
    if said:
        gr.Warning(said.replace("**", ""))
        return "", "", said
    return graph_view(session, prompt, node_threshold, drop_unknown)


def _json_download(session, prompt, node_threshold, pins, drop_unknown):
    return gr.File(value=json_file(session, prompt, node_threshold, pins, drop_unknown), visible=True)


def _build_node_panel(prompt, drop, chart, model_info):
    """The clicked node: what it is, its top contexts and logit effects (a feature), its strongest edges.
    -> (the node's key (hidden), the clicked edge's box, the pins' state)."""
    gr.Markdown("### The clicked node")
    with gr.Row(equal_height=True):
        node = gr.Textbox("", label="Node (click one in the chart)", interactive=False, scale=3, elem_id="graph-node")
        pin = gr.Button("Pin this node", scale=1)
    key = gr.Textbox("", visible=False, elem_id="graph-node-key")  # its key (F:layer:position:feature...)
    edge = gr.Textbox(visible=False)
    keys = gr.State({})  # {node name: key} of the table's rows
    about = caption()
    with gr.Row():
        contexts = gr.HTML(label="Top activating contexts in the validation text", elem_id="graph-contexts")
        logits = gr.Plot(label="Tokens it promotes and suppresses")
    edges = gr.Dataframe(value={"headers": SHOWN_EDGE_HEADERS, "data": []}, headers=SHOWN_EDGE_HEADERS,
                         label="Strongest incoming and outgoing edges (click a row to open that node)",
                         interactive=False, elem_id="graph-edges")
    panel = [node, about, contexts, logits, edges, keys]
    shown = bind(_node_shown)
    chart.select(_clicked, None, [key, edge], api_visibility="private", concurrency_limit=None).then(
        shown, [prompt, key, drop], panel, api_visibility="private", **ANALYSIS)
    edges.select(_row_key, keys, key, api_visibility="private", concurrency_limit=None).then(
        shown, [prompt, key, drop], panel, api_visibility="private", **ANALYSIS)
    gr.HTML(js_on_load=MARK_JS, html_template="", apply_default_css=False)
    endpoint = gr.Button("Show node", visible=False)  # the API's endpoint: its rows keep the key column
    api_edges = gr.Dataframe(headers=EDGE_HEADERS, visible=False)
    endpoint.click(bind(node_view), [prompt, key, drop], [about, contexts, logits, api_edges], api_name="graph_node",
                   **API, **ANALYSIS)
    clear_when_changed([prompt, model_info], [contexts, logits, edges, about], "Trace, then click a node")
    for changed in (prompt, model_info):  # no node (nor edge) of another prompt or model stays picked
        changed.change(None, None, [node, key, edge], js="() => ['', '', '']", api_visibility="private",
                       concurrency_limit=None)
    pins = gr.State(None)
    pin.click(bind(pin_node), [prompt, key, pins, drop], pins, api_visibility="private", **ANALYSIS)
    model_info.change(lambda: None, None, pins, api_visibility="private", concurrency_limit=None)
    return key, edge, pins


def _node_shown(session, prompt, key, drop_unknown):
    """The clicked node's name and panel (nothing before a node was clicked)."""
    return node_shown(session, prompt, key, drop_unknown) if key else [gr.skip()] * 6


def _row_key(keys, evt: gr.SelectData):
    """A click on a row of the edges table -> the key of the node at its other end (found by its name)."""
    row = evt.row_value if isinstance(getattr(evt, "row_value", None), list) else None
    found = (keys or {}).get(str(row[1])) if row and len(row) > 1 else None
    return found or gr.skip()


def _clicked(evt: gr.EventData):
    """A click on the chart -> (the node's key, or the edge's 'source>target'); nothing for other clicks."""
    data = evt._data if isinstance(evt._data, dict) else {}
    key = data.get("customdata")
    if not isinstance(key, str) or not key:
        return gr.skip(), gr.skip()
    return (gr.skip(), key) if ">" in key else (key, gr.skip())


def _build_subgraph(prompt, drop, key, pins, model_info) -> None:
    """Pinned nodes, grouping them into supernodes, the subgraph, and the intervention on pinned features."""
    gr.Markdown("### Subgraph: the nodes you pinned\nTick pinned nodes and name them to group them into a "
                "**supernode** (features that mean the same thing); the subgraph draws a supernode as one node.")
    with gr.Row(equal_height=True):
        pinned = gr.CheckboxGroup([], label="Pinned nodes", scale=3, elem_id="graph-pinned")
        name = gr.Textbox(label="Supernode name", max_lines=1, scale=2)
        group = gr.Button("Group", scale=1)
        clear = gr.Button("Unpin all", scale=1)
    subgraph = gr.Plot(label="Subgraph")
    subgraph_note = caption()
    gr.Markdown("**Intervene**: set a pinned feature's (or supernode's) activation, or scale it, and compare the top "
                "next tokens before, as the graph predicts (attention and norms frozen) and in the real model.")
    with gr.Row(equal_height=True):
        target = RawDropdown([], value="", label="Feature or supernode", scale=3, elem_id="graph-target",
                             allow_custom_value=True)
        mode = RawRadio(MODES, value=MODES[1], label="Change", scale=2)
        value = RawNumber(0, label="Value (×0 turns it off)", scale=1)
        run = gr.Button("Run", variant="primary", scale=1)
    effect = gr.Plot(label="Top next tokens before and after")
    effect_note = caption()
    shown = [pinned, target, subgraph, subgraph_note]
    pins.change(bind(_pins_shown), [prompt, pins, drop], shown, api_visibility="private", **ANALYSIS)
    clear_when_changed([prompt, model_info], [subgraph, subgraph_note], "Pin this node")
    group.click(bind(group_pinned), [pins, pinned, name], pins, api_visibility="private", concurrency_limit=None)
    clear.click(lambda: None, None, pins, api_visibility="private", concurrency_limit=None)
    edits = [prompt, target, mode, value, drop]
    run.click(bind(graph_intervene, heavy=True), edits, [effect, effect_note], api_name="graph_intervene", **API,
              **HEAVY)
    clear_when_changed([prompt, target, mode, value, model_info], [effect, effect_note], "Run")


def _pins_shown(session, prompt, pins, drop_unknown):
    """The pinned nodes' checkboxes, the intervention's choices, the subgraph and its caption, for the pins' state."""
    loose, editable, figure, note = pinned_view(session, prompt, pins, drop_unknown)
    return (gr.update(choices=loose, value=[]), gr.update(choices=editable, value=editable[-1][1] if editable else ""),
            figure, note)


def _build_qk(prompt, drop, edge, model_info) -> None:
    """Why a head attends where it does: the score split into query-side x key-side parts."""
    gr.Markdown("### Why does this head attend there?\nThe graph freezes attention. A head's score from a query "
                "position to a key position is a sum of products: each part of the query's residual stream (its "
                "token, position, earlier layers' attention outputs, features, errors and biases) times each part of "
                "the key's. The heatmap groups the parts, so its cells add up to the score; the table lists the "
                "largest single pairs. Click an edge's middle in the graph to pick the head that carries it most, or "
                "choose below (positions count the start token as 0).")
    with gr.Row():
        layer = model_slider("layer", "Layer")
        head = model_slider("head", "Head")
        query = RawNumber(-1, label="Query position (-1 = last)", precision=0, minimum=-64, maximum=63)
        key = RawNumber(0, label="Key position", precision=0, minimum=-64, maximum=63)
    explain = gr.Button("Split the score", variant="primary")
    with gr.Row():
        pairs = gr.Plot(label="Query-side × key-side parts of the score, grouped", scale=3)
        top = gr.Dataframe(value={"headers": PAIR_HEADERS, "data": []}, headers=PAIR_HEADERS, interactive=False,
                           label="The largest single pairs", scale=2, wrap=True, elem_id="graph-qk-pairs")
    pairs_note = caption()
    qk_inputs = [prompt, layer, head, query, key, drop]
    explain.click(bind(graph_qk), qk_inputs, [pairs, pairs_note, top], api_name="qk_attribution", **API, **ANALYSIS)
    # the head behind a clicked edge and its split in one call (never a split of the values before the click)
    edge.change(bind(_edge_split), [prompt, edge, drop], [layer, head, query, key, pairs, pairs_note, top],
                api_visibility="private", **ANALYSIS)
    clear_when_changed([prompt, model_info], [pairs, top, pairs_note], "Split the score")


def _edge_split(session, prompt, edge, drop_unknown):
    """A clicked edge -> its head and positions, and their split; an edge no head carries (within one position) says
    so in a toast and leaves the QK inputs and outputs as they were."""
    if not edge:
        return [gr.skip()] * 7
    try:
        return edge_qk(session, prompt, edge, drop_unknown)
    except UserError as err:
        gr.Info(str(err))
        return [gr.skip()] * 7
