"""A small gr.HTML chart that redraws with Plotly.react: no remount, zoom kept, no memory growth."""
from pathlib import Path

import gradio as gr
import plotly

from explorer.figures.common import ADVANCED_TRACE

PLOTLY_JS = Path(plotly.__file__).resolve().parent / "package_data" / "plotly.min.js"
gr.set_static_paths(paths=[PLOTLY_JS])
LIVE_PLOT_CLASS = "te-live-chart"  # marks live charts, so the 'Download data' button exports their figures
# The toolbar shows on hover: zoom, reset, and image download (PNG; tabs/export_button.py adds SVG and names).
PLOT_CONFIG = '{responsive: true, displayModeBar: "hover", displaylogo: false, toImageButtonOptions: {scale: 2}}'

# A trace whose meta is ADVANCED_TRACE (a measure for advanced students) is left out in Simple view.
REDRAW_JS = """
const CONFIG = """ + PLOT_CONFIG + """;
const draw = () => {
  const target = element.querySelector('.te-live-plot');
  if (!target || !window.Plotly) { setTimeout(draw, 200); return; }
  if (!props.value) { window.Plotly.purge(target); return; }
  const fig = JSON.parse(props.value);
  const simple = document.body.classList.contains('te-simple');
  const data = simple ? fig.data.filter((t) => t.meta !== '""" + ADVANCED_TRACE + """') : fig.data;
  window.Plotly.react(target, data, fig.layout, CONFIG);
};
watch('value', draw);
document.addEventListener('te-simple-view', draw);
draw();
"""


# clickable: a click on a point sends .select(evt) with evt.name (its trace's name), evt.curve, evt.x, evt.y and
# evt.customdata (the point's, when its trace has some).
# Plotly.purge drops the listener with the plot, so it is attached again once the next figure is drawn.
CLICK_JS = """
const listen = () => {
  const target = element.querySelector('.te-live-plot');
  if (!props.value) { if (target) target.teClick = false; return; }
  if (!target || !target.on) { setTimeout(listen, 200); return; }
  if (target.teClick) return;
  target.teClick = true;
  target.on('plotly_click', (ev) => {
    const p = ev && ev.points && ev.points[0];
    if (p) trigger('select', {name: p.data.name, curve: p.curveNumber, x: p.x, y: p.y,
                              customdata: p.customdata === undefined ? null : p.customdata});
  });
};
watch('value', listen);
listen();
"""


def live_plot(min_height: int = 300, clickable: bool = False, **kwargs) -> gr.HTML:
    """value = figure JSON (explorer.figures.common.figure_to_json); '' clears it."""
    return gr.HTML(
        value="", html_template=f"<div class='te-live-plot' style='min-height:{min_height}px'></div>",
        js_on_load=REDRAW_JS + (CLICK_JS if clickable else ""),
        head=f'<script src="gradio_api/file={PLOTLY_JS}"></script>',  # relative: the app may sit under a path
        apply_default_css=False, **{**kwargs, "elem_classes": [LIVE_PLOT_CLASS, *kwargs.get("elem_classes", [])]})
