"""Data tab: pick or upload a text and a tokenizer, and see the vocabulary, the token ids and one batch."""
import gradio as gr

from explorer.common.controls import DEFAULT_VAL_SPLIT, VAL_SPLIT_LABELS
from explorer.tabs.binding import bind
from explorer.tabs.export_button import data_button
from explorer.tabs.lazy import callbacks
from explorer.tabs.raw_inputs import RawDropdown, RawFile, RawRadio, RawSlider
from explorer.teaching.view_params import register_control
from model_core.data.corpora import CORPORA
from model_core.data.tasks.choices import CHOICES as TASK_CHOICES
from model_core.data.tasks.choices import STREAM_TASKS

data_view = callbacks("data", "data_view")

TASK_NOTE = ("A task brings its own tokens and its own test examples: the tokenizer and the validation split apply "
             "to a text only.")
TOKENS_HEADING = "Token indices of the first 50 tokens"
EXAMPLES_HEADING = "Token indices of the first examples"  # the chart's title gives their number


def build_data_tab():
    """-> (corpus, upload, tokenizer kind, bpe vocab, validation split) for the Train tab."""
    gr.Markdown("What the model learns from. Pick a built-in text or upload your own (UTF-8 .txt), "
                "then choose how it is cut into tokens.")
    with gr.Row():
        # wide enough for the longest choice ("task: repeated random tokens") at a 1280 px window
        corpus = RawDropdown([*CORPORA, *TASK_CHOICES], value="shakespeare", label="Built-in corpus or task",
                             scale=2, min_width=280)
        upload = RawFile(label="…or upload a .txt file", file_types=[".txt"], type="filepath")
        kind = RawRadio(["char", "word", "bpe"], value="char", label="Tokenizer")
        bpe_vocab = RawSlider(256, 4096, value=512, step=64, label="BPE vocabulary size")
        val_split = RawRadio([(label, value) for value, label in VAL_SPLIT_LABELS.items()], value=DEFAULT_VAL_SPLIT,
                             label="Validation split",
                             info="none: for a text of a sentence or two; the losses are then the training text's. "
                                  "A task keeps its own test examples (modular addition: half of the pairs)")
        task_note = gr.Markdown(TASK_NOTE, visible=False)
    register_control("corpus", corpus)
    register_control("tokenizer", kind)
    register_control("bpe_vocab", bpe_vocab, advanced=True)
    register_control("val_split", val_split)
    show = gr.Button("Prepare data", variant="primary")
    summary = gr.Markdown()
    with gr.Row():
        vocab = gr.Dataframe(headers=["id", "token", "count"], label="Vocabulary", interactive=False, max_height=360)
        sample = gr.Textbox(label="Sample of the text", lines=14, interactive=False)
    index_fig = gr.Plot(label=TOKENS_HEADING)
    split = gr.Markdown()
    batch = gr.Dataframe(headers=["example", "position", "input (context so far)", "target (next token)"],
                         label="One training batch: the target is always the input shifted by one",
                         interactive=False, max_height=400)
    inputs, outputs = [corpus, upload, kind, bpe_vocab, val_split], [summary, vocab, sample, index_fig, split, batch]
    show.click(bind(data_view), inputs, outputs, api_name="data", api_visibility="public", concurrency_limit=2)
    data_button("data", outputs, inputs)
    gr.on([corpus.change, upload.change], text_controls, [corpus, upload], [kind, bpe_vocab, val_split, task_note,
                                                                            index_fig],
          api_visibility="private", concurrency_limit=None)  # set by hand or by a lesson step
    return corpus, upload, kind, bpe_vocab, val_split


def text_controls(corpus, upload):
    """Controls only a text reads (tokenizer, BPE size, validation split) hidden while the data is a task (an
    upload wins over the corpus), a note shown instead; the token-index chart's heading names what it will show."""
    task = TASK_CHOICES.get(corpus) if not upload and isinstance(corpus, str) else None
    examples = task is not None and task["name"] not in STREAM_TASKS
    shown = gr.update(visible=task is None)
    return (shown, shown, shown, gr.update(visible=task is not None),
            gr.update(label=EXAMPLES_HEADING if examples else TOKENS_HEADING))
