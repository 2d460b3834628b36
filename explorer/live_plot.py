"""A small gr.HTML chart that redraws with Plotly.react: no remount, zoom kept, no memory growth."""
from pathlib import Path

import gradio as gr
import plotly

PLOTLY_JS = Path(plotly.__file__).resolve().parent / "package_data" / "plotly.min.js"
gr.set_static_paths(paths=[PLOTLY_JS])

REDRAW_JS = """
const draw = () => {
  const target = element.querySelector('.te-live-plot');
  if (!target || !window.Plotly) { setTimeout(draw, 200); return; }
  if (!props.value) { window.Plotly.purge(target); return; }
  const fig = JSON.parse(props.value);
  window.Plotly.react(target, fig.data, fig.layout, {displayModeBar: false, responsive: true});
};
watch('value', draw);
draw();
"""


def live_plot(min_height: int = 300, **kwargs) -> gr.HTML:
    """value = figure JSON (explorer.figures.common.figure_to_json); '' clears it."""
    return gr.HTML(
        value="", html_template=f"<div class='te-live-plot' style='min-height:{min_height}px'></div>",
        js_on_load=REDRAW_JS, head=f'<script src="/gradio_api/file={PLOTLY_JS}"></script>',
        apply_default_css=False, **kwargs)
