"""Callbacks named by module and function, imported on their first call.

The tabs wire events to callbacks that need torch, scikit-learn and tokenizers; importing those takes
seconds. Naming the callbacks lazily lets the app build its page and answer its first request with Gradio
alone, and load the rest (app.warm_up, or the first request to need it) once the server is up."""
import ast
import importlib
import importlib.util
import inspect


class LazyCallback:
    """callbacks.<module>.<name>, imported when first called; carries the name Gradio and the API show."""

    def __init__(self, module: str, name: str):
        self.__module__, self.__name__, self.__qualname__ = f"explorer.callbacks.{module}", name, name
        self._fn = self._signature = None

    def resolve(self):
        if self._fn is None:  # two first calls at once both import; Python's import lock runs the module once
            self._fn = getattr(importlib.import_module(self.__module__), self.__name__)
        return self._fn

    def __call__(self, *args, **kwargs):
        return self.resolve()(*args, **kwargs)

    def signature(self) -> inspect.Signature:
        """The function's signature read from its source, without importing it (the API names its inputs)."""
        if self._fn is not None:
            return inspect.signature(self._fn)
        if self._signature is None:
            self._signature = source_signature(self.__module__, self.__name__)
        return self._signature

    def __repr__(self) -> str:
        return f"<lazy {self.__module__}.{self.__name__}>"


def callbacks(module: str, *names: str):
    """LazyCallbacks for names in explorer.callbacks.<module>: one, or a tuple when several are named."""
    found = tuple(LazyCallback(module, name) for name in names)
    return found[0] if len(found) == 1 else found


class SourceDefault:
    """A default value that is not a literal (a named constant): shown as its source text."""

    def __init__(self, text: str):
        self.text = text

    def __repr__(self) -> str:
        return self.text


def source_signature(module: str, name: str) -> inspect.Signature:
    """Signature of the module-level function `name` in `module`, read from its source file (annotations left out)."""
    source = importlib.util.find_spec(module).origin
    with open(source, encoding="utf-8") as f:
        tree = ast.parse(f.read())
    found = next((node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == name), None)
    if found is None:
        raise AttributeError(f"{module} has no function {name}")
    args = found.args
    positional = [*args.posonlyargs, *args.args]
    defaults = [inspect.Parameter.empty] * (len(positional) - len(args.defaults)) + [_default(d) for d in args.defaults]
    params = [inspect.Parameter(a.arg, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=d)
              for a, d in zip(positional, defaults)]
    if args.vararg:
        params.append(inspect.Parameter(args.vararg.arg, inspect.Parameter.VAR_POSITIONAL))
    return inspect.Signature(params)


def _default(node: ast.expr):
    try:
        return ast.literal_eval(node)
    except ValueError:
        return SourceDefault(ast.unparse(node))
