"""Pure figure builders: numpy arrays (+ token labels) -> plotly go.Figure. Imports only numpy and plotly."""
from .attention import *  # noqa: F401,F403
