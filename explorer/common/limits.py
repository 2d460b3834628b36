"""Caps on what one user may start, settable from the launch flags."""
from dataclasses import dataclass


@dataclass
class Limits:
    max_params: int = 5_000_000  # largest model a user may train (parameters)
    max_steps: int = 20_000  # longest training run (optimisation steps)
    max_upload_mb: float = 20.0  # largest text or checkpoint upload
    max_trainers: int = 2  # training runs at once on this server (they share the CPU)
    max_sessions: int = 64  # browser sessions kept in memory; the least recently used is dropped
    max_new_tokens: int = 500  # longest generation
    run_ttl_seconds: float = 300.0  # a run paused, or not watched by its page, this long is stopped
    session_data_mb: float = 48.0  # a session's prepared training data (token ids) at most
    analysis_workers: int = 2  # analysis requests served at once (app.py --analysis-workers)
    generation_workers: int = 2  # processes that run Compare (app.py --generation-workers; 0: in the server)
    resume_ttl_seconds: float = 600.0  # a closed or reloaded page's session is kept this long for its return
    snapshots_kept: int = 60  # training snapshots a session keeps (spread over the run)
    # the most work one heavy analysis may ask for (patching, ablation, importance map, whole-text examples), in
    # billions of operations (model_core.analysis.cost), checked before it starts
    max_heavy_gops: float = 600.0
    max_sae_minutes: float = 10.0  # longest SAE training run in the app, estimated before it starts (features.budget)

    @property
    def max_upload_bytes(self) -> int:
        return int(self.max_upload_mb * 1_000_000)


LIMITS = Limits()  # app.py replaces the fields from its flags before building the UI
