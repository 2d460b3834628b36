"""Algorithmic tasks (model_core.data.tasks) and the Fourier analysis of modular addition: held-out pairs are
never trained on, the accuracy on them is what the evaluations report, the Fourier basis is orthonormal, and the
prompt format saved in a checkpoint is enough to score the model on every (a, b)."""
import json
import re
import subprocess
import sys

import numpy as np
import pytest
import torch

from explorer.figures.grokking import strongest_rows
from model_core.analysis.fourier import (
    all_pair_run,
    fewest_carrying,
    fourier_basis,
    frequency_norms,
    frequency_of_rows,
    neuron_frequencies,
    phase_losses,
    sum_directions,
    sum_frequency_norms,
    top_share,
)
from model_core.analysis.progress import example_accuracy
from model_core.data.dataset import get_batch
from model_core.data.tasks.examples import TaskError
from model_core.data.tasks.registry import make_task
from model_core.model.config import GPTConfig
from model_core.model.gpt import GPT
from model_core.training.child import run_sample
from model_core.training.train_config import TrainConfig
from model_core.training.trainer import Trainer
from tests.helpers import ROOT


def pairs_of(examples: torch.Tensor) -> set:
    return {(int(a), int(b)) for a, b in examples[:, 0, :2].tolist()}


def test_modular_addition_splits_every_pair_once_and_labels_it():
    task = make_task({"name": "modular-addition", "p": 13, "train_fraction": 0.3, "seed": 1})
    train, test = task.splits()
    assert len(train) in (51, 52) and len(train) + len(test) == 169  # 30 %, give or take one (a, b) with its (b, a)
    assert not pairs_of(train) & pairs_of(test) and len(pairs_of(train) | pairs_of(test)) == 169
    assert {(b, a) for a, b in pairs_of(train)} == pairs_of(train)  # a + b = b + a teaches nothing about a test pair
    for data in (train, test):
        a, b, eq = data[:, 0].T
        assert (eq == 13).all() and (data[:, 1, :2] == -1).all() and (data[:, 1, 2] == (a + b) % 13).all()
    tok = task.tokenizer()
    assert tok.encode(task.spec()["prompt"].format(a=3, b=12)) == [3, 12, 13] and tok.token_label(2) == "2"


@pytest.mark.parametrize("name, rule", [("copy", lambda s: s), ("reverse", lambda s: s[::-1]), ("sort", sorted)])
def test_sequence_tasks_answer_after_the_separator_and_keep_test_sequences_unseen(name, rule):
    task = make_task({"name": name, "length": 5, "symbols": 6, "n_train": 300, "n_test": 100})
    train, test = task.splits()
    assert train.shape == (300, 2, 10) and test.shape == (100, 2, 10)
    seen = {tuple(x[:5]) for x in train[:, 0].tolist()}
    assert not seen & {tuple(x[:5]) for x in test[:, 0].tolist()}
    for x, y in train[:20].tolist():
        full = x + [y[-1]]
        assert full[5] == 6 and full[6:] == list(rule(full[:5])) and y[:5] == [-1] * 5 and y[5:] == full[6:]


def test_repeated_tokens_repeat_each_segment_at_once():
    task = make_task({"name": "repeated-tokens", "vocab": 20, "min_length": 4, "max_length": 4, "n_tokens": 4000})
    ids = task.stream()
    assert len(ids) == 4000 and ids.max() < 20
    segments = ids.view(-1, 2, 4)  # fixed length 4: segment, copy, segment, copy, ...
    assert torch.equal(segments[:, 0], segments[:, 1])


def test_repeated_tokens_show_each_segment_as_often_as_asked():
    task = make_task({"name": "repeated-tokens", "vocab": 20, "min_length": 5, "max_length": 5, "n_tokens": 3000,
                      "copies": 3})
    shown = task.stream().view(-1, 3, 5)  # segment, segment, segment, next segment, ...
    assert torch.equal(shown[:, 0], shown[:, 1]) and torch.equal(shown[:, 0], shown[:, 2])
    assert not torch.equal(shown[:-1, 0], shown[1:, 0])  # consecutive segments differ
    assert task.spec()["copies"] == 3 and task.spec()["prompt"] == "{segment} {segment} {segment}"
    with pytest.raises(TaskError, match="copies"):
        make_task({"name": "repeated-tokens", "copies": 1})


