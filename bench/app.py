"""python -m bench.app: the app's server-side costs (bench/app_costs.py says what is measured).

This module stays light on purpose: training children re-import the main module, as they re-import app.py
(see model_core/remote.py), and the benchmark should start them as fast as the app does."""


def measure(argv=None):
    from bench.app_costs import measure as app_costs

    return app_costs(argv)


def main(argv=None) -> int:
    from bench.results import run_main

    return run_main(measure, argv)


if __name__ == "__main__":
    raise SystemExit(main())
