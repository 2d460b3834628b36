"""Named starting points: model size plus training settings that suit it."""
from dataclasses import dataclass, field

from model_core.data.tasks.choices import GROKKING_TASK, REPEATS_TASK
from model_core.model.config import ConfigError, GPTConfig
from model_core.training.train_config import TrainConfig


@dataclass(frozen=True)
class Preset:
    name: str
    description: str
    model: dict = field(default_factory=dict)  # GPTConfig fields (vocab_size comes from the tokenizer)
    train: dict = field(default_factory=dict)  # TrainConfig fields
    # The data the preset was made for, when it matters (corpus, tokenizer, val_fraction): a seed's own text.
    data: dict = field(default_factory=dict)

    def model_config(self, vocab_size: int, **overrides) -> GPTConfig:
        """The preset's GPTConfig for a vocabulary, with any field overridden (None means keep). A preset's
        FFN width belongs to its d_model: with another d_model and no d_mlp given, the width is automatic."""
        model, given = dict(self.model), _given(overrides)
        if given.get("d_model", model.get("d_model")) != model.get("d_model") and "d_mlp" not in given:
            model.pop("d_mlp", None)
        return GPTConfig(**{**model, **given, "vocab_size": vocab_size})

    def train_config(self, **overrides) -> TrainConfig:
        return TrainConfig(**{**self.train, **_given(overrides)})


# Of the speedrun records' choices, what pays in ~100 s on a 2-core CPU (bench.train --vs-reference --ablation):
# rotary positions, and Muon for the blocks' matrices. QK-norm and relu² are options, not defaults: at this
# budget each costs steps (~10 %) and neither bought a lower loss (docs/training.md, the nanoGPT race).
# The classroom preset is also smaller than nanoGPT's model: in a fixed minute more steps beat more width.
FAST_ARCH = dict(positional="rope")
# Nanda et al.'s modular-addition transformer: one layer, no norm, learned positions, untied, ReLU.
# Their initialisation too (every matrix N(0, 1/d_model)): from GPT-2's smaller start the model generalises with
# its training accuracy and never cleans its embedding up to a few frequencies (docs/circuits.md).
GROKKING_MODEL = dict(n_layers=1, n_heads=4, d_model=128, d_mlp=512, block_size=3, activation="relu", norm="none",
                      tie_weights=False, init="1/sqrt(d_model)")
# Full batch (the Train tab and the command line both set the batch to the training set, FULL_BATCH_TASKS), no
# clipping (clip 1.0 left 16-21 frequencies in the embedding), weight decay on the embeddings too (as Nanda et al.:
# undecayed, the embedding keeps 16-24 frequencies): without weight decay the model memorises and never
# generalises. lr 1e-2 and weight decay 2.0 (Nanda et al.: 1e-3 and 1.0) make the grokking fit in a few minutes:
# at weight decay 1.0 some seeds (1337 among them) had not generalised by step 3,000 (bench.grokking,
# docs/circuits.md). The rest are Train-tab controls or their defaults (cosine to lr / 10, betas (0.9, 0.99), seed
# 1337), so the Train tab and the command line run the same thing (tests/test_task_presets.py).
GROKKING_TRAIN = dict(batch_size=4096, lr=1e-2, warmup_steps=10, weight_decay=2.0, decay_embeddings=True,
                      grad_clip=0.0, max_steps=3000, eval_interval=100, eval_iters=1, snapshot_interval=100)
# The induction-phase recipe (bench.induction_phase, docs/circuits.md): small and narrow so the run takes seconds,
# rotary positions (a previous-token head needs only a relative offset), untied embeddings. Its training settings
# are all Train-tab controls (the cosine's floor, the betas and the seed are the defaults), so the Train tab and
# the command line run the same thing (tests/test_task_presets.py).
INDUCTION_MODEL = dict(n_layers=2, n_heads=2, d_model=32, block_size=32, attn_only=True, positional="rope",
                       tie_weights=False)
INDUCTION_TRAIN = dict(batch_size=64, lr=3e-3, warmup_steps=20, max_steps=1500, eval_interval=25, eval_iters=10,
                       snapshot_interval=25)

