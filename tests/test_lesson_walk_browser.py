"""Every shipped lesson walked start to end in headless Chromium, one after another in one browser context (two
halves, one per pytest worker, the second starting from the first's last lesson), as a student goes on: each lesson opened from the end of the one before (its `next:` link, else its own link), so it
meets what that one left behind; the lesson box must show its title. On each step do what the text says (type what it says to type, press the buttons it names), answer its question in the box,
then Next. No error toast and no text cut off by its box may appear, every button a step names must be on the step's tab, a question with a
right answer must say "Right." to it (and "Not quite" to a wrong one, tried on each lesson's first such question), and
the last step must end the lesson. The window is 1400 x 1000, as a student's laptop shows it.

Screenshots land in tests/screenshots/lessons/<lesson>-<step>.png: the page as the student sees it after the
step's buttons, scrolled to the chart the last one drew (else to the tab's captions and charts). Look at them: every sentence of the step should be true of it.
Training is not started (Start is left to the student: its run outlasts a test), so steps about the student's own
model show the shipped or untrained one, and a lab that needs a model of its task (the grokking lab) is shown on the
shipped one when it is installed, else not pressed. SmolLM2's lessons are among them: the test is marked
pretrained."""
import pytest

from tests.lesson_walk import first_half, walk_in_one_context, walk_order

# SmolLM2's lessons are among them; half an hour is for a loaded machine (about 7 minutes on two idle cores)
pytestmark = [pytest.mark.browser, pytest.mark.pretrained, pytest.mark.timeout(3600)]


def test_walk_the_first_half_of_the_lessons_one_after_another(browser, app_url, app_log_tail):
    """The first half of the walk order (tests/test_lesson_walk_later_browser.py walks the rest, from this half's
    last lesson on, in the other pytest worker: the two halves take about as long as one another)."""
    walk_in_one_context(browser, app_url, app_log_tail, first_half(walk_order()))
