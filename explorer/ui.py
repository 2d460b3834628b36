"""build_app(): the Gradio Blocks with every tab. Components and wiring only; logic lives in callbacks/."""
import gradio as gr

from .binding import bind
from .callbacks.models import model_summary, slider_maxima
from .callbacks.train import param_count_view
from .guide import GUIDE
from .session import REGISTRY
from .tabs.attention import build_attention_tab
from .tabs.common import ANALYSIS, RANGE_CLASS
from .tabs.data import build_data_tab
from .tabs.embeddings import build_embeddings_tab
from .tabs.experiments import build_experiments_tab
from .tabs.ffn import build_ffn_tab
from .tabs.heads import build_heads_tab
from .tabs.residual import build_residual_tab
from .tabs.sampling import build_sampling_tab
from .tabs.train import build_train_tab

CSS = """
.te-caption p { font-size: 1.05rem; color: #1e3a8a; margin: 4px 0 8px; }
.te-compare { display: flex; gap: 12px; flex-wrap: wrap; }
.te-col { flex: 1 1 220px; border: 1px solid #d1d5db; border-radius: 8px; padding: 8px; }
.te-col-head { font-weight: 600; margin-bottom: 6px; }
.te-gen { white-space: pre-wrap; font-family: ui-monospace, monospace; font-size: 0.95rem; margin: 0; }
.te-metrics { margin-top: 6px; font-size: 0.9rem; color: #374151; }
"""


def build_app() -> gr.Blocks:
    # delete_cache: every 5 minutes Gradio removes uploads and downloads older than 15 minutes.
    with gr.Blocks(title="Transformer Explorer", delete_cache=(300, 900)) as demo:
        gr.Markdown("# Transformer Explorer\nTrain a tiny GPT and look inside it: every head, the residual "
                    "stream, the embeddings, the FFN neurons and the sampling knobs.")
        model_info = gr.Markdown()
        with gr.Tabs(selected="attention"):
            with gr.Tab("Data", id="data"):
                data_inputs = build_data_tab()
            with gr.Tab("Train", id="train"):
                train_arch, train_params = build_train_tab(data_inputs, model_info)
            with gr.Tab("Attention", id="attention") as attention_tab:
                attention = build_attention_tab()
            with gr.Tab("Heads", id="heads") as heads_tab:
                build_heads_tab(heads_tab)
            with gr.Tab("Residual stream", id="residual") as residual_tab:
                residual = build_residual_tab()
            with gr.Tab("Embeddings", id="embeddings") as embeddings_tab:
                embeddings = build_embeddings_tab()
            with gr.Tab("FFN", id="ffn") as ffn_tab:
                ffn = build_ffn_tab()
            with gr.Tab("Sampling", id="sampling") as sampling_tab:
                sampling = build_sampling_tab()
            with gr.Tab("Experiments", id="experiments"):
                build_experiments_tab(model_info)
            with gr.Tab("Guide", id="guide"):
                gr.Markdown(GUIDE)
        demo.load(bind(model_summary), None, model_info, api_visibility="private")
        demo.load(*attention, api_visibility="private")
        demo.load(bind(param_count_view), train_arch, train_params, api_visibility="private")
        for tab, (fn, inputs, outputs) in ((attention_tab, attention), (residual_tab, residual),
                                          (embeddings_tab, embeddings), (ffn_tab, ffn), (sampling_tab, sampling)):
            tab.select(fn, inputs, outputs, api_visibility="private", **ANALYSIS)
        _resize_sliders_with_model(demo, model_info)
        demo.unload(_forget_session)
    return demo


def _resize_sliders_with_model(demo: gr.Blocks, model_info: gr.Markdown) -> None:
    """Layer, head and position sliders get the inspected model's ranges whenever it changes."""
    sized = [(block, cls[len(RANGE_CLASS):]) for block in demo.blocks.values() if isinstance(block, gr.Slider)
             for cls in (block.elem_classes or []) if cls.startswith(RANGE_CLASS)]

    def ranges(session):
        maxima = slider_maxima(session)
        return [gr.Slider(maximum=maxima[kind]) for _, kind in sized]
    model_info.change(bind(ranges), None, [block for block, _ in sized], api_visibility="private",
                      concurrency_limit=None)


def _forget_session(request: gr.Request):
    REGISTRY.close(request.session_hash)
