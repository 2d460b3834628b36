import os

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")

import subprocess
import sys

import pytest

from explorer.state.session import Session
from tests.browser_helpers import ARGS, CHROMIUM, PANEL_STATE, TIMEOUT_MS
from tests.helpers import APP_PIDS, ROOT, free_port, tiny_session, wait_for_app

_SHARED_APP: dict = {}  # the app_url fixture's process and log, for shared_app_alive


# ---------------------------------------------------------------- tiers: `make test-fast` deselects the marked ones

# A test that uses one of these fixtures gets the mark (training_sessions: runs train in child processes).
FIXTURE_MARKS = {"browser": "browser", "app_url": "app", "class_url": "app", "training_sessions": "slow"}
# Where no fixture tells: {module: {test name: marks}}.
NAMED_MARKS = {
    "test_lifecycle.py": {"test_a_signal_to_the_app_ends_the_forkserver_and_every_training_child": {"app"}},
}
# Slow: {module: its tests that take about half a second of CPU or more (pytest --durations and CPU time per test,
# 2 cores), or "*" for all of them}. What is left runs in about a minute (docs/testing.md).
SLOW = {
    "test_ablation.py": {"test_generation_is_identical_when_nothing_is_ablated_and_differs_when_much_is"},
    "test_analysis.py": {"test_pca_finds_the_dominant_direction"},
    "test_api_names.py": {"test_public_endpoints_and_their_parameter_names_are_pinned"},
    "test_app_callbacks.py": {"test_every_model_sized_slider_is_resized_when_the_model_changes"},
    "test_attribution_callbacks.py": {
        "test_every_kind_of_patch_draws_its_grid",
        "test_the_example_pair_restores_the_answer_where_the_prompts_differ",
        "test_the_parts_sum_to_the_logit_and_the_caption_says_so",
    },
    "test_bench_classroom.py": {"test_own_models_are_seeded_loadable_uploads_with_answers_of_their_own"},
    "test_bench_shapes.py": {"test_a_fixed_step_budget_gives_the_same_loss_every_time"},
    "test_checkpoint.py": "*",
    "test_circuits.py": {"test_scores_equal_transformer_lens_on_the_shipped_models"},
    "test_circuits_callbacks.py": {"test_the_grokking_lab_reads_a_modular_addition_model"},
    "test_class_limits.py": {"test_a_taken_name_gets_a_suffix_whatever_its_case_spacing_or_invisible_characters"},
    "test_classroom.py": {"test_only_the_key_opens_the_gate_and_wrong_keys_wait_longer_each_time"},
    "test_compare_batched.py": "*",
    "test_config_cache.py": {"test_config_is_built_once_and_served_identically"},
    "test_corpora.py": {"test_every_corpus_loads"},
    "test_ddp.py": {"test_two_gloo_processes_match_one_process"},
    "test_experiments_callbacks.py": {
        "test_a_copy_of_the_inspected_model_scores_the_same_and_stays_frozen",
        "test_ablation_view_shows_both_columns_and_numbers_from_the_same_run",
        "test_same_seed_gives_the_same_continuations",
        "test_zero_and_mean_ablation_give_different_validation_losses",
    },
    "test_fair_training.py": "*",
    "test_features.py": {"test_a_sparse_signal_is_decomposed_into_its_true_directions"},
    "test_features_callbacks.py": {
        "test_an_uploaded_sae_replaces_the_shipped_one_until_the_model_changes",
        "test_steering_at_zero_strength_gives_the_same_text_twice",
    },
    "test_generation_paths.py": {
        "test_greedy_answers_of_a_batch_equal_each_prompt_alone_and_stop_after_the_stop_token",
        "test_picking_paths_makes_every_copy_generate_with_them_one_row_and_compares_rows_each_their_own",
        "test_the_chooser_rejects_a_faster_path_whose_answers_differ_and_keeps_one_that_agrees",
    },
    "test_hf_convert.py": {"test_cli_writes_a_checkpoint_and_a_summary", "test_logits_equal_transformers"},
    "test_hostile_files.py": {"test_the_loading_process_survives_every_case"},
    "test_induction_training.py": {"test_a_layer_1_head_becomes_an_induction_head"},
    "test_layers.py": {"test_imports_only_run_down_the_layers", "test_no_import_cycles"},
    "test_lesson_claims.py": {
        "test_shipped_lesson_claims_hold",
        "test_the_checker_measures_each_claim_on_the_steps_model",
    },
    "test_lessons.py": {"test_settings_are_checked_against_the_apps_controls"},
    "test_links.py": {
        "test_a_link_opens_the_named_shipped_model_before_checking_layers",
        "test_selected_view_runs_only_the_selected_tab",
    },
    "test_memory.py": {
        "test_a_closed_script_session_and_a_released_page_free_their_models",
        "test_an_evicted_session_frees_its_model_at_once",
    },
    "test_model.py": {"test_seed_architectures_run_and_learn"},
    "test_patching.py": {"test_a_heads_sweep_equals_running_with_a_hook_that_swaps_it"},
    "test_precision.py": {"test_bf16_autocast_trains_close_to_fp32"},
    "test_remote.py": "*",
    "test_roles.py": {"test_the_shipped_induction_model_has_an_induction_head_in_layer_1"},
    "test_sampling.py": {
        "test_compare_metrics_are_recomputed_from_the_model",
        "test_generation_is_seeded_and_cropped_to_block_size",
    },
    "test_sampling_workers.py": "*",
    "test_seeds.py": {
        "test_every_preset_fits_the_train_tab_controls",
        "test_seed_004_post_norm_sinusoidal_bpe_trains_in_the_app",
        "test_statquest_from_the_command_line",
        "test_statquest_lesson_in_the_app",
        "test_statquest_preset_learns_awesome_eos",
        "test_untrained_walkthrough_model_shows_on_every_analysis_tab",
    },
    "test_snapshot_weights.py": {"test_a_run_keeps_a_few_snapshot_weights_and_step_0_is_the_untrained_model"},
    "test_startup.py": {"test_page_builds_without_torch_and_every_lazy_callback_resolves"},
    "test_tasks.py": {
        "test_accuracy_curves_are_measured_on_pairs_never_trained_on",
        "test_the_prompt_format_in_a_checkpoint_scores_the_model_on_every_pair",
    },
    "test_tokenization.py": {
        "test_bpe_encodes_shakespeare_in_bounded_pieces_exactly",
        "test_refusing_a_text_of_unique_words_keeps_memory_bounded",
    },
    "test_train_cli.py": {"test_sample_prints_text", "test_train_prints_one_json_line_and_saves_a_loadable_model"},
    "test_train_progress.py": {
        "test_a_fresh_evaluation_carries_no_step_of_its_own",
        "test_the_status_names_the_step_of_the_evaluation_it_shows",
    },
    "test_trainer.py": {
        "test_before_work_runs_before_every_step_and_evaluation_batch_on_the_training_thread",
        "test_dropout_runs_are_reproducible_too",
        "test_each_evaluation_brings_a_snapshot_with_its_losses",
        "test_loss_decreases_on_a_tiny_corpus",
        "test_max_seconds_stops_early",
        "test_pause_resume_stop_from_another_thread",
        "test_same_seed_same_losses",
        "test_snapshots_are_small_and_round_trip",
    },
    "test_view_params.py": {"test_the_analysis_controls_are_registered"},
    "test_work_budget.py": {"test_the_importance_map_and_the_examples_shrink_to_the_limit_instead"},
}


