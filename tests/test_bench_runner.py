"""python -m bench: one row schema, a non-zero exit code when a target is missed or a benchmark fails, the rows
as JSON, and the generated results file bench/RESULTS.md. Tiny fake benchmarks stand in for the real ones."""
import argparse
import ast
import json
import math
import os

import pytest

from bench import registry
from bench.__main__ import main
from bench.registry import BENCHMARKS, Benchmark
from bench.results import Row, Skipped, at_least, at_most, check, info
from bench.results_page import GENERATED, RESULTS, TITLE, updated

ROW_FIELDS = {"name", "value", "unit", "target", "met"}


def fake_measure(argv: list[str]) -> list[Row]:
    """A benchmark that 'measures' --seconds and judges it against <= 2 s."""
    p = argparse.ArgumentParser()
    p.add_argument("--seconds", type=float, default=1.0)
    seconds = p.parse_args(argv).seconds
    return [at_most("fake call", seconds, "s", 2.0), info("fake size", 12, "KiB")]


def failing_measure(argv: list[str]) -> list[Row]:
    raise RuntimeError("the fake app did not answer")


def skipped_measure(argv: list[str]) -> list[Row]:
    raise Skipped("the fake model is not installed")


@pytest.fixture
def fakes(monkeypatch):
    for name, measure in (("fake", fake_measure), ("other", fake_measure), ("broken", failing_measure),
                          ("absent", skipped_measure)):
        monkeypatch.setitem(BENCHMARKS, name, Benchmark(name, f"The {name} benchmark.", measure))


def test_rows_judge_their_value_against_the_target():
    assert at_most("t", 0.3, "s", 0.3).met and not at_most("t", 0.31, "s", 0.3).met
    assert at_least("r", 0.97, "x", 0.97).met and not at_least("r", 0.5, "x", 0.97).met
    assert not at_most("never measured", math.nan, "s", 1.0).met  # a missing measurement is a miss
    assert info("size", 3, "KiB").met is None and info("size", 3, "KiB").target == ""
    assert check("answer", "It is Paris.", "names Paris", True) == Row("answer", "It is Paris.", "", "names Paris", True)
    assert set(at_most("t", 1.0, "s", 2.0).as_dict()) == ROW_FIELDS
    assert at_most("t", math.nan, "s", 1.0).as_dict()["value"] is None  # valid JSON: no NaN


def test_the_runner_exits_non_zero_when_a_target_is_missed(fakes, tmp_path):
    assert main(["fake", "--json", str(tmp_path / "met.json")]) == 0
    assert main(["fake --seconds 3", "--json", str(tmp_path / "missed.json")]) == 1  # 3 s > 2 s
    missed = json.loads((tmp_path / "missed.json").read_text())
    assert missed["exit_code"] == 1
    [run] = missed["runs"]
    assert run["benchmark"] == "fake" and run["args"] == ["--seconds", "3"] and run["status"] == "missed"
    assert all(set(row) == ROW_FIELDS for row in run["rows"])
    assert run["rows"][0] == {"name": "fake call", "value": 3.0, "unit": "s", "target": "<= 2", "met": False}
    assert run["rows"][1]["met"] is None
    assert {"cpu", "cores", "avx512", "native_bfloat16", "date"} <= set(missed["machine"])


def test_a_failing_benchmark_fails_the_run_and_the_others_still_run(fakes, tmp_path, capsys):
    out = tmp_path / "runs.json"
    assert main(["broken", "fake", "--json", str(out)]) == 1
    broken, fake = json.loads(out.read_text())["runs"]
    assert broken["status"] == "failed" and "the fake app did not answer" in broken["error"]
    assert fake["status"] == "met" and len(fake["rows"]) == 2
    assert main(["fake --no-such-flag"]) == 1  # the benchmark's own parser refused it: failed, not met
    assert "broken failed, fake met" in capsys.readouterr().out


def test_a_skipped_benchmark_says_why_and_does_not_fail_the_run(fakes, tmp_path):
    out = tmp_path / "runs.json"
    assert main(["absent", "fake", "--json", str(out)]) == 0
    absent = json.loads(out.read_text())["runs"][0]
    assert absent["status"] == "skipped" and absent["skipped"] == "the fake model is not installed"


