"""The asset commands (model_core.make_assets, make_grokking_asset, make_induction_asset) share their main: --steps
and --out, the model saved with its history thinned, progress on stderr and one JSON line on stdout."""
import json

import torch

from model_core.checkpoints.checkpoint import load_checkpoint
from model_core.make_assets import one_asset_main
from tests.trainer_helpers import tiny_trainer


def test_an_asset_command_saves_the_model_and_says_so_in_one_json_line(tmp_path, capsys):
    made = {}

    def train(steps, log):
        made["threads"] = torch.get_num_threads()
        made["trainer"] = trainer = tiny_trainer(max_steps=steps, eval_interval=2)
        trainer.run()
        log(f"trained {steps} steps")
        return trainer

    threads = torch.get_num_threads()
    numbers = lambda trainer: {"val_loss": trainer.evals[-1]["val_loss"]}  # noqa: E731
    assert one_asset_main(["--steps", "4", "--out", str(tmp_path)], "python -m x", "Make x.\n\nMore.", "tiny",
                          "a text", train, numbers, threads=1) == 0
    out, err = capsys.readouterr()
    assert err == "trained 4 steps\n"
    assert made["threads"] == 1 and torch.get_num_threads() == threads  # trained on one, then set back
    trainer, folder = made["trainer"], tmp_path / "tiny"
    report = json.loads(out)["tiny"]
    assert report.pop("seconds") >= 0
    assert report == {"steps": 4, "val_loss": trainer.evals[-1]["val_loss"],
                      "bytes": sum(f.stat().st_size for f in folder.iterdir()), "out": str(folder)}
    saved = load_checkpoint(folder)
    assert saved.corpus == "a text" and [m["step"] for m in saved.history] == [1, 2, 3, 4]
    for (name, mine), theirs in zip(trainer.model.state_dict().items(), saved.model.state_dict().values()):
        assert torch.equal(mine, theirs), name
    assert one_asset_main(["--steps", "0"], "python -m x", "Make x.", "tiny", "a text", train, numbers) == 2
    assert "positive whole number" in capsys.readouterr().err
