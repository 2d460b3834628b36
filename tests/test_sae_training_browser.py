"""The launched app in headless Chromium: train a small SAE in the Features tab, watch its live chart, read the
result, and the tab's listing then reads the new SAE. Screenshots in tests/screenshots/."""
import pytest

from model_core.features.saelens_format import load_sae
from tests.browser_helpers import error_toasts, screenshot, visible

pytestmark = pytest.mark.browser


def test_training_an_sae_in_the_features_tab(page):
    page.get_by_role("tab", name="Features").click()
    visible(page.get_by_text("Train an SAE on this model")).click()
    page.wait_for_function("() => document.body.innerText.includes('fits this server')")  # set up for the model
    assert page.locator("#sae-features input").input_value() == "1024"
    assert page.locator("#sae-tokens input").input_value() == "524288"
    page.locator("#sae-features input").fill("256")
    page.locator("#sae-tokens input").fill("65536")
    page.locator("#sae-start").click()
    page.wait_for_function("() => document.querySelector('#sae-status').innerText.includes('step')",
                           timeout=180_000)
    page.wait_for_function("() => document.querySelectorAll('#sae-training-chart .main-svg').length > 0")
    page.locator("#sae-training-chart").scroll_into_view_if_needed()
    screenshot(page, "features-sae-training-live")
    page.wait_for_function("() => document.querySelector('#sae-result').innerText.includes('now the tab')",
                           timeout=300_000)
    result = page.locator("#sae-result").inner_text()
    assert "explained variance" in result and "CE loss recovered" in result and "dead" in result
    assert "finished" in page.locator("#sae-status").inner_text()
    assert "features are dead" in str(page.locator(".te-caption").all_inner_texts())
    page.locator("#sae-training-chart").scroll_into_view_if_needed()
    screenshot(page, "features-sae-training-done")
    page.get_by_role("button", name="Download the SAE (.zip, SAELens's layout)").click()
    with page.expect_download() as download:
        page.locator("#sae-file a[download='sae.zip']").click()
    sae = load_sae(download.value.path())
    assert (sae.cfg.d_sae, sae.cfg.hook_name) == (256, "blocks.2.hook_resid_post")
    visible(page.get_by_role("button", name="Show features")).click()
    page.wait_for_function("() => document.body.innerText.includes('SAE (trained here)')")
    assert error_toasts(page) == []
    screenshot(page, "features-sae-trained-listing")
