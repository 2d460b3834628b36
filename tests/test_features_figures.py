"""The Features tab's figures and text views: plotly.py would send the same figures, and the HTML escapes text."""
import numpy as np

from explorer.figures.features import (
    examples_html,
    feature_histogram_figure,
    log_density_figure,
    logit_effects_figure,
    prompt_activation_html,
    steering_html,
)
from tests.helpers import assert_plotly_would_send_the_same


def test_figures_are_what_plotly_would_send():
    for fig in (feature_histogram_figure(np.arange(24), 3.5, 0.01, 7, 1000),
                feature_histogram_figure(np.zeros(24), 0.0, 0.0, 7, 1000),
                logit_effects_figure(["a", "b"], [2.0, 1.0], ["<z>", "y"], [-3.0, -1.0], 7),
                log_density_figure(np.arange(30), np.linspace(-7, 0, 31), 4, 100)):
        assert_plotly_would_send_the_same(fig)


def test_text_views_escape_and_highlight():
    html = prompt_activation_html(["<b>", "x"], [2.0, 0.0], 3, 2.0)
    assert "&lt;b&gt;" in html and "<b>" not in html.split("</span>")[0] and "rgba(255, 140, 0, 1.00)" in html
    rows = examples_html([(["a", "<", "c"], 1, [0.0, 1.5, 0.0])], np.array([1.5]), 3)
    assert rows.count("<tr>") == 2 and "&lt;" in rows and "1.50" in rows
    assert "never fires" in examples_html([], np.array([]), 3)
    two = steering_html("<p>", "one", "two", 3, 2.5, 0, 0.8)
    assert "&lt;p&gt;" in two and "× 2.5" in two
