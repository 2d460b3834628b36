"""Heads tab: what each head does (report card and role map), the induction view, examples from the whole
validation text, and roles forming over training."""
import gradio as gr

from explorer.common.controls import REPORT_HEADERS
from explorer.tabs.binding import bind
from explorer.tabs.common import ADVANCED_CLASS, ANALYSIS, API, HEAVY, caption, model_slider
from explorer.tabs.export_button import data_button
from explorer.tabs.lazy import callbacks
from explorer.tabs.raw_inputs import RawNumber, RawRadio

examples_view, film_view, heads_report_view = callbacks("heads", "examples_view", "film_view", "heads_report_view")
composition_view, head_circuits_view = callbacks("circuits", "composition_view", "head_circuits_view")

INTRO = """**So what does this head do?** Each head gets one role, measured on purpose-built inputs rather than on
your prompt: windows of the validation text, and a random sequence shown twice. Many heads park their attention
on the first token when they have nothing to do (an *attention sink*), so every score is the share of the
attention **left after the sink**; a head that gives almost everything to the sink is *resting on the sink*. A head
with no habit is *broad* when it spreads its attention widely and *focused* when it keeps it on a few tokens. The
Attention tab's captions use the same roles, measured on your prompt."""

INDUCTION_INTRO = """### Induction heads: copying a repeated sequence
An **induction head** looks at the token that came *after* the previous occurrence of the current token, so the
model can continue a sequence it has seen before. The probe below is a random sequence shown twice: nothing
predicts the first copy, but a model with induction heads predicts the second copy, so its loss drops."""

EXAMPLES_INTRO = """### Examples from the whole text
The places in the whole validation text that excite a neuron (its activation) or a head (the weight from a
query, yellow, to a key, blue) the most. The first request scans the text once; later ones are instant."""

CIRCUITS_INTRO = """### Circuits: what a head copies, where it looks, whom it reads
Read off the weights, with no prompt. The **OV circuit** W_E W_V W_O W_U says which output token's logit rises
when the head attends to a token (a copying head lights up the diagonal); the **QK circuit** W_E W_Q W_Kᵀ W_Eᵀ says
which token a token looks at. Both are shown over a few tokens (type some, or leave the box empty for the first
ones)."""

COMPOSITION_INTRO = """**Composition** says how much a head reads what an earlier head wrote: in its query (Q), its key (K)
or its value (V). An induction head is a K-composition: its key reads "which token came before me", written by a
previous-token head."""

FILM_INTRO = """### Roles forming over training
Snapshots recorded while the model trained: one head's attention on the probe text at each snapshot, its role
scores over the steps (the induction score is measured on a random sequence shown twice), and the token
embeddings moving (press play)."""


# the explanation a fixed share of the table, so that it wraps inside the page (sized to its text, it ran 1,300 px
# wide and the table scrolled sideways to read each sentence); each score column wider than its longest header word
# ("induction", "duplicate": 92 px) at a 1400 px window, where the table is 1,216 px wide (at 7.5 %, 91 px, they
# broke mid-word); the page's CSS (explorer.ui, REPORT_CARD_ID) lets headers wrap only between words
REPORT_WIDTHS = ["5%", "8%", "5%", "18%"] + ["8%"] * (len(REPORT_HEADERS) - 4)
REPORT_CARD_ID = "te-report-card"


