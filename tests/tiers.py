"""The test tiers: which tests `make test-fast` leaves out, and why (docs/testing.md). tests/conftest.py marks each
collected test with tier_marks(item) before pytest's -m selection."""

# A test that uses one of these fixtures gets the mark (training_sessions: runs train in child processes).
FIXTURE_MARKS = {"browser": "browser", "app_url": "app", "class_url": "app", "training_sessions": "slow"}
# Where no fixture tells: {module: {test name: marks}}.
NAMED_MARKS = {
    "test_lifecycle.py": {"test_a_signal_to_the_app_ends_the_forkserver_and_every_training_child": {"app"}},
    "test_sae_client.py": {"test_sigterm_ends_an_sae_training_child_with_the_app": {"app"}},
}
# Slow: {module: its tests that took a quarter of a second or more each on a quiet 2-core machine (start-up and
# collection take 20 s of the fast tier's minute), or "*" for all of them}. Measure with
# `pytest -m "not browser and not app and not pretrained and not slow" --durations=30`; a module-scoped fixture's
# cost lands on the module's first test, and moves to the next one when that test is marked.
SLOW = {
    "test_ablation.py": {
        "test_generation_is_identical_when_nothing_is_ablated_and_differs_when_much_is",
        "test_head_ablation_replaces_only_that_head_and_nothing_before_its_layer",
        "test_importance_map_equals_ablating_one_unit_at_a_time",
        "test_mean_ablation_of_a_constant_head_changes_nothing",
        "test_running_from_a_layer_equals_the_full_forward_pass",
    },
    "test_analysis.py": {"test_model_pca_helpers_cover_the_seed_panels", "test_pca_finds_the_dominant_direction"},
    "test_answers.py": {"test_threads_can_record_at_once"},
    "test_api_names.py": "*",
    "test_app_callbacks.py": {
        "test_attention_view_outputs",
        "test_comparison_has_one_column_per_row",
        "test_embeddings_view_outputs_2d_and_3d",
        "test_every_model_sized_slider_is_resized_when_the_model_changes",
        "test_ffn_view_outputs",
        "test_steps_view_running_logprob",
        "test_choices_vocabulary_is_the_prepared_tokenizers",
        "test_size_line_counts_the_vocabulary_start_uses",
        "test_a_pretrained_models_first_open_is_announced_by_every_way_in",
        "test_param_count_view",
        "test_size_line_of_the_classroom_preset_after_a_big_vocabulary",
    },
    "test_architecture_options.py": {"test_the_shipped_classic_model_still_loads", "test_embeddings_view_explains_missing_position_vectors"},
    "test_attribution.py": {"test_the_parts_sum_to_the_logit"},
    "test_attribution_callbacks.py": "*",
    "test_bench_classroom.py": {"test_own_models_are_seeded_loadable_uploads_with_answers_of_their_own"},
    "test_bench_runner.py": {"test_a_module_benchmark_runs_in_an_interpreter_of_its_own"},
    "test_bench_shapes.py": {
        "test_a_fixed_step_budget_gives_the_same_loss_every_time",
        "test_budgets_are_the_steps_in_the_references_time",
    },
    "test_chat_template_budget.py": {"test_each_attack_ends_with_a_sentence_in_bounded_memory"},
    "test_checkpoint.py": "*",
    "test_circuits.py": {
        "test_scores_equal_transformer_lens_on_the_shipped_models",
        "test_scores_equal_transformer_lens_with_gqa_and_each_norm",
    },
    "test_circuits_callbacks.py": {
        "test_composition_view_draws_every_pair_and_names_the_strongest",
        "test_the_grokking_lab_reads_a_modular_addition_model",
    },
    "test_class_limits.py": {
        "test_a_locked_answers_file_loses_no_answer_and_the_teacher_page_still_answers",
        "test_a_taken_name_gets_a_suffix_whatever_its_case_spacing_or_invisible_characters",
        "test_nobody_can_pass_for_the_teacher_or_a_nameless_row",
        "test_two_students_in_the_room_never_show_the_same_name",
    },
    "test_classroom.py": {
        "test_a_copy_token_works_once_and_expires",
        "test_broadcast_numbers_pushes_and_keeps_the_newest",
        "test_only_the_key_opens_the_gate_and_wrong_keys_wait_longer_each_time",
        "test_pushes_are_checked_before_they_go",
        "test_the_teacher_opens_a_copy_the_student_never_sees_change",
    },
    "test_compare_batched.py": "*",
    "test_config_cache.py": "*",
    "test_convert.py": {"test_converted_model_gives_the_original_logits", "test_untied_lm_head_is_kept"},
    "test_corpora.py": {"test_every_corpus_loads", "test_shakespeare_full_holds_every_play_and_is_cached", "test_names_are_lowercase_one_per_line_unique", "test_shakespeare_is_tiny_shakespeare_format"},
    "test_ddp.py": {"test_two_gloo_processes_match_one_process"},
    "test_eviction.py": {"test_any_number_of_fresh_api_sessions_never_push_out_a_page_with_work"},
    "test_experiments_callbacks.py": {
        "test_a_copy_of_the_inspected_model_scores_the_same_and_stays_frozen",
        "test_ablation_view_shows_both_columns_and_numbers_from_the_same_run",
        "test_attention_grids_show_both_models_patterns_and_name_the_head_that_differs_most",
        "test_char_and_bpe_models_are_compared_in_bits_per_character",
        "test_importance_view_names_the_head_with_the_largest_increase",
        "test_importance_view_of_an_attention_only_model_has_only_the_heatmap",
        "test_model_b_that_cannot_read_the_prompt_gets_a_message",
        "test_same_seed_gives_the_same_continuations",
        "test_zero_and_mean_ablation_give_different_validation_losses",
    },
    "test_fair_training.py": "*",
    "test_features.py": {
        "test_a_sparse_signal_is_decomposed_into_its_true_directions",
        "test_decoder_rows_stay_unit_norm_and_topk_keeps_k_features",
        "test_relu_l1_sae_is_sparser_with_a_larger_coefficient",
    },
    "test_features_callbacks.py": {
        "test_an_uploaded_sae_replaces_the_shipped_one_until_the_model_changes",
        "test_feature_minus_one_is_the_strongest_at_the_chosen_token",
        "test_listing_by_activation_is_the_active_features_at_the_token_strongest_first",
        "test_listing_by_density_is_densest_first",
        "test_steering_at_zero_strength_gives_the_same_text_twice",
    },
    "test_figures.py": {"test_plain_figures_are_what_plotly_would_send"},
    "test_generation_paths.py": {
        "test_a_cancelled_choice_stops_between_two_steps_and_changes_nothing",
        "test_greedy_answers_of_a_batch_equal_each_prompt_alone_and_stop_after_the_stop_token",
        "test_picking_paths_makes_every_copy_generate_with_them_one_row_and_compares_rows_each_their_own",
        "test_the_chooser_rejects_a_faster_path_whose_answers_differ_and_keeps_one_that_agrees",
    },
    "test_generation_twin.py": {
        "test_a_frozen_model_generates_greedily_as_its_float32_modules_do",
        "test_each_paths_step_computes_what_the_model_extends",
    },
    "test_gguf_convert.py": "*",
    "test_heads_callbacks.py": {
        "test_film_strip_and_role_scores_over_training",
        "test_report_card_has_one_row_per_head_and_a_role_map",
    },
    "test_hf_convert.py": {
        "test_checkpoint_round_trip_keeps_the_logits",
        "test_cli_writes_a_checkpoint_and_a_summary",
        "test_config_options_are_read",
        "test_kv_cache_path_equals_the_full_forward",
        "test_logits_equal_transformers",
    },
    "test_hostile_files.py": "*",
    "test_http_guard.py": {"test_unknown_api_name_is_a_404_naming_it", "test_unknown_fn_index_is_a_404"},
    "test_sae_client.py": "*",
    "test_sae_run.py": "*",
    "test_task_presets.py": {"test_the_train_tab_and_the_command_line_train_the_same_run"},
    "test_induction_training.py": "*",
    "test_kv_cache.py": {"test_cached_generation_draws_the_uncached_tokens_past_block_size", "test_batched_compare_equals_each_setting_alone_and_the_uncached_compare"},
    "test_layers.py": {
        "test_imports_only_run_down_the_layers",
        "test_layers_keep_out_of_forbidden_packages",
        "test_no_import_cycles",
        "test_no_test_module_imports_another",
    },
    "test_lesson_claims.py": {
        "test_feature_claims_measure_what_the_ffn_and_features_tabs_show",
        "test_shipped_lesson_claims_hold",
        "test_the_checker_measures_each_claim_on_the_steps_model",
    },
    "test_lessons.py": {
        "test_a_step_presses_only_the_buttons_the_tabs_register",
        "test_a_step_that_presses_split_redraws_the_split_for_its_answer",
        "test_settings_are_checked_against_the_apps_controls",
        "test_shipped_lessons_are_valid",
    },
    "test_lifecycle.py": {
        "test_requests_wait_for_the_warm_up_and_then_run",
        "test_shared_figures_are_stored_as_gradio_would_send_them",
        "test_shipped_model_results_are_shared_but_a_trained_model_never_sees_them",
    },
    "test_links.py": {
        "test_a_link_opens_the_named_shipped_model_before_checking_layers",
        "test_a_link_without_a_model_keeps_the_session_model",
        "test_gradios_own_parameters_are_left_to_gradio",
        "test_selected_view_runs_only_the_selected_tab",
    },
    "test_memory.py": {
        "test_a_closed_script_session_and_a_released_page_free_their_models",
        "test_an_evicted_session_frees_its_model_at_once",
    },
    "test_model.py": {"test_seed_architectures_run_and_learn"},
    "test_model_caches.py": "*",
    "test_muon.py": {
        "test_each_group_follows_the_schedule_from_its_own_peak",
        "test_muon_learns_the_tiny_corpus",
        "test_newton_schulz_steps_reach_muon_and_change_its_update",
    },
    "test_patching.py": "*",
    "test_precision.py": {"test_bf16_autocast_trains_close_to_fp32"},
    "test_readable_figures.py": {"test_every_category_axis_of_every_figure_labels_its_categories_itself"},
    "test_remote.py": "*",
    "test_roles.py": {
        "test_head_report_on_a_tiny_model",
        "test_snapshots_track_induction_on_a_repeated_probe",
        "test_the_shipped_induction_model_has_an_induction_head_in_layer_1",
    },
    "test_sampling.py": {
        "test_compare_metrics_are_recomputed_from_the_model",
        "test_compare_uses_the_same_seed_for_every_setting",
        "test_each_row_draws_what_torch_multinomial_draws_with_its_own_generator",
        "test_generation_is_seeded_and_cropped_to_block_size",
        "test_greedy_generation_follows_the_argmax",
    },
    "test_sampling_workers.py": "*",
    "test_seeds.py": {
        "test_every_preset_fits_the_train_tab_controls",
        "test_seed_001_size_is_explained_not_trained",
        "test_seed_004_post_norm_sinusoidal_bpe_trains_in_the_app",
        "test_statquest_from_the_command_line",
        "test_statquest_lesson_in_the_app",
        "test_statquest_preset_learns_awesome_eos",
        "test_untrained_walkthrough_model_shows_on_every_analysis_tab",
    },
    "test_session_sharing.py": {"test_a_session_changing_its_copy_leaves_the_shared_model_alone"},
    "test_snapshot_weights.py": {"test_a_run_keeps_a_few_snapshot_weights_and_step_0_is_the_untrained_model"},
    "test_startup.py": {"test_page_builds_without_torch_and_every_lazy_callback_resolves"},
    "test_tasks.py": {
        "test_accuracy_curves_are_measured_on_pairs_never_trained_on",
        "test_the_prompt_format_in_a_checkpoint_scores_the_model_on_every_pair",
    },
    "test_teacher_routes.py": {"test_the_answers_say_which_are_right"},
    "test_tokenization.py": {
        "test_bpe_encodes_shakespeare_in_bounded_pieces_exactly",
        "test_refusing_a_text_of_unique_words_keeps_memory_bounded",
    },
    "test_tokenizer_json.py": {"test_random_changes_within_the_checks_never_panic_the_library"},
    "test_top_examples.py": {"test_the_best_activation_equals_a_brute_force_maximum_over_the_split"},
    "test_train_cli.py": "*",
    "test_train_progress.py": {
        "test_a_fresh_evaluation_carries_no_step_of_its_own",
        "test_the_status_names_the_step_of_the_evaluation_it_shows",
    },
    "test_trainer.py": {
        "test_before_work_runs_before_every_step_and_evaluation_batch_on_the_training_thread",
        "test_dropout_runs_are_reproducible_too",
        "test_each_evaluation_brings_a_snapshot_with_its_losses",
        "test_evaluate_restores_train_mode",
        "test_loss_decreases_on_a_tiny_corpus",
        "test_max_seconds_stops_early",
        "test_nan_loss_stops_with_the_step",
        "test_no_hooks_left_attached_after_training_with_snapshots",
        "test_pause_resume_stop_from_another_thread",
        "test_probe_text_is_used",
        "test_same_seed_same_losses",
        "test_snapshots_are_small_and_round_trip",
        "test_zero_intervals_mean_pure_training",
    },
    "test_upload_limits.py": {
        "test_a_header_claiming_a_huge_tensor_is_refused_without_reading_it",
        "test_a_member_inflating_past_its_header_is_refused_within_bounded_memory",
        "test_every_snapshot_field_is_checked_with_a_sentence",
        "test_snapshots_that_do_not_fit_the_model_are_refused",
    },
    "test_val_fraction.py": {"test_cli_trains_a_one_sentence_corpus_with_val_fraction_0"},
    "test_view_params.py": {
        "test_each_parameter_sets_its_control_and_nothing_else",
        "test_invalid_or_unknown_values_are_dropped_with_a_note",
        "test_the_analysis_controls_are_registered",
    },
    "test_work_budget.py": {
        "test_the_callbacks_refuse_over_the_limit_before_any_work",
        "test_the_importance_map_and_the_examples_shrink_to_the_limit_instead",
        "test_the_lessons_patching_pairs_fit",
    },
}


def tier_marks(item) -> set[str]:
    module, name = item.path.name, item.originalname
    slow = SLOW.get(module, ())
    return ({mark for fixture, mark in FIXTURE_MARKS.items() if fixture in item.fixturenames}
            | NAMED_MARKS.get(module, {}).get(name, set()) | ({"slow"} if slow == "*" or name in slow else set()))
