"""python -m model_core.features {train,evaluate} ...: see model_core.features.cli."""
import sys

from model_core.features.cli import main

sys.exit(main())