PRESETS = {
    p.name: p
    for p in (
        Preset(
            "classroom", "3 layers x 4 heads, d_model 128, FFN 256, 64-token context, the fast design (rotary "
            "positions, Muon for the blocks' matrices): trains on a laptop CPU in minutes.",
            model=dict(n_layers=3, n_heads=4, d_model=128, d_mlp=256, block_size=64, **FAST_ARCH),
            # Sized for the nanoGPT recipe's wall time (~80-110 s here; bench.train --vs-reference, docs/training.md:
            # Training): at equal time, fixed-step runs gave 1.604 for this shape against 1.664 for 4 layers with
            # FFN 512 (more, cheaper steps win). Batch 24, muon_lr 0.03 and 3 Newton-Schulz steps did no better.
            train=dict(batch_size=32, lr=1.2e-2, min_lr=1e-4, warmup_steps=50, max_steps=1200, eval_interval=200,
                       eval_iters=10, snapshot_interval=100, optimizer="muon", muon_lr=0.02),
        ),
        Preset(
            "gpt2-classic", "4 layers x 4 heads, d_model 128, 64-token context, the GPT-2 design (learned positions, "
            "GELU, AdamW): the shipped Shakespeare model's design, to compare with 'classroom'.",
            model=dict(n_layers=4, n_heads=4, d_model=128, block_size=64),
            # Tuned for 90 s on a 2-core CPU: the cosine ends at max_steps (~90 s at ~14 steps/s) or at
            # --max-seconds, whichever comes first; cheap evals along the way. In 90-s runs (bench.train)
            # batch 32 / lr 1.2e-2 reached val 1.731 and 1.732, batch 16 / lr 1e-2 1.754, batch 24 1.79,
            # batch 48 / lr 1.5e-2 1.78, batch 32 / lr 1.5e-2 1.76.
            train=dict(batch_size=32, lr=1.2e-2, min_lr=1e-4, warmup_steps=50, max_steps=1200, eval_interval=200,
                       eval_iters=10, snapshot_interval=100),
        ),
        Preset(
            "names", "2 layers x 4 heads, d_model 64, 16-token context: for one-name-a-line corpora.",
            model=dict(n_layers=2, n_heads=4, d_model=64, block_size=16),
            train=dict(batch_size=64, lr=5e-3, warmup_steps=50, max_steps=2000, eval_interval=200,
                       eval_iters=20, snapshot_interval=200),
        ),
        Preset(
            "seed-001", "8 layers x 8 heads, d_model 512, 256-token context (seed 001's size, ~25M parameters): "
            "needs a GPU; on a CPU use 'classroom'.",
            # Reference: seed 001 reports loss 1.55 at step 500 on Tiny Shakespeare with this shape (batch 128,
            # lr 3e-4, 3000 iterations); on a GPU add --precision bf16 (and --compile).
            # The seed's FFN is GPT-2's 4 x d_model (the Train tab's FFN width 4), written out as the lesson says it.
            model=dict(n_layers=8, n_heads=8, d_model=512, d_mlp=2048, block_size=256, dropout=0.2),
            train=dict(batch_size=128, lr=3e-4, warmup_steps=200, max_steps=3000, eval_interval=500,
                       eval_iters=50, snapshot_interval=500),
            data=dict(corpus="shakespeare", tokenizer="char"),
        ),
        Preset(
            "statquest", "Seed 002 (StatQuest): 1 layer, 1 head, d_model 2, sinusoidal positions, no norm, no FFN, "
            "5-token context; trains on its two sentences in about 8 s on two idle cores.",
            model=dict(n_layers=1, n_heads=1, d_model=2, block_size=5, positional="sinusoidal", norm="none",
                       attn_only=True, tie_weights=False),
            # Adam at lr 0.1 as in the seed. Greedy generation after "what is statquest <EOS>" gave "awesome <EOS>"
            # for 39 of 40 seeds (0-39) with these settings, and for the default seed 1337 (tests/test_seeds.py).
            train=dict(batch_size=8, lr=0.1, warmup_steps=0, weight_decay=0.0, max_steps=300, eval_interval=50,
                       eval_iters=2, snapshot_interval=50),
            data=dict(corpus="toy-words", tokenizer="word", val_fraction=0.0),
        ),
        Preset(
            "seed-003", "Seed 003's baby-name GPT: 2 layers x 4 heads, d_model 32, 16-token context, RMSNorm, "
            "SwiGLU, tied weights, AdamW (betas 0.9, 0.95).",
            model=dict(n_layers=2, n_heads=4, d_model=32, block_size=16, norm="rmsnorm", activation="swiglu"),
            # The seed trains 10,000 steps at lr 3e-4 to loss 1.83; lr 3e-3 gets there in a fifth of the steps.
            train=dict(batch_size=64, lr=3e-3, warmup_steps=50, max_steps=2000, eval_interval=200, eval_iters=20,
                       snapshot_interval=200, betas=(0.9, 0.95)),
            data=dict(corpus="first-names", tokenizer="char"),
        ),
        Preset(
            "seed-003-walkthrough", "Seed 003's NumPy walk-through model: 2 layers x 4 heads, d_model 16, "
            "LayerNorm, GELU, 28-token context: inspect it untrained on 'Welcome to the world of AI'.",
            model=dict(n_layers=2, n_heads=4, d_model=16, block_size=28),
            train=dict(batch_size=4, lr=1e-2, warmup_steps=0, max_steps=200, eval_interval=50, eval_iters=2,
                       snapshot_interval=50),
            data=dict(corpus="welcome", tokenizer="char", val_fraction=0.0),
        ),
        Preset(
            "seed-004", "Seed 004's 2017-paper block: post-norm LayerNorm, sinusoidal positions, ReLU, dropout "
            "0.1, d_model 6 with 2 heads, 10-token context, on BPE tokens.",
            # The seed's FFN is 12 wide (2 x d_model); here it is the usual 4 x d_model, which the app also builds.
            model=dict(n_layers=1, n_heads=2, d_model=6, block_size=10, norm_placement="post",
                       positional="sinusoidal", activation="relu", dropout=0.1, tie_weights=False),
            train=dict(batch_size=32, lr=1e-2, warmup_steps=50, max_steps=1000, eval_interval=200, eval_iters=10,
                       snapshot_interval=100),
            data=dict(corpus="shakespeare", tokenizer="bpe", bpe_vocab=512),
        ),
        Preset(
            "induction-phase", "2 attention-only layers x 2 heads, d_model 32, rotary positions, 32-token context, "
            "on 64 random tokens cut into segments of 8-24, each shown three times: the loss sits on a plateau near "
            "log 64 = 4.16 for about 400 steps, then within about 150 steps an induction head forms (its score "
            "jumps from under 0.3 to over 0.9) and the in-context-learning score falls by more than 1 nat: the "
            "induction-head phase change of Olsson et al. 2022. 1,500 steps: 29 s in the Train tab on 2 idle cores "
            "(it measures the heads at every evaluation), several times longer on a busy class server.",
            model=dict(**INDUCTION_MODEL),
            train=dict(**INDUCTION_TRAIN),
            data=dict(task=REPEATS_TASK, corpus="task: repeated random tokens", tokenizer="word"),
        ),
        Preset(
            "grokking", "Modular addition a + b mod 59 in the design of Nanda et al. 2023 (1 layer x 4 heads, "
            "d_model 128, ReLU FFN 512, no norm, their larger initialisation, AdamW weight decay 2.0 on the "
            "embeddings too, full batch) on half of the pairs ((a, b) and (b, a) always on the same side): train "
            "accuracy reaches 100 % by step 100 while test accuracy stays near 0 (the test loss above 10), then "
            "test accuracy shoots up to 99 % around step 1,000 and a handful of Fourier frequencies come to carry "
            "the number embedding (bench.grokking: about a minute on 2 cores). Without weight decay test accuracy "
            "stays near 0. Nanda et al.'s p = 113 on 30 % of the pairs is the longer reference run.",
            model=dict(**GROKKING_MODEL),
            train=dict(**GROKKING_TRAIN),
            data=dict(task=GROKKING_TASK, corpus="task: modular addition", tokenizer="word"),
        ),
        Preset(
            "tiny", "1 layer x 2 heads, d_model 16, 16-token context: for tests and instant demos.",
            model=dict(n_layers=1, n_heads=2, d_model=16, block_size=16),
            train=dict(batch_size=8, lr=1e-2, warmup_steps=5, max_steps=50, eval_interval=10,
                       eval_iters=2, snapshot_interval=25),
        ),
    )
}
DEFAULT_PRESET = "classroom"


def get_preset(name: str) -> Preset:
    if name not in PRESETS:
        raise ConfigError(f"unknown preset {name!r}; choose one of: {', '.join(PRESETS)}.")
    return PRESETS[name]


def _given(overrides: dict) -> dict:
    return {k: v for k, v in overrides.items() if v is not None}
