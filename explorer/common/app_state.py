"""App-wide settings chosen at launch (the launch flags: explorer.server.launch)."""
import threading

from explorer.common.shipped_list import DEFAULT_MODEL

WARM_UP_WAIT_SECONDS = 30.0  # the longest a request waits for the warm-up (3 s idle here; then it runs anyway)

default_model = DEFAULT_MODEL
single_user = False  # --single-user: a JupyterHub student's own server (docs/deploying.md)
# Lessons are read checked against the app's controls; the hub service, which has no controls, reads the shipped
# lessons (checked by every app that starts) as written
lesson_checks = True
lesson_file = None  # --lesson FILE: a lesson file every new page opens on step 1 (checked at start-up)
# Set once the launched app's warm-up has imported what requests use (set from the start outside a launched app).
# Requests wait for it: two threads importing the same modules at once can fail ("deadlock detected by
# _ModuleLock('narwhals.stable.v2')", seen in a test run: a request's first plotly import beside the warm-up's).
warmed_up = threading.Event()
warmed_up.set()


def wait_for_warm_up() -> None:
    warmed_up.wait(WARM_UP_WAIT_SECONDS)
