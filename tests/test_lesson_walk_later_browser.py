"""The second half of the lesson walk (tests/test_lesson_walk_browser.py says what is checked): a module of its own so
that the other pytest worker walks it while the first half runs. It starts from the first half's last lesson, so
every lesson of the walk opens from the end of the one before it."""
import pytest

from tests.lesson_walk import second_half, walk_in_one_context, walk_order

pytestmark = [pytest.mark.browser, pytest.mark.pretrained, pytest.mark.timeout(3600)]


def test_walk_the_second_half_of_the_lessons_one_after_another(browser, app_url, app_log_tail):
    walk_in_one_context(browser, app_url, app_log_tail, second_half(walk_order()))