def test_all_runs_every_registered_benchmark(fakes, monkeypatch, tmp_path):
    for name in list(BENCHMARKS):
        if name not in ("fake", "other"):
            monkeypatch.delitem(BENCHMARKS, name)
    out = tmp_path / "all.json"
    assert main(["--all", "--json", str(out)]) == 0
    assert [r["benchmark"] for r in json.loads(out.read_text())["runs"]] == ["fake", "other"]
    out.unlink()
    assert main(["--json", str(out)]) == 0  # --json alone runs them all too: the rows are what it asks for
    assert [r["benchmark"] for r in json.loads(out.read_text())["runs"]] == ["fake", "other"]


def test_an_unknown_name_is_refused_before_anything_runs(fakes, capsys):
    with pytest.raises(SystemExit) as stop:
        main(["fake", "nonesuch"])
    assert stop.value.code == 2 and "no benchmark named 'nonesuch'" in capsys.readouterr().err


def test_markdown_rewrites_the_results_file_and_keeps_the_other_benchmarks_sections(fakes, tmp_path):
    doc = tmp_path / "RESULTS.md"
    doc.write_text("# Notes\n\nHand-written prose.\n")
    main(["fake --seconds 3", "--markdown-file", str(doc)])
    main(["other", "--markdown-file", str(doc)])
    main(["fake --seconds 1.5", "--markdown-file", str(doc)])
    text = doc.read_text()
    assert text.startswith(f"{TITLE}\n\n{GENERATED}\n") and "Hand-written prose" not in text  # all generated
    assert text.count("## fake") == 1 and text.count("## other") == 1
    assert text.index("## fake") < text.index("## other")  # the registry's order, not the order of the runs
    fake = text[text.index("## fake"):text.index("## other")]
    assert "| fake call | 1.5 | s | <= 2 | ✔ |" in fake and "| fake call | 3 |" not in fake
    assert "python -m bench 'fake --seconds 1.5'" in fake and " cores, AVX-512: " in fake


def test_markdown_keeps_the_last_section_of_a_skipped_benchmark(fakes, monkeypatch, tmp_path):
    doc = tmp_path / "RESULTS.md"
    main(["absent", "--markdown-file", str(doc)])
    assert "## absent" not in doc.read_text() and doc.read_text().startswith(TITLE)  # nothing measured to show
    monkeypatch.setitem(BENCHMARKS, "absent", Benchmark("absent", "Now installed.", fake_measure))
    main(["absent", "--markdown-file", str(doc)])
    monkeypatch.setitem(BENCHMARKS, "absent", Benchmark("absent", "Gone again.", skipped_measure))
    main(["absent", "--markdown-file", str(doc)])
    assert "| fake call | 1 | s | <= 2 | ✔ |" in doc.read_text()


def test_the_results_file_is_what_the_writer_writes():
    """bench/RESULTS.md is generated whole: rewriting it from its own sections changes nothing."""
    text = RESULTS.read_text()
    assert updated(text, [], {}, list(registry.REGRESSION)) == text


def test_listing_names_every_benchmark_and_the_studies(fakes, capsys):
    assert main([]) == 0
    out = capsys.readouterr().out
    assert all(name in out for name in registry.REGRESSION) and "The fake benchmark." in out
    assert "shapes" in out and "precision" in out  # bench/studies/


def test_every_registered_benchmark_module_returns_rows_and_has_a_main():
    """Read, not imported: importing them loads torch and gradio."""
    for name in registry.REGRESSION:
        tree = ast.parse((registry.HERE / f"{name}.py").read_text())
        functions = {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}
        assert {"measure", "main"} <= functions, name
    assert not set(registry.REGRESSION) & set(registry.studies())


MODULE = '''
import os
import sys

from bench.results import Skipped, at_least


def measure(argv):
    if argv == ["--skip"]:
        raise Skipped("not installed here")
    if argv == ["--crash"]:
        sys.exit(3)
    return [at_least("pid of the interpreter that measured", os.getpid(), "", float(argv[0]))]
'''


@pytest.mark.slow
def test_a_module_benchmark_runs_in_an_interpreter_of_its_own(tmp_path, monkeypatch):
    (tmp_path / "bench_fake_module.py").write_text(MODULE)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    measure = registry.module_measure("bench_fake_module")
    [row] = measure(["1"])
    assert row.name == "pid of the interpreter that measured" and row.value != os.getpid() and row.met is True
    assert measure([str(10 ** 9)])[0].met is False  # rows come back with their verdicts
    with pytest.raises(Skipped, match="not installed here"):
        measure(["--skip"])
    with pytest.raises(RuntimeError, match="exited with 3"):
        measure(["--crash"])
