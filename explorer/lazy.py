"""Callbacks named by module and function, imported on their first call.

The tabs wire events to callbacks that need torch, scikit-learn and tokenizers; importing those takes
seconds. Naming the callbacks lazily lets the app build its page and answer its first request with Gradio
alone, and load the rest (app.warm_up, or the first request to need it) once the server is up."""
import importlib


class LazyCallback:
    """callbacks.<module>.<name>, imported when first called; carries the name Gradio and the API show."""

    def __init__(self, module: str, name: str):
        self.__module__, self.__name__, self.__qualname__ = f"explorer.callbacks.{module}", name, name
        self._fn = None

    def resolve(self):
        if self._fn is None:  # two first calls at once both import; Python's import lock runs the module once
            self._fn = getattr(importlib.import_module(self.__module__), self.__name__)
        return self._fn

    def __call__(self, *args, **kwargs):
        return self.resolve()(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<lazy {self.__module__}.{self.__name__}>"


def callbacks(module: str, *names: str):
    """LazyCallbacks for names in explorer.callbacks.<module>: one, or a tuple when several are named."""
    found = tuple(LazyCallback(module, name) for name in names)
    return found[0] if len(found) == 1 else found
