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
    key = click_point(page, "features", 0)
    page.wait_for_function("(key) => document.querySelector('#graph-node textarea, #graph-node input').value === key",
                           arg=key)
    page.wait_for_function("() => document.querySelector('#graph-contexts')?.innerText.includes('activation')")
    assert key.startswith("F:")
    assert page.evaluate(f"() => document.querySelector('{CHART}').layout.shapes.length") == 1  # the ring
    screenshot(page, "graph-feature")
    press(page, visible(page.get_by_role("button", name="Pin this node")))
    page.wait_for_function("() => document.querySelector('#graph-pinned')?.innerText.includes(' F')")
    press(page, visible(page.get_by_role("button", name="Run")))
    page.wait_for_function("() => document.body.innerText.includes('as the graph predicts')")
    row = page.locator("#graph-edges .virtual-row[data-index='0'] [role=gridcell]").nth(2)
    other = row.inner_text().strip()
    row.click()  # the edges table walks the graph: its row opens the node at the other end
    page.wait_for_function("(key) => document.querySelector('#graph-node textarea, #graph-node input').value === key",
                           arg=other)
    edges = page.evaluate(f"() => document.querySelector('{CHART}')._fullData.find(t => t.name === 'edges').customdata")
    n_pos = len(page.evaluate(f"() => document.querySelector('{CHART}').layout.xaxis.ticktext"))
    click_point(page, "edges", edges.index(graph_edges_across(edges, n_pos)[0]))
    page.wait_for_function("() => document.body.innerText.includes('The largest part')")
    assert error_toasts(page) == []
    screenshot(page, "graph-pinned-intervention-qk")



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
    _, qk = client.predict(prompt=PROMPT, layer=1, head=0, query=-1, key=1, api_name="/qk_attribution")
    assert "The largest part" in qk
    path = client.predict(prompt=PROMPT, api_name="/graph_json")
    assert json.loads(open(path, encoding="utf-8").read())["nodes"]