def test_bad_specs_say_what_is_wrong():
    with pytest.raises(TaskError, match="unknown task"):
        make_task({"name": "division"})
    with pytest.raises(TaskError, match="p must be"):
        make_task({"name": "modular-addition", "p": 1})
    with pytest.raises(TaskError, match="train_fraction"):
        make_task({"name": "modular-addition", "train_fraction": 1.5})


def test_a_full_batch_is_every_example_and_a_small_one_draws_rows():
    train, _ = make_task({"name": "modular-addition", "p": 7}).splits()
    g = torch.Generator().manual_seed(0)
    x, y = get_batch(train, 3, 1000, g)
    assert torch.equal(x, train[:, 0]) and torch.equal(y, train[:, 1])
    x, y = get_batch(train, 3, 4, g)
    assert x.shape == (4, 3) and pairs_of(torch.stack([x, y], 1)) <= pairs_of(train)


@pytest.mark.slow
def test_accuracy_curves_are_measured_on_pairs_never_trained_on():
    task = make_task({"name": "modular-addition", "p": 11, "train_fraction": 0.5})
    train, test = task.splits()
    torch.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=12, block_size=3, d_model=32, n_heads=4, n_layers=1, norm="none",
                          activation="relu", tie_weights=False))
    cfg = TrainConfig(max_steps=60, batch_size=4096, lr=1e-2, min_lr=1e-2, warmup_steps=0, weight_decay=1.0,
                      grad_clip=0.0, eval_interval=30, eval_iters=1, snapshot_interval=0, device="cpu",
                      task=task.spec())
    trainer = Trainer(model, train, test, cfg)
    seen = []
    step = trainer.step

    def watched(*args, **kwargs):  # every batch the optimiser sees
        seen.append(pairs_of(torch.stack(get_batch(trainer.train_data, 3, cfg.batch_size, trainer.generator), 1)))
        return step(*args, **kwargs)
    trainer.step = watched
    trainer.run()
    assert not set().union(*seen) & pairs_of(test)
    last = trainer.evals[-1]
    assert {"train_acc", "val_acc", "restricted_loss", "excluded_loss", "key_share"} <= last.keys()
    model.eval()
    assert last["val_acc"] == pytest.approx(example_accuracy(model, test))
    assert last["train_acc"] == pytest.approx(example_accuracy(model, train))
    assert last["train_acc"] > last["val_acc"]  # 60 steps: memorised more than generalised


@pytest.mark.parametrize("p", [7, 12, 113])
def test_the_fourier_basis_is_orthonormal_and_splits_the_norm(p):
    basis, labels = fourier_basis(p)
    np.testing.assert_allclose(basis @ basis.T, np.eye(p), atol=1e-12)
    assert len(labels) == p and labels[:3] == ["const", "cos 1", "sin 1"]
    x = np.random.default_rng(0).normal(size=(p, 5))
    norms = frequency_norms(x)
    assert len(norms) == p // 2 + 1 and np.sum(norms ** 2) == pytest.approx(np.sum(x ** 2))
    wave = np.cos(2 * np.pi * 3 * np.arange(p) / p + 0.4)[:, None]
    assert fewest_carrying(frequency_norms(wave)) == [3] and top_share(frequency_norms(wave), 1) == pytest.approx(1)


