"""Gradio 6.31 builds its FastAPI app three times on the way to a launch: when the Blocks context closes,
in queue(), and in launch(). Only launch()'s app serves; each build registers ~80 routes and serialises the
whole page config (~0.15 s each for this app). single_app_build() skips the first two."""
import contextlib

from gradio import routes


@contextlib.contextmanager
def single_app_build():
    """Within: Blocks.__exit__ and queue() leave demo.app None (launch() builds it). Start-up only: the
    patch is process-wide while it lasts."""
    original = routes.App.__dict__["create_app"]
    routes.App.create_app = staticmethod(lambda *args, **kwargs: None)
    try:
        yield
    finally:
        routes.App.create_app = original
