"""Files the app writes for users to download: all under one directory, swept by age, removed at exit."""
import atexit
import shutil
import tempfile
import time
from pathlib import Path

MAX_AGE_SECONDS = 600.0  # a download link is fetched within seconds; Gradio has copied the file by then
_root = None


def temp_root() -> Path:
    """The app's own temp directory (created on first use, removed when the process exits)."""
    global _root
    if _root is None or not _root.exists():
        _root = Path(tempfile.mkdtemp(prefix="te-app-"))
        atexit.register(remove_all)
    return _root


def new_temp_dir() -> Path:
    """A fresh directory for one download; older ones are swept first so the total stays small."""
    sweep()
    return Path(tempfile.mkdtemp(dir=temp_root()))


def sweep(max_age: float = MAX_AGE_SECONDS) -> int:
    """Remove downloads older than max_age seconds; -> how many were removed."""
    if _root is None or not _root.exists():
        return 0
    cutoff, removed = time.time() - max_age, 0
    for child in _root.iterdir():
        if child.stat().st_mtime < cutoff:
            shutil.rmtree(child, ignore_errors=True)
            removed += 1
    return removed


def remove_all() -> None:
    if _root is not None:
        shutil.rmtree(_root, ignore_errors=True)