@pytest.mark.parametrize("p", [11, 12])
def test_sum_frequency_norms_equal_the_projections_on_each_direction(p):
    logits = torch.randn(p * p, p + 1, dtype=torch.float64)
    centred = logits - logits.mean(0)
    ref = [0.0] + [float((sum_directions(p, [k]) @ centred).norm()) for k in range(1, p // 2 + 1)]
    np.testing.assert_allclose(sum_frequency_norms(logits, p), ref, atol=1e-10)


def test_the_rows_drawn_are_the_constant_and_those_carrying_most_in_basis_order():
    norms = np.zeros((7, 7))
    norms[0, 0], norms[5, 5], norms[2, 6] = 9.0, 4.0, 3.0  # rows by weight: 5 (8), then 2 and 6 (3 each)
    assert strongest_rows(norms, 3) == [0, 2, 5]  # a tie goes to the lower row
    assert strongest_rows(norms, 1) == [0] and strongest_rows(norms, 7) == list(range(7))
    norms[3, 3] = np.nan  # a non-finite norm counts as nothing
    assert strongest_rows(norms, 4) == [0, 2, 5, 6]


def test_restricted_loss_with_every_frequency_is_the_loss_and_excluded_with_none_is_the_train_loss():
    p = 7
    logits = torch.zeros(p * p, p + 1, dtype=torch.float64)
    s = (torch.arange(p).repeat_interleave(p) + torch.arange(p).repeat(p)) % p
    for k in (1, 2):  # a model that reads the answer off two frequencies: logit_c = sum_k cos(w_k (a + b - c))
        for c in range(p):
            logits[:, c] += 3 * torch.cos(2 * np.pi * k * (s - c).double() / p)
    mask = torch.rand(p * p, generator=torch.Generator().manual_seed(0)) < 0.5
    every = phase_losses(logits, p, mask, list(range(1, p // 2 + 1)))
    full = torch.nn.functional.cross_entropy(logits, s).item()
    assert every.restricted == pytest.approx(full)
    none = phase_losses(logits, p, mask, [])
    assert none.excluded == pytest.approx(torch.nn.functional.cross_entropy(logits[mask], s[mask]).item())
    found = phase_losses(logits, p, mask)
    assert sorted(found.key_frequencies) == [1, 2] and found.restricted == pytest.approx(full)
    assert found.excluded > full + 1  # without its key frequencies the model knows nothing



def neuron_frequencies_term_by_term(neurons: np.ndarray) -> np.ndarray:
    """neuron_frequencies written out: every (row of a, row of b) term added to the larger of its two frequencies."""
    p, n = neurons.shape[0], neurons.shape[-1]
    basis, freq = fourier_basis(p)[0], frequency_of_rows(p)
    t = np.einsum("ia,abn,jb->ijn", basis, neurons - neurons.mean((0, 1)), basis) ** 2
    energy = np.zeros((p // 2 + 1, n))
    for i in range(p):
        for j in range(p):
            energy[max(freq[i], freq[j])] += t[i, j]
    return energy[1:].argmax(0) + 1


@pytest.mark.parametrize("p", [7, 12])
def test_each_neurons_frequency_is_the_one_carrying_most_of_its_map(p):
    x = np.arange(p)
    waves = np.stack([np.cos(2 * np.pi * k * (x[:, None] + x[None, :]) / p) for k in (1, 2, 3)], -1)  # [p, p, 3]
    noise = np.random.default_rng(0).normal(size=(p, p, 20))
    neurons = np.concatenate([3 * waves, noise], -1)
    found = neuron_frequencies(neurons)
    assert found[:3].tolist() == [1, 2, 3]
    np.testing.assert_array_equal(found, neuron_frequencies_term_by_term(neurons))
    assert neuron_frequencies(np.zeros((p, p, 0))).shape == (0,)



@pytest.mark.slow
def test_the_shipped_models_neurons_get_the_frequency_written_out_term_by_term():
    from model_core.checkpoints.checkpoint import load_checkpoint

    model = load_checkpoint(ROOT / "explorer/assets/models/grokking").model
    _, cache = all_pair_run(model, 59, ("blocks.0.mlp.hook_post",))
    neurons = cache["blocks.0.mlp.hook_post"].reshape(59, 59, -1)[:, :, :48].numpy()  # the loop is slow: 48 of them
    np.testing.assert_array_equal(neuron_frequencies(neurons), neuron_frequencies_term_by_term(neurons))

@pytest.mark.slow
def test_the_prompt_format_in_a_checkpoint_scores_the_model_on_every_pair(tmp_path):
    """python -m model_core.train --preset grokking writes train_config.task with the prompt format; a script
    that reads only config.json (and the weights) scores every (a, b)."""
    out = tmp_path / "grok"
    run = subprocess.run([sys.executable, "-m", "model_core.train", "--preset", "grokking", "--task-setting", "p=7",
                          "--max-steps", "3", "--eval-interval", "3", "--device", "cpu", "--out", str(out)],
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    config = json.loads((out / "config.json").read_text())
    task = config["train_config"]["task"]
    assert task["name"] == "modular-addition" and task["p"] == 7 and task["prompt"] == "{a} {b} ="
    from model_core.checkpoints.checkpoint import load_checkpoint

    ckpt = load_checkpoint(out)
    words = config["tokenizer"]["words"]
    stoi = {w: i for i, w in enumerate(words)}
    prompts = [[stoi[w] for w in task["prompt"].format(a=a, b=b).split()] for a in range(7) for b in range(7)]
    with torch.no_grad():
        guesses = ckpt.model(torch.tensor(prompts))[0][:, task["answer_position"]].argmax(-1)
    right = [words[g] == task["answer"].format(c=(a + b) % 7) for (a, b), g in
             zip([(a, b) for a in range(7) for b in range(7)], guesses.tolist())]
    logits, _ = all_pair_run(ckpt.model, 7)
    assert np.mean(right) == pytest.approx(float((logits.argmax(-1) == torch.tensor(
        [(a + b) % 7 for a in range(7) for b in range(7)])).double().mean()))
    assert "val_acc" in ckpt.evals[-1] and "train_acc" in json.loads(run.stdout.strip().splitlines()[-1])


def task_trainer(spec: dict, **arch) -> Trainer:
    """A Trainer (untrained model) on a small task, as the Train tab's run of it starts."""
    task = make_task(spec)
    train, test = task.splits()
    torch.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=task.tokenizer().vocab_size, block_size=task.block_size, d_model=16, n_heads=2,
                          n_layers=1, **arch))
    return Trainer(model, train, test, TrainConfig(max_steps=1, batch_size=64, device="cpu", task=task.spec()),
                   task.tokenizer())


def test_a_task_models_sample_reads_as_the_tasks_examples():
    """The Train tab's sample of a modular-addition model was free generation, numbers without '=' ('5 12 40 33
    ...'): it is the model's greedy answers to a few training and test examples, each as the Data tab shows an
    example ('3 5 = → 1'), marked right (✓) or wrong (✗, then the right answer)."""
    p = 7
    trainer = task_trainer({"name": "modular-addition", "p": p, "train_fraction": 0.5})
    head, *lines = run_sample(trainer, 12).splitlines()
    assert head == "Answers to the task's examples (c = (a + b) mod p):"
    assert [line.split(":")[0] for line in lines] == ["train"] * 3 + ["test"] * 3
    for line in lines:
        m = re.fullmatch(r"(train|test): (\d+) (\d+) = → (\S+) (✓|✗ \(the answer is (\d+)\))", line)
        assert m, line  # an untrained model may answer '='
        a, b, said = int(m[2]), int(m[3]), m[4]
        with torch.no_grad():
            logits, _ = trainer.model(torch.tensor([[a, b, p]]))
        assert said == trainer.tokenizer.token_label(int(logits[0, -1].argmax())), line  # its own greedy answer
        assert (m[5] == "✓") == (said == str((a + b) % p)), line
        assert m[6] is None or int(m[6]) == (a + b) % p, line
    sort = run_sample(task_trainer({"name": "sort", "length": 4, "symbols": 6, "n_train": 50, "n_test": 20}), 12)
    for line in sort.splitlines()[1:]:
        m = re.fullmatch(r"(train|test): ((\d ){4})\| → ((\S+ ?){4}) (✓|✗ \(the answer is ((\d ?){4})\))", line)
        assert m, line
        right = " ".join(sorted(m[2].split()))
        assert (m[6] == "✓") == (m[4].strip() == right) and (m[7] is None or m[7] == right), line
