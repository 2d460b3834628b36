"""The folders are the architecture: imports run down the layers only, and no modules import each other in a
circle. Every import statement counts, those inside functions too (a lazy import is still a dependency)."""
import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# Lowest first. A module may import its own layer and the layers below it, never one above.
LAYERS = [
    ("model_core.model", "the hooked GPT and generation"),
    ("model_core.data", "texts, tokenizers, token tensors"),
    ("model_core.analysis", "pure analysis of activations"),
    ("model_core.training", "trainer, optimisers, presets, the child processes (training, Compare's workers)"),
    ("model_core.checkpoints", "saving, bounded loading, conversion"),
    ("model_core.features", "sparse autoencoders: training, SAELens's format, evaluation, readout, their CLI"),
    ("model_core.foreign", "models the explorer did not build: converted exactly, or read from their forward pass"),
    ("model_core", "command-line entry points (train, sample, convert, make_assets)"),
    ("explorer.common", "launch settings, limits, control names, user errors"),
    ("explorer.figures", "numpy arrays -> figures"),
    ("explorer.state", "sessions, training runs, shipped models"),
    ("explorer.teaching", "captions, guide, lessons, link parameters"),
    ("explorer.classroom", "the class: teacher key, pushes, answers, the roster"),
    ("explorer.callbacks", "thin adapters: validate, compute, draw"),
    ("explorer.tabs", "components and wiring, one builder per tab"),
    ("explorer", "the page (ui) and the lesson checker that builds it"),
    ("explorer.server", "launch and Gradio plumbing"),
    ("explorer.hub", "JupyterHub: the launcher tile, the teacher page as a hub service"),
    ("transformer_explorer", "the notebook API: show(model), View.cache"),
]
FORBIDDEN = {  # third-party packages a layer never imports (house style)
    "model_core": {"gradio", "plotly", "explorer"},
    "explorer.figures": {"torch", "gradio"},
}


def modules() -> dict[str, Path]:
    found = {}
    for package in ("model_core", "explorer", "transformer_explorer"):
        for path in (ROOT / package).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


MODULES = modules()


def imported_names(name: str, path: Path) -> set[str]:
    """Every absolute module name an import statement in the file names (relative ones resolved)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([node.module] if node.module else []))
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
    return names


def project_imports(name: str) -> set[str]:
    return {other for other in imported_names(name, MODULES[name]) if other in MODULES and other != name}


def layer_of(name: str) -> int:
    """Index of the deepest layer prefix that names this module (a package's own modules sit in it)."""
    best = None
    for index, (prefix, _) in enumerate(LAYERS):
        if name == prefix or name.startswith(prefix + "."):
            if best is None or len(prefix) > len(LAYERS[best][0]):
                best = index
    assert best is not None, f"{name} is in no layer: add its package to LAYERS"
    return best


def test_every_subpackage_is_a_layer():
    packages = {name for name, path in MODULES.items() if path.name == "__init__.py" and name.count(".") == 1}
    assert packages == {prefix for prefix, _ in LAYERS if prefix.count(".") == 1}


@pytest.mark.slow
def test_imports_only_run_down_the_layers():
    upward = [f"{name} ({LAYERS[layer_of(name)][0]}) imports {other} ({LAYERS[layer_of(other)][0]})"
              for name in sorted(MODULES) for other in sorted(project_imports(name))
              if layer_of(other) > layer_of(name)]
    assert not upward, "imports that run up the layers:\n" + "\n".join(upward)


@pytest.mark.slow
@pytest.mark.parametrize("prefix", sorted(FORBIDDEN))
def test_layers_keep_out_of_forbidden_packages(prefix):
    found = [f"{name} imports {other}" for name, path in sorted(MODULES.items())
             if name == prefix or name.startswith(prefix + ".")
             for other in sorted(imported_names(name, path)) if other.split(".")[0] in FORBIDDEN[prefix]]
    assert not found, "\n".join(found)


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index, low, on_stack, stack, found, counter = {}, {}, set(), [], [], [0]
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter[0]
                    counter[0] += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


@pytest.mark.slow
def test_no_import_cycles():
    graph = {name: project_imports(name) for name in MODULES}
    assert not cycles(graph), f"modules that import each other in a circle: {cycles(graph)}"


def test_the_checks_see_a_cycle_and_an_upward_import():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []
    assert layer_of("model_core.model.gpt") < layer_of("model_core.training.trainer") < layer_of("model_core.train")
    assert layer_of("explorer.figures.attention") < layer_of("explorer.callbacks.attention") < layer_of("explorer.ui")


@pytest.mark.slow
def test_no_test_module_imports_another():
    """Fixtures live in tests/conftest.py and shared helpers in tests/*helpers.py: importing a test module (or
    the conftest) would run its module-level marks and fixtures twice and tie two test files together."""
    offenders = {}
    for path in sorted((ROOT / "tests").glob("*.py")):
        bad = sorted(n for n in imported_names(f"tests.{path.stem}", path) if n.startswith(("tests.test_", "tests.conftest")))
        if bad:
            offenders[path.name] = bad
    assert offenders == {}
