"""The test tiers: which tests `make test-fast` leaves out, and why (docs/testing.md). Nothing here names a test:
a test's marks come from where it lives and what it uses, so a renamed or moved test keeps them.

- `browser`: the module's name ends in `_browser.py`, or the test uses the `browser` fixture.
- `app`: the test uses a launched app (`app_url`, `class_url`), or says `@pytest.mark.app` (it launches its own).
- `pretrained`: `@pytest.mark.pretrained` on the test or its module, or it uses the `smollm2` fixture.
- `slow`: `@pytest.mark.slow` on the test or its module (`pytestmark`, where a module-scoped fixture costs
  seconds: every test that needs it is slow, not only the first one to ask), or it uses `training_sessions`.
`make test` prints the 25 slowest tests (`--durations=25`): a new fast-tier test of a quarter second or more gets
`@pytest.mark.slow` the day it shows there."""

# A test that uses one of these fixtures, directly or through another fixture, gets the mark.
FIXTURE_MARKS = {"browser": "browser", "app_url": "app", "class_url": "app", "smollm2": "pretrained",
                 "training_sessions": "slow"}


def tier_marks(item) -> set[str]:
    marks = {mark for fixture, mark in FIXTURE_MARKS.items() if fixture in item.fixturenames}
    if item.path.name.endswith("_browser.py"):
        marks.add("browser")
    return marks


# ---------------------------------------------------------------- how `make test` spreads the tests over workers

def worker_group(nodeid: str) -> str:
    """The xdist group of the test with this node id: its module (its module-scoped fixtures are built once, in
    one worker)."""
    return nodeid.split("::", 1)[0]


def expected_cost(item) -> int:
    """A rank of how long a test takes: a browser test, then one that launches an app or opens SmolLM2, then a
    slow one; the fast tier last."""
    marks = {mark.name for mark in item.iter_markers()}
    return 3 * ("browser" in marks) + 2 * bool({"app", "pretrained"} & marks) + ("slow" in marks)


def ordered_for_workers(items: list) -> list:
    """The tests, group by group, longest groups first (so no worker is left with a long one at the end), the
    browser groups taking turns with the others: a browser test mostly waits for its app and Chromium, and the
    other worker's computing fills that wait. A group keeps its tests' order."""
    groups: dict = {}
    for item in items:
        groups.setdefault(worker_group(item.nodeid), []).append(item)
    cost = {name: max(expected_cost(item) for item in members) for name, members in groups.items()}
    by_cost = sorted(groups, key=lambda name: -cost[name])
    browser = [name for name in by_cost if cost[name] >= 3]
    others = [name for name in by_cost if cost[name] < 3]
    turns = [name for pair in zip(browser, others) for name in pair]
    turns += browser[len(others):] + others[len(browser):]
    return [item for name in turns for item in groups[name]]