def build_heads_tab():
    """-> (report view, inputs, outputs), made when the tab opens, and the named controls (links and lessons
    set the film strip's layer and head)."""
    gr.Markdown(INTRO)
    run = gr.Button("Make the report card", variant="primary")
    note = caption()
    role_map = gr.Plot(label="Role map (layer × head)")
    # tall enough for every head of the class's models (16 rows of wrapped explanations) without scrolling in it
    table = gr.Dataframe(headers=REPORT_HEADERS, label="Report card", interactive=False, wrap=True,
                         column_widths=REPORT_WIDTHS, max_height=1800, elem_id=REPORT_CARD_ID)
    gr.Markdown(INDUCTION_INTRO)
    induction_note = caption()
    with gr.Row():
        loss = gr.Plot(label="Loss on the first and second copy")
        stripe = gr.Plot(label="The strongest induction head")
    report = bind(heads_report_view, shared=True)
    outputs = [role_map, table, note, loss, stripe, induction_note]
    run.click(report, None, outputs, api_name="heads", **API, **ANALYSIS)

    gr.Markdown(EXAMPLES_INTRO)
    with gr.Row():
        kind = RawRadio(["neuron", "head"], value="neuron", label="Examples of a")
        layer = model_slider("layer", "Layer")
        index = RawNumber(0, label="Neuron or head number", precision=0, minimum=0)
        show = gr.Button("Show examples", variant="primary")
    examples_note = caption()
    dead_note = caption()
    examples = gr.HTML(label="Top examples")
    examples_fn = bind(examples_view, heavy=True)  # a pass over the whole validation text, in turns

    def examples_with_progress(kind, layer, index, request: gr.Request, progress=gr.Progress()):
        return examples_fn(request, kind, layer, index, progress)

    show.click(examples_with_progress, [kind, layer, index], [examples, examples_note, dead_note],
               api_name="head_examples", **API, **HEAVY)

    circuit_outputs, circuit_inputs = _circuits_section()
    gr.Markdown(FILM_INTRO)
    with gr.Row():
        film_layer = model_slider("layer", "Layer")
        film_head = model_slider("head", "Head")
        film_run = gr.Button("Show training", variant="primary")
    film_note = caption()
    strip = gr.Plot(label="Film strip")
    lines = gr.Plot(label="Role scores over training")
    frames = gr.Plot(label="Embeddings over training")
    film_run.click(bind(film_view), [film_layer, film_head], [strip, lines, frames, film_note],
                   api_name="head_training", **API, **ANALYSIS)
    data_button("heads", [role_map, table, note, loss, stripe, induction_note, examples_note, dead_note, strip,
                          lines, frames, film_note, *circuit_outputs], [kind, layer, index, film_layer, film_head,
                                                                      *circuit_inputs])
    return (report, [], outputs), {"layer": film_layer, "head": film_head}


def _circuits_shown(session, layer, head, tokens: str = "", top_k=5):
    """head_circuits_view, its positional QK chart hidden for a model with no position table (rotary positions,
    SmolLM2's): an empty chart would look broken."""
    ov, qk, positional, rows, caption = head_circuits_view(session, layer, head, tokens, top_k)
    return ov, qk, gr.Plot(positional, visible=positional is not None), rows, caption


def _circuits_section():
    """-> (its outputs, its inputs), for the tab's data button."""
    gr.Markdown(CIRCUITS_INTRO)
    with gr.Row():
        layer, head = model_slider("layer", "Layer"), model_slider("head", "Head")
        tokens = gr.Textbox("", label="Tokens to show (empty: the first ones)", max_lines=1)
        top_k = RawNumber(5, label="Top outputs per token", precision=0, minimum=1, maximum=20)
        show = gr.Button("Show the head's circuits", variant="primary")
    head_note = caption()
    ov, qk = gr.Plot(label="OV circuit"), gr.Plot(label="QK circuit")  # the page's width: 40 tokens labelled
    with gr.Row():
        positional = gr.Plot(label="Positional QK circuit")
        top = gr.Dataframe(headers=["attended token", "outputs it raises most (logit)"], label="OV circuit: top "
                           "outputs", interactive=False, wrap=True, max_height=420)
    show.click(bind(_circuits_shown), [layer, head, tokens, top_k], [ov, qk, positional, top, head_note],
               api_name="head_circuits", **API, **ANALYSIS)
    with gr.Column(elem_classes=[ADVANCED_CLASS]):  # hidden in Simple view
        gr.Markdown(COMPOSITION_INTRO)
        with gr.Row():
            kind = RawRadio(["q", "k", "v"], value="k", label="Composition")
            compose = gr.Button("Show composition", variant="primary")
        composition_note = caption()
        with gr.Row():
            heatmap, circuit = gr.Plot(label="Composition"), gr.Plot(label="Induction circuit")
        copying = gr.Plot(label="Copying scores")
    compose.click(bind(composition_view), kind, [heatmap, circuit, copying, composition_note],
                  api_name="composition", **API, **ANALYSIS)
    return [ov, qk, positional, top, head_note, heatmap, circuit, copying, composition_note], [layer, head, tokens,
                                                                                             top_k, kind]
