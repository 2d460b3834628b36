"""python -m bench: list the regression benchmarks, run some or all, judge every row against its target.

    python -m bench                                  list them
    python -m bench views "generation --rounds 3"    run these (a name may carry its own flags, quoted)
    python -m bench --all [--json out.json] [--markdown]

Exit code 1 when a target was missed or a benchmark failed. --markdown writes each run's section into
bench/RESULTS.md, the generated file of results. Each benchmark runs in an interpreter of its own
(bench/isolated.py); this one imports none of them, so listing is instant."""
import argparse
import sys
from pathlib import Path


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="\n".join(__doc__.splitlines()[2:5]))
    p.add_argument("benchmarks", nargs="*", metavar="NAME",
                   help="benchmarks to run, each optionally with its flags in one quoted word: \"views --repeats 3\"")
    p.add_argument("--all", action="store_true", help="run every regression benchmark with its defaults")
    p.add_argument("--json", metavar="PATH", type=Path,
                   help="write the machine and every run's rows to this file (without NAMEs: runs --all)")
    p.add_argument("--markdown", action="store_true",
                   help="replace the runs' sections in bench/RESULTS.md (the generated results file)")
    p.add_argument("--markdown-file", metavar="PATH", type=Path, help="write that file here instead")
    p.add_argument("--describe", metavar="NAME", help="print a benchmark's whole description (its targets)")
    return p


def list_benchmarks() -> None:
    from bench.registry import BENCHMARKS, studies

    width = max(map(len, BENCHMARKS))
    print("Regression benchmarks (python -m bench NAME; python -m bench --describe NAME for the targets):")
    for b in BENCHMARKS.values():
        print(f"  {b.name.ljust(width)}  {b.summary}")
    print(f"One-off studies (python -m bench.studies.NAME): {', '.join(studies())}")


def main(argv=None) -> int:
    from bench.machine import machine_facts, machine_line
    from bench.registry import BENCHMARKS, docstring
    from bench.results import print_rows
    from bench.results_page import RESULTS, write_markdown
    from bench.runner import exit_code, parse_request, run_one, write_json

    p = parser()
    args = p.parse_args(argv)
    if args.describe:
        if args.describe not in BENCHMARKS:
            p.error(f"no benchmark named {args.describe!r}")
        print(docstring(args.describe))
        return 0
    if not args.benchmarks and not (args.all or args.json):  # --json alone: every benchmark, as --all
        list_benchmarks()
        return 0
    try:
        requests = [parse_request(text) for text in args.benchmarks] or [(name, []) for name in BENCHMARKS]
    except ValueError as err:
        p.error(str(err))
    machine = machine_facts()
    print(machine_line(machine), flush=True)
    runs = []
    for name, bench_args in requests:
        runs.append(run_one(name, bench_args))
        if args.json:  # after every run: a long --all leaves what it has measured if it is stopped
            write_json(args.json, machine, runs)
    print(f"\n=== {machine_line(machine)}")
    for run in runs:
        if run.status in ("met", "missed"):
            print_rows(f"{run.command} ({run.seconds:,.0f} s)", run.rows)
        else:
            print(f"\n{run.command}: {run.status}: {run.error or run.skipped}")
    print("\n" + ", ".join(f"{run.benchmark} {run.status}" for run in runs))
    if args.markdown or args.markdown_file:
        write_markdown(args.markdown_file or RESULTS, runs, machine, list(BENCHMARKS))
    return exit_code(runs)


if __name__ == "__main__":
    sys.exit(main())