def tier_marks(item) -> set[str]:
    module, name = item.path.name, item.originalname
    slow = SLOW.get(module, ())
    return ({mark for fixture, mark in FIXTURE_MARKS.items() if fixture in item.fixturenames}
            | NAMED_MARKS.get(module, {}).get(name, set()) | ({"slow"} if slow == "*" or name in slow else set()))


def pytest_collection_modifyitems(config, items):
    """Runs before pytest's own -m selection (a conftest's hook is called first), so these marks select."""
    for item in items:
        for mark in tier_marks(item):
            item.add_marker(mark)
    if not any("::" in arg for arg in config.args):  # whole modules collected: every named test must exist
        collected = {(item.path.name, item.originalname) for item in items}
        named = [(module, name) for table in (NAMED_MARKS, SLOW) for module, names in table.items()
                 if names != "*" for name in names]
        missing = [f"{module}::{name}" for module, name in named
                   if any(m == module for m, _ in collected) and (module, name) not in collected]
        if missing:
            raise pytest.UsageError(f"tests/conftest.py marks tests that do not exist: {', '.join(missing)}")


# ---------------------------------------------------------------- the launched app

@pytest.fixture(scope="session")
def app_url(tmp_path_factory):
    """The real app (python app.py) on a free localhost port, for client and browser tests; its log on failure."""
    port = free_port()
    log_path = tmp_path_factory.mktemp("app") / "app.log"
    env = {**os.environ, "GRADIO_ANALYTICS_ENABLED": "False", "HF_HUB_DISABLE_TELEMETRY": "1",
           "PYTHONUNBUFFERED": "1"}
    with open(log_path, "w") as log:
        proc = subprocess.Popen([sys.executable, "app.py", "--port", str(port), "--max-trainers", "2"],
                                cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/"
    APP_PIDS[url] = proc.pid
    _SHARED_APP.update(proc=proc, log=log_path)
    try:
        wait_for_app(port, proc)
    except Exception:
        proc.kill()
        raise RuntimeError(f"{log_path.read_text()[-3000:]}") from None
    yield url
    proc.terminate()
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@pytest.fixture(autouse=True)
def shared_app_alive(request):
    """A test that used the shared app fails with the app's exit code and log if the app has gone, instead of
    every later test failing to connect with no word of why."""
    yield
    proc = _SHARED_APP.get("proc")
    if "app_url" in request.fixturenames and proc is not None and proc.poll() is not None:
        pytest.fail(f"the shared app exited with code {proc.returncode}; the end of its log:\n"
                    f"{_SHARED_APP['log'].read_text()[-4000:]}", pytrace=False)


# ---------------------------------------------------------------- sessions

@pytest.fixture
def training_sessions():
    """Sessions whose runs are stopped and joined after the test, so no thread outlives it."""
    made = []

    def make(seed: int = 0) -> Session:
        made.append(tiny_session(seed))
        return made[-1]

    yield make
    for s in made:
        s.stop_training()
        if s.run is not None:
            s.run.thread.join(timeout=30)
            assert not s.run.active, "a training thread did not stop"


@pytest.fixture
def one_thread():
    """Torch on one thread for the test: a tiny model gains nothing from more, and on a busy machine they only
    wait for each other."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


# ---------------------------------------------------------------- headless Chromium

@pytest.fixture(scope="module")
def browser():
    if not CHROMIUM.exists():
        pytest.skip(f"browser tests need Debian's Chromium at {CHROMIUM} (apt-get install chromium)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright Python package is not installed")
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        yield browser
        browser.close()


@pytest.fixture
def page(browser, app_url):
    """A fresh browser context (so a fresh server-side session) on the app, after the first analysis drew."""
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    page.goto(app_url)
    page.wait_for_function(f"() => ({PANEL_STATE})().plots >= 4")  # the Attention tab analyses on load
    yield page
    context.close()
