"""A fast start: the page is built with Gradio alone (torch, scikit-learn and tokenizers load after the
server answers), every lazily named callback exists, and Gradio builds its app once."""
import subprocess
import sys
import textwrap

import gradio as gr
import pytest
from gradio import routes

from bench.server_process import ROOT
from explorer.server.gradio_startup import single_app_build
from explorer.tabs.lazy import LazyCallback, callbacks

BUILD_WITHOUT_TORCH = textwrap.dedent("""
    import sys
    import explorer.ui as ui
    from explorer.server import gradio_sessions
    from explorer.server.gradio_startup import single_app_build
    from explorer.tabs.lazy import LazyCallback

    gradio_sessions.install()
    with single_app_build():
        demo = ui.build_app()
        demo.queue()
    heavy = sorted(m for m in sys.modules if m.split(".")[0] in ("torch", "sklearn", "tokenizers", "scipy"))
    print("HEAVY", heavy)
    lazy = [v for mod in list(sys.modules.values()) if (getattr(mod, "__name__", "") or "").startswith("explorer.")
            for v in vars(mod).values() if isinstance(v, LazyCallback)]
    print("LAZY", len(lazy))
    missing = []
    for fn in lazy:
        try:
            assert callable(fn.resolve())
        except (ImportError, AttributeError, AssertionError):
            missing.append(repr(fn))
    print("MISSING", missing)
    # Gradio reads an event function's signature (gr.Request, gr.Progress): a lazy one must sit behind bind()
    print("DIRECT", [repr(f.fn) for f in demo.fns.values() if isinstance(f.fn, LazyCallback)])
    print("TORCH_AFTER", "torch" in sys.modules)
""")


@pytest.mark.slow
def test_page_builds_without_torch_and_every_lazy_callback_resolves():
    out = subprocess.run([sys.executable, "-c", BUILD_WITHOUT_TORCH], cwd=ROOT, capture_output=True, text=True,
                         timeout=300, env={"GRADIO_ANALYTICS_ENABLED": "False", "HF_HUB_DISABLE_TELEMETRY": "1",
                                           "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr[-3000:]
    lines = dict(line.split(" ", 1) for line in out.stdout.splitlines() if line.split(" ", 1)[0].isupper())
    assert lines["HEAVY"] == "[]"  # nothing heavy before the server could answer
    assert int(lines["LAZY"]) >= 40  # the tabs' callbacks are all named lazily
    assert lines["MISSING"] == "[]"  # ...and each names a function that exists
    assert lines["DIRECT"] == "[]"  # no event calls one without bind() (it would get no gr.Request)
    assert lines["TORCH_AFTER"] == "True"  # resolving them loaded the model code


def test_lazy_callback_imports_on_first_call_and_keeps_its_name():
    fn = LazyCallback("common", "clamp_query")
    assert fn.__name__ == "clamp_query" and fn._fn is None
    assert fn(-1, 5) == 4 and fn(99, 5) == 4  # negative: last token; past the end: the last too
    assert fn._fn is not None
    one, two = callbacks("common", "clamp_query", "clamped_index")
    assert (one.__name__, two.__name__) == ("clamp_query", "clamped_index")


def test_a_misspelt_callback_fails_when_called_not_silently():
    with pytest.raises(AttributeError):
        LazyCallback("common", "no_such_function")()


def test_single_app_build_skips_the_early_builds_and_restores_gradio():
    original = routes.App.__dict__["create_app"]
    with single_app_build():
        with gr.Blocks() as demo:
            gr.Textbox()
        demo.queue()
        assert demo.app is None  # neither __exit__ nor queue() built one
    assert routes.App.__dict__["create_app"] is original
    with pytest.raises(RuntimeError):
        with single_app_build():
            raise RuntimeError("a failed build")
    assert routes.App.__dict__["create_app"] is original  # restored on errors too
    with gr.Blocks() as built:
        gr.Textbox()
    assert built.app is not None  # outside, Gradio builds as before
