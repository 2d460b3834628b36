"""Light snapshots taken during training: what the model attends to and where its embeddings sit.

A snapshot of the classroom model on a 32-token probe is ~20 kB: attention stored as uint8 (p * 255),
embedding PCA coordinates as float16, head statistics as short float lists."""
import base64
from dataclasses import dataclass, field
from typing import Optional

import numpy as np
import torch

PROBE_MAX_TOKENS = 32  # default probe length: readable attention grids, small snapshots
REPEAT_PROBE_LENGTH = 16  # probe tokens shown twice to track induction heads live (not stored: only scores)
REPEAT_PROBE_BATCH = 4  # random sequences when the probe text is too short to repeat


@dataclass
class Snapshot:
    step: int  # optimisation steps done when it was taken
    train_loss: Optional[float]  # from the evaluation at this step, else this step's batch loss
    val_loss: Optional[float]  # from the evaluation at this step, else None
    probe_ids: list[int]  # the fixed prompt the patterns were computed on
    attention: np.ndarray = field(repr=False)  # [n_layers, n_heads, T, T] uint8, round(p * 255)
    # stat name -> [n_layers, n_heads] float32: head_statistics on the probe, plus "induction" and
    # "duplicate_token" scores on the probe's start shown twice (absent in snapshots older than that)
    head_stats: dict = field(default_factory=dict, repr=False)
    embedding_coords: Optional[np.ndarray] = field(default=None, repr=False)  # [vocab, 2] float16, on 2 PCs
    explained_variance: Optional[np.ndarray] = field(default=None, repr=False)  # [2] variance share per PC
    # the evaluation's progress measures at this step (model_core.analysis.progress: induction, prev_token,
    # k_composition, icl, or a task's accuracies); empty when the step had no evaluation
    progress: dict = field(default_factory=dict, repr=False)

    def pattern(self) -> np.ndarray:
        """Attention back as probabilities in [0, 1]. [n_layers, n_heads, T, T] float32"""
        return self.attention.astype(np.float32) / 255.0

    def to_dict(self) -> dict:
        """JSON-able dict: arrays as {dtype, shape, base64}."""
        return {
            "step": self.step,
            "train_loss": self.train_loss,
            "val_loss": self.val_loss,
            "probe_ids": list(self.probe_ids),
            "attention": array_to_json(self.attention),
            "head_stats": {k: np.round(v.astype(float), 5).tolist() for k, v in self.head_stats.items()},
            "embedding_coords": None if self.embedding_coords is None else array_to_json(self.embedding_coords),
            "explained_variance": None if self.explained_variance is None else self.explained_variance.tolist(),
            "progress": {k: round(float(v), 5) for k, v in self.progress.items() if v is not None},
        }

    @classmethod
    def from_dict(cls, d: dict) -> "Snapshot":
        coords, ratio = d.get("embedding_coords"), d.get("explained_variance")
        return cls(
            step=int(d["step"]),
            train_loss=d.get("train_loss"),
            val_loss=d.get("val_loss"),
            probe_ids=[int(i) for i in d["probe_ids"]],
            attention=array_from_json(d["attention"]),
            head_stats={k: np.asarray(v, dtype=np.float32) for k, v in d.get("head_stats", {}).items()},
            embedding_coords=None if coords is None else array_from_json(coords),
            explained_variance=None if ratio is None else np.asarray(ratio, dtype=np.float32),
            progress=progress_from_json(d.get("progress")),
        )


def progress_from_json(d) -> dict:
    """A snapshot's progress measures {name: float}; TypeError for anything else (a damaged file)."""
    if d is None:
        return {}
    if not isinstance(d, dict) or len(d) > 32:
        raise TypeError("a snapshot's progress is not a dict of at most 32 numbers")
    return {str(k)[:40]: float(v) for k, v in d.items()}


def array_to_json(a: np.ndarray) -> dict:
    a = np.ascontiguousarray(a)
    return {"dtype": str(a.dtype), "shape": list(a.shape), "base64": base64.b64encode(a.tobytes()).decode("ascii")}


def array_from_json(d: dict) -> np.ndarray:
    if d["dtype"] not in ("uint8", "float16", "float32"):
        raise ValueError(f"unsupported snapshot array dtype {d['dtype']!r}")
    raw = base64.b64decode(d["base64"], validate=True)
    return np.frombuffer(raw, dtype=d["dtype"]).reshape(d["shape"]).copy()


@torch.inference_mode()
def attention_pattern(model, probe_ids: list[int]) -> np.ndarray:
    """Attention of every head on the probe. [n_layers, n_heads, T, T] float32"""
    device = next(model.parameters()).device
    idx = torch.tensor([probe_ids], dtype=torch.long, device=device)  # (1, T)
    _, cache = model.run_with_cache(idx, names_filter=lambda n: n.endswith("hook_pattern"))
    return cache.stack("pattern")[:, 0].float().numpy()  # (L, H, T, T)


def embedding_projection(model) -> tuple[Optional[np.ndarray], Optional[np.ndarray]]:
    """Token embedding rows on their top 2 principal components: ([vocab, 2] float16, [2]) or (None, None)."""
    from model_core.analysis import embedding_pca  # scikit-learn import is slow; only pay it when snapshotting

    matrix = model.embed.weight.detach().float().cpu().numpy()
    try:
        result = embedding_pca(matrix, n_components=2)
    except ValueError:  # e.g. a one-token vocabulary
        return None, None
    return result.coords.astype(np.float16), np.asarray(result.explained_variance_ratio, dtype=np.float32)


def repeat_scores_now(model, probe_ids: list[int]) -> dict[str, np.ndarray]:
    """Induction and duplicate-token scores [n_layers, n_heads] on the start of the probe text shown twice
    (real text: a small model copies common tokens long before rare ones); a fixed random sequence shown twice
    when the probe is too short; empty when the block size cannot hold either."""
    from model_core.analysis.probes import ProbeError, RepeatProbe, induction_probe, repeat_probe

    cfg = model.cfg
    n = min(REPEAT_PROBE_LENGTH, cfg.block_size // 2, len(probe_ids))
    if n >= 4:
        segment = torch.tensor([probe_ids[:n]], dtype=torch.long)
        probe = RepeatProbe(torch.cat([segment, segment], dim=1), n, "")
    else:
        try:
            probe = repeat_probe(cfg.vocab_size, cfg.block_size, REPEAT_PROBE_LENGTH, REPEAT_PROBE_BATCH)
        except ProbeError:
            return {}
    probe.ids = probe.ids.to(next(model.parameters()).device)
    scores = induction_probe(model, probe).scores
    return {"induction": scores["induction"].astype(np.float32),
            "duplicate_token": scores["duplicate token"].astype(np.float32)}


def take_snapshot(model, probe_ids: list[int], step: int, train_loss=None, val_loss=None,
                  progress: Optional[dict] = None) -> Snapshot:
    """Snapshot of model (put in eval mode meanwhile, then restored) on probe_ids; progress: the progress
    measures of an evaluation at this step."""
    from model_core.analysis import head_statistics

    was_training = model.training
    model.eval()
    try:
        pattern = attention_pattern(model, probe_ids)
        repeat = repeat_scores_now(model, probe_ids)
        coords, ratio = embedding_projection(model)
    finally:
        model.train(was_training)
    return Snapshot(
        step=step,
        train_loss=train_loss,
        val_loss=val_loss,
        probe_ids=list(probe_ids),
        attention=np.rint(pattern * 255).astype(np.uint8),
        head_stats={**head_statistics(pattern), **repeat},
        embedding_coords=coords,
        explained_variance=ratio,
        progress=dict(progress or {}),
    )
