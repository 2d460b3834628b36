"""The lesson player in headless Chromium: a ?lesson= link opens step 1, Next and Back move through the
steps and redraw the selected head, and the simple view hides the advanced controls.

Writes tests/screenshots/lesson.png (the player on step 4, the attention sink) for the README."""
import pytest

from tests.browser_helpers import ERROR_TOAST, SCREENSHOTS, TIMEOUT_MS

pytestmark = pytest.mark.browser

HEAD_TITLE = "() => [...document.querySelectorAll('.gtitle')].map(t => t.textContent).join(' | ')"


# the notes the open step left for Back (as the server writes them: explorer.callbacks.lessons.step_notes), then a
# click of Back; -> the note the page shows before the move answers ('' if none in 200 frames)
NOTE_AT_THE_CLICK = """async (note) => {
  const box = document.querySelector('#te-step-notes textarea');
  box.value = JSON.stringify({back: note, next: ''});
  box.dispatchEvent(new Event('input', {bubbles: true}));
  await new Promise(requestAnimationFrame);
  [...document.querySelectorAll('button')].find(b => b.innerText.trim() === '← Back').click();
  for (let frame = 0; frame < 200; frame++) {
    const shown = document.querySelector('#te-opening-note')?.innerText || '';
    if (shown.includes(note)) return shown;
    await new Promise(requestAnimationFrame);
  }
  return '';
}"""


def wait_for_head_chart(page, layer: int, head: int) -> None:
    page.wait_for_function(f"() => ({HEAD_TITLE})().includes('L{layer}·H{head} attention pattern')")


def test_lesson_link_steps_and_simple_view(browser, app_url):
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    page.goto(app_url + "?lesson=attention-basics")
    page.get_by_text("Step 1 of 7: How to read an attention map").wait_for()
    wait_for_head_chart(page, 0, 1)
    drop = page.get_by_label("Drop unknown characters")  # registered advanced: hidden in the simple view
    assert page.evaluate("() => document.body.classList.contains('te-simple')")
    assert not drop.is_visible()

    next_button, back_button = page.get_by_role("button", name="Next →"), page.get_by_role("button", name="← Back")
    assert back_button.is_disabled()
    for title in ("Step 2 of 7: The previous-token head", "Step 3 of 7: Sixteen heads at once",
                  "Step 4 of 7: The attention sink"):
        next_button.click()
        page.get_by_text(title).wait_for()
    wait_for_head_chart(page, 1, 3)  # step 4 set layer 1, head 3 and the tab redrew
    assert page.get_by_label("number input for Head").first.input_value() == "3"
    SCREENSHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "lesson.png"), full_page=False)

    # Back shows the note its step left (a pretrained model opens, say) at the click, in the page, until it moved
    note = "Opening a model, a note for this test"
    assert note in page.evaluate(NOTE_AT_THE_CLICK, note)
    page.get_by_text("Step 3 of 7: Sixteen heads at once").wait_for()
    page.locator("#te-opening-note").wait_for(state="hidden")  # the move's answer hides it
    wait_for_head_chart(page, 0, 1)
    page.get_by_label("Simple view (hide advanced controls)").uncheck()
    drop.wait_for(state="visible")
    assert page.locator(ERROR_TOAST).count() == 0
    context.close()


ADVANCED_LABELS = ("Weight decay", "Gradient clipping (0 = off)", "Muon Newton–Schulz steps", "Muon learning rate")


def test_simple_view_hides_the_optimiser_details_and_composition(browser, app_url):
    """A student in a simple lesson still saw Muon's Newton–Schulz steps, weight decay, gradient clipping and
    K-composition; they show again once Simple view is unticked."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    page.goto(app_url + "?lesson=temperature-top-p")  # a simple lesson
    page.get_by_text("Step 1 of").first.wait_for()
    page.wait_for_function("() => document.body.classList.contains('te-simple')")

    def shown() -> dict:
        page.get_by_role("tab", name="Train").click()
        found = {label: page.get_by_label(label, exact=True).first.is_visible() for label in ADVANCED_LABELS}
        page.get_by_role("tab", name="Heads").click()
        found["Show composition"] = page.get_by_role("button", name="Show composition").is_visible()
        found["Show the head's circuits"] = page.get_by_role("button", name="Show the head's circuits").is_visible()
        return found

    hidden = shown()
    assert not any(v for k, v in hidden.items() if k != "Show the head's circuits"), hidden
    assert hidden["Show the head's circuits"]  # OV and QK stay: only composition is advanced
    page.get_by_label("Simple view (hide advanced controls)").uncheck()
    assert all(shown().values())
    context.close()


def test_a_lesson_picked_in_the_player_is_the_one_a_reload_opens(browser, app_url):
    """The student walk: after picking another lesson, the address still said ?lesson=<the first one>, and a reload
    went back to it. The pick replaces ?lesson= (no new history entry); the address's other parameters stay."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    page.goto(app_url + "?lesson=attention-basics&tab=attention")
    page.get_by_text("Step 1 of 7: How to read an attention map").wait_for()
    picker = page.get_by_label("Open a lesson")
    picker.click()
    page.get_by_role("option", name="Watch a GPT learn").dispatch_event("mousedown")  # Gradio picks on mousedown
    page.get_by_text("Step 1 of 6: The text the model learns from").wait_for()
    page.wait_for_function("() => location.search.includes('lesson=watch-gpt-learn')")
    assert "tab=attention" in page.evaluate("() => location.search")
    page.reload()
    page.get_by_text("Step 1 of 6: The text the model learns from").wait_for()
    context.close()
