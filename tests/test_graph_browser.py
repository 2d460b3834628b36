"""The Graph tab in headless Chromium: a link opens it on a prompt and draws the attribution graph; a click on a
feature node opens its top contexts; pinned, it is drawn in the subgraph and an intervention on it runs; a click on
an edge splits the score of the head that carries it. Screenshots in tests/screenshots/graph-*.png."""
import json
from urllib.parse import quote

import pytest
from gradio_client import Client

from tests.browser_helpers import SCREENSHOTS, error_toasts, painted, press, screenshot, visible
from tests.helpers import graph_edges_across

pytestmark = pytest.mark.browser

PROMPT = "ROMEO:\nI will"
CHART = "#graph-chart .te-live-plot"
DRAWN = f"() => (document.querySelector('{CHART}') || {{}}).data?.length > 0"
# page coordinates of point i of the trace named `name` (Plotly's laid-out axes), and its customdata
POINT = f"""([name, i]) => {{
  const g = document.querySelector('{CHART}'), L = g._fullLayout, r = g.getBoundingClientRect();
  const t = g._fullData.find(t => t.name === name);
  return {{x: r.left + L.xaxis._offset + L.xaxis.l2p(t.x[i]), y: r.top + L.yaxis._offset + L.yaxis.l2p(t.y[i]),
          key: t.customdata[i]}};
}}"""


def click_point(page, name: str, index: int) -> str:
    """Click point index of the chart's trace `name` (scrolled into view first) -> its customdata."""
    page.locator("#graph-chart").scroll_into_view_if_needed()
    painted(page)
    spot = page.evaluate(POINT, [name, index])
    page.mouse.move(spot["x"], spot["y"])
    page.mouse.click(spot["x"], spot["y"])
    return spot["key"]


def test_a_link_draws_the_graph_and_a_click_opens_a_feature(blank_page, app_url):
    page = blank_page
    page.goto(f"{app_url}?tab=graph&prompt={quote(PROMPT)}")
    page.wait_for_function(DRAWN, timeout=180_000)
    assert "Replacement score" in page.locator("#graph-scores").inner_text()
    painted(page)
    SCREENSHOTS.mkdir(exist_ok=True)
    page.locator("#graph-chart").screenshot(path=str(SCREENSHOTS / "graph-chart.png"))
    headers = page.locator("#graph-edges thead th, #graph-edges [role=columnheader]").all_inner_texts()
    assert [h.strip() for h in headers if h.strip()][:3] == ["direction", "node", "weight"]  # before any click
    key = click_point(page, "features", 0)
    layer, pos, feature = key.split(":")[1:]
    page.wait_for_function("(name) => document.querySelector('#graph-node textarea, #graph-node input').value"
                           ".startsWith(name)", arg=f"L{layer} F{feature} at {pos}:")  # its name, not its key
    page.wait_for_function("() => document.querySelector('#graph-contexts')?.innerText.includes('activation')")
    assert key.startswith("F:")
    assert page.evaluate(f"() => document.querySelector('{CHART}').layout.shapes.length") == 1  # the ring
    screenshot(page, "graph-feature")
    press(page, visible(page.get_by_role("button", name="Pin this node")))
    page.wait_for_function("() => document.querySelector('#graph-pinned')?.innerText.includes('logit')")  # + top logit
    press(page, visible(page.get_by_role("button", name="Run")))
    page.wait_for_function("() => document.body.innerText.includes('as the graph predicts')")
    row = page.locator("#graph-edges .virtual-row[data-index='0'] [role=gridcell]").nth(1)
    other = row.inner_text().strip()
    assert not other.startswith(("F:", "E:", "T:", "L:"))
    row.click()  # the edges table walks the graph: its row opens the node at the other end
    page.wait_for_function("(name) => document.querySelector('#graph-node textarea, #graph-node input').value === name",
                           arg=other)
    edges = page.evaluate(f"""() => {{  // the edges with a hover point (one that would sit on a node has none)
      const t = document.querySelector('{CHART}')._fullData.find(t => t.name === 'edges');
      return t.customdata.map((key, i) => Number.isFinite(t.x[i]) ? key : null);
    }}""")
    n_pos = len(page.evaluate(f"() => document.querySelector('{CHART}').layout.xaxis.ticktext"))
    click_point(page, "edges", edges.index(graph_edges_across([e for e in edges if e], n_pos)[0]))
    page.wait_for_function("() => document.body.innerText.includes('the cells add up to the score')")
    assert page.locator("#graph-qk-pairs .virtual-row").count() > 0
    assert error_toasts(page) == []
    screenshot(page, "graph-pinned-intervention-qk")


def test_a_model_without_transcoders_clears_the_tab_and_is_refused_once(blank_page, app_url):
    """Switching to first-names on the Train tab clears the graph, its panels and its file; back on the Graph tab the
    caption says why nothing is drawn, Trace refuses once, and the training settings are the model's (8 x 64)."""
    page = blank_page
    page.goto(f"{app_url}?tab=graph&prompt={quote(PROMPT)}")
    page.wait_for_function(DRAWN, timeout=180_000)
    page.get_by_role("tab", name="Train").click()
    dropdown = visible(page.get_by_label("Shipped models"))
    dropdown.click()
    visible(page.get_by_role("option", name="first-names")).click()
    press(page, visible(page.get_by_role("button", name="Use this model")))
    page.get_by_role("tab", name="Graph").click()
    page.wait_for_function("() => document.body.innerText.includes('has no transcoders')")
    assert not page.evaluate(DRAWN) and "Replacement score" not in page.locator("#graph-scores").inner_text()
    assert error_toasts(page) == []
    press(page, visible(page.get_by_role("button", name="Trace")))
    page.wait_for_function("() => document.querySelectorAll('[data-testid=toast-text]').length > 0")
    painted(page)
    toasts = page.locator("[data-testid=toast-text]").all_inner_texts()
    assert len(toasts) == 1 and "has no transcoders" in toasts[0] and error_toasts(page) == []  # said once, no badge
    assert page.locator("#graph-chart .error, #graph-scores .error").count() == 0
    page.get_by_text("Train transcoders on this model", exact=True).last.click()  # the accordion (not the caption)
    page.wait_for_function("() => document.querySelector('#tc-features input')?.value === '512'")
    screenshot(page, "graph-no-transcoders")
    screenshot(page, "graph-no-transcoders")


def test_the_api_answers_by_keyword(app_url):
    """The endpoints scripts call: the graph (its figure JSON), a node, an intervention, the QK split, the JSON file."""
    client = Client(app_url, verbose=False)
    chart, scores, _ = client.predict(prompt=PROMPT, node_threshold=0.8, api_name="/attribution_graph")
    key = next(t for t in json.loads(chart)["data"] if t.get("name") == "features")["customdata"][0]
    assert "Replacement score" in scores
    caption, contexts, _, rows = client.predict(prompt=PROMPT, node=key, api_name="/graph_node")
    assert "transcoder feature" in caption and rows["data"]
    _, effect = client.predict(prompt=PROMPT, features=key, mode="multiply by", value=0, api_name="/graph_intervene")
    assert "as the graph predicts" in effect
    _, qk, pairs = client.predict(prompt=PROMPT, layer=1, head=0, query_position=-1, key_position=1,
                                    api_name="/qk_attribution")
    assert "The largest part" in qk and "the cells add up to the score" in qk and pairs["data"]
    path = client.predict(prompt=PROMPT, api_name="/graph_json")
    assert json.loads(open(path, encoding="utf-8").read())["nodes"]
