"""The server's side of a training run, tested by feeding it the child's messages: no process, no waiting. The
one record (RunProgress), what the user asked against what the child confirmed, the session adopting the trained
model on the message that settles it, the idle TTL on a given clock, and the cores' shares."""
import math
from types import SimpleNamespace

import torch

from explorer.callbacks import train
from explorer.common.limits import LIMITS
from explorer.state import training_run
from explorer.state.inspected import Inspected
from explorer.state.session import Session
from explorer.state.training_run import TrainingRun
from model_core.checkpoints.checkpoint import Checkpoint
from model_core.training.child import weights
from model_core.training.run_protocol import (
    Command,
    Confirmed,
    Done,
    Failed,
    RunProgress,
    SetThreads,
    Steps,
    ThreadsRunning,
    Weights,
)
from tests.trainer_helpers import make_job


def step(i: int, seconds: float = 0.1, **extras) -> dict:
    """A step's metrics as the child sends them; elapsed counts training time from the run's start."""
    return {"step": i, "loss": 3.0 - 0.01 * i, "lr": 1e-3, "grad_norm": 1.0, "tokens_per_sec": 100.0,
            "elapsed": seconds * i, **extras}


def filled(model) -> Weights:
    return Weights({k: torch.full_like(v, 0.25).numpy() for k, v in model.state_dict().items()})


def test_steps_fill_the_record_in_order_and_what_is_kept_stays_bounded():
    job = make_job(max_steps=100)
    p = RunProgress(job.model, job.cfg, snapshots_kept=4, samples_kept=2, weight_sets_kept=3)
    w = weights(p.model)
    p.apply(Steps([{"step": 0, "snapshot": SimpleNamespace(step=0), "weights": w}]))
    p.apply(Steps([step(i, snapshot=SimpleNamespace(step=i), sample=f"text {i}", weights=w) for i in range(1, 10)]))
    p.apply(Steps([step(10, eval={"step": 10, "train_loss": 2.0, "val_loss": 2.1})]))
    assert [m["step"] for m in p.history] == list(range(1, 11)) and p.step == 10 and len(p.evals) == 1
    assert set(p.history[0]) == {"step", "loss", "lr", "grad_norm", "tokens_per_sec", "elapsed"}
    kept = [s.step for s in p.snapshots]  # thinned: the first and the newest stay, the rest spread out
    assert len(kept) <= 4 and kept[0] == 0 and kept[-1] == 9 and kept == sorted(kept)
    assert p.samples == [(8, "text 8"), (9, "text 9")]
    steps = [s for s, _ in p.snapshot_weights]
    assert len(steps) <= 3 and steps[0] == 0 and steps[-1] == 9
    assert all(isinstance(v, torch.Tensor) for _, state in p.snapshot_weights for v in state.values())


def test_the_state_is_what_the_child_confirmed_and_the_request_what_the_user_asked():
    job = make_job()
    p = RunProgress(job.model, job.cfg, threads_told=2)
    p.apply(Confirmed("running"))
    p.request(Command.PAUSE, now=5.0)
    assert (p.requested, p.requested_at, p.state) == ("paused", 5.0, "running")  # asked, not yet parked
    p.apply(filled(p.model))
    p.apply(Confirmed("paused"))
    assert p.state == "paused" and all(torch.all(v == 0.25) for v in p.model.state_dict().values())
    for command, now in ((Command.RESUME, 6.0), (Command.STOP, 7.0), (Command.RESUME, 8.0)):
        p.request(command, now)
    assert (p.requested, p.requested_at) == ("stopped", 7.0)  # a stop is final
    p.apply(ThreadsRunning(1))
    assert (p.threads_told, p.threads_running) == (2, 1)
    p.apply(Failed("the loss became nan at step 2"))
    assert (p.state, p.error) == ("error", "the loss became nan at step 2")


def test_the_eta_follows_the_pace_of_the_latest_steps():
    job = make_job(max_steps=100)
    p = RunProgress(job.model, job.cfg)
    assert p.eta_seconds() == math.inf  # no step yet
    p.apply(Steps([step(i, seconds=1.0) for i in range(1, 11)]))  # 1 s per step
    assert math.isclose(p.eta_seconds(), 90 * 1.0)
    p.apply(Steps([{**step(i), "elapsed": 10.0 + 0.1 * (i - 10)} for i in range(11, 41)]))  # then 0.1 s per step
    assert math.isclose(p.eta_seconds(), 60 * 0.1)  # the slow start no longer counts


def untrained_session() -> tuple[Session, TrainingRun, list]:
    """A session, its run (not started: the messages below stand in for its child's) and the commands sent to it."""
    job = make_job(max_steps=100)
    session = Session(Inspected(Checkpoint(make_job(seed=1).model, job.tokenizer), "before"))
    session.workspace.run = TrainingRun(job, "tiny text", adopt=session.inspected.adopter())
    sent = []
    session.workspace.run.remote.commands = SimpleNamespace(send=sent.append)
    return session, session.workspace.run, sent


