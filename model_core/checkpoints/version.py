"""The project's version, from its package metadata (pyproject.toml's [project] version, as pip installed it)."""
import tomllib
from importlib import metadata
from pathlib import Path

DISTRIBUTION = "transformer-explorer"
PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


def project_version(distribution: str = DISTRIBUTION, pyproject: Path = PYPROJECT) -> str:
    """The installed distribution's version; in a checkout run without installing, its pyproject.toml's;
    "unknown" when neither says."""
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        pass
    try:
        return tomllib.loads(pyproject.read_text())["project"]["version"]
    except (OSError, KeyError, TypeError, tomllib.TOMLDecodeError):
        return "unknown"


PROJECT_VERSION = project_version()
