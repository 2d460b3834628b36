"""The 'Download data' button of a tab, and the page script that names chart images and adds an SVG button.

Chart images: Plotly's own camera button downloads a PNG; the script below (installed once per page) gives it a
file name saying tab, chart, model and prompt (as explorer.figures.export.export_name does for the zip), and adds an
SVG button next to it that reuses the camera's handler with format 'svg'. It works for gr.Plot charts and the
live gr.HTML charts alike, because both keep Plotly's config on the chart element (gd._context)."""
import gradio as gr

from explorer.common.controls import FIGURE, TABLE
from explorer.tabs.binding import bind
from explorer.tabs.common import ANALYSIS
from explorer.tabs.lazy import callbacks
from explorer.tabs.live_plot import LIVE_PLOT_CLASS

data_zip = callbacks("export", "data_zip")

EXPORT_JS = r"""
if (!window.teExportInstalled) {
  window.teExportInstalled = true;
  const slug = (text, limit = 40) => (String(text || '').trim().split('\n')[0].slice(0, limit)
    .match(/[A-Za-z0-9]+/g) || ['empty']).join('_');
  const visible = (el) => el && el.offsetParent !== null;
  const chartName = (gd) => {
    const block = gd.closest('.block');
    const label = block && block.querySelector('[data-testid="block-label"]');
    const title = gd.layout && gd.layout.title && (gd.layout.title.text || gd.layout.title);
    return (label && label.textContent) || (block && block.id) || (typeof title === 'string' ? title : 'chart');
  };
  const modelName = () => {
    const info = [...document.querySelectorAll('.prose, .md')].find(el => /^\s*Inspecting/.test(el.textContent));
    const strong = info && info.querySelector('strong');
    return strong ? strong.textContent : 'model';
  };
  const promptText = () => {
    const boxes = [...document.querySelectorAll('textarea')].filter(visible);
    const box = boxes.find(t => /^\s*Prompt/i.test((t.closest('label') || t.closest('.block') || {}).textContent || ''));
    return box ? box.value : '';
  };
  const fileName = (gd) => {
    const tab = document.querySelector('[role="tab"][aria-selected="true"]');
    const tabName = slug(tab ? tab.textContent : 'app').toLowerCase();
    const chart = slug(chartName(gd)).toLowerCase().replace(/_/g, '-');  // 'graph-chart' on the Graph tab: no 'graph-graph-'
    const parts = [tabName, chart.startsWith(tabName + '-') ? chart.slice(tabName.length + 1) : chart, slug(modelName())];
    const prompt = promptText();
    if (prompt.trim()) parts.push(slug(prompt, 24));
    return parts.join('-');
  };
  const options = (gd) => (gd._context.toImageButtonOptions = {scale: 2, ...(gd._context.toImageButtonOptions || {})});
  // Before Plotly's camera button reads its options, give the image a name that says what it shows.
  document.addEventListener('click', (ev) => {
    const button = ev.target.closest && ev.target.closest('.modebar-btn[data-title^="Download plot"]');
    const gd = button && button.closest('.js-plotly-plot');
    // The format is set on every click: the SVG button's click on the camera must not leave 'svg' behind
    if (gd && gd._context) Object.assign(options(gd), {filename: fileName(gd), format: gd.teImageFormat || 'png'});
  }, true);
  const SVG_ICON = '<svg viewBox="0 0 48 24" height="1em" width="2em"><text x="0" y="19" font-size="19" '
    + 'font-weight="700" font-family="sans-serif" fill="currentColor">SVG</text></svg>';
  // The modebar appears on hover: add an SVG button beside the camera the first time it does.
  document.addEventListener('mouseover', (ev) => {
    const gd = ev.target.closest && ev.target.closest('.js-plotly-plot');
    const camera = gd && gd.querySelector('.modebar-btn[data-title^="Download plot"]');
    if (!camera || camera.parentNode.querySelector('.te-svg-btn')) return;
    const svg = document.createElement('a');
    svg.className = 'modebar-btn te-svg-btn';
    svg.style.display = 'inline-block';  // beside the camera: the page's CSS made it a block on a line of its own,
    // over the chart's title
    svg.setAttribute('rel', 'tooltip');
    svg.setAttribute('data-title', 'Download plot as SVG');
    svg.innerHTML = SVG_ICON;
    svg.addEventListener('click', (e) => {
      e.preventDefault();
      gd.teImageFormat = 'svg';  // read by the click listener above when the camera's click reaches it
      camera.click();  // Plotly reads the options synchronously, then renders and downloads
      gd.teImageFormat = undefined;
    });
    camera.parentNode.insertBefore(svg, camera.nextSibling);
  });
}
"""


def chart_kind(component) -> str | None:
    """FIGURE for a gr.Plot or a live chart, TABLE for a gr.Dataframe, None for anything else."""
    if isinstance(component, gr.Plot) or LIVE_PLOT_CLASS in (getattr(component, "elem_classes", None) or []):
        return FIGURE
    return TABLE if isinstance(component, gr.Dataframe) else None


def _name(component, fallback: str) -> str:
    return str(component.label or component.elem_id or fallback)


def data_button(tab: str, shown: list, settings: list) -> gr.Button:
    """A 'Download data' button and its file: a zip with one CSV per chart or table in `shown` and
    settings.json with the model, the value of each of `settings` and the captions (gr.Markdown) in `shown`."""
    gr.HTML(js_on_load=EXPORT_JS, html_template="", apply_default_css=False, elem_classes=["te-export-script"])
    charts = [(c, chart_kind(c)) for c in shown if chart_kind(c)]
    named = [(_name(c, f"chart {i + 1}"), kind) for i, (c, kind) in enumerate(charts)]
    captions = [c for c in shown if isinstance(c, gr.Markdown)]  # the tab's captions go into settings.json
    labels = [_name(c, f"setting {i + 1}") for i, c in enumerate(settings)]
    labels += [f"caption {i + 1}" for i in range(len(captions))]
    settings = [*settings, *captions]
    with gr.Row():  # the file box shows once there is a file: an empty one read as a gap between sections
        button = gr.Button("Download data (CSV + settings)", size="sm", scale=0, min_width=260)
        file = gr.File(label="Data of this tab (.zip)", interactive=False, scale=2, height=60, visible=False)

    def tab_data(session, *values):
        return gr.File(value=data_zip(session, tab, named, labels, *values), visible=True)
    tab_data.__name__ = f"{tab}_data"
    button.click(bind(tab_data), [c for c, _ in charts] + list(settings), file, api_visibility="private",
                 **ANALYSIS)
    return button