def test_a_confirmed_pause_hands_the_session_a_copy_before_the_state_says_paused():
    session, run, _ = untrained_session()
    states, adopt = [], run.adopt
    run.adopt = lambda r, final: states.append(r.progress.state) or adopt(r, final)
    for message in (Confirmed("running"), Steps([step(1), step(2), step(3)]), filled(run.progress.model)):
        assert not run.remote.receive(message)
    assert session.inspected.name == "before"  # steps, and polling, never change the inspected model
    run.remote.receive(Confirmed("paused"))
    assert states == ["running"] and run.progress.state == "paused"  # adopted first, then told
    assert session.inspected.name == "trained on tiny text (3 steps)"
    assert session.inspected.model is not run.progress.model
    assert all(torch.all(v == 0.25) for v in session.inspected.model.state_dict().values())
    version = session.inspected.version
    run.remote.receive(Confirmed("running"))
    run.remote.receive(Confirmed("paused"))  # paused again at the same step: nothing new to adopt
    assert session.inspected.version == version and states == ["running"]
    run.remote.receive(Steps([step(4)]))
    assert run.remote.receive(Done("finished"))
    assert session.inspected.name == "trained on tiny text (4 steps)"
    assert session.inspected.held.model is run.progress.model
    assert [m["step"] for m in session.inspected.checkpoint.history] == [1, 2, 3, 4]


def test_a_model_opened_while_the_run_trains_stays_until_the_learner_pauses_the_run(monkeypatch):
    """A lesson (or the learner) opened another model while an earlier run trained: the run's end does not put the
    earlier run's model back in its place; a Pause pressed afterwards does."""
    monkeypatch.setattr(TrainingRun, "active", True)  # as if its child trained (control() refuses an ended run)
    session, run, _ = untrained_session()
    run.remote.receive(Steps([step(1), step(2)]))
    session.inspected.use(Checkpoint(make_job(seed=2).model, run.progress.tokenizer), "a lesson's model")
    run.remote.receive(filled(run.progress.model))
    run.remote.receive(Confirmed("paused"))  # a pause the learner did not ask for since (the lesson's, say)
    assert session.inspected.name == "a lesson's model" and run.adopted == 0
    train.control(session, "resume")
    run.remote.receive(Confirmed("running"))
    assert "Pausing" in train.control(session, "pause")
    run.remote.receive(Steps([step(3)]))
    run.remote.receive(Confirmed("paused"))
    assert session.inspected.name == "trained on tiny text (3 steps)" and run.adopted == 3


def test_a_run_that_ends_after_another_model_opened_says_which_model_the_tabs_kept():
    session, run, _ = untrained_session()
    run.remote.receive(Steps([step(1), step(2)]))
    session.inspected.use(Checkpoint(make_job(seed=2).model, run.progress.tokenizer), "a lesson's model")
    assert run.remote.receive(Done("finished"))
    assert session.inspected.name == "a lesson's model"
    assert "still inspect **a lesson's model**, opened while this run trained" in train.run_status(session)


def test_a_failed_run_is_never_adopted():
    session, run, _ = untrained_session()
    run.remote.receive(Steps([step(1), step(2)]))
    assert run.remote.receive(Failed("the training process ended unexpectedly (exit code -9); start the run again."))
    assert session.inspected.name == "before" and session.inspected.version == 0 and run.progress.state == "error"


def test_an_unwatched_or_long_paused_run_is_stopped_and_its_page_told_why(monkeypatch):
    monkeypatch.setattr(LIMITS, "run_ttl_seconds", 60.0)
    monkeypatch.setattr(TrainingRun, "active", True)  # as if its child trained
    session, run, sent = untrained_session()
    run.progress.apply(Steps([step(i) for i in range(1, 11)]))  # 0.1 s per step, 90 steps to go
    assert math.isclose(run.seconds_left(now=0.0), 9.0)
    run.expire_if_idle(now=run.last_poll + 59.0)
    assert not sent and run.expired is None  # polled within the TTL
    run.expire_if_idle(now=run.last_poll + 61.0)
    assert sent == [Command.STOP] and run.progress.requested == "stopped"
    assert "stopped this run because its page stopped watching it for more than 1 minutes" in train.poll(session)["status"]

    session, run, sent = untrained_session()
    run.control(Command.PAUSE, now=run.last_poll)
    assert run.seconds_left(now=run.last_poll + 10.0) == 50.0
    run.heartbeat()  # the page still polls, but a paused run holds its slot for the TTL only
    run.expire_if_idle(now=run.last_poll + 61.0)
    assert sent == [Command.PAUSE, Command.STOP] and run.expired == "it was paused for more than 1 minutes"


def test_runs_are_told_their_share_of_the_cores_as_they_pause_and_resume(monkeypatch):
    monkeypatch.setattr(training_run, "cores", lambda: 2)
    (_, first, to_first), (_, second, to_second) = untrained_session(), untrained_session()
    monkeypatch.setattr(training_run, "_active", {first, second})
    training_run.rebalance_threads()
    assert first.progress.threads_told == second.progress.threads_told == 1
    second.control(Command.PAUSE)  # a paused run needs no share: the other gets every core
    assert to_first[-1] == SetThreads(2) and to_second[-1] == Command.PAUSE and first.progress.threads_told == 2
    second.control(Command.RESUME)  # told before it resumes: its share, and the other its
    assert to_first[-1] == SetThreads(1) and to_second[-1] == Command.RESUME
