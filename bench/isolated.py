"""One benchmark in a fresh interpreter, as when it runs alone: python -m bench.isolated MODULE ROWS_JSON [FLAGS].

python -m bench runs each registered module this way, so no benchmark inherits another's torch threads, loaded
models, worker processes or warm caches (bench.pretrained times a cold first open). The rows go to ROWS_JSON:
{"rows": [...]} or {"skipped": why}. This module stays light: training children re-import the main module."""
import importlib
import json
import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    from bench.results import Skipped

    module, out, flags = argv[0], Path(argv[1]), argv[2:]
    try:
        rows = importlib.import_module(module).measure(flags)
    except Skipped as why:
        out.write_text(json.dumps({"skipped": str(why)}))
        return 0
    out.write_text(json.dumps({"rows": [r.as_dict() for r in rows]}, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
